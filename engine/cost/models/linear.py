"""linear: fixed costs per draft pass and per verify pass (the original's)."""

from __future__ import annotations

from typing import Any

from engine.core.config import COST_MAX_US, VERIFY_MIN_US, field
from engine.core.parts import COST
from engine.cost.part import CostPart


@COST.register
class Linear(CostPart):
    name = "linear"
    description = "a draft pass and a verify pass each cost a fixed time"
    brief = "fixed costs"
    context_dependent = False
    batch_dependent = False
    fields = (
        field(
            "draft_cost_us",
            20.0,
            original=3,
            label="draft/tk",
            kind="number",
            low=0.0,
            high=COST_MAX_US,
            unit="us",
            help="linear: cost of one draft forward pass, i.e. per draft token (a cycle of K "
            "drafts pays K of them; the Exact panel's draft time is per cycle)",
        ),
        field(
            "verify_cost_us",
            200.0,
            original=4,
            label="verify us",
            kind="number",
            low=VERIFY_MIN_US,
            high=COST_MAX_US,
            unit="us",
            help="linear: cost of one target (verify) pass",
        ),
        field(
            "cost.verify_token_us",
            0.0,
            label="verify/tk",
            kind="number",
            low=0.0,
            high=COST_MAX_US,
            unit="us",
            help="linear: verify cost per drafted token checked",
        ),
        field(
            "cost.draft_fixed_us",
            0.0,
            label="draft fix",
            kind="number",
            low=0.0,
            high=COST_MAX_US,
            unit="us",
            help="linear: fixed cost of a cycle that drafts (draft prefill, launches, rejection "
            "sampling), beyond its passes; a plain step never pays it",
        ),
    )

    def build(self, config: Any) -> Any:
        from engine.cost.linear import LinearCost

        return LinearCost(
            config.draft_cost_us,
            config.verify_cost_us,
            config.verify_token_us,
            config.draft_fixed_us,
        )

    def label(self, config: Any) -> str:
        text = (
            f"linear: draft {config.draft_cost_us:g} us, verify {config.verify_cost_us:g} us "
            f"(ratio {config.cost_ratio:.3g})"
        )
        if config.verify_token_us:
            text += f" + {config.verify_token_us:g} us per draft checked"
        if config.draft_fixed_us:
            text += f" + {config.draft_fixed_us:g} us per drafting cycle"
        return text
