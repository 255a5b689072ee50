"""depth_rates: a conditional rate that depends on the drafter's K, not on the position.

Every other model's p_i depends on the position i alone, so the mean accepted length
M(K) = 1 + sum_{j<=K} P(n >= j) can only rise with K and saturate. Published tables of M
measured at several K (num_speculative_tokens) also fall beyond some K (a drafter trained
for a fixed depth; InferenceX's golden acceptance-length tables peak at K = 7 on one
target): the acceptance of a run depends on the K it was run with. This model says so in
the simplest way: a drafter run with K drafts per cycle accepts every position with the
same conditional rate a_K, from a list a_1, a_2, ..., a_m by K (K > m uses a_m), so that
M(K) = (1 - a_K^(K+1)) / (1 - a_K) reproduces a measured M at each K exactly
(engine.acceptance.catalog_fit fits it to catalog rows).

The rate is read at the scenario's K (``config.k``), whatever a cycle drafts: a cycle cut
short by the tail rule or a policy drafts a prefix of the same drafter's chain.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.acceptance.base import AcceptanceModel
from engine.core.config import field, rates_of
from engine.core.parts import ACCEPTANCE

if TYPE_CHECKING:
    import numpy as np


def rate_at_depth(rates: tuple[float, ...], k: int) -> float:
    """a_K of the list ``rates`` (a_1..a_m) at K = ``k`` >= 1: a_m beyond the list."""
    return rates[min(k, len(rates)) - 1]


@ACCEPTANCE.register
class DepthRates(AcceptanceModel):
    name = "depth_rates"
    description = (
        "P(accept) a_K at every position of a drafter run with K drafts, a_1..a_m by K "
        "(K > m uses a_m): M can fall with K"
    )
    fields = (
        field(
            "acceptance.depth_rates",
            "0.85,0.8,0.75",
            label="rate by K",
            kind="probs",
            help="depth_rates: conditional P(accept) at every position when K = 1, 2, ... "
            "drafts per cycle, comma-separated (K beyond the list uses the last)",
            seed_key=True,
        ),
    )

    def position_probs(self, config: Any, k: int) -> np.ndarray:
        import numpy as np

        return np.full(k, rate_at_depth(rates_of(config.depth_rates), int(config.k)))

    def params_text(self, config: Any) -> str:
        rate = rate_at_depth(rates_of(config.depth_rates), int(config.k))
        return f"rate by K {config.depth_rates} ({rate:g} at K = {config.k})"
