"""engine.calibrate.fit: pooled counts, Wilson intervals, maximum likelihood, BIC, the
recommendation, the linear cost from a K sweep (the vLLM #20780 anchor) and emitted configs."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import math
from pathlib import Path

import numpy as np
import pytest

from engine.calibrate.fit import (
    CRITERION,
    CalibrationError,
    calibrate,
    candidates,
    emit,
    fit_linear_cost,
    fixed_from_mean,
    linear_cost_values,
    linear_speedup,
    model_rates,
    posterior_values,
    recommend,
    wilson_interval,
)
from engine.calibrate.logs import Window
from engine.core.config import SpecConfig
from engine.core.parts import ACCEPTANCE
from engine.simulate.exact import exact_metrics_many

ANCHOR = Path(__file__).parents[2] / "fixtures" / "anchors" / "vllm_20780.csv"
Z = 5.0  # standard errors allowed for an estimate (seeded: deterministic)


def window(
    position_accepted: tuple[float, ...] | None = None,
    drafts: float | None = None,
    k: int | None = None,
    mean_length: float | None = None,
    source: str = "vllm-v1",
) -> Window:
    accepted = None if position_accepted is None else int(sum(position_accepted))
    drafted = None if drafts is None or k is None else int(drafts * k)
    if mean_length is None and drafts and accepted is not None:
        mean_length = 1.0 + accepted / drafts
    return Window(source, 1, "", drafts, drafted, accepted, k, mean_length, position_accepted)


def synthetic(rates: list[float], drafts: int, seed: int) -> Window:
    """One window of ``drafts`` drafts whose conditional acceptance follows ``rates``."""
    rng = np.random.default_rng(seed)
    reached, counts = drafts, []
    for p in rates:
        reached = int(rng.binomial(reached, p))
        counts.append(float(reached))
    return window(tuple(counts), float(drafts), len(rates))


def fisher_stderr(rates_of, theta: np.ndarray, drafts: float, m: int) -> np.ndarray:
    """Standard errors of the MLE from the expected Fisher information of the per-position
    binomials: I = sum_i E[reached_i] grad p_i grad p_i^T / (p_i (1 - p_i))."""
    p = rates_of(theta)
    reached = drafts * np.concatenate(([1.0], np.cumprod(p)[:-1]))
    grads = []
    for j in range(theta.size):
        h = 1e-6 * max(1.0, abs(theta[j]))
        up, down = theta.copy(), theta.copy()
        up[j] += h
        down[j] -= h
        grads.append((rates_of(up) - rates_of(down)) / (2 * h))
    g = np.array(grads)  # (params, m)
    info = (g * (reached / (p * (1 - p)))) @ g.T
    return np.sqrt(np.diag(np.linalg.inv(info)))


# ---------------------------------------------------------------- intervals and pooling


def test_wilson_interval_matches_hand_computation():
    # 8 of 10, z = 1.96: centre (0.8 + 0.19208) / 1.38416, half-width
    # 1.96 sqrt(0.016 + 0.009604) / 1.38416
    low, high = wilson_interval(8, 10, z=1.96)
    assert low == pytest.approx(0.490157, abs=1e-6)
    assert high == pytest.approx(0.943319, abs=1e-6)
    low, high = wilson_interval(0, 10, z=1.96)
    assert low == 0.0
    assert high == pytest.approx(3.8416 / 13.8416, abs=1e-9)
    assert wilson_interval(0, 0) == (0.0, 1.0)


def test_pooled_counts_follow_cumulative_positions():
    # window 1: 100 drafts, cumulative accepted 80, 60, 30; window 2: 50 drafts, a list
    # shorter than K (position 3 unobserved there)
    cal = calibrate([window((80, 60, 30), 100, 3), window((40, 20), 50, 3)])
    got = [(r.position, r.reached, r.accepted) for r in cal.positions]
    assert got == [(1, 150.0, 120.0), (2, 120.0, 80.0), (3, 60.0, 30.0)]
    first = cal.positions[0]
    assert first.rate == pytest.approx(0.8)
    assert (first.low, first.high) == pytest.approx(wilson_interval(120, 150))
    assert cal.windows == 2 and cal.drafts == 150.0 and cal.k == 3
    assert cal.sources == ("vllm-v1",)


# ---------------------------------------------------------------- maximum likelihood


def test_mle_recovers_fixed_rate():
    p, drafts = 0.72, 4000
    cal = calibrate([synthetic([p] * 6, drafts, seed=1)])
    fit = next(m for m in cal.models if m.name == "fixed")
    trials = sum(r.reached for r in cal.positions)
    stderr = math.sqrt(p * (1 - p) / trials)
    assert abs(fit.values["acceptance_rate"] - p) < Z * stderr
    low, high = fit.interval["acceptance_rate"]
    assert low < fit.values["acceptance_rate"] < high


def test_mle_recovers_position_decay():
    theta, drafts, m = np.array([0.9, 0.85]), 20_000, 6
    cal = calibrate([synthetic(list(0.9 * 0.85 ** np.arange(m)), drafts, seed=2)])
    fit = next(f for f in cal.models if f.name == "position_decay")
    got = np.array([fit.values["decay_base"], fit.values["decay_factor"]])

    def rates_of(t: np.ndarray) -> np.ndarray:
        return t[0] * t[1] ** np.arange(m)

    stderr = fisher_stderr(rates_of, theta, drafts, m)
    assert np.all(np.abs(got - theta) < Z * stderr), (got, stderr)


def test_mle_recovers_beta_round():
    theta, drafts, m = np.array([3.0, 1.5]), 40_000, 7
    rising = list((3.0 + np.arange(m)) / (4.5 + np.arange(m)))
    cal = calibrate([synthetic(rising, drafts, seed=3)])
    fit = next(f for f in cal.models if f.name == "beta_round")
    got = np.array([fit.values["acceptance.beta_a"], fit.values["acceptance.beta_b"]])

    def rates_of(t: np.ndarray) -> np.ndarray:
        i = np.arange(m)
        return (t[0] + i) / (t[0] + t[1] + i)

    stderr = fisher_stderr(rates_of, theta, drafts, m)
    assert np.all(np.abs(got - theta) < Z * stderr), (got, stderr)


def test_the_two_parameter_fit_is_the_likelihood_maximum():
    # the 2-parameter search lands on a point no neighbour beats
    accepted, reached = np.array([[90.0, 70.0, 40.0]]), np.array([[100.0, 90.0, 70.0]])
    values = ACCEPTANCE["position_decay"].fit(accepted, reached)[0]
    base, factor = values["decay_base"], values["decay_factor"]

    def loglik(b: float, f: float) -> float:
        p = b * f ** np.arange(3)
        return float(np.sum(accepted * np.log(p) + (reached - accepted) * np.log1p(-p)))

    best = loglik(base, factor)
    for db, df in [(1e-3, 0), (-1e-3, 0), (0, 1e-3), (0, -1e-3)]:
        assert loglik(base + db, factor + df) <= best


# ---------------------------------------------------------------- model choice


def test_bic_picks_fixed_for_flat_rates():
    cal = calibrate([synthetic([0.7] * 6, 20_000, seed=4)])
    assert cal.chosen.name == "fixed"
    assert any(CRITERION in note for note in cal.notes)


def test_bic_picks_per_position_for_rising_irregular_rates():
    cal = calibrate([synthetic([0.55, 0.8, 0.7, 0.92, 0.85, 0.95], 20_000, seed=5)])
    assert cal.chosen.name == "per_position"
    # every fittable model, simplest first (the order of the printed table)
    names = [m.name for m in cal.models]
    assert names == ["fixed", "position_decay", "beta_round", "per_position"]
    assert names == [model.name for model in candidates()]
    assert [m.parameters for m in cal.models] == [1, 2, 2, 6]
    by_name = {m.name: m for m in cal.models}
    assert by_name["per_position"].rms_error < by_name["fixed"].rms_error
    # the chosen model's rates reach the scenario
    config = cal.config(SpecConfig())
    assert config.draft_model == "per_position"
    observed = [r.rate for r in cal.positions]
    assert model_rates("per_position", cal.chosen.values, 6) == pytest.approx(observed, abs=1e-5)


# ---------------------------------------------------------------- mean length only


def test_mean_length_only_allows_fixed_with_counted_uncertainty():
    # SGLang-like windows: accept len only, K = 3 given by the caller
    windows = [window(mean_length=2.5, drafts=400.0, source="sglang") for _ in range(3)]
    cal = calibrate(windows, k=3)
    assert [m.name for m in cal.models] == ["fixed"]
    p = cal.chosen.values["acceptance_rate"]
    assert 1 + p + p**2 + p**3 == pytest.approx(2.5)
    assert cal.positions == []
    low, high = cal.chosen.interval["acceptance_rate"]
    assert low < p < high
    assert any("only the fixed model" in note for note in cal.notes)


def test_mean_length_without_drafts_says_uncertainty_unknown():
    cal = calibrate([window(mean_length=2.2, k=4, source="sglang")])
    assert cal.chosen.interval == {}
    assert any("uncertainty is unknown" in note for note in cal.notes)
    rec = recommend(cal, SpecConfig(), k_max=6, draws=20)
    assert rec.low == rec.speedup == rec.high


def test_a_merged_window_without_drafts_weighs_as_the_windows_it_stands_for():
    """Merged windows (a long log's, engine.calibrate.logs._Pooled) count as the windows they
    stand for: M of 2.0 over three windows and 3.0 over one is M = 2.25, by hand."""
    merged = dataclasses.replace(window(mean_length=2.0, k=3, source="sglang"), windows=3)
    cal = calibrate([merged, window(mean_length=3.0, k=3, source="llama.cpp")])
    assert cal.windows == 4
    assert cal.chosen.values["acceptance_rate"] == pytest.approx(fixed_from_mean(2.25, 3))


def test_mean_length_beyond_k_plus_one_is_flagged():
    cal = calibrate([window(mean_length=4.3, source="llama.cpp")], k=3)
    assert cal.chosen.values["acceptance_rate"] == 1.0
    assert any("exceeds K + 1 = 4" in note for note in cal.notes)


def test_nothing_usable_is_an_error():
    with pytest.raises(CalibrationError, match="K"):
        calibrate([window(mean_length=2.2, source="sglang")])
    with pytest.raises(CalibrationError):
        calibrate([])


def test_fixed_from_mean_solves_the_sum():
    assert fixed_from_mean(1.0, 5) == 0.0
    assert fixed_from_mean(6.0, 5) == 1.0
    p = fixed_from_mean(2.0, 2)  # p + p^2 = 1: the golden ratio's inverse
    assert p == pytest.approx((math.sqrt(5) - 1) / 2, abs=1e-12)


# ---------------------------------------------------------------- posterior draws


# Relative error of a standard deviation estimated from n draws is ~ 1 / sqrt(2 n).
def sd_tolerance(n: int) -> float:
    return Z / math.sqrt(2 * n)


def test_posterior_of_fixed_has_the_binomial_spread():
    cal = calibrate([synthetic([0.75] * 4, 2000, seed=9)])
    assert cal.chosen.name == "fixed"
    draws = 2000
    p = np.array([v["acceptance_rate"] for v in posterior_values(cal, draws, seed=3)])
    trials = sum(r.reached for r in cal.positions)
    hat = cal.chosen.values["acceptance_rate"]
    expected = math.sqrt(hat * (1 - hat) / trials)
    assert abs(p.std() / expected - 1) < sd_tolerance(draws)
    assert abs(p.mean() - hat) < Z * expected / math.sqrt(draws) + 1 / trials


def test_posterior_of_per_position_has_each_positions_spread():
    cal = calibrate([synthetic([0.5, 0.9, 0.6, 0.95], 3000, seed=10)])
    assert cal.chosen.name == "per_position"
    draws = 2000
    rates = np.array(
        [[float(x) for x in v["acceptance.rates"].split(",")] for v in posterior_values(cal, draws)]
    )
    for i, r in enumerate(cal.positions):
        expected = math.sqrt(r.rate * (1 - r.rate) / r.reached)
        assert abs(rates[:, i].std() / expected - 1) < sd_tolerance(draws) + 2 / r.reached


def test_bootstrap_of_position_decay_matches_the_fisher_spread():
    m, drafts, theta = 5, 5000, np.array([0.85, 0.8])
    cal = calibrate([synthetic(list(0.85 * 0.8 ** np.arange(m)), drafts, seed=11)])
    assert cal.chosen.name == "position_decay"
    draws = 400
    values = posterior_values(cal, draws, seed=4)
    got = np.array([[v["decay_base"], v["decay_factor"]] for v in values])

    def rates_of(t: np.ndarray) -> np.ndarray:
        return t[0] * t[1] ** np.arange(m)

    expected = fisher_stderr(rates_of, theta, drafts, m)
    # the fitted point differs from theta by a few standard errors: allow that too
    assert np.all(np.abs(got.std(axis=0) / expected - 1) < sd_tolerance(draws) + 0.05)


def test_mean_length_interval_matches_the_spread_of_repeated_logs():
    """The delta-method interval of p from M over N drafts: logs of N drafts drawn again
    and again under the fixed model give p solved from M with that spread."""
    p, k, drafts, logs = 0.7, 3, 400, 2000
    rng = np.random.default_rng(12)
    # accepted per draft: n with P(n >= j) = p^j, j <= k
    u = rng.random((logs, drafts))
    accepted = np.minimum(np.floor(np.log(u) / np.log(p)), k).sum(axis=1)
    solved = np.array([fixed_from_mean(1 + a / drafts, k) for a in accepted])
    mean_length = 1 + p + p**2 + p**3
    cal = calibrate([window(mean_length=mean_length, drafts=float(drafts), source="sglang")], k=k)
    low, high = cal.chosen.interval["acceptance_rate"]
    assert abs((high - low) / 2 / 1.959964 / solved.std() - 1) < sd_tolerance(logs) + 0.02


# ---------------------------------------------------------------- recommendation


def test_recommendation_band_interval_and_change():
    cal = calibrate([synthetic([0.8] * 3, 3000, seed=6)])
    scenario = SpecConfig(draft_cost_us=15.0, verify_cost_us=200.0, tokens_per_seq=256)
    rec = recommend(cal, scenario, k_max=12, draws=100, seed=1)
    speedups = {k: s for k, s, _, _ in rec.curve}
    best = max(speedups.values())
    assert rec.speedup == best and speedups[rec.k] == best
    assert rec.band == tuple(k for k, s in speedups.items() if s >= 0.98 * best)
    assert rec.k in rec.band and len(rec.band) >= 2
    # the point matches the exact engine on the fitted model
    direct = exact_metrics_many([cal.config(scenario).replace(k=rec.k)])["speedup_exact"][0]
    assert rec.speedup == direct
    assert rec.low <= rec.speedup <= rec.high and rec.low < rec.high
    for _, s, lo, hi in rec.curve:
        assert lo <= s <= hi
    assert rec.log_k == 3
    assert rec.log_speedup == speedups[3]
    assert rec.change == pytest.approx(best / speedups[3] - 1)


def test_recommendation_is_for_a_fixed_k_whatever_the_scenarios_policy():
    cal = calibrate([synthetic([0.8] * 3, 3000, seed=13)])
    fixed = recommend(cal, SpecConfig(), k_max=6, draws=0)
    adaptive = recommend(cal, SpecConfig(policy="hf_heuristic"), k_max=6, draws=0)
    assert adaptive.curve == fixed.curve


def test_recommendation_interval_narrows_with_more_drafts():
    scenario = SpecConfig(draft_cost_us=15.0, verify_cost_us=200.0)
    widths = []
    for drafts in (200, 20_000):
        cal = calibrate([synthetic([0.8] * 4, drafts, seed=7)])
        rec = recommend(cal, scenario, k_max=8, draws=100, seed=2)
        widths.append(rec.high - rec.low)
    assert widths[1] < widths[0] / 3  # ~ 1 / sqrt(100) of it


# ---------------------------------------------------------------- linear cost and anchor


def test_fit_linear_cost_recovers_a_line():
    fixed, per_token, baseline = 1.1, 0.12, 7.0
    points = []
    for k, mean in [(2, 2.1), (3, 2.4), (5, 2.9)]:
        tpot = baseline * (fixed + per_token * k) / mean
        points.append((k, mean, tpot))
    assert fit_linear_cost(points, baseline) == pytest.approx((fixed, per_token))
    with pytest.raises(ValueError):
        fit_linear_cost([(3, 2.0, 5.0), (3, 2.1, 5.1)], baseline)


def anchor_rows() -> dict[str, list[tuple[int, float, float, float]]]:
    """The #20780 table by method, read by benchmarks/calibrate_anchor.py (one reader of
    the fixture; benchmarks/ is not a package, so it is loaded by path)."""
    path = Path(__file__).parents[3] / "benchmarks" / "calibrate_anchor.py"
    spec = importlib.util.spec_from_file_location("calibrate_anchor", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.ANCHOR == ANCHOR  # the fixture this file's tests name
    return module.read_anchor()


@pytest.mark.parametrize(("method", "best_k"), [("eagle", 3), ("eagle3", 4)])
def test_anchor_vllm_20780_reproduces_measured_speedups(method, best_k):
    """vLLM #20780: EAGLE 1 and 3 on Llama-3.1-8B, K = 2..7. The linear cost fitted from
    (K, M, TPOT) predicts each K's speedup M / (fixed + per_token K) within 0.04 of the
    measured baseline / TPOT and picks the measured best K."""
    rows = anchor_rows()[method]
    baseline = rows[0][3]
    cost = fit_linear_cost([(k, m, tpot) for k, m, tpot, _ in rows], baseline)
    measured = {k: baseline / tpot for k, _, tpot, _ in rows}
    predicted = {k: linear_speedup(m, k, cost) for k, m, _, _ in rows}
    for k in measured:
        assert abs(predicted[k] - measured[k]) < 0.04, (k, predicted[k], measured[k])
    assert max(measured, key=measured.__getitem__) == best_k
    assert max(predicted, key=predicted.__getitem__) == best_k
    assert 1.0 < cost[0] < 1.3 and 0.05 < cost[1] < 0.2  # target steps: plausible


def test_linear_cost_values_price_the_engine_like_the_fit():
    """The fitted cost as the linear cost model: the engine's long-run speedup with the
    fixed acceptance solved from each K's M is M / (fixed + per_token K), the anchor's."""
    rows = anchor_rows()["eagle3"]
    baseline = rows[0][3]
    cost = fit_linear_cost([(k, m, tpot) for k, m, tpot, _ in rows], baseline)
    scenario = SpecConfig().replace(**linear_cost_values(cost, baseline * 1000.0))
    configs = [scenario.replace(k=k, acceptance_rate=fixed_from_mean(m, k)) for k, m, _, _ in rows]
    limits = exact_metrics_many(configs)["speedup_limit"]
    for (k, m, _, _), limit in zip(rows, limits, strict=True):
        assert limit == pytest.approx(linear_speedup(m, k, cost), rel=1e-9)


# ---------------------------------------------------------------- emit


def test_emit_writes_each_engines_settings():
    cal = calibrate([synthetic([0.8] * 3, 3000, seed=8)])
    rec = recommend(cal, SpecConfig(), k_max=8, draws=0)
    out = emit(rec, cal, method="eagle3")
    k = rec.k
    config = json.loads(out["vllm"].removeprefix("--speculative-config ").strip("'"))
    assert config == {"method": "eagle3", "num_speculative_tokens": k}
    assert out["sglang"] == (
        f"--speculative-algorithm EAGLE3 --speculative-num-steps {k} "
        f"--speculative-eagle-topk 1 --speculative-num-draft-tokens {k + 1}"
    )
    assert out["llama.cpp"] == f"--draft-max {k} --draft-min 0 --draft-p-min 0"
    assert out["tensorrt-llm"] == f"max_draft_len: {k}"
    assert "--speculative-algorithm" not in emit(rec, cal, method="mtp")["sglang"]


def test_every_draft_accepted_gives_a_one_sided_interval():
    """M = K + 1 from 100 drafts: p = 1, and p^(K x drafts) = 0.05 bounds it below."""
    cal = calibrate([window(None, 100.0, 3, 4.0, source="vllm-v0")])
    low, high = cal.chosen.interval["acceptance_rate"]
    assert high == 1.0 and low == pytest.approx(0.05 ** (1 / 300))
    rec = recommend(cal, SpecConfig(), draws=50)
    assert rec.low < rec.speedup <= rec.high


def test_mean_only_windows_are_weighted_by_drafts_or_left_out():
    """An SGLang batch line (no draft count) never weighs as much as 4,437 counted drafts."""
    counted = window(None, 4437.0, 3, 2.39, source="vllm-v0")
    uncounted = window(None, None, 3, 3.13, source="sglang")
    cal = calibrate([counted, uncounted])
    assert cal.chosen.values["acceptance_rate"] == pytest.approx(fixed_from_mean(2.39, 3))
    assert any("without a draft count left out" in note for note in cal.notes)


def test_a_window_above_k_plus_one_is_left_out():
    """A 64-token n-gram drafter's M 15.3 beside a K = 2 drafter (llama.cpp statistics)."""
    ngram = window(None, 3.0, 2, 15.3, source="llama.cpp")
    mtp = window(None, 200.0, 2, 2.5, source="llama.cpp")
    cal = calibrate([ngram, mtp])
    assert cal.chosen.values["acceptance_rate"] == pytest.approx(fixed_from_mean(2.5, 2))
    assert any("M above K + 1 left out" in note for note in cal.notes)
