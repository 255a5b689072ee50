"""roofline_max: the roofline's max form, each pass bound by bandwidth or by FLOP/s."""

from __future__ import annotations

from typing import Any

from engine.core.config import EFFICIENCY_MIN, field
from engine.core.parts import COST
from engine.cost.models.roofline import (
    SPEC_FIELDS,
    _bounded,
    _runs,
    _specs,
    check_placement,
    specs_label,
)
from engine.cost.part import CostPart


@COST.register
class RooflineMax(CostPart):
    name = "roofline_max"
    description = "each pass's time from hardware and model specs: max(bytes, FLOPs)"
    brief = "its max form"
    fields = (
        *SPEC_FIELDS,
        field(
            "cost.max_eta_f",
            1.0,
            label="η flops",
            kind="number",
            low=EFFICIENCY_MIN,
            high=1.0,
            help="roofline_max: fraction of the peak FLOP/s",
        ),
        field(
            "cost.max_eta_bw",
            1.0,
            label="η bw",
            kind="number",
            low=EFFICIENCY_MIN,
            high=1.0,
            help="roofline_max: fraction of the bandwidth",
        ),
    )

    def check(self, config: Any) -> None:
        check_placement(config)

    def build(self, config: Any) -> Any:
        from engine.cost.roofline import RooflineMaxCost

        hardware, target, draft = _specs(config)
        cost = RooflineMaxCost(
            hardware,
            target,
            draft,
            eta_f=config.max_eta_f,
            eta_bw=config.max_eta_bw,
            t0_us=config.t0_us,
            bytes_per_kv=config.bytes_per_kv,
            **_runs(config, hardware),
        )
        _bounded(cost, config)
        return cost

    def label(self, config: Any) -> str:
        return specs_label(config)
