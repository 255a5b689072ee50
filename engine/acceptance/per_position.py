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
