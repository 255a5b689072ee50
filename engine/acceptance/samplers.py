"""Whose sampling transforms the ``distribution`` model applies, and in what order (issue
#28; docs/model.md, "Acceptance from distributions").

Each engine transforms the target's logits before it samples or verifies, and some transform
the draft's differently or not at all. A profile names the transforms each side gets, in the
order applied; a transform not named is not applied (temperature not named: the side samples
at temperature 1). Read from each engine's source (the paths below); what each engine's
draft proposes decides the rule that matches it (``accept_rule``), named in ``rule``.

No numpy here: the field's choices are read when the parts register.
"""

from __future__ import annotations

from typing import NamedTuple


class Sampler(NamedTuple):
    target: tuple[str, ...]
    draft: tuple[str, ...]
    rule: str  # the acceptance rule of the engine's usual drafting
    source: str


FULL = ("temperature", "top_k", "top_p", "min_p")

SAMPLERS: dict[str, Sampler] = {
    "hf": Sampler(
        FULL,
        FULL,
        "rejection",
        "huggingface/transformers src/transformers/generation/utils.py (_get_logits_processor: "
        "temperature, top-k, top-p, min-p; _speculative_sampling); the assistant generates "
        "with a copy of the same generation config (candidate_generator.py)",
    ),
    "vllm": Sampler(
        ("temperature", "top_k", "top_p"),
        ("temperature",),
        "one_hot",
        "vllm-project/vllm vllm/v1/sample/rejection_sampler.py (temperature, then top-k and "
        "top-p; no min-p at draft positions); vllm/v1/spec_decode/llm_base_proposer.py (a "
        "probabilistic draft gets the temperature only); vllm/config/speculative.py "
        "(draft_sample_method 'greedy' by default: the draft's argmax, treated as one-hot)",
    ),
    "sglang": Sampler(
        ("temperature", "top_k", "top_p"),
        (),
        "one_hot",
        "sgl-project/sglang python/sglang/srt/speculative/eagle_info.py (EagleVerifyInput.verify:"
        " temperature, softmax, top-k, top-p; no min-p); the draft's raw softmax builds a "
        "top-k tree, verified target-only (speculative_sampling.cuh) as a one-hot draft",
    ),
    "llama.cpp": Sampler(
        ("top_k", "top_p", "min_p", "temperature"),
        (),
        "one_hot",
        "ggml-org/llama.cpp common/common.h (the default chain: top_k, typ_p, top_p, min_p, "
        "xtc, temperature: temperature last); common/speculative.cpp (the draft proposes its "
        "argmax; the target's own sample must equal it, accepted with p(d))",
    ),
}


def help_text() -> str:
    """The ``sampler`` field's help, from the profiles: each side's transforms in order."""

    def side(steps: tuple[str, ...]) -> str:
        return ", ".join(steps) if steps else "none (raw softmax)"

    return "; ".join(
        f"{name}: target {side(s.target)}, draft "
        f"{'the same' if s.draft == s.target else side(s.draft)}, usually {s.rule}"
        for name, s in SAMPLERS.items()
    )
