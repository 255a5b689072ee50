import numpy as np
import pytest

import engine.acceptance
from engine.acceptance.draft_models import DRAFT_MODELS, PrefixSampler, get_model, inert_parameters
from engine.core.config import SpecConfig
from engine.simulate.exact import accepted_distribution
from tests.engine.stats import Z_STRICT, chi2_critical, chi2_statistic


def test_registry_and_reads():
    # The look-up is the registry of acceptance models: the built-in ones, the original's first.
    assert tuple(DRAFT_MODELS) == engine.acceptance.BUILT_IN
    assert tuple(DRAFT_MODELS)[:3] == ("fixed", "position_decay", "entropy_aware")
    assert get_model("fixed").reads == ("acceptance_rate",)
    assert set(get_model("position_decay").reads) == {"decay_base", "decay_factor"}
    assert set(get_model("entropy_aware").reads) == {"entropy_high", "entropy_low", "entropy_frac"}
    assert "acceptance_rate" in inert_parameters("entropy_aware")
    assert "decay_base" not in inert_parameters("position_decay")
    with pytest.raises(KeyError, match="known: fixed"):
        get_model("nope")


def test_position_probs_follow_semantics():
    c = SpecConfig(
        acceptance_rate=0.7,
        decay_base=0.8,
        decay_factor=0.5,
        entropy_high=0.9,
        entropy_low=0.2,
        entropy_frac=0.25,
    )
    assert np.allclose(get_model("fixed").position_probs(c, 3), [0.7, 0.7, 0.7])
    assert np.allclose(get_model("position_decay").position_probs(c, 3), [0.8, 0.4, 0.2])
    # 0.25 * 0.2 + 0.75 * 0.9 = 0.725
    assert np.allclose(get_model("entropy_aware").position_probs(c, 2), [0.725, 0.725])


CONFIG = SpecConfig(
    acceptance_rate=0.6,
    decay_base=0.9,
    decay_factor=0.8,
    entropy_high=0.95,
    entropy_low=0.3,
    entropy_frac=0.4,
)

# Survival vectors with every kind of edge: a threshold on a bucket's edge (0.5), certain
# acceptance, certain rejection, K = 1,024 with thresholds packed into few buckets.
SURVIVALS = {
    "half": np.array([0.5]),
    "fixed 0.8": np.cumprod(np.full(5, 0.8)),
    "certain": np.ones(7),
    "never": np.zeros(3),
    "then never": np.array([0.9, 0.0, 0.0]),
    "K=1024 near 1": np.cumprod(np.full(1024, 0.9999)),
    "decay": np.cumprod(0.9 * 0.5 ** np.arange(12)),
}


def _definition(sampler: PrefixSampler, u: np.ndarray) -> np.ndarray:
    """n = #{i : u < t_i}, t_i = floor(S_i * 2**48), by brute force."""
    thresholds = -sampler._neg_thresholds
    return (u[:, None] < thresholds[None, :]).sum(axis=1)


@pytest.mark.parametrize("name", list(SURVIVALS))
def test_every_table_bucket_holds_the_count_of_every_draw_in_it(name):
    sampler = PrefixSampler(SURVIVALS[name])
    buckets = np.arange(1 << 16, dtype=np.int64)
    lowest = _definition(sampler, buckets << 32)
    highest = _definition(sampler, (buckets << 32) + (1 << 32) - 1)
    table = sampler._table.astype(np.int64)
    shared = table > 0
    np.testing.assert_array_equal(table[shared] - 1, lowest[shared])
    np.testing.assert_array_equal(table[shared] - 1, highest[shared])
    assert (lowest[~shared] != highest[~shared]).all()  # searched only where it must be
    assert np.count_nonzero(~shared) <= sampler.k


@pytest.mark.parametrize("name", list(SURVIVALS))
def test_emitted_is_one_uniform_per_cycle_by_the_definition(name):
    """Rebuild each cycle's 48-bit uniform from the generator's raw outputs (16 bits per
    cycle, four to an output, then 32 low bits for each cycle whose bucket a threshold
    splits) and count its accepted drafts by brute force: the sampler gives exactly that,
    and uses no other random number."""
    sampler, size = PrefixSampler(SURVIVALS[name]), 10_003
    emitted = sampler.emitted(np.random.default_rng(5), size)
    rng = np.random.default_rng(5)
    top = rng.bit_generator.random_raw((size + 3) // 4).astype("<u8").view("<u2")[:size]
    u = top.astype(np.int64) << 32
    split = np.flatnonzero(sampler._table[top] == 0)
    u[split] += (rng.bit_generator.random_raw(split.size) >> np.uint64(32)).astype(np.int64)
    np.testing.assert_array_equal(emitted, _definition(sampler, u) + 1)
    after = np.random.default_rng(5)
    after.bit_generator.random_raw((size + 3) // 4 + split.size)
    assert rng.bit_generator.state == after.bit_generator.state
    # The same for the sampler's own generator: nothing drawn beyond those outputs.
    used = np.random.default_rng(5)
    sampler.emitted(used, size)
    assert used.bit_generator.state == after.bit_generator.state


def test_a_cycle_draws_the_same_at_k_1_and_k_1024():
    """Random numbers used per cycle do not grow with K: 16 bits a cycle, and 64 more only
    for a cycle whose bucket a threshold splits (at most K of 65,536 buckets)."""
    cycles = 40_000
    for k in (1, 1024):
        sampler = get_model("fixed").prefix_sampler(CONFIG.replace(k=k))
        rng = np.random.default_rng(3)
        sampler.emitted(rng, cycles)
        probe = np.random.default_rng(3)
        draws = 0
        while probe.bit_generator.state != rng.bit_generator.state:
            probe.bit_generator.random_raw()
            draws += 1
        split = np.count_nonzero(sampler._table == 0) / 65_536
        extra = draws - cycles // 4
        assert extra >= 0
        expected = cycles * split  # binomial: cycles that fall in a split bucket
        assert abs(extra - expected) <= Z_STRICT * np.sqrt(expected) + 1, (k, extra, expected)


@pytest.mark.parametrize("model", list(DRAFT_MODELS))
@pytest.mark.parametrize("k", [1, 4, 9])
def test_accepted_counts_follow_the_survival(model, k):
    config = CONFIG.replace(draft_model=model, k=k)
    sampler = get_model(model).prefix_sampler(config)
    emitted = sampler.emitted(np.random.default_rng(11), 200_000)
    observed = np.bincount(emitted.astype(np.int64) - 1, minlength=k + 1).astype(float)
    stat, dof = chi2_statistic(observed, accepted_distribution(config, k))
    assert stat <= chi2_critical(dof), (stat, dof)


def test_certain_and_impossible_acceptance_are_exact():
    always = PrefixSampler(np.ones(6)).emitted(np.random.default_rng(1), 5000)
    never = PrefixSampler(np.zeros(6)).emitted(np.random.default_rng(1), 5000)
    assert (always == 7).all() and (never == 1).all()


@pytest.mark.parametrize("model", [m for m in DRAFT_MODELS if m != "markov"])
def test_reference_token_tests_match_the_marginals(model):
    """The reference loop's per-token tests (for entropy_aware: a class, then a test)."""
    rng, rows = np.random.default_rng(1), 40_000
    p = get_model(model).position_probs(CONFIG, 3)
    accepted = np.array(
        [
            [get_model(model).accept_token(CONFIG, rng, position) for position in (1, 2, 3)]
            for _ in range(rows)
        ]
    )
    se = np.sqrt(p * (1 - p) / rows)
    assert np.all(np.abs(accepted.mean(axis=0) - p) <= Z_STRICT * se)
