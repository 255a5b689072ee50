"""Fit acceptance models to serving-log counts, recommend K, emit each engine's config.

See docs/model.md, "Calibration from serving logs". The statistics are
the counts: for each draft position i, ``reached_i`` drafts had their first i - 1 tokens
accepted and drafted position i, and ``accepted_i`` of them had token i accepted too. With
a fixed K per window, ``reached_1`` is the number of drafts and ``reached_i`` is the count
of drafts whose (i-1)-th token was accepted (vLLM's cumulative per-position counts). The
likelihood of the observed accepted-prefix lengths factorises over positions,
``prod_i p_i^accepted_i (1 - p_i)^(reached_i - accepted_i)`` with ``p_i`` the conditional
rate, for every model whose cycles are independent (fixed, position_decay, beta_round,
per_position): each model is fitted by maximum likelihood on those binomial counts and the
models are compared by :data:`CRITERION`.

Windows that give only a mean acceptance length (SGLang ``accept len``, vLLM v0, the old
llama.cpp line) carry no per-position information: they allow the ``fixed`` model only,
solved from ``1 + sum_{i<=K} p^i = M``.

:func:`recommend` prices every K with the exact engine (``engine.simulate.exact``) under the
scenario's cost model and carries the fit's uncertainty by posterior draws of the chosen
model's parameters. :func:`fit_linear_cost` turns a measured K sweep into a linear cost in
target decode steps; :func:`emit` writes the recommendation as each engine's settings.
"""

from __future__ import annotations

import dataclasses
import json
import math
import shlex
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import numpy.typing as npt

from engine.acceptance.draft_models import get_model
from engine.calibrate import VLLM_METHODS
from engine.calibrate.logs import mean_length_of
from engine.core.config import BETA_MAX, SpecConfig
from engine.simulate.exact import exact_metrics_many

FloatArray = npt.NDArray[np.float64]

# How models are compared: the Bayesian information criterion, smaller is better.
CRITERION = "BIC = -2 ln L + k ln N (k parameters, N Bernoulli trials = sum of reached_i)"
MODEL_NAMES = ("fixed", "position_decay", "beta_round", "per_position")
Z95 = 1.959963984540054  # two-sided 95 % normal quantile
# beta_round's a and b are searched in [BETA_LOW, BETA_MAX] (SpecConfig wants them > 0).
BETA_LOW = 1e-3
# The 2-parameter maximisations: a grid of this many points, then golden-section steps.
_GRID = 17
_GOLDEN_STEPS = 36
_INV_PHI = (math.sqrt(5.0) - 1.0) / 2.0


class CalibrationError(ValueError):
    """Nothing in the windows allows a fit (one line, for the CLI)."""


class WindowLike(Protocol):
    """What :func:`calibrate` reads of an ``engine.calibrate.logs.Window``."""

    @property
    def source(self) -> str: ...
    @property
    def drafts(self) -> float | None: ...
    @property
    def drafted(self) -> int | None: ...
    @property
    def accepted(self) -> int | None: ...
    @property
    def k(self) -> int | None: ...
    @property
    def mean_length(self) -> float | None: ...
    @property
    def position_accepted(self) -> tuple[float, ...] | None: ...
    @property
    def windows(self) -> int: ...  # the log's windows it stands for (merged ones: several)


@dataclass(frozen=True)
class PositionRate:
    """The pooled conditional acceptance rate of one draft position (1-based), with its
    95 % Wilson score interval [low, high] from the counts."""

    position: int
    reached: float
    accepted: float
    rate: float
    low: float
    high: float


@dataclass(frozen=True)
class ModelFit:
    """One acceptance model fitted to the counts.

    ``values``: the SpecConfig values it stands for (by key, ``draft_model`` first);
    ``log_likelihood`` and ``criterion`` (:data:`CRITERION`) are NaN when the windows give
    no per-position counts; ``rms_error``: RMS of the fitted against the observed
    conditional rates over the observed positions (NaN without them); ``interval``: 95 %
    intervals of the parameters where the counts give one (``fixed`` only: Wilson on the
    pooled counts, or the delta method on M from a mean length)."""

    name: str
    values: dict[str, object]
    parameters: int
    log_likelihood: float
    criterion: float
    rms_error: float
    interval: dict[str, tuple[float, float]] = field(default_factory=dict)


