"""Fit acceptance models to serving-log counts, recommend K, emit each engine's config.

See docs/model.md, "Calibration from serving logs". The statistics are
the counts: for each draft position i, ``reached_i`` drafts had their first i - 1 tokens
accepted and drafted position i, and ``accepted_i`` of them had token i accepted too. With
a fixed K per window, ``reached_1`` is the number of drafts and ``reached_i`` is the count
of drafts whose (i-1)-th token was accepted (vLLM's cumulative per-position counts). The
likelihood of the observed accepted-prefix lengths factorises over positions,
``prod_i p_i^accepted_i (1 - p_i)^(reached_i - accepted_i)`` with ``p_i`` the conditional
rate, for every model whose cycles are independent. The candidates are the registered
acceptance models that declare themselves ``fittable``
(:class:`engine.acceptance.base.AcceptanceModel`: each fits itself by maximum likelihood on
those binomial counts, :mod:`engine.acceptance.fitting`), and they are compared by
:data:`CRITERION`.

Windows that give only a mean acceptance length (SGLang ``accept len``, vLLM v0, the old
llama.cpp line) carry no per-position information: they allow only the candidate whose
rate is one field at every position (``constant_rate_field``: fixed), solved from
``1 + sum_{i<=K} p^i = M``.

:func:`recommend` prices every K with the exact engine (``engine.simulate.exact``) under the
scenario's cost model and carries the fit's uncertainty by posterior draws of the chosen
model's parameters. :func:`fit_linear_cost` turns a measured K sweep into a linear cost in
target decode steps; :func:`emit` writes the recommendation as each engine's settings.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt

from engine.acceptance.base import AcceptanceModel
from engine.acceptance.draft_models import get_model
from engine.acceptance.fitting import Z95 as Z95
from engine.acceptance.fitting import log_likelihood, rate_stderr_from_mean_length
from engine.acceptance.fitting import rate_from_mean_length as fixed_from_mean
from engine.acceptance.fitting import wilson_interval as wilson_interval
from engine.calibrate.calibration import Calibration as Calibration
from engine.calibrate.calibration import ModelFit as ModelFit
from engine.calibrate.calibration import PositionRate as PositionRate
from engine.calibrate.calibration import Recommendation as Recommendation
from engine.calibrate.emit import emit as emit
from engine.calibrate.linear_cost import fit_linear_cost as fit_linear_cost
from engine.calibrate.linear_cost import linear_cost_values as linear_cost_values
from engine.calibrate.linear_cost import linear_speedup as linear_speedup
from engine.calibrate.logs.window import WindowLike as WindowLike
from engine.calibrate.logs.window import mean_length_of
from engine.core.config import DEFAULTS, SpecConfig
from engine.core.parts import ACCEPTANCE, POLICY, SHAPE
from engine.simulate.exact import exact_metrics_many

FloatArray = npt.NDArray[np.float64]

# How models are compared: the Bayesian information criterion, smaller is better.
CRITERION = "BIC = -2 ln L + k ln N (k parameters, N Bernoulli trials = sum of reached_i)"


class CalibrationError(ValueError):
    """Nothing in the windows allows a fit (one line, for the CLI)."""


# ---------------------------------------------------------------------------- candidates


def candidates() -> list[AcceptanceModel]:
    """The acceptance models calibration fits (``fittable``), simplest first: a fixed number
    of parameters before one per position, fewer fields before more, registration order
    among equals (fixed, position_decay, beta_round, per_position)."""
    fittable = [ACCEPTANCE[name] for name in ACCEPTANCE.where(lambda model: model.fittable)]
    return sorted(fittable, key=lambda model: (model.rate_per_position, model.fit_parameters(1)))


def _constant_model() -> AcceptanceModel:
    """The candidate a mean acceptance length alone can fit: its one parameter is the rate
    at every position (``constant_rate_field``)."""
    for model in candidates():
        if model.constant_rate_field is not None:
            return model
    raise CalibrationError("no fittable acceptance model has a constant rate")


def model_rates(name: str, values: dict[str, object], m: int) -> FloatArray:
    """The conditional rates p_1..p_m of a model's SpecConfig values."""
    config = SpecConfig().replace(**values)
    rates: FloatArray = np.asarray(get_model(name).position_probs(config, m), dtype=float)
    return rates


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
    trials = float(reached.sum())
    m = accepted.size
    models = []
    for model in candidates():
        values = model.fit(accepted[None, :], reached[None, :])[0]
        rates = model_rates(model.name, values, m)
        loglik = float(log_likelihood(accepted, reached, rates))
        count = model.fit_parameters(m)
        models.append(
            ModelFit(
                name=model.name,
                values=values,
                parameters=count,
                log_likelihood=loglik,
                criterion=-2.0 * loglik + count * math.log(trials),
                rms_error=float(np.sqrt(np.mean((rates - observed) ** 2))),
                interval=model.fit_interval(accepted, reached),
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
    model = _constant_model()
    key = model.constant_rate_field
    assert key is not None
    p = fixed_from_mean(mean_length, k)
    interval: dict[str, tuple[float, float]] = {}
    what = ", ".join(sources)
    notes.append(
        f"no per-position rates in the log ({what}): only the {model.name} model can be "
        f"fitted, "
        f"from M = {mean_length:.3f} at K = {k}: p = {p:.4f}"
    )
    if mean_length > k + 1.0:
        notes.append(
            f"M = {mean_length:.3f} exceeds K + 1 = {k + 1}: the log was recorded at a larger K"
        )
    if known and 0.0 < p < 1.0:
        se = rate_stderr_from_mean_length(p, k, drafts)
        interval[key] = (max(0.0, p - Z95 * se), min(1.0, p + Z95 * se))
        low, high = interval[key]
        notes.append(f"p in [{low:.4f}, {high:.4f}] (95 %, from {drafts:.0f} drafts)")
    elif known:  # every draft accepted, or none: a one-sided 95 % bound
        if p >= 1.0:
            interval[key] = (0.05 ** (1.0 / (k * drafts)), 1.0)
        else:
            interval[key] = (0.0, 1.0 - 0.05 ** (1.0 / drafts))
        low, high = interval[key]
        notes.append(f"p in [{low:.4f}, {high:.4f}] (95 %, one-sided, {drafts:.0f} drafts)")
    else:
        notes.append("its uncertainty is unknown: the log gives no draft count")
    if len(by_k) > 1:
        notes.append(f"windows at other K ({', '.join(map(str, sorted(by_k)))}) not pooled")
    fit = ModelFit(
        name=model.name,
        values=model.scenario_values({key: p}),
        parameters=model.fit_parameters(1),
        log_likelihood=math.nan,
        criterion=math.nan,
        rms_error=math.nan,
        interval=interval,
    )
    return Calibration(count, float(drafts), log_k, sources, [], [fit], fit, notes)


# ---------------------------------------------------------------------------- recommend


def posterior_values(cal: Calibration, draws: int, seed: int = 0) -> list[dict[str, object]]:
    """``draws`` samples of the chosen model's SpecConfig values carrying the fit's
    uncertainty: the model's :meth:`~engine.acceptance.base.AcceptanceModel.fit_posterior`
    from the per-position counts (Beta posteriors for fixed and per_position, a parametric
    bootstrap for position_decay and beta_round); for the constant rate from a mean length,
    a normal on its delta-method interval; the fitted values repeated when the uncertainty
    is unknown."""
    rng = np.random.default_rng(seed)
    chosen = cal.chosen
    model = ACCEPTANCE[chosen.name]
    if not cal.positions:
        key = model.constant_rate_field
        span = chosen.interval.get(key)
        p = float(chosen.values[key])  # type: ignore[arg-type]
        if span is None:
            return [dict(chosen.values) for _ in range(draws)]
        sd = (span[1] - span[0]) / (2.0 * Z95)
        samples = np.clip(rng.normal(p, sd, draws), 0.0, 1.0)
        return [model.scenario_values({key: float(x)}) for x in samples]
    accepted = np.array([r.accepted for r in cal.positions])
    reached = np.array([r.reached for r in cal.positions])
    return model.fit_posterior(chosen.values, accepted, reached, draws, rng)


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
    speculation length: the scenario's K policy and draft shape are set to the defaults, a
    fixed K on a chain (a log's K is a chain's)."""
    ks = list(range(1, k_max + 1))
    scenario = scenario.replace(**{key: DEFAULTS[key] for key in (POLICY.selector, SHAPE.selector)})
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
