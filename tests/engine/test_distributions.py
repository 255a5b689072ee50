"""Acceptance from distributions (engine.acceptance.rules and the distribution model, issue
#28): the sampling transforms and the rules on distributions small enough to compute by
hand, the rules against the real algorithms sampled token by token, the Zipf family's
entropy, and the model's rates."""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine.acceptance import rules as d
from engine.core.config import SpecConfig
from engine.core.fields import ConfigError
from engine.core.parts import ACCEPTANCE

P = np.array([[0.5, 0.3, 0.2]])
Q = np.array([[0.2, 0.5, 0.3]])


def test_each_rule_by_hand():
    assert d.acceptance(P, Q, "rejection")[0] == pytest.approx(0.2 + 0.3 + 0.2)
    assert d.acceptance(P, Q, "exact_match")[0] == pytest.approx(0.10 + 0.15 + 0.06)
    assert d.acceptance(P, Q, "one_hot")[0] == pytest.approx(0.3)  # the draft's argmax is 1
    assert d.acceptance(P, Q, "greedy")[0] == 0.0  # argmaxes 0 and 1
    assert d.acceptance(P, P, "greedy")[0] == 1.0
    # typical: H(p) = 1.0297 nats, 0.3 e^-H = 0.107 > 0.09: the threshold is 0.09 < p(1).
    assert d.acceptance(P, Q, "typical")[0] == 1.0
    # A flat target (H = ln 20) is lenient: 0.05 > min(0.09, 0.3 / 20).
    flat, last = np.full((1, 20), 1 / 20), np.array([[0.0] * 19 + [1.0]])
    assert d.acceptance(flat, last, "typical")[0] == 1.0
    # A peaked one is strict: H = 0.394 nats, threshold min(0.09, 0.202); 0.05 is below.
    peaked, second = np.array([[0.9, 0.05, 0.05]]), np.array([[0.1, 0.8, 0.1]])
    assert d.acceptance(peaked, second, "typical")[0] == 0.0
    with pytest.raises(ValueError, match="unknown acceptance rule"):
        d.acceptance(P, Q, "optimistic")


def test_transforms():
    logits = np.log(np.array([[0.1, 0.4, 0.3, 0.2]]))
    assert d.sampled(logits, 0.0).tolist() == [[0.0, 1.0, 0.0, 0.0]]
    assert d.sampled(logits, 1.0)[0] == pytest.approx([0.1, 0.4, 0.3, 0.2])
    hot = d.sampled(logits, 0.5)[0]  # p^2 renormalised
    assert hot == pytest.approx(np.array([0.01, 0.16, 0.09, 0.04]) / 0.30)
    assert d.sampled(logits, 1.0, top_k=2)[0] == pytest.approx([0, 4 / 7, 3 / 7, 0])
    # A tie at the edge of top-k keeps the lower token ids: (.1, .3, .3, .3) cut to 2.
    tied = np.log(np.array([[0.1, 0.3, 0.3, 0.3], [0.3, 0.1, 0.3, 0.3]]))
    assert d.sampled(tied, 1.0, top_k=2) == pytest.approx(
        np.array([[0, 0.5, 0.5, 0], [0.5, 0, 0.5, 0]])
    )
    # top-p 0.6: 0.4 alone is short of it, 0.4 + 0.3 reaches it.
    assert d.sampled(logits, 1.0, top_p=0.6)[0] == pytest.approx([0, 4 / 7, 3 / 7, 0])
    assert d.sampled(logits, 1.0, top_p=0.4)[0] == pytest.approx([0, 1, 0, 0])
    # min-p 0.5: tokens below 0.5 x 0.4 = 0.2 go.
    assert d.sampled(logits, 1.0, min_p=0.5)[0] == pytest.approx([0, 4 / 9, 3 / 9, 2 / 9])