@dataclass
class Calibration:
    """The fit of a log: pooled counts, per-position rates, every model, the chosen one.

    ``windows``: windows used; ``drafts``: their drafts (where known); ``k``: the K the log
    was recorded at (the one with most drafts when windows differ), None when unknown."""

    windows: int
    drafts: float
    k: int | None
    sources: tuple[str, ...]
    positions: list[PositionRate]
    models: list[ModelFit]
    chosen: ModelFit
    notes: list[str]

    def config(self, base: SpecConfig) -> SpecConfig:
        """``base`` with the chosen model's acceptance values."""
        return base.replace(**self.chosen.values)


@dataclass
class Recommendation:
    """The best K under a scenario, its predicted speedup and 95 % interval (from posterior
    draws of the fit), every K within ``band`` of the best, and the change against the K
    the log was recorded at (``change`` = speedup / log_speedup - 1)."""

    k: int
    speedup: float
    low: float
    high: float
    band: tuple[int, ...]
    log_k: int | None
    log_speedup: float | None
    change: float | None
    curve: list[tuple[int, float, float, float]]  # (K, speedup, low, high), K = 1..k_max


# ---------------------------------------------------------------------------- statistics


def wilson_interval(successes: float, trials: float, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion (Wilson 1927); (0, 1) for no trials."""
    if trials <= 0:
        return 0.0, 1.0
    p = successes / trials
    denom = 1.0 + z * z / trials
    centre = (p + z * z / (2.0 * trials)) / denom
    half = z * math.sqrt(p * (1.0 - p) / trials + z * z / (4.0 * trials * trials)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def _log_likelihood(accepted: FloatArray, reached: FloatArray, rates: FloatArray) -> FloatArray:
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


def _fit_two(
    accepted: FloatArray,
    reached: FloatArray,
    rates_of: Callable[[FloatArray, FloatArray], FloatArray],
    bounds: tuple[float, float],
) -> tuple[FloatArray, FloatArray]:
    """Maximum likelihood of a two-parameter model, for each row of the counts (D, m):
    the outer search over y, the inner over x for each y; ``rates_of(x, y)`` gives the
    conditional rates (D, m) of parameters (D,)."""
    n = accepted.shape[0]
    lo, hi = bounds

    def inner(y: FloatArray) -> FloatArray:
        return _maximise(lambda x: _log_likelihood(accepted, reached, rates_of(x, y)), lo, hi, n)

    def profile(y: FloatArray) -> FloatArray:
        return _log_likelihood(accepted, reached, rates_of(inner(y), y))

    y = _maximise(profile, lo, hi, n)
    return inner(y), y


def _decay_rates(m: int) -> Callable[[FloatArray, FloatArray], FloatArray]:
    steps = np.arange(m, dtype=float)

    def rates(base: FloatArray, factor: FloatArray) -> FloatArray:
        out: FloatArray = base[:, None] * factor[:, None] ** steps
        return out

    return rates


def _beta_rates(m: int) -> Callable[[FloatArray, FloatArray], FloatArray]:
    # beta_round's conditional rate at position i + 1 is (a + i) / (a + b + i)
    # (engine.acceptance.draft_models.BetaRound); a and b are searched on a log scale.
    steps = np.arange(m, dtype=float)

    def rates(log_a: FloatArray, log_b: FloatArray) -> FloatArray:
        a, b = np.exp(log_a)[:, None], np.exp(log_b)[:, None]
        out: FloatArray = (a + steps) / (a + b + steps)
        return out

    return rates


_BETA_BOUNDS = (math.log(BETA_LOW), math.log(BETA_MAX))


def fit_counts(accepted: FloatArray, reached: FloatArray) -> dict[str, FloatArray]:
    """Maximum-likelihood parameters of every model for each row of counts (D, m):
    ``p`` (fixed), ``decay_base``/``decay_factor``, ``beta_a``/``beta_b``, ``rates`` (D, m)."""
    accepted = np.atleast_2d(np.asarray(accepted, dtype=float))
    reached = np.atleast_2d(np.asarray(reached, dtype=float))
    m = accepted.shape[1]
    with np.errstate(divide="ignore", invalid="ignore"):
        rates = np.where(reached > 0, accepted / reached, 0.0)
        p = accepted.sum(axis=1) / reached.sum(axis=1)
    base, factor = _fit_two(accepted, reached, _decay_rates(m), (0.0, 1.0))
    log_a, log_b = _fit_two(accepted, reached, _beta_rates(m), _BETA_BOUNDS)
    return {
        "p": p,
        "decay_base": base,
        "decay_factor": factor,
        "beta_a": np.exp(log_a),
        "beta_b": np.exp(log_b),
        "rates": rates,
    }


def model_rates(name: str, values: dict[str, object], m: int) -> FloatArray:
    """The conditional rates p_1..p_m of a model's SpecConfig values."""
    config = SpecConfig().replace(**values)
    rates: FloatArray = np.asarray(get_model(name).position_probs(config, m), dtype=float)
    return rates


def _values(name: str, params: dict[str, FloatArray], row: int) -> dict[str, object]:
    """SpecConfig values of one model from row ``row`` of :func:`fit_counts`."""
    if name == "fixed":
        return {"draft_model": "fixed", "acceptance_rate": float(params["p"][row])}
    if name == "position_decay":
        return {
            "draft_model": "position_decay",
            "decay_base": float(params["decay_base"][row]),
            "decay_factor": float(params["decay_factor"][row]),
        }
    if name == "beta_round":
        return {
            "draft_model": "beta_round",
            "acceptance.beta_a": float(np.clip(params["beta_a"][row], BETA_LOW, BETA_MAX)),
            "acceptance.beta_b": float(np.clip(params["beta_b"][row], BETA_LOW, BETA_MAX)),
        }
    rates = params["rates"][row]
    return {"draft_model": "per_position", "acceptance.rates": _rates_text(rates)}


def _rates_text(rates: FloatArray) -> str:
    """The ``acceptance.rates`` text of conditional rates (6 significant digits)."""
    return ",".join(f"{float(np.clip(r, 0.0, 1.0)):.6g}" for r in rates)


# ---------------------------------------------------------------------------- pooling


def _pool_positions(windows: Sequence[WindowLike]) -> tuple[FloatArray, FloatArray]:
    """Pooled (accepted_i, reached_i) over the windows with per-position counts: each window
    contributes the positions it lists (a list shorter than K leaves the rest unobserved)."""
    m = max(len(w.position_accepted or ()) for w in windows)
    accepted, reached = np.zeros(m), np.zeros(m)
    for w in windows:
        counts = np.asarray(w.position_accepted, dtype=float)
        drafts = float(w.drafts or 0.0)
        n = counts.size
        accepted[:n] += counts
        reached[:n] += np.concatenate(([drafts], counts[:-1]))
    keep = int(np.argmax(reached <= 0)) if np.any(reached <= 0) else m
    return accepted[:keep], reached[:keep]


def fixed_from_mean(mean_length: float, k: int) -> float:
    """The p of the fixed model with ``1 + sum_{i<=k} p^i = mean_length`` (bisection;
    clipped to [0, 1])."""
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


def _fixed_stderr(p: float, k: int, drafts: float) -> float:
    """Standard error of p solved from M over ``drafts`` drafts (delta method): the accepted
    count of a draft has P(n >= j) = p^j for j <= k, so Var n = sum (2j - 1) p^j - (sum p^j)^2,
    and dM/dp = sum j p^(j-1)."""
    j = np.arange(1, k + 1, dtype=float)
    mean = float(np.sum(p**j))
    var = float(np.sum((2 * j - 1) * p**j)) - mean * mean
    slope = float(np.sum(j * p ** (j - 1)))
    if slope <= 0.0 or drafts <= 0.0:
        return math.nan
    return math.sqrt(max(var, 0.0) / drafts) / slope


def _count(windows: Iterable[WindowLike]) -> int:
    """The log's windows that ``windows`` stand for (a merged window stands for several)."""
    return sum(w.windows for w in windows)


def _log_k(windows: Sequence[WindowLike]) -> tuple[int | None, list[str]]:
    """The K the log was recorded at (the one with most drafts) and a note if several."""
    weight: dict[int, float] = {}
    for w in windows:
        if w.k is not None:
            weight[w.k] = weight.get(w.k, 0.0) + float(w.drafts or w.windows)
    if not weight:
        return None, []
    k = max(weight, key=lambda key: (weight[key], key))
    notes = []
    if len(weight) > 1:
        ks = ", ".join(str(x) for x in sorted(weight))
        notes.append(f"windows at several K ({ks}): the log's K is taken as {k} (most drafts)")
    return k, notes


# ---------------------------------------------------------------------------- calibrate


def calibrate(windows: Sequence[WindowLike], *, k: int | None = None) -> Calibration:
    """Pool ``windows`` by their counts and fit every acceptance model.

    With per-position counts: conditional rates with Wilson intervals, the four models by
    maximum likelihood, the one with the smallest :data:`CRITERION` chosen. Without them
    (mean acceptance length only): the fixed model alone, from M and K, with its
    uncertainty from the draft count when the log gives one. ``k`` stands for the K of
    windows that do not state it (SGLang's ``accept len``). Raises
    :class:`CalibrationError` when no window allows a fit."""
    windows = list(windows)
    if not windows:
        raise CalibrationError("no windows to calibrate from")
    if k is not None:
        windows = [_with_k(w, k) for w in windows]
    log_k, notes = _log_k(windows)
    sources = tuple(sorted({w.source for w in windows}))
    with_positions = [w for w in windows if w.position_accepted and w.drafts]
    if with_positions:
        left_out = _count(windows) - _count(with_positions)
        if left_out:
            notes.append(
                f"{left_out} window(s) without per-position counts were left out of the fit"
            )
        return _calibrate_positions(with_positions, log_k, sources, notes)
    return _calibrate_mean(windows, log_k, sources, notes)


def _with_k(w: WindowLike, k: int) -> WindowLike:
    if w.k is not None:
        return w
    if dataclasses.is_dataclass(w) and not isinstance(w, type):
        replaced: WindowLike = dataclasses.replace(w, k=k)
        return replaced
    raise CalibrationError("cannot set K on a window that is not a dataclass")


def _calibrate_positions(
    windows: Sequence[WindowLike], log_k: int | None, sources: tuple[str, ...], notes: list[str]
) -> Calibration:
    accepted, reached = _pool_positions(windows)
    if accepted.size == 0:
        raise CalibrationError("the windows' per-position counts have no drafts")
    observed = accepted / reached
    positions = [
        PositionRate(i + 1, float(n), float(a), float(a / n), *wilson_interval(a, n))
        for i, (a, n) in enumerate(zip(accepted.tolist(), reached.tolist(), strict=True))
    ]
    params = fit_counts(accepted[None, :], reached[None, :])
    trials = float(reached.sum())
    m = accepted.size
    models = []
    for name in MODEL_NAMES:
        values = _values(name, params, 0)
        rates = model_rates(name, values, m)
        loglik = float(_log_likelihood(accepted, reached, rates))
        count = m if name == "per_position" else (1 if name == "fixed" else 2)
        interval = {}
        if name == "fixed":
            total = float(accepted.sum())
            interval["acceptance_rate"] = wilson_interval(total, trials)
        models.append(
            ModelFit(
                name=name,
                values=values,
                parameters=count,
                log_likelihood=loglik,
                criterion=-2.0 * loglik + count * math.log(trials),
                rms_error=float(np.sqrt(np.mean((rates - observed) ** 2))),
                interval=interval,
            )
        )
    chosen = min(models, key=lambda fit: fit.criterion)
    errors = ", ".join(f"{f.name} {f.rms_error:.4f}" for f in models)
    notes.insert(0, f"chose {chosen.name} by {CRITERION}")
    notes.insert(1, f"fit error (RMS of conditional rates over {m} positions): {errors}")
    drafts = float(sum(float(w.drafts or 0.0) for w in windows))
    return Calibration(_count(windows), drafts, log_k, sources, positions, models, chosen, notes)


def _calibrate_mean(
    windows: Sequence[WindowLike], log_k: int | None, sources: tuple[str, ...], notes: list[str]
) -> Calibration:
    found = [(w, mean_length_of(w)) for w in windows]
    usable = [(w, mean) for w, mean in found if mean is not None and w.k]
    beyond = [(w, m) for w, m in usable if w.k is not None and m > w.k + 1.0 + 1e-9]
    if beyond and len(beyond) < len(usable):  # another drafter's lines, or another K
        usable = [pair for pair in usable if pair not in beyond]
        notes.append(
            f"{_count(w for w, _ in beyond)} window(s) with M above K + 1 left out (another "
            "drafter, or recorded at a larger K)"
        )
    counted = [(w, m) for w, m in usable if w.drafts]
    if counted and len(counted) < len(usable):  # weight by drafts: the uncounted can't be
        notes.append(
            f"{_count(w for w, _ in usable) - _count(w for w, _ in counted)} window(s) without "
            "a draft count left out of the fit (the others are weighted by their drafts)"
        )
        usable = counted
    if not usable:
        raise CalibrationError(
            "the windows give no per-position counts and no mean acceptance length with a "
            "known K: pass the K the log was recorded at"
        )
    # Pool by K: M of a K is the drafts-weighted mean (equal weights where drafts are
    # unknown); p solves each K's M, and the K with most drafts decides (log_k).
    by_k: dict[int, list[tuple[float, float, int]]] = {}
    for w, mean in usable:
        assert w.k is not None and mean is not None
        by_k.setdefault(w.k, []).append((mean, float(w.drafts or 0.0), w.windows))
    k = log_k if log_k in by_k else max(by_k)
    pairs = by_k[k]
    drafts = sum(d for _, d, _ in pairs)
    count = sum(n for _, _, n in pairs)
    known = all(d > 0 for _, d, _ in pairs)
    mean_length = (
        sum(m * d for m, d, _ in pairs) / drafts
        if known
        else sum(m * n for m, _, n in pairs) / count
    )
    p = fixed_from_mean(mean_length, k)
    interval: dict[str, tuple[float, float]] = {}
    what = ", ".join(sources)
    notes.append(
        f"no per-position rates in the log ({what}): only the fixed model can be fitted, "
        f"from M = {mean_length:.3f} at K = {k}: p = {p:.4f}"
    )
    if mean_length > k + 1.0:
        notes.append(
            f"M = {mean_length:.3f} exceeds K + 1 = {k + 1}: the log was recorded at a larger K"
        )
    if known and 0.0 < p < 1.0:
        se = _fixed_stderr(p, k, drafts)
        interval["acceptance_rate"] = (max(0.0, p - Z95 * se), min(1.0, p + Z95 * se))
        low, high = interval["acceptance_rate"]
        notes.append(f"p in [{low:.4f}, {high:.4f}] (95 %, from {drafts:.0f} drafts)")
    elif known:  # every draft accepted, or none: a one-sided 95 % bound
        if p >= 1.0:
            interval["acceptance_rate"] = (0.05 ** (1.0 / (k * drafts)), 1.0)
        else:
            interval["acceptance_rate"] = (0.0, 1.0 - 0.05 ** (1.0 / drafts))
        low, high = interval["acceptance_rate"]
        notes.append(f"p in [{low:.4f}, {high:.4f}] (95 %, one-sided, {drafts:.0f} drafts)")
    else:
        notes.append("its uncertainty is unknown: the log gives no draft count")
    if len(by_k) > 1:
        notes.append(f"windows at other K ({', '.join(map(str, sorted(by_k)))}) not pooled")
    fit = ModelFit(
        name="fixed",
        values={"draft_model": "fixed", "acceptance_rate": p},
        parameters=1,
        log_likelihood=math.nan,
        criterion=math.nan,
        rms_error=math.nan,
        interval=interval,
    )
    return Calibration(count, float(drafts), log_k, sources, [], [fit], fit, notes)


# ---------------------------------------------------------------------------- recommend


def posterior_values(cal: Calibration, draws: int, seed: int = 0) -> list[dict[str, object]]:
    """``draws`` samples of the chosen model's SpecConfig values carrying the fit's
    uncertainty: Beta(1 + accepted, 1 + failed) posteriors for ``fixed`` and
    ``per_position``; a parametric bootstrap (counts redrawn from the fitted rates, the
    model refitted) for ``position_decay`` and ``beta_round``; a normal on the delta-method
    interval for ``fixed`` from a mean length; the fitted values repeated when the
    uncertainty is unknown."""
    rng = np.random.default_rng(seed)
    chosen = cal.chosen
    if not cal.positions:
        span = chosen.interval.get("acceptance_rate")
        p = float(chosen.values["acceptance_rate"])  # type: ignore[arg-type]
        if span is None:
            return [dict(chosen.values) for _ in range(draws)]
        sd = (span[1] - span[0]) / (2.0 * Z95)
        samples = np.clip(rng.normal(p, sd, draws), 0.0, 1.0)
        return [{"draft_model": "fixed", "acceptance_rate": float(x)} for x in samples]
    accepted = np.array([r.accepted for r in cal.positions])
    reached = np.array([r.reached for r in cal.positions])
    failed = reached - accepted
    if chosen.name == "fixed":
        samples = rng.beta(1.0 + accepted.sum(), 1.0 + failed.sum(), draws)
        return [{"draft_model": "fixed", "acceptance_rate": float(x)} for x in samples]
    if chosen.name == "per_position":
        rates = rng.beta(1.0 + accepted, 1.0 + failed, (draws, accepted.size))
        return [{"draft_model": "per_position", "acceptance.rates": _rates_text(r)} for r in rates]
    fitted = model_rates(chosen.name, chosen.values, accepted.size)
    sim_accepted, sim_reached = _bootstrap_counts(rng, fitted, accepted, reached, draws)
    params = fit_counts(sim_accepted, sim_reached)
    return [_values(chosen.name, params, row) for row in range(draws)]


def _bootstrap_counts(
    rng: np.random.Generator,
    rates: FloatArray,
    accepted: FloatArray,
    reached: FloatArray,
    draws: int,
) -> tuple[FloatArray, FloatArray]:
    """Counts redrawn from ``rates``: position 1 keeps its drafts; position i + 1 is reached
    by the redrawn accepted_i times the observed share that went on (pooled windows with a
    shorter list stop early)."""
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


def recommend(
    cal: Calibration,
    scenario: SpecConfig,
    *,
    k_max: int = 16,
    band: float = 0.02,
    draws: int = 200,
    seed: int = 0,
) -> Recommendation:
    """The best K in 1..k_max for ``scenario`` with the fitted acceptance: speedup_exact of
    ``cal.config(scenario)`` at each K (engine.simulate.exact, the scenario's cost model and
    length), a 95 % interval at each K from ``draws`` posterior draws
    (:func:`posterior_values`; percentiles 2.5 and 97.5), the tolerance ``band`` (every K
    within ``band`` of the best speedup) and the change against the log's K. K is a fixed
    speculation length: the scenario's K policy is set to ``fixed`` and its draft shape to a
    chain (a log's K is a chain's)."""
    ks = list(range(1, k_max + 1))
    scenario = scenario.replace(policy="fixed", shape="chain")
    base = cal.config(scenario)
    samples = posterior_values(cal, draws, seed) if draws > 0 else []
    configs = [base.replace(k=k) for k in ks]
    configs += [scenario.replace(**values, k=k) for values in samples for k in ks]
    speedups = exact_metrics_many(configs)["speedup_exact"]
    point = speedups[:k_max]
    if samples:
        spread = speedups[k_max:].reshape(len(samples), k_max)
        low, high = np.percentile(spread, [2.5, 97.5], axis=0)
        # At a boundary estimate (every draft accepted) the posterior lies on one side of
        # it: the interval still holds the estimate.
        low, high = np.minimum(low, point), np.maximum(high, point)
    else:
        low, high = point, point
    best = int(np.argmax(point))
    floor = (1.0 - band) * point[best]
    within = tuple(k for k, s in zip(ks, point.tolist(), strict=True) if s >= floor)
    log_k, log_speedup, change = cal.k, None, None
    if log_k is not None:
        log_speedup = float(
            point[log_k - 1]
            if log_k <= k_max
            else exact_metrics_many([base.replace(k=log_k)])["speedup_exact"][0]
        )
        change = float(point[best]) / log_speedup - 1.0
    curve = [
        (k, float(s), float(lo), float(hi))
        for k, s, lo, hi in zip(ks, point, low, high, strict=True)
    ]
    return Recommendation(
        k=ks[best],
        speedup=float(point[best]),
        low=float(low[best]),
        high=float(high[best]),
        band=within,
        log_k=log_k,
        log_speedup=log_speedup,
        change=change,
        curve=curve,
    )


# ---------------------------------------------------------------------------- linear cost


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


# ---------------------------------------------------------------------------- emit

# Flags and fields, as each engine documents them:
# - vLLM: --speculative-config JSON with "method" and "num_speculative_tokens"
#   (docs.vllm.ai/en/latest/features/speculative_decoding/eagle/; SpeculativeMethod in
#   docs.vllm.ai/en/v0.12.0/api/vllm/config/speculative/: ngram, medusa, mlp_speculator,
#   draft_model, suffix, eagle, eagle3, mtp...).
# - SGLang: --speculative-algorithm (EAGLE, EAGLE3, STANDALONE, NGRAM),
#   --speculative-num-steps, --speculative-eagle-topk, --speculative-num-draft-tokens
#   (docs.sglang.io/docs/advanced_features/speculative_decoding); a chain of K drafts is
#   topk 1 with K + 1 draft tokens (the root and K).
# - llama.cpp: --draft-max N, --draft-min N, --draft-p-min P (common/arg.cpp; defaults
#   changed between versions: draft-min 0 or 5, draft-p-min 0.9, 0.75 or 0.0). A fixed K
#   is --draft-min 0 --draft-p-min 0: drafting never stops early on a low probability.
# - TensorRT-LLM: max_draft_len in the speculative_config of the LLM API / YAML
#   (nvidia.github.io/TensorRT-LLM/features/speculative-decoding.html).
_SGLANG_ALGORITHM = {
    "eagle": "EAGLE",
    "eagle3": "EAGLE3",
    "draft_model": "STANDALONE",
    "ngram": "NGRAM",
}


def emit(rec: Recommendation, cal: Calibration, method: str = "draft_model") -> dict[str, str]:
    """The recommended K as each engine's settings: ``vllm``, ``sglang``, ``llama.cpp``,
    ``tensorrt-llm`` (text to paste). ``method``: vLLM's speculative method name (eagle,
    eagle3, draft_model, ngram, mtp...), mapped to SGLang's algorithm where it has one.
    ``cal`` is the fit the recommendation came from (kept for settings that depend on it;
    none does yet: every engine here takes a fixed K). A command line's arguments are each
    quoted for a POSIX shell (the JSON serialised, then quoted once); ValueError for a
    ``method`` not in :data:`VLLM_METHODS`."""
    if method not in VLLM_METHODS:
        raise ValueError(f"method: expected one of {', '.join(VLLM_METHODS)}")
    k = int(rec.k)
    vllm = json.dumps({"method": method, "num_speculative_tokens": k})
    sglang = (
        f"--speculative-num-steps {k} --speculative-eagle-topk 1 "
        f"--speculative-num-draft-tokens {k + 1}"
    )
    algorithm = _SGLANG_ALGORITHM.get(method)
    if algorithm is not None:
        sglang = f"--speculative-algorithm {algorithm} " + sglang
    return {
        "vllm": f"--speculative-config {shlex.quote(vllm)}",
        "sglang": sglang,
        "llama.cpp": f"--draft-max {k} --draft-min 0 --draft-p-min 0",
        "tensorrt-llm": f"max_draft_len: {k}",
    }
