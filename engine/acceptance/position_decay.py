"""The original's position_decay model: P(accept) falls geometrically with depth."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.acceptance.base import AcceptanceModel
from engine.core.config import field
from engine.core.parts import ACCEPTANCE

if TYPE_CHECKING:
    import numpy as np


@ACCEPTANCE.register
class PositionDecay(AcceptanceModel):
    name = "position_decay"
    description = "P(accept) at position i = decay_base * decay_factor^(i-1)"
    original = True
    fittable = True
    fields = (
        field(
            "decay_base",
            0.9,
            original=5,
            label="first p",
            kind="prob",
            help="position_decay: P(accept) at position 1",
            seed_key=True,
        ),
        field(
            "decay_factor",
            0.95,
            original=6,
            label="decay ×",
            kind="prob",
            help="position_decay: factor per further position",
            seed_key=True,
        ),
    )

    def position_probs(self, config: Any, k: int) -> np.ndarray:
        import numpy as np

        return config.decay_base * config.decay_factor ** np.arange(k, dtype=float)

    def params_text(self, config: Any) -> str:
        return f"decay {config.decay_base:g} x {config.decay_factor:g}^(i-1)"

    def fit(self, accepted: np.ndarray, reached: np.ndarray) -> list[dict[str, object]]:
        """Both parameters searched in [0, 1] (engine.acceptance.fitting.fit_two)."""
        import numpy as np

        from engine.acceptance.fitting import FloatArray, counts, fit_two

        accepted, reached = counts(accepted, reached)
        steps = np.arange(accepted.shape[1], dtype=float)

        def rates(base: FloatArray, factor: FloatArray) -> FloatArray:
            out: FloatArray = base[:, None] * factor[:, None] ** steps
            return out

        base, factor = fit_two(accepted, reached, rates, (0.0, 1.0))
        return [
            self.scenario_values({"decay_base": float(b), "decay_factor": float(f)})
            for b, f in zip(base, factor, strict=True)
        ]
