"""confidence: each draft token carries a confidence q the draft sees."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.acceptance.base import AcceptanceModel
from engine.acceptance.beta_round import BETA_FIELDS
from engine.core.parts import ACCEPTANCE

if TYPE_CHECKING:
    import numpy as np


@ACCEPTANCE.register
class Confidence(AcceptanceModel):
    name = "confidence"
    description = (
        "each draft token has a confidence q ~ Beta(a, b), seen by the draft, accepted with q"
    )
    confidences = True
    fields = BETA_FIELDS

    # Unseen by a fixed K, the q's are independent per token: the accepted prefix follows
    # the marginal P(accept) = a / (a + b).
    def position_probs(self, config: Any, k: int) -> np.ndarray:
        import numpy as np

        return np.full(k, config.beta_a / (config.beta_a + config.beta_b))

    def params_text(self, config: Any) -> str:
        return f"q ~ Beta({config.beta_a:g}, {config.beta_b:g}) per token"