def test_each_engines_transforms_in_its_order():
    """engine.acceptance.samplers: p = (0.1, 0.4, 0.3, 0.2) at temperature 0.5, top-p 0.5."""
    from engine.acceptance.samplers import SAMPLERS

    logits = np.log(np.array([[0.1, 0.4, 0.3, 0.2]]))
    # hf: temperature first, p^2 / 0.30 = (.033, .533, .3, .133): 0.533 alone reaches 0.5.
    hf = SAMPLERS["hf"]
    assert d.sampled(logits, 0.5, top_p=0.5, order=hf.target)[0] == pytest.approx([0, 1, 0, 0])
    # llama.cpp: top-p first keeps 0.4 and 0.3, then temperature 0.5: (16, 9) / 25.
    llama = SAMPLERS["llama.cpp"]
    cut_then_cooled = d.sampled(logits, 0.5, top_p=0.5, order=llama.target)[0]
    assert cut_then_cooled == pytest.approx([0, 0.64, 0.36, 0])
    # vllm has no min-p; its draft gets the temperature alone; sglang's draft is raw.
    vllm, sglang = SAMPLERS["vllm"], SAMPLERS["sglang"]
    assert d.sampled(logits, 1.0, min_p=0.5, order=vllm.target)[0] == pytest.approx(
        [0.1, 0.4, 0.3, 0.2]
    )
    cooled = d.sampled(logits, 0.5, top_k=1, top_p=0.5, min_p=0.5, order=vllm.draft)[0]
    assert cooled == pytest.approx(np.array([0.01, 0.16, 0.09, 0.04]) / 0.30)
    raw = d.sampled(logits, 0.0, top_k=1, order=sglang.draft)[0]
    assert raw == pytest.approx([0.1, 0.4, 0.3, 0.2])


def test_the_sampler_decides_what_the_draft_is_cut_to():
    """With top-p 0.8 the target is cut; hf cuts the draft too, vllm does not (its draft's
    tail, where p is 0, is lost to min(p, q)); an argmax draft does not see the difference."""
    rates = {}
    for sampler in ("hf", "vllm", "sglang"):
        for rule in ("rejection", "one_hot"):
            config, model = distribution(vocab=2000, family_size=8, top_p=0.8, sampler=sampler,
                                         accept_rule=rule, temperature=0.8)  # fmt: skip
            rates[sampler, rule] = model.position_probs(config, 1)[0]
    assert rates["vllm", "rejection"] < rates["hf", "rejection"] - 0.02
    assert rates["vllm", "one_hot"] == rates["sglang", "one_hot"] == rates["hf", "one_hot"]


def test_the_rules_are_what_the_algorithms_accept_token_by_token():
    """Sampled the way an engine runs them (fixed seed; tolerance 4 standard errors)."""
    rng = np.random.default_rng(11)
    p, q = P[0], Q[0]
    n = 200_000
    drafted = rng.choice(3, size=n, p=q)
    u = rng.random(n)
    rejection = np.mean(u < np.minimum(1.0, p[drafted] / q[drafted]))
    own = rng.choice(3, size=n, p=p)
    exact = np.mean(own == drafted)
    one_hot = np.mean(own == np.argmax(q))
    for measured, rule in ((rejection, "rejection"), (exact, "exact_match"), (one_hot, "one_hot")):
        expected = d.acceptance(P, Q, rule)[0]
        assert abs(measured - expected) < 4 * math.sqrt(expected * (1 - expected) / n), rule


@pytest.mark.parametrize("bits", [0.5, 2.0, 7.5, 12.0])
def test_a_zipf_target_has_the_entropy_asked(bits):
    vocab = 32_000
    p = d.softmax(d.zipf_logits(d.zipf_exponent(np.array([bits]), vocab), vocab))[0]
    assert -(p * np.log2(p)).sum() == pytest.approx(bits, abs=2e-3)
    assert np.all(np.diff(p) <= 0)  # ranks in order


def test_drafts_by_mismatch():
    target = d.zipf_logits(np.array([1.1]), 50)
    rng = np.random.default_rng(0)
    assert np.array_equal(d.draft_logits(target, "temperature", 1.0, rng), target)
    noisy = d.draft_logits(target, "noise", 0.5, rng)
    assert 0.3 < np.std(noisy - target) < 0.7
    cut = d.draft_logits(target, "truncation", 3, rng)
    assert np.isfinite(cut[0, :3]).all() and np.isneginf(cut[0, 3:]).all()


def distribution(**fields):
    config = SpecConfig().replace(
        **{"draft_model": "distribution", **{f"acceptance.{k}": v for k, v in fields.items()}}
    )
    return config, ACCEPTANCE.of(config)


def test_the_part_gives_rates_that_rise_with_depth_from_a_difficulty_mix():
    config, model = distribution(vocab=2000, family_size=16)
    rates = model.position_probs(config, 5)
    assert np.all(np.diff(rates) > 0) and 0.5 < rates[0] < 1.0
    alone, _ = distribution(vocab=2000, family_size=16, hard_frac=0.0)
    flat = ACCEPTANCE.of(alone).position_probs(alone, 5)
    assert np.allclose(flat, flat[0])  # one difficulty, no growth: the same at every depth
    grows, _ = distribution(vocab=2000, family_size=16, hard_frac=0.0, mismatch_growth=0.5)
    falling = ACCEPTANCE.of(grows).position_probs(grows, 5)
    assert np.all(np.diff(falling) < 0)


