"""A linear cycle cost fitted to a measured K sweep (:func:`fit_linear_cost`), as a
scenario's cost (:func:`linear_cost_values`); re-exported by :mod:`engine.calibrate.fit`."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def fit_linear_cost(
    points: Sequence[tuple[int, float, float]], baseline_tpot: float
) -> tuple[float, float]:
    """(fixed, per_token) of a linear cycle cost in target decode steps, from a measured K
    sweep: each point (K, mean acceptance length M, time per output token) gives the time
    of one cycle, TPOT x M, which over the plain decoding step (``baseline_tpot``) is
    ``fixed + per_token x K``; ordinary least squares over the points. The speedup it
    predicts at K is M(K) / (fixed + per_token x K)."""
    if baseline_tpot <= 0.0:
        raise ValueError("baseline_tpot must be > 0")
    ks = np.array([float(k) for k, _, _ in points])
    if np.unique(ks).size < 2:
        raise ValueError("fit_linear_cost needs points at two K or more")
    steps = np.array([tpot * mean / baseline_tpot for _, mean, tpot in points])
    design = np.stack([np.ones_like(ks), ks], axis=1)
    (fixed, per_token), *_ = np.linalg.lstsq(design, steps, rcond=None)
    return float(fixed), float(per_token)


def linear_cost_values(cost: tuple[float, float], step_us: float) -> dict[str, object]:
    """SpecConfig values of the ``linear`` cost model for a fitted cost in target steps
    (:func:`fit_linear_cost`) and a decode step of ``step_us``: the verify pass is the
    step, each drafted token costs ``per_token`` steps and a cycle that drafts pays
    ``fixed - 1`` steps more (``cost.draft_fixed_us``), so a cycle of K drafts costs
    ``fixed + per_token x K`` steps. Negative terms (a sweep that measures a cycle cheaper
    than a step) are clipped to 0."""
    fixed, per_token = cost
    return {
        "cost.model": "linear",
        "verify_cost_us": step_us,
        "draft_cost_us": max(per_token, 0.0) * step_us,
        "cost.verify_token_us": 0.0,
        "cost.draft_fixed_us": max(fixed - 1.0, 0.0) * step_us,
    }


def linear_speedup(mean_length: float, k: int, cost: tuple[float, float]) -> float:
    """Long-run speedup of a cycle emitting ``mean_length`` tokens on average at a cost of
    ``fixed + per_token x k`` target steps (:func:`fit_linear_cost`)."""
    fixed, per_token = cost
    return mean_length / (fixed + per_token * k)
