"""What the acceptance models' maximum-likelihood fits share (engine.calibrate.fit).

The statistics are per-position binomial counts: for each draft position i (1-based),
``reached_i`` drafts had their first i - 1 tokens accepted and drafted position i, and
``accepted_i`` of them had token i accepted too. For a model whose cycles are independent
the likelihood of the observed accepted-prefix lengths factorises over positions,
``prod_i p_i^accepted_i (1 - p_i)^(reached_i - accepted_i)`` with ``p_i`` the model's
conditional rate. Counts come as arrays (D, m): D sets of counts (one log, or D bootstrap
draws) over m positions, each fitted on its own.

Imported by the models' fit methods only (it imports numpy): the models' files stay
importable without numpy.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]

Z95 = 1.959963984540054  # two-sided 95 % normal quantile
# The 2-parameter maximisations: a grid of this many points, then golden-section steps.
_GRID = 17
_GOLDEN_STEPS = 36
_INV_PHI = (math.sqrt(5.0) - 1.0) / 2.0


def counts(accepted: npt.ArrayLike, reached: npt.ArrayLike) -> tuple[FloatArray, FloatArray]:
    """``accepted`` and ``reached`` as float arrays (D, m) (one row for a 1-D array)."""
    return (
        np.atleast_2d(np.asarray(accepted, dtype=float)),
        np.atleast_2d(np.asarray(reached, dtype=float)),
    )


def wilson_interval(successes: float, trials: float, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion (Wilson 1927); (0, 1) for no trials."""
    if trials <= 0:
        return 0.0, 1.0
    p = successes / trials
    denom = 1.0 + z * z / trials
    centre = (p + z * z / (2.0 * trials)) / denom
    half = z * math.sqrt(p * (1.0 - p) / trials + z * z / (4.0 * trials * trials)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def log_likelihood(accepted: FloatArray, reached: FloatArray, rates: FloatArray) -> FloatArray:
    """Binomial log-likelihood summed over the last axis (positions); 0 log 0 = 0."""
    failed = reached - accepted
    with np.errstate(divide="ignore", invalid="ignore"):
        hits = np.where(accepted > 0, accepted * np.log(rates), 0.0)
        misses = np.where(failed > 0, failed * np.log1p(-rates), 0.0)
    total: FloatArray = np.sum(hits + misses, axis=-1)
    return total


def _maximise(f: Callable[[FloatArray], FloatArray], lo: float, hi: float, n: int) -> FloatArray:
    """argmax over [lo, hi] of ``n`` unimodal functions at once (``f`` maps n points to n
    values): the best of a grid, then golden-section search between its neighbours."""
    grid = np.linspace(lo, hi, _GRID)
    values = np.stack([f(np.full(n, x)) for x in grid])  # (grid, n)
    best = np.argmax(values, axis=0)
    a = grid[np.maximum(best - 1, 0)]
    b = grid[np.minimum(best + 1, _GRID - 1)]
    c = b - _INV_PHI * (b - a)
    d = a + _INV_PHI * (b - a)
    fc, fd = f(c), f(d)
    for _ in range(_GOLDEN_STEPS):
        left = fc >= fd  # the maximum lies in [a, d], else in [c, b]
        a, b = np.where(left, a, c), np.where(left, d, b)
        # the kept inner point keeps its value; one new point per function is evaluated
        new = np.where(left, b - _INV_PHI * (b - a), a + _INV_PHI * (b - a))
        f_new = f(new)
        c, d = np.where(left, new, d), np.where(left, c, new)
        fc, fd = np.where(left, f_new, fd), np.where(left, fc, f_new)
    x: FloatArray = (a + b) / 2.0
    return x


def fit_two(
    accepted: FloatArray,
    reached: FloatArray,
    rates_of: Callable[[FloatArray, FloatArray], FloatArray],
    bounds: tuple[float, float],
) -> tuple[FloatArray, FloatArray]:
    """Maximum likelihood of a two-parameter model, for each row of the counts (D, m):
    the outer search over y, the inner over x for each y, both in ``bounds``;
    ``rates_of(x, y)`` gives the conditional rates (D, m) of parameters (D,)."""
    n = accepted.shape[0]
    lo, hi = bounds

    def inner(y: FloatArray) -> FloatArray:
        return _maximise(lambda x: log_likelihood(accepted, reached, rates_of(x, y)), lo, hi, n)

    def profile(y: FloatArray) -> FloatArray:
        return log_likelihood(accepted, reached, rates_of(inner(y), y))

    y = _maximise(profile, lo, hi, n)
    return inner(y), y


def bootstrap_counts(
    rng: np.random.Generator,
    rates: FloatArray,
    accepted: FloatArray,
    reached: FloatArray,
    draws: int,
) -> tuple[FloatArray, FloatArray]:
    """``draws`` sets of counts (draws, m) redrawn from the conditional ``rates``: position 1
    keeps its drafts; position i + 1 is reached by the redrawn accepted_i times the observed
    share that went on (pooled windows with a shorter list stop early)."""
    m = rates.size
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(accepted[:-1] > 0, reached[1:] / accepted[:-1], 0.0)
    sim_a, sim_n = np.zeros((draws, m)), np.zeros((draws, m))
    n = np.full(draws, reached[0])
    for i in range(m):
        sim_n[:, i] = n
        sim_a[:, i] = rng.binomial(n.astype(np.int64), rates[i])
        if i + 1 < m:
            n = np.round(sim_a[:, i] * share[i])
    return sim_a, sim_n


def rate_from_mean_length(mean_length: float, k: int) -> float:
    """The constant conditional rate p with ``1 + sum_{i<=k} p^i = mean_length``, the mean
    acceptance length of K = ``k`` drafts (bisection; clipped to [0, 1])."""
    target = mean_length - 1.0
    if target <= 0.0:
        return 0.0
    if target >= k:
        return 1.0
    lo, hi = 0.0, 1.0
    for _ in range(80):
        mid = (lo + hi) / 2.0
        if sum(mid**i for i in range(1, k + 1)) < target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2.0


def rate_stderr_from_mean_length(p: float, k: int, drafts: float) -> float:
    """Standard error of p solved from M over ``drafts`` drafts (delta method): the accepted
    count of a draft has P(n >= j) = p^j for j <= k, so Var n = sum (2j - 1) p^j - (sum p^j)^2,
    and dM/dp = sum j p^(j-1). NaN when M does not move with p or no draft is counted."""
    j = np.arange(1, k + 1, dtype=float)
    mean = float(np.sum(p**j))
    var = float(np.sum((2 * j - 1) * p**j)) - mean * mean
    slope = float(np.sum(j * p ** (j - 1)))
    if slope <= 0.0 or drafts <= 0.0:
        return math.nan
    return math.sqrt(max(var, 0.0) / drafts) / slope
