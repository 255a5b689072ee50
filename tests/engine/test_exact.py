import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.core.config import SpecConfig
from engine.simulate.exact import (
    accepted_distribution,
    breakeven_cost_ratio,
    expected_sequence_time_us,
    speedup_curve,
    speedup_exact,
    speedup_limit,
    tokens_per_cycle,
    tokens_per_cycle_at_length,
)

probs = st.floats(0.0, 1.0)
ks = st.integers(1, 40)


@given(a=probs, k=ks)
def test_fixed_tokens_per_cycle_closed_form(a, k):
    c = SpecConfig(acceptance_rate=a, k=k)
    expected = k + 1 if a == 1 else (1 - a ** (k + 1)) / (1 - a)
    assert tokens_per_cycle(c) == pytest.approx(expected, rel=1e-9, abs=1e-12)


@given(model=st.sampled_from(["fixed", "position_decay", "entropy_aware"]), p=probs, q=probs, k=ks)
def test_tokens_per_cycle_in_range_and_distribution_sums_to_one(model, p, q, k):
    c = SpecConfig(
        draft_model=model,
        k=k,
        acceptance_rate=p,
        decay_base=p,
        decay_factor=q,
        entropy_high=p,
        entropy_low=q,
        entropy_frac=q,
    )
    assert 1.0 <= tokens_per_cycle(c) <= k + 1 + 1e-12
    dist = accepted_distribution(c)
    assert dist.shape == (k + 1,)
    assert np.all(dist >= -1e-15)
    assert dist.sum() == pytest.approx(1.0)
    assert (np.arange(k + 1) + 1) @ dist == pytest.approx(tokens_per_cycle(c))


def test_leviathan_theorem_3_8():
    # Speedup = (1 - a^(K+1)) / ((1 - a)(K c + 1)), with c the cost ratio.
    a, k, d, v = 0.8, 5, 20.0, 200.0
    c = SpecConfig(acceptance_rate=a, k=k, draft_cost_us=d, verify_cost_us=v)
    assert speedup_limit(c) == pytest.approx((1 - a**6) / ((1 - a) * (k * 0.1 + 1)))


def test_acceptance_one_has_no_division_by_zero():
    c = SpecConfig(acceptance_rate=1.0, k=4, draft_cost_us=0.0)
    assert tokens_per_cycle(c) == 5
    assert speedup_limit(c) == pytest.approx(5.0)
    assert breakeven_cost_ratio(c) == pytest.approx(1.0)


def test_dp_by_hand_small_lengths():
    d, v, k, a = 20.0, 200.0, 3, 0.6
    cyc = k * d + v
    base = dict(acceptance_rate=a, k=k, draft_cost_us=d, verify_cost_us=v)
    # T = 1, full tail: one cycle of K drafts.
    assert speedup_exact(SpecConfig(tokens_per_seq=1, **base)) == pytest.approx(v / cyc)
    # T = 1, clamp: k = 0, a plain decoding step: same cost as the baseline.
    assert speedup_exact(SpecConfig(tokens_per_seq=1, tail="clamp", **base)) == pytest.approx(1.0)
    # T = 2, full: one cycle; with P(n = 0) = 1 - a a second cycle is needed.
    f2 = cyc + (1 - a) * cyc
    assert speedup_exact(SpecConfig(tokens_per_seq=2, **base)) == pytest.approx(2 * v / f2)
    # T = 2, clamp: first cycle k = 1; on rejection a plain step (k = 0) finishes.
    f2c = (d + v) + (1 - a) * v
    assert speedup_exact(SpecConfig(tokens_per_seq=2, tail="clamp", **base)) == pytest.approx(
        2 * v / f2c
    )


