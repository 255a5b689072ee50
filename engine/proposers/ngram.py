"""ngram: n-gram / prompt lookup (vLLM's ngram, llama.cpp's ngram-simple and lookup,
prompt lookup decoding). No draft pass: a CPU look-up per step; a step whose context has a
match drafts K tokens (the tail-ruled K), a step without one is a plain decoding step."""

from __future__ import annotations

from typing import Any

from engine.core.parts import PROPOSER
from engine.proposers.base import CPU_US, HIT_RATE, ProposerPart


@PROPOSER.register
class Ngram(ProposerPart):
    name = "ngram"
    description = "n-gram / prompt lookup: no draft pass; K tokens on a match, else a plain step"
    brief = "n-gram / prompt lookup: proposer.hit_rate, proposer.cpu_us"
    model_free = True
    catalog_method = "n-gram"
    fields = (HIT_RATE, CPU_US)

    def hit_rate(self, config: Any) -> float:
        return float(config.hit_rate)

    def lookup_us(self, config: Any) -> float:
        return float(config.cpu_us)

    def label(self, config: Any) -> str:
        return f"ngram (hit rate {config.hit_rate:g}, look-up {config.cpu_us:g} us)"
