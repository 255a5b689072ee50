"""schedule: k by batch size, as serving engines configure it (0: no speculation)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from engine.core.config import field, schedule_k
from engine.core.parts import POLICY
from engine.policies.base import Chooser, PolicyPart
from engine.policies.fixed import FixedChooser

if TYPE_CHECKING:
    import numpy as np

    from engine.core.draws import Policy


@POLICY.register
class Schedule(PolicyPart):
    name = "schedule"
    description = "k by batch size from a table of BATCH:K pairs"
    brief = "k by batch size"
    adaptive = False
    fields = (
        field(
            "policy.schedule",
            "1:5,32:3,128:1",
            label="schedule",
            kind="schedule",
            help="schedule: k by batch size, BATCH:K pairs from batch 1 up (0: no speculation)",
        ),
    )

    def k_bound(self, config: Any) -> int:
        return schedule_k(config.schedule, config.batch_size)

    def exact_program(self, config: Any) -> tuple[str, int] | None:
        return ("fixed", self.k_bound(config))

    def label(self, config: Any) -> str:
        return f"schedule K={self.k_bound(config)}"

    def stepwise_policy(self, config: Any, oracle_k: np.ndarray | None = None) -> Policy:
        # A fixed k at the scenario's batch size.
        policy = super().stepwise_policy(config, oracle_k)
        return dataclasses.replace(policy, k=self.k_bound(config))

    def chooser(self, policy: Policy, rows: int, batch: int, cycle_us: np.ndarray) -> Chooser:
        return FixedChooser(policy.k, rows)
