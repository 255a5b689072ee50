"""hf_heuristic (Hugging Face transformers): K grows by 2 after a fully accepted cycle,
else shrinks by 1."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.core.parts import POLICY
from engine.policies.base import K_MAX_FIELD, Chooser, PolicyPart

if TYPE_CHECKING:
    import numpy as np

    from engine.core.draws import Policy


class HfHeuristicChooser(Chooser):
    def __init__(self, policy: Policy, rows: int) -> None:
        import numpy as np

        self.k_max = policy.k_max
        self.k = np.full(rows, policy.k, dtype=np.int64)

    def choose(self, r: np.ndarray, regime: np.ndarray, q: np.ndarray | None) -> np.ndarray:
        return self.k

    def observe(
        self, step: int, drafted: np.ndarray, accepted: np.ndarray, running: np.ndarray
    ) -> None:
        import numpy as np

        all_accepted = (accepted == drafted) & (drafted >= 1)
        grown = np.where(
            all_accepted, np.minimum(self.k + 2, self.k_max), np.maximum(1, self.k - 1)
        )
        self.k = np.where(running.astype(bool), grown, self.k)


@POLICY.register
class HfHeuristic(PolicyPart):
    name = "hf_heuristic"
    description = "Hugging Face's rule: K + 2 after a fully accepted cycle, else K - 1"
    brief = "Hugging Face: +2 after a fully accepted cycle, else -1"
    fields = (K_MAX_FIELD,)

    def check(self, config: Any) -> None:
        self._starts_at_k(config)

    def exact_program(self, config: Any) -> tuple[str, int] | None:
        return ("hf_heuristic", config.k)

    def label(self, config: Any) -> str:
        return f"hf_heuristic K0={config.k}"

    def chooser(self, policy: Policy, rows: int, batch: int, cycle_us: np.ndarray) -> Chooser:
        return HfHeuristicChooser(policy, rows)
