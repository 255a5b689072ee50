"""The acceptance models beyond the original and K policies through the scenario engine:
runs, sweeps and exact values agree, and say which engine made them."""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine.acceptance.draft_models import get_model
from engine.core.config import SpecConfig
from engine.simulate.exact import exact_metrics_many, speedup_exact, survival
from engine.simulate.policies import STEPWISE_SAMPLER, needs_stepwise
from engine.simulate.simulator import simulate
from engine.sweep.sweep import evaluate_many

# 4.5 standard errors: the 95 % half-width is 1.96 of them
WIDE = 4.5 / 1.959963984540054

SCENARIOS = {
    "per_position": SpecConfig(draft_model="per_position", rates="0.95,0.8,0.6", k=5),
    "beta_round": SpecConfig(draft_model="beta_round", beta_a=2.0, beta_b=1.0, k=6),
    "markov": SpecConfig(draft_model="markov", k=4),
    "markov_clamp": SpecConfig(draft_model="markov", k=6, tail="clamp", stay=0.8),
    "confidence": SpecConfig(draft_model="confidence", beta_a=3.0, beta_b=1.0, k=4),
    "hf_markov": SpecConfig(draft_model="markov", k=3).replace(**{"policy.name": "hf_heuristic"}),
    "oracle_roofline": SpecConfig(draft_model="markov", k=3, tokens_per_seq=64).replace(
        **{"policy.name": "oracle", "cost.model": "roofline", "workload.batch_size": 16}
    ),
    "schedule": SpecConfig(batch_size=64).replace(**{"policy.schedule": "1:6,32:2"}),
}


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_monte_carlo_holds_the_exact_speedup(name):
    config = SCENARIOS[name].replace(n_sequences=3000, seed=7)
    if name == "schedule":
        config = config.replace(**{"policy.name": "schedule"})
    result = simulate(config)
    m = result.metrics
    assert math.isfinite(m["speedup_exact"])
    assert abs(m["speedup"] - m["speedup_exact"]) <= WIDE * m["speedup_ci95"], m


def test_markov_needs_the_regime_chain_at_finite_length():
    """The (r, regime) program differs from i.i.d. cycles with the stationary marginal,
    and Monte Carlo sides with it (long regimes, short sequences)."""
    config = SpecConfig(draft_model="markov", stay=0.99, k=8, tokens_per_seq=64)
    marginal = get_model("markov").position_probs(config, 8)
    iid = SpecConfig(draft_model="per_position", rates=marginal.tolist(), k=8)
    assert np.allclose(survival(iid), survival(config))
    chain, independent = speedup_exact(config), speedup_exact(iid.replace(tokens_per_seq=64))
    assert abs(chain - independent) > 0.02
    m = simulate(config.replace(n_sequences=4000, seed=3)).metrics
    assert abs(m["speedup"] - chain) <= WIDE * m["speedup_ci95"]
    assert abs(m["speedup"] - independent) > WIDE * m["speedup_ci95"]


def test_beta_round_rates_rise_with_depth():
    config = SpecConfig(draft_model="beta_round", beta_a=1.0, beta_b=1.0, k=4)
    p = get_model("beta_round").position_probs(config, 4)
    assert np.allclose(p, [1 / 2, 2 / 3, 3 / 4, 4 / 5])
    run = simulate(config.replace(n_sequences=4000), position_counts=True)
    observed = run.position_acceptance(4)
    assert np.all(np.diff(observed) > 0)


def test_per_position_uses_the_last_rate_beyond_its_list():
    config = SpecConfig(draft_model="per_position", rates="0.9,0.5")
    assert get_model("per_position").position_probs(config, 4).tolist() == [0.9, 0.5, 0.5, 0.5]


def test_which_engine_made_a_row():
    fixed = SpecConfig(n_sequences=50)
    markov = SpecConfig(draft_model="markov", n_sequences=50)
    goodput = fixed.replace(**{"policy.name": "goodput"})
    rows = evaluate_many([fixed, markov, goodput])
    assert [r["sampler"] for r in rows] == ["prefix/2", STEPWISE_SAMPLER, STEPWISE_SAMPLER]
    assert not needs_stepwise(SpecConfig(draft_model="beta_round"))
    assert math.isnan(rows[2]["speedup_exact"]) and math.isfinite(rows[2]["speedup"])
    # a policy other than fixed has no fixed-K long-run figures
    figures = exact_metrics_many([fixed.replace(**{"policy.name": "oracle"})])
    assert math.isfinite(figures["speedup_exact"][0]) and math.isnan(figures["speedup_limit"][0])


def test_a_policy_run_records_its_cycles():
    config = SpecConfig(draft_model="markov", n_sequences=20, tokens_per_seq=50).replace(
        **{"policy.name": "hf_heuristic"}
    )
    run = simulate(config, records=True)
    cycles = run.cycles
    assert cycles is not None and len(cycles) == run.metrics["cycles"]
    last = cycles.groupby("sequence").tail(1)
    assert (last["cum_tokens"] == 50).all()
    total = cycles.groupby("sequence")["cycle_time_us"].sum()
    assert np.allclose(total.to_numpy(), last["cum_time_us"].to_numpy())
    assert run.metrics["speedup"] == pytest.approx(
        run.metrics["baseline_time_us"] / run.metrics["spec_time_us"]
    )


def test_a_sweep_over_policies_runs_each_policy():
    """Policies are not in the draw key, so a sweep must not share one fixed-K run among
    them: each row is its own policy's run."""
    base = SpecConfig(n_sequences=200)
    configs = [
        base.replace(**{"policy.name": name}) for name in ("fixed", "hf_heuristic", "oracle")
    ]
    rows = evaluate_many(configs)
    assert len({r["cycles"] for r in rows}) == 3
    for row in rows:
        assert abs(row["speedup"] - row["speedup_exact"]) <= WIDE * row["speedup_ci95"]


def test_a_policy_too_large_for_the_engines_is_refused_in_one_line():
    from engine.core.config import ConfigError

    with pytest.raises(ConfigError, match="tokens_per_seq: 100000 tokens with k up to 1024"):
        SpecConfig(tokens_per_seq=100_000).replace(
            **{"policy.name": "oracle", "policy.k_max": 1024}
        )


@pytest.mark.parametrize("tail", ["full", "clamp"])
def test_a_fixed_drafting_cost_is_counted_in_the_draft_time(tail):
    """cost.draft_fixed_us: paid once by every cycle that drafts, never by a plain step; the
    draft time fraction adds it cycle by cycle (it once read 0 when cycles all cost the
    same but drafting was not proportional to k)."""
    config = SpecConfig(n_sequences=300, tokens_per_seq=40, tail=tail).replace(
        **{"cost.draft_fixed_us": 30.0}
    )
    run = simulate(config, records=True)
    cycles = run.cycles
    assert cycles is not None
    draft = np.where(cycles["k"] > 0, 30.0 + 20.0 * cycles["k"], 0.0)
    expected = draft.sum() / cycles["cycle_time_us"].sum()
    assert run.metrics["draft_time_fraction"] == pytest.approx(expected)
    plain = simulate(config.replace(n_sequences=300))
    assert plain.metrics["draft_time_fraction"] == pytest.approx(expected)
    m = simulate(config.replace(n_sequences=3000, seed=5)).metrics
    assert abs(m["speedup"] - m["speedup_exact"]) <= WIDE * m["speedup_ci95"]
