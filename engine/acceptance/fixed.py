"""The original's fixed model: the same P(accept) at every position."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.acceptance.base import AcceptanceModel
from engine.core.config import field
from engine.core.parts import ACCEPTANCE

if TYPE_CHECKING:
    import numpy as np


@ACCEPTANCE.register
class FixedAccuracy(AcceptanceModel):
    name = "fixed"
    description = "constant P(accept) = acceptance_rate at every position"
    original = True
    fittable = True
    constant_rate_field = "acceptance_rate"
    fields = (
        field(
            "acceptance_rate",
            0.8,
            original=2,
            label="accept",
            kind="prob",
            help="fixed model: P(accept) of every draft token",
            seed_key=True,
        ),
    )

    def position_probs(self, config: Any, k: int) -> np.ndarray:
        import numpy as np

        return np.full(k, config.acceptance_rate)

    def params_text(self, config: Any) -> str:
        return f"acceptance {config.acceptance_rate:g}"

    # The maximum of the likelihood is the pooled rate: accepted over reached.
    def fit(self, accepted: np.ndarray, reached: np.ndarray) -> list[dict[str, object]]:
        import numpy as np

        from engine.acceptance.fitting import counts

        accepted, reached = counts(accepted, reached)
        with np.errstate(divide="ignore", invalid="ignore"):
            p = accepted.sum(axis=1) / reached.sum(axis=1)
        return [self.scenario_values({"acceptance_rate": float(x)}) for x in p]

    def fit_interval(
        self, accepted: np.ndarray, reached: np.ndarray
    ) -> dict[str, tuple[float, float]]:
        """Wilson's interval of the pooled rate."""
        from engine.acceptance.fitting import wilson_interval

        return {"acceptance_rate": wilson_interval(float(accepted.sum()), float(reached.sum()))}

    def fit_posterior(
        self,
        values: dict[str, object],
        accepted: np.ndarray,
        reached: np.ndarray,
        draws: int,
        rng: np.random.Generator,
    ) -> list[dict[str, object]]:
        """Beta(1 + accepted, 1 + failed) of the pooled counts (a uniform prior)."""
        failed = reached - accepted
        samples = rng.beta(1.0 + accepted.sum(), 1.0 + failed.sum(), draws)
        return [self.scenario_values({"acceptance_rate": float(x)}) for x in samples]
