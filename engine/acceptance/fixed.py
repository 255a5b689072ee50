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
