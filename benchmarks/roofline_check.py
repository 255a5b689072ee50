"""Print the issue's roofline check table from the wired cost models (not part of the tests).

    .venv/bin/python benchmarks/roofline_check.py

Llama-3.1-8B on an H100 SXM (bf16 weights and KV cache, default efficiencies, t0 = 0),
drafting with Llama-3.2-1B: the verify pass of a cycle of K drafts over one decoding step,
``verify_us(K + 1, B, L) / verify_us(1, B, L)``, at each (B, K, L) for both roofline forms.
Every time comes from a scenario (``SpecConfig(cost_model=...)``) through the engine's one
cycle kernel (:func:`engine.core.kernel.cycle_costs`): ``limit_verify_us`` and ``limit_step_us``
are the verify pass of a full cycle and a decoding step at the prompt's context, so the
context L is the scenario's ``workload.prompt_len``. 1k = 1024 tokens.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.core.config import SpecConfig
from engine.core.kernel import cycle_costs

# (B, K, L) and the issue's figures: (additive, max).
CHECKS: dict[tuple[int, int, int], tuple[float, float]] = {
    (1, 3, 1024): (1.011, 1.000),
    (64, 3, 1024): (1.424, 1.000),
    (128, 5, 1024): (2.008, 1.299),
    (64, 3, 8192): (1.182, 1.000),
    (64, 3, 32768): (1.092, 1.000),
}
FORMS = ("roofline", "roofline_max")


def scenario(form: str, batch: int, k: int, context: int) -> SpecConfig:
    """The check's scenario: Llama-3.1-8B verified on an H100, at context ``context``."""
    return SpecConfig(
        cost_model=form,
        gpu="h100",
        target="llama-3.1-8b",
        draft="llama-3.2-1b",
        batch_size=batch,
        k=k,
        prompt_len=context,
        tokens_per_seq=1,
    )


def ratios(batch: int, k: int, context: int) -> dict[str, tuple[float, float, float, str]]:
    """Per form: (verify pass us, decoding step us, their ratio, the verify pass's bound)."""
    out = {}
    for form in FORMS:
        costs = cycle_costs(scenario(form, batch, k, context))
        verify, step = costs.limit_verify_us, costs.limit_step_us
        out[form] = (verify, step, verify / step, costs.bound)
    return out


def main() -> None:
    print("Llama-3.1-8B on H100 SXM (989e12 FLOP/s, 3.35e12 B/s), bf16, t0 = 0")
    print("verify pass (w = K + 1) / decoding step (w = 1), both at context L")
    header = (
        f"{'B':>4} {'K':>2} {'L':>6}  {'verify us':>9} {'step us':>8} {'additive':>8} "
        f"{'issue':>6}  {'verify us':>9} {'step us':>8} {'max':>6} {'issue':>6}  bound(add/max)"
    )
    print(header)
    print("-" * len(header))
    for (batch, k, context), (issue_add, issue_max) in CHECKS.items():
        r = ratios(batch, k, context)
        (va, sa, ra, ba), (vm, sm, rm, bm) = r["roofline"], r["roofline_max"]
        print(
            f"{batch:>4} {k:>2} {context:>6}  {va:>9.1f} {sa:>8.1f} {ra:>8.3f} {issue_add:>6.3f}  "
            f"{vm:>9.1f} {sm:>8.1f} {rm:>6.3f} {issue_max:>6.3f}  {ba}/{bm}"
        )


if __name__ == "__main__":
    main()