@pytest.mark.parametrize("model", ["fixed", "position_decay", "entropy_aware"])
def test_exact_converges_to_limit_for_long_sequences(model):
    c = SpecConfig(draft_model=model, tokens_per_seq=200_000 // 50, k=4)
    long = c.replace(tokens_per_seq=20_000)
    assert abs(speedup_exact(long) - speedup_limit(c)) < abs(speedup_exact(c) - speedup_limit(c))
    assert speedup_exact(long) == pytest.approx(speedup_limit(c), rel=2e-3)


@settings(max_examples=60)
@given(a1=probs, a2=probs, k=st.integers(1, 16), tail=st.sampled_from(["full", "clamp"]))
def test_speedup_rises_with_acceptance(a1, a2, k, tail):
    lo, hi = sorted((a1, a2))
    c = SpecConfig(k=k, tokens_per_seq=64, tail=tail)
    assert (
        speedup_exact(c.replace(acceptance_rate=lo))
        <= speedup_exact(c.replace(acceptance_rate=hi)) + 1e-12
    )


@settings(max_examples=60)
@given(d1=st.floats(0, 500), d2=st.floats(0, 500), k=st.integers(1, 16))
def test_speedup_falls_with_draft_cost(d1, d2, k):
    lo, hi = sorted((d1, d2))
    c = SpecConfig(k=k, tokens_per_seq=64)
    assert (
        speedup_exact(c.replace(draft_cost_us=hi))
        <= speedup_exact(c.replace(draft_cost_us=lo)) + 1e-12
    )


def test_speedup_curve_matches_pointwise():
    c = SpecConfig()
    curve = speedup_curve(c, range(1, 6))
    assert list(curve["k"]) == [1, 2, 3, 4, 5]
    assert curve["speedup_exact"][4] == pytest.approx(speedup_exact(c.replace(k=5)))
    assert not math.isnan(curve["speedup_limit"][0])


@pytest.mark.parametrize("model", ["fixed", "position_decay", "entropy_aware"])
@pytest.mark.parametrize("length", [1, 7, 300])
def test_tokens_per_cycle_at_length_is_the_long_run_value_under_full(model, length):
    # Every cycle drafts K under "full": E[emitted] = E[cycles] E[n + 1] (Wald).
    c = SpecConfig(draft_model=model, k=6, tokens_per_seq=length)
    assert tokens_per_cycle_at_length(c) == pytest.approx(tokens_per_cycle(c), rel=1e-12)


@pytest.mark.parametrize(("k", "length"), [(5, 8), (3, 2), (10, 40)])
def test_tokens_per_cycle_at_length_is_what_clamp_runs_estimate(k, length):
    from engine.simulate.simulator import simulate

    c = SpecConfig(k=k, tail="clamp", tokens_per_seq=length, n_sequences=20_000, seed=7)
    run = simulate(c, records=True)
    assert run.cycles is not None
    # The Monte Carlo value is a ratio of sums over sequences: its standard error by the
    # delta method, from the per-sequence totals.
    per_seq = run.cycles.groupby("sequence").agg(acc=("accepted", "sum"), n=("k", "size"))
    emitted, cycles = per_seq["acc"] + per_seq["n"], per_seq["n"]
    ratio = emitted.sum() / cycles.sum()
    assert run.metrics["tokens_per_cycle"] == pytest.approx(ratio)
    residual = emitted - ratio * cycles
    se = math.sqrt((residual**2).sum() / (len(per_seq) - 1) / len(per_seq)) / cycles.mean()
    exact = tokens_per_cycle_at_length(c)
    assert abs(ratio - exact) < 4 * se
    # ... and the long-run, full-K value is not (what the CLI used to call "exact").
    assert abs(ratio - tokens_per_cycle(c)) > 10 * se


def _python_sequence_time(config) -> float:
    """The finite-length DP in plain Python floats, each expectation added j = 0, 1, ...:
    what IEEE arithmetic gives on every machine."""
    from engine.acceptance.draft_models import get_model

    probs = [float(p) for p in get_model(config.draft_model).position_probs(config, config.k)]
    surv = [1.0]
    for p in probs:
        surv.append(surv[-1] * p)
    f = [0.0] * (config.tokens_per_seq + 1)
    for r in range(1, config.tokens_per_seq + 1):
        k = config.k if config.tail == "full" else min(config.k, r - 1)
        total = 0.0
        for j in range(k + 1):
            p_j = surv[j] - surv[j + 1] if j < k else surv[k]
            total += p_j * f[max(r - 1 - j, 0)]
        f[r] = k * config.draft_cost_us + config.verify_cost_us + total
    return f[-1]


@pytest.mark.parametrize(
    "changes",
    [
        {"k": 1, "acceptance_rate": 0.6, "draft_cost_us": 20.0},  # differed on AVX-512 BLAS
        {"k": 7, "draft_model": "position_decay", "tokens_per_seq": 300},
        {"k": 15, "draft_model": "entropy_aware", "tail": "clamp"},
    ],
)
def test_exact_values_are_the_same_bits_on_every_machine(changes):
    """No BLAS dot product in the DP: its rounding depends on the CPU's kernel, and the
    committed results must reproduce bit for bit anywhere."""
    config = SpecConfig(**changes)
    assert expected_sequence_time_us(config) == _python_sequence_time(config)