def test_lossless_rules_order_as_theory_says():
    """For the same p and q: rejection accepts the most of the sampled-draft rules
    (sum min(p, q) >= sum p q), and at temperature 0 every lossless rule reduces to greedy."""
    for rule_rates in (("rejection", "exact_match"),):
        hi, lo = (
            ACCEPTANCE.of(c).position_probs(c, 3)
            for c, _ in (distribution(vocab=500, family_size=8, accept_rule=r) for r in rule_rates)
        )
        assert np.all(hi >= lo)
    at_zero = {
        rule: ACCEPTANCE.of(c).position_probs(c, 2)
        for rule in ("rejection", "one_hot", "exact_match", "greedy")
        for c, _ in [distribution(vocab=500, family_size=8, accept_rule=rule, temperature=0.0,
                                  mismatch="noise", mismatch_size=1.0)]
    }  # fmt: skip
    for rule, rates in at_zero.items():
        assert rates == pytest.approx(at_zero["greedy"]), rule
    assert 0.0 < at_zero["greedy"][0] < 1.0  # noise moves some argmaxes


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"vocab": 1000, "entropy_easy": 10.0}, "acceptance.entropy_easy"),
        ({"mismatch": "truncation", "mismatch_size": 2.5}, "acceptance.mismatch_size"),
        ({"mismatch": "temperature", "mismatch_size": 0.0}, "acceptance.mismatch_size"),
        ({"vocab": 100, "top_k": 101}, "acceptance.top_k"),
        ({"vocab": 262_144, "family_size": 200}, "acceptance.family_size"),
    ],
)
def test_inconsistent_fields_are_refused_naming_the_field(fields, field):
    config, model = distribution(**fields)
    with pytest.raises(ConfigError) as error:
        model.position_probs(config, 3)
    assert error.value.field == field


def test_the_cycles_survival_mixes_the_difficulties_by_their_shares():
    from engine.acceptance.distribution import family_of, position_rate

    config, model = distribution(vocab=800, family_size=8, hard_frac=0.25, mismatch_growth=0.2)
    family = family_of(config)
    easy = np.cumprod([position_rate(family, 0, i) for i in range(1, 5)])
    hard = np.cumprod([position_rate(family, 1, i) for i in range(1, 5)])
    assert not np.allclose(easy, hard)
    survival = model.survival(config, 4)
    assert survival[1:] == pytest.approx(0.75 * easy + 0.25 * hard)
    assert model.position_probs(config, 4) == pytest.approx(survival[1:] / survival[:-1])


def test_a_mismatch_that_does_not_grow_is_computed_once_and_growth_stops_at_depth_64():
    from engine.acceptance.distribution import _conditional, _survival, position_rate

    config, model = distribution(vocab=300, family_size=4, hard_frac=0.0)
    for cached in (position_rate, _survival, _conditional):
        cached.cache_clear()
    model.position_probs(config, 40)
    assert position_rate.cache_info().misses == 1
    grows, model = distribution(vocab=300, family_size=4, hard_frac=0.0, mismatch_growth=0.1)
    rates = model.position_probs(grows, 70)
    assert rates[69] == pytest.approx(rates[63], rel=1e-12) and rates[62] > rates[63] + 1e-6


def test_sampled_drafting_gains_more_over_argmax_drafting_as_the_temperature_rises():
    """The direction of llama.cpp PR 27694: drafting by sampling (rejection) against drafting
    the argmax (one_hot), at temperatures 0, 0.5, 1 and 1.5."""
    gaps = []
    for temperature in (0.0, 0.5, 1.0, 1.5):
        rates = {
            rule: ACCEPTANCE.of(c).position_probs(c, 1)[0]
            for rule in ("rejection", "one_hot")
            for c, _ in [distribution(vocab=2000, family_size=8, accept_rule=rule,
                                      temperature=temperature)]
        }  # fmt: skip
        gaps.append(rates["rejection"] - rates["one_hot"])
    assert gaps[0] == pytest.approx(0.0) and np.all(np.diff(gaps[1:]) > 0) and gaps[-1] > 0.1
