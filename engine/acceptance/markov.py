"""markov: a hidden easy/hard regime kept from cycle to cycle."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.acceptance.base import AcceptanceModel
from engine.core.config import field
from engine.core.parts import ACCEPTANCE

if TYPE_CHECKING:
    import numpy as np


@ACCEPTANCE.register
class MarkovRegime(AcceptanceModel):
    name = "markov"
    description = (
        "a hidden easy/hard regime (p_easy, p_hard), kept from cycle to cycle with P = stay, "
        "else redrawn (easy with P = easy_frac)"
    )
    cycles_independent = False
    fields = (
        field(
            "acceptance.p_easy",
            0.9,
            label="p easy",
            kind="prob",
            help="markov: P(accept) of every draft token in the easy regime",
            seed_key=True,
        ),
        field(
            "acceptance.p_hard",
            0.3,
            label="p hard",
            kind="prob",
            help="markov: P(accept) of every draft token in the hard regime",
            seed_key=True,
        ),
        field(
            "acceptance.stay",
            0.95,
            label="stay",
            kind="prob",
            help="markov: P(the regime is kept from one cycle to the next), else redrawn",
            seed_key=True,
        ),
        field(
            "acceptance.easy_frac",
            0.5,
            label="easy frac",
            kind="prob",
            help="markov: stationary share of the easy regime (a redraw lands on easy with it)",
            seed_key=True,
        ),
    )

    def regimes(self, config: Any, k: int) -> tuple[np.ndarray, float, np.ndarray]:
        import numpy as np

        j = np.arange(k + 1, dtype=float)
        survival = np.stack((config.p_easy**j, config.p_hard**j))
        return survival, config.stay, np.array([config.easy_frac, 1.0 - config.easy_frac])

    # The stationary cycle's marginal: P(n >= j) = f p_easy^j + (1 - f) p_hard^j, given as
    # conditional rates (its long-run figures; finite-length values need the regime chain).
    def position_probs(self, config: Any, k: int) -> np.ndarray:
        import numpy as np

        survival, _, mix = self.regimes(config, k)
        marginal = mix @ survival
        with np.errstate(invalid="ignore", divide="ignore"):
            cond = marginal[1:] / marginal[:-1]
        return np.where(marginal[:-1] > 0, cond, 0.0)

    def accept_token(self, config: Any, rng: np.random.Generator, position: int) -> bool:
        raise NotImplementedError("markov cycles are drawn by the K-policy engine")

    def params_text(self, config: Any) -> str:
        return (
            f"easy {config.p_easy:g}, hard {config.p_hard:g}, stay {config.stay:g}, "
            f"easy share {config.easy_frac:g}"
        )
