"""suffix: suffix decoding (SuffixDecoding, arXiv 2411.04975; ArcticInference, vLLM's
``suffix`` method). No draft pass: a CPU look-up per step; a step whose context has a match
drafts as many tokens as its match supports, up to the tail-ruled K: here a geometric length
of mean ``proposer.mean_match``, capped at K. The geometric form and its mean are assumed
(no source measured here gives the distribution of match lengths)."""

from __future__ import annotations

from typing import Any

from engine.core.fields import K_MAX, ConfigError, field
from engine.core.parts import PROPOSER
from engine.proposers.base import CPU_US, HIT_RATE, ProposerPart

MEAN_MATCH = field(
    "proposer.mean_match",
    4.0,
    label="match len",
    kind="number",
    low=1.0,
    high=float(K_MAX),
    unit="tokens",
    help="suffix: mean tokens a match proposes before the cap K (a geometric length: "
    "P(L >= j) = (1 - 1/m)^(j - 1)); assumed, not from a source: set it from a "
    "measurement (drafted tokens / steps that drafted)",
    seed_key=True,
)


@PROPOSER.register
class Suffix(ProposerPart):
    name = "suffix"
    description = "suffix decoding: no draft pass; on a match, a geometric length capped at K"
    brief = "suffix decoding: proposer.hit_rate, proposer.mean_match, proposer.cpu_us"
    model_free = True
    catalog_method = "suffix decoding"
    fields = (HIT_RATE, MEAN_MATCH, CPU_US)

    def hit_rate(self, config: Any) -> float:
        return float(config.hit_rate)

    def lookup_us(self, config: Any) -> float:
        return float(config.cpu_us)

    def continue_probability(self, config: Any) -> float:
        """P(L >= j + 1 | L >= j): 1 - 1/m."""
        return 1.0 - 1.0 / float(config.mean_match)

    def length_survival(self, config: Any, cap: int) -> Any:
        import numpy as np

        q = self.continue_probability(config)
        return np.power(q, np.arange(cap, dtype=np.float64))  # q^(j - 1), j = 1..cap

    def check(self, config: Any) -> None:
        super().check(config)
        from engine.core.config import POLICY_CELLS_MAX

        cells = config.tokens_per_seq * (config.k + 1)
        if cells > POLICY_CELLS_MAX:
            raise ConfigError(
                "tokens_per_seq",
                f"proposer suffix prices every (r, length): {config.tokens_per_seq} tokens "
                f"with K = {config.k} need {cells:,} step prices (T x (K + 1)); at most "
                f"{POLICY_CELLS_MAX:,}",
            )

    def label(self, config: Any) -> str:
        return (
            f"suffix (hit rate {config.hit_rate:g}, mean match {config.mean_match:g}, "
            f"look-up {config.cpu_us:g} us)"
        )
