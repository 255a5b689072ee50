"""beta_round: each cycle draws its own rate from a Beta."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.acceptance.base import AcceptanceModel
from engine.core.config import BETA_MAX, field
from engine.core.parts import ACCEPTANCE

if TYPE_CHECKING:
    import numpy as np

# The fit searches a and b in [BETA_LOW, BETA_MAX] (a scenario wants them > 0).
BETA_LOW = 1e-3

# Beta(a, b): read by beta_round and by confidence (engine.acceptance.confidence).
BETA_FIELDS = (
    field(
        "acceptance.beta_a",
        4.0,
        label="beta a",
        kind="number",
        low=0.0,
        high=BETA_MAX,
        low_open=True,
        help="beta_round: each cycle's rate ~ Beta(a, b); confidence: each token's q ~ Beta(a, b)",
        seed_key=True,
    ),
    field(
        "acceptance.beta_b",
        1.0,
        label="beta b",
        kind="number",
        low=0.0,
        high=BETA_MAX,
        low_open=True,
        help="beta_round, confidence: the b of Beta(a, b) (mean a / (a + b))",
        seed_key=True,
    ),
)


@ACCEPTANCE.register
class BetaRound(AcceptanceModel):
    name = "beta_round"
    description = "each cycle draws its rate theta ~ Beta(a, b), each draft accepted with theta"
    fields = BETA_FIELDS
    fittable = True

    # P(n >= j) = E[theta^j] = prod_{i<j} (a + i) / (a + b + i): the conditional rate of
    # position i + 1 is (a + i) / (a + b + i), rising with depth. Cycles are independent,
    # so one uniform per cycle through this survival draws them exactly (theta unseen).
    def position_probs(self, config: Any, k: int) -> np.ndarray:
        import numpy as np

        i = np.arange(k, dtype=float)
        return (config.beta_a + i) / (config.beta_a + config.beta_b + i)

    def params_text(self, config: Any) -> str:
        return f"rate ~ Beta({config.beta_a:g}, {config.beta_b:g}) per cycle"

    def fit(self, accepted: np.ndarray, reached: np.ndarray) -> list[dict[str, object]]:
        """a and b searched on a log scale in [BETA_LOW, BETA_MAX]
        (engine.acceptance.fitting.fit_two)."""
        import math

        import numpy as np

        from engine.acceptance.fitting import FloatArray, counts, fit_two

        accepted, reached = counts(accepted, reached)
        steps = np.arange(accepted.shape[1], dtype=float)

        def rates(log_a: FloatArray, log_b: FloatArray) -> FloatArray:
            a, b = np.exp(log_a)[:, None], np.exp(log_b)[:, None]
            out: FloatArray = (a + steps) / (a + b + steps)
            return out

        bounds = (math.log(BETA_LOW), math.log(BETA_MAX))
        log_a, log_b = fit_two(accepted, reached, rates, bounds)
        beta_a = np.clip(np.exp(log_a), BETA_LOW, BETA_MAX)
        beta_b = np.clip(np.exp(log_b), BETA_LOW, BETA_MAX)
        return [
            self.scenario_values({"acceptance.beta_a": float(a), "acceptance.beta_b": float(b)})
            for a, b in zip(beta_a, beta_b, strict=True)
        ]
