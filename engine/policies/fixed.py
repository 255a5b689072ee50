"""fixed: k = K every cycle (the original's speculative decoding)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.core.parts import POLICY
from engine.policies.base import Chooser, PolicyPart

if TYPE_CHECKING:
    import numpy as np

    from engine.core.draws import Policy


class FixedChooser(Chooser):
    def __init__(self, k: int, rows: int) -> None:
        import numpy as np

        self.k = np.full(rows, k, dtype=np.int64)

    def choose(self, r: np.ndarray, regime: np.ndarray, q: np.ndarray | None) -> np.ndarray:
        return self.k


@POLICY.register
class Fixed(PolicyPart):
    name = "fixed"
    description = "draft K tokens every cycle"
    brief = "k = K every cycle"
    stepwise = False
    adaptive = False

    def k_bound(self, config: Any) -> int:
        return int(config.k)

    def exact_program(self, config: Any) -> tuple[str, int] | None:
        return ("fixed", config.k)

    def label(self, config: Any) -> str:
        return f"fixed K={config.k}"

    def chooser(self, policy: Policy, rows: int, batch: int, cycle_us: np.ndarray) -> Chooser:
        return FixedChooser(policy.k, rows)
