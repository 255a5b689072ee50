"""What the stepwise engine (:mod:`engine.simulate.stepwise`) takes besides prices: the
acceptance process it draws (:class:`Acceptance`) and a K policy's settings
(:class:`Policy`). Plain data, light to import: the policy parts build them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np


def _one_regime() -> np.ndarray:
    import numpy as np

    return np.ones(1)


@dataclass(frozen=True)
class Acceptance:
    """How many drafts a cycle accepts: a survival table per hidden regime, with a Markov
    chain over regimes, or per-token confidences drawn from a Beta.

    ``survival``: ``(G, K_max + 1)`` array, ``S[g, j] = P(n >= j | regime g)`` for a cycle
    of at least ``j`` drafts; ``S[:, 0] = 1``, non-increasing along each row, in [0, 1].
    ``stay``: probability of keeping the regime from one cycle to the next, in [0, 1]; else
    the regime is redrawn from ``mix``. ``mix``: ``(G,)`` start and stationary distribution
    of the regimes (sums to 1). ``beta``: ``(a, b)``, both > 0: each draft token's
    acceptance probability ``q ~ Beta(a, b)``, independent, seen by the draft; then
    ``survival`` is unused and there is one regime.
    """

    survival: np.ndarray | None = None
    stay: float = 1.0
    mix: np.ndarray = field(default_factory=_one_regime)
    beta: tuple[float, float] | None = None

    @property
    def regimes(self) -> int:
        """G, the number of hidden regimes."""
        import numpy as np

        return int(np.asarray(self.mix).size)

    @property
    def kind(self) -> str:
        """Which model: "confidence" (per-token q ~ Beta) or "survival" (a table per regime)."""
        return "confidence" if self.beta is not None else "survival"


@dataclass(frozen=True)
class Policy:
    """A K policy and its parameters (see the module docstring for each rule).

    ``name``: a registered policy (:data:`engine.core.parts.POLICY`), whose
    :meth:`~engine.policies.base.PolicyPart.chooser` runs it. ``k``: fixed's draft count
    (0..k_max; 0 is plain decoding), hf_heuristic's start, goodput's draft count without
    estimates. ``k_max``: the largest draft count the policy may choose (at most the price
    tables' K_max).
    ``k_min``, ``rule`` ("p_min" or "h"), ``p_min``, ``h``: threshold. ``window``: goodput's
    history in steps (>= 1). ``oracle_k``: oracle's ``(tokens + 1, G)`` int table of
    ``k*(r, g)`` in 0..k_max (row 0 unused). ``options``: (key, value) pairs of the
    policy's own fields, for a policy whose parameters are none of these.
    """

    name: str
    k: int = 5
    k_max: int = 32
    k_min: int = 1
    rule: str = "p_min"
    p_min: float = 0.5
    h: float = 0.5
    window: int = 16
    oracle_k: np.ndarray | None = None
    options: tuple[tuple[str, Any], ...] = ()
