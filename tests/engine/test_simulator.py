"""The fast simulator against the reference loop and the exact values."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.acceptance.draft_models import get_model
from engine.core.config import SpecConfig
from engine.core.runs import accept_pattern, position_acceptance
from engine.simulate.exact import accepted_distribution
from engine.simulate.reference import simulate_reference
from engine.simulate.simulator import Z95, chunk_sequences, simulate
from tests.engine.stats import Z_STRICT, chi2_critical, chi2_statistic, ks_two_sample

SPREAD = [
    SpecConfig(draft_model="fixed", k=5, acceptance_rate=0.8, n_sequences=300, tokens_per_seq=64),
    SpecConfig(
        draft_model="fixed",
        k=3,
        acceptance_rate=0.5,
        tail="clamp",
        n_sequences=300,
        tokens_per_seq=40,
        seed=3,
    ),
    SpecConfig(
        draft_model="position_decay",
        k=7,
        decay_base=0.9,
        decay_factor=0.85,
        n_sequences=300,
        tokens_per_seq=64,
        seed=5,
    ),
    SpecConfig(
        draft_model="position_decay", k=4, tail="clamp", n_sequences=300, tokens_per_seq=33, seed=6
    ),
    SpecConfig(
        draft_model="entropy_aware",
        k=6,
        entropy_high=0.95,
        entropy_low=0.2,
        entropy_frac=0.4,
        n_sequences=300,
        tokens_per_seq=64,
        seed=7,
    ),
    SpecConfig(
        draft_model="entropy_aware", k=2, tail="clamp", n_sequences=300, tokens_per_seq=17, seed=8
    ),
]
ENGINES = {"fast": simulate, "reference": simulate_reference}


def _ids(c):
    return f"{c.draft_model}-K{c.k}-{c.tail}"


@pytest.mark.parametrize("config", SPREAD, ids=_ids)
@pytest.mark.parametrize("engine", list(ENGINES))
def test_accepted_count_distribution_is_exact(config, engine):
    """Per drafted width k, the counts of n = 0..k match P(n = j) (chi-square)."""
    cycles = ENGINES[engine](config, records=True).cycles
    for k, group in cycles.groupby("k"):
        if k == 0:
            assert (group["accepted"] == 0).all()
            continue
        observed = np.bincount(group["accepted"], minlength=k + 1).astype(float)
        stat, dof = chi2_statistic(observed, accepted_distribution(config, int(k)))
        if dof >= 1:
            assert stat <= chi2_critical(dof), (k, stat, dof)


@pytest.mark.parametrize("config", SPREAD, ids=_ids)
def test_fast_and_reference_agree_in_distribution(config):
    """Per-sequence speculative time: same distribution (two-sample KS), not only same mean."""
    big = config.replace(n_sequences=1500)
    fast = simulate(big, records=True).cycles.groupby("sequence")["cycle_time_us"].sum()
    ref = simulate_reference(big, records=True).cycles.groupby("sequence")["cycle_time_us"].sum()
    stat, critical = ks_two_sample(fast.to_numpy(), ref.to_numpy())
    assert stat <= critical


@pytest.mark.parametrize("config", SPREAD, ids=_ids)
@pytest.mark.parametrize("engine", list(ENGINES))
def test_monte_carlo_converges_to_speedup_exact(config, engine):
    m = ENGINES[engine](config).metrics
    se = m["speedup_ci95"] / Z95
    assert abs(m["speedup"] - m["speedup_exact"]) <= Z_STRICT * se


@pytest.mark.parametrize("config", SPREAD, ids=_ids)
def test_records_are_consistent_with_metrics(config):
    result = simulate(config, records=True)
    cyc, m = result.cycles, result.metrics
    assert len(cyc) == m["cycles"]
    per_seq = cyc.groupby("sequence")
    assert (per_seq["kept"].sum() == config.tokens_per_seq).all()
    assert (per_seq["cum_tokens"].last() == config.tokens_per_seq).all()
    assert per_seq["cycle"].apply(lambda s: list(s) == list(range(len(s)))).all()
    expected_time = cyc["k"] * config.draft_cost_us + config.verify_cost_us
    assert np.allclose(cyc["cycle_time_us"], expected_time)
    assert cyc["cycle_time_us"].sum() == pytest.approx(m["spec_time_us"])
    assert m["tokens_per_cycle"] == pytest.approx((cyc["accepted"] + 1).mean())
    assert m["acceptance_observed"] == pytest.approx(cyc["accepted"].sum() / cyc["k"].sum())
    kept_drafts = np.minimum(cyc["accepted"], cyc["kept"]).sum()
    assert m["waste"] == pytest.approx(1 - kept_drafts / cyc["k"].sum())
    assert m["draft_time_fraction"] == pytest.approx(
        (cyc["k"] * config.draft_cost_us).sum() / m["spec_time_us"]
    )
    target = (cyc["k"] + 1).sum() + config.cost_ratio * cyc["k"].sum()
    assert m["compute_overhead"] == pytest.approx(target / (cyc["accepted"] + 1).sum() - 1)
    # Only the last cycle of a sequence may discard tokens.
    not_last = cyc["cum_tokens"] < config.tokens_per_seq
    assert (cyc.loc[not_last, "kept"] == cyc.loc[not_last, "accepted"] + 1).all()
    if config.tail == "clamp":
        remaining = config.tokens_per_seq - (cyc["cum_tokens"] - cyc["kept"])
        assert (cyc["k"] == np.minimum(config.k, remaining - 1)).all()
        assert (cyc["kept"] == cyc["accepted"] + 1).all()


def test_same_config_same_numbers_and_streaming_equals_records():
    base = SpecConfig(tokens_per_seq=20)
    c = base.replace(n_sequences=chunk_sequences(base) + 123)
    a = simulate(c, records=True)
    chunks = []
    b = simulate(c, on_cycles=chunks.append)
    assert a.metrics == b.metrics
    assert len(chunks) == 2
    streamed = np.concatenate([ch["accepted"].to_numpy() for ch in chunks])
    assert np.array_equal(streamed, a.cycles["accepted"].to_numpy())
    assert a.cycles["sequence"].max() == c.n_sequences - 1
    other = simulate(c.replace(seed=1)).metrics  # (its total cycle count happens to agree)
    assert other["accepted_tokens"] != a.metrics["accepted_tokens"]


def test_acceptance_edges():
    one = simulate(SpecConfig(acceptance_rate=1.0, k=4, tokens_per_seq=50)).metrics
    assert one["acceptance_observed"] == 1.0
    assert one["tokens_per_cycle"] == 5.0
    zero = simulate(SpecConfig(acceptance_rate=0.0, k=4, draft_cost_us=20.0)).metrics
    assert zero["speedup"] == pytest.approx(200 / (4 * 20 + 200))
    assert zero["waste"] == 1.0


def test_inert_parameter_does_not_change_the_run():
    c = SpecConfig(draft_model="position_decay")
    assert simulate(c).metrics == simulate(c.replace(acceptance_rate=0.3)).metrics
    assert simulate(c).metrics != simulate(c.replace(decay_base=0.5)).metrics


def test_clamp_with_one_token_is_plain_decoding():
    m = simulate(SpecConfig(tokens_per_seq=1, tail="clamp", n_sequences=10)).metrics
    assert m["speedup"] == 1.0
    assert m["drafted_tokens"] == 0
    assert np.isnan(m["acceptance_observed"])


@pytest.mark.parametrize("engine", list(ENGINES))
def test_position_acceptance_matches_model_probabilities(engine):
    c = SpecConfig(
        draft_model="position_decay",
        k=6,
        decay_base=0.95,
        decay_factor=0.8,
        n_sequences=800,
        tokens_per_seq=64,
        seed=11,
    )
    cycles = ENGINES[engine](c, records=True).cycles
    observed = position_acceptance(cycles, 8)
    p = get_model(c.draft_model).position_probs(c, 6)
    for i in range(6):
        tested = ((cycles["k"] > i) & (cycles["accepted"] >= i)).sum()
        se = np.sqrt(p[i] * (1 - p[i]) / tested)
        assert abs(observed[i] - p[i]) <= Z_STRICT * se
    assert np.isnan(observed[6:]).all()  # never drafted


def test_accept_pattern():
    assert accept_pattern(4, 2) == "✓✓✗·"
    assert accept_pattern(3, 3) == "✓✓✓"
    assert accept_pattern(2, 0, glyphs="AR.") == "R."
    assert accept_pattern(0, 0) == ""


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    model=st.sampled_from(["fixed", "position_decay", "entropy_aware"]),
    p=st.floats(0.05, 0.99),
    k=st.integers(1, 12),
    d=st.floats(0, 200),
    tail=st.sampled_from(["full", "clamp"]),
    seed=st.integers(0, 2**31),
)
def test_property_monte_carlo_within_error_of_exact(model, p, k, d, tail, seed):
    c = SpecConfig(
        draft_model=model,
        acceptance_rate=p,
        decay_base=p,
        entropy_high=p,
        k=k,
        draft_cost_us=d,
        tail=tail,
        seed=seed,
        n_sequences=400,
        tokens_per_seq=48,
    )
    m = simulate(c).metrics
    se = m["speedup_ci95"] / Z95
    # 4.5 sigma: 25 examples x many runs must not flake; the delta-method se is approximate.
    assert abs(m["speedup"] - m["speedup_exact"]) <= 4.5 * se + 1e-9
    assert 1.0 <= m["tokens_per_cycle"] <= k + 1


def _coverage_grid() -> list[SpecConfig]:
    models = {
        "fixed": [{"acceptance_rate": a} for a in (0.5, 0.8, 0.95)],
        "position_decay": [{"decay_base": b, "decay_factor": 0.9} for b in (0.6, 0.8, 0.95)],
        "entropy_aware": [{"entropy_frac": f} for f in (0.1, 0.4, 0.7)],
    }
    return [
        SpecConfig(
            draft_model=model,
            k=k,
            tail=tail,
            tokens_per_seq=length,
            n_sequences=200,
            seed=seed,
            draft_cost_us=15.0,
        ).replace(**params)
        for model, variants in models.items()
        for params in variants
        for k in (1, 3, 6, 12)
        for tail in ("full", "clamp")
        for length in (16, 100)
        for seed in (1, 2)
    ]


def test_monte_carlo_intervals_cover_the_exact_value_at_their_rate():
    """Over 288 independent configurations (every model, K, tail rule and length), the
    Monte Carlo speedup's 95 % interval holds the exact value about 95 % of the time: the
    count of hits is binomial(288, 0.95), and a correct sampler stays within Z_STRICT
    standard deviations of 273.6 (a biased sampler, or intervals too narrow, does not)."""
    configs = _coverage_grid()
    hits = {0.95: 0, 0.5: 0}
    for config in configs:
        m = simulate(config).metrics
        gap = abs(m["speedup"] - m["speedup_exact"])
        hits[0.95] += gap <= m["speedup_ci95"]
        # The 50 % interval, from the same standard error: checks that the intervals are
        # not too wide either (the 95 % count cannot, its bound reaching all 288).
        hits[0.5] += gap <= m["speedup_ci95"] * 0.6744897501960817 / Z95
    n = len(configs)
    assert n == 288
    for rate, count in hits.items():
        sd = (n * rate * (1 - rate)) ** 0.5
        assert abs(count - rate * n) <= Z_STRICT * sd, (rate, count)
