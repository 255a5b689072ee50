"""The ``linear`` cost model: the original's, plus a per-token verify cost and a fixed cost
per drafting cycle."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from engine.cost.base import Times, as_float, check_parameter, scalar_or_array

COST_MAX_US = 1e9


@dataclass(frozen=True)
class LinearCost:
    """``draft_us = k * draft_cost_us + draft_fixed_us * [k > 0]``;
    ``verify_us = verify_cost_us + verify_token_us * (w - 1)``.

    All in microseconds; batch size and context length are ignored. ``verify_token_us = 0``
    and ``draft_fixed_us = 0`` is the original simulator. ``draft_fixed_us`` is what a cycle
    that drafts costs beyond its passes (the draft's prefill, launches, the rejection
    sampler): measured serving systems need it, a speculative cycle costing 1.1-1.2 target
    steps before its first drafted token (a plain step, k = 0, never pays it)."""

    draft_cost_us: float
    verify_cost_us: float
    verify_token_us: float = 0.0
    draft_fixed_us: float = 0.0

    def __post_init__(self) -> None:
        check_parameter("cost.draft_cost_us", self.draft_cost_us, 0.0, COST_MAX_US, False)
        check_parameter("cost.verify_cost_us", self.verify_cost_us, 0.0, COST_MAX_US, True)
        check_parameter("cost.verify_token_us", self.verify_token_us, 0.0, COST_MAX_US, False)
        check_parameter("cost.draft_fixed_us", self.draft_fixed_us, 0.0, COST_MAX_US, False)

    def draft_us(self, k: npt.ArrayLike, B: npt.ArrayLike = 1, L: npt.ArrayLike = 0) -> Times:
        """Microseconds to draft ``k >= 0`` tokens per sequence."""
        k_arr = as_float("k", k, 0.0)
        shape = np.broadcast_shapes(k_arr.shape, np.shape(B), np.shape(L))
        times = k_arr * self.draft_cost_us
        if self.draft_fixed_us:
            times = times + np.where(k_arr > 0, self.draft_fixed_us, 0.0)
        return scalar_or_array(np.broadcast_to(times, shape).copy())

    def draft_pass_us(self, w: npt.ArrayLike, B: npt.ArrayLike = 1, L: npt.ArrayLike = 0) -> Times:
        """Microseconds of one draft pass over ``w`` tokens per sequence (a level of a token
        tree): ``draft_cost_us``, whatever its width (the linear model prices passes)."""
        w_arr = as_float("w", w, 1.0)
        shape = np.broadcast_shapes(w_arr.shape, np.shape(B), np.shape(L))
        return scalar_or_array(np.full(shape, self.draft_cost_us))

    def verify_us(self, w: npt.ArrayLike, B: npt.ArrayLike = 1, L: npt.ArrayLike = 0) -> Times:
        """Microseconds of one target pass checking ``w >= 1`` tokens per sequence."""
        w_arr = as_float("w", w, 1.0)
        shape = np.broadcast_shapes(w_arr.shape, np.shape(B), np.shape(L))
        times = self.verify_cost_us + self.verify_token_us * (w_arr - 1.0)
        return scalar_or_array(np.broadcast_to(times, shape).copy())
