"""per_position: a list of conditional rates, what calibration from serving logs gives."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.acceptance.base import AcceptanceModel
from engine.core.config import field, rates_of
from engine.core.parts import ACCEPTANCE

if TYPE_CHECKING:
    import numpy as np


@ACCEPTANCE.register
class PerPosition(AcceptanceModel):
    name = "per_position"
    description = "conditional P(accept) p_1..p_m from a list (position i > m uses p_m)"
    fittable = True
    rate_per_position = True
    fields = (
        field(
            "acceptance.rates",
            "0.9,0.8,0.7",
            label="rates",
            kind="probs",
            help="per_position: conditional P(accept) of positions 1..m, comma-separated "
            "(positions beyond m use the last)",
            seed_key=True,
        ),
    )

    def position_probs(self, config: Any, k: int) -> np.ndarray:
        import numpy as np

        rates = rates_of(config.rates)
        out = np.full(k, rates[-1])
        head = min(k, len(rates))
        out[:head] = rates[:head]
        return out

    def positions(self, config: Any) -> int | None:
        return len(rates_of(config.rates))

    def params_text(self, config: Any) -> str:
        return f"rates {config.rates}"

    # The maximum of the likelihood is each position's own rate: accepted over reached.
    def fit(self, accepted: np.ndarray, reached: np.ndarray) -> list[dict[str, object]]:
        import numpy as np

        from engine.acceptance.fitting import counts

        accepted, reached = counts(accepted, reached)
        with np.errstate(divide="ignore", invalid="ignore"):
            rates = np.where(reached > 0, accepted / reached, 0.0)
        return [self.scenario_values({"acceptance.rates": rates_text(r)}) for r in rates]

    def fit_posterior(
        self,
        values: dict[str, object],
        accepted: np.ndarray,
        reached: np.ndarray,
        draws: int,
        rng: np.random.Generator,
    ) -> list[dict[str, object]]:
        """Beta(1 + accepted_i, 1 + failed_i) of each position (a uniform prior)."""
        failed = reached - accepted
        rates = rng.beta(1.0 + accepted, 1.0 + failed, (draws, accepted.size))
        return [self.scenario_values({"acceptance.rates": rates_text(r)}) for r in rates]


def rates_text(rates: np.ndarray) -> str:
    """The ``acceptance.rates`` text of conditional rates (each clipped to [0, 1], 6
    significant digits)."""
    import numpy as np

    return ",".join(f"{float(np.clip(r, 0.0, 1.0)):.6g}" for r in rates)
