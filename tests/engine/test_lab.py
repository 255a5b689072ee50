"""The losslessness lab (engine.acceptance.lab, issue #28): the rules' algorithms run token
by token emit what the target gives when the rule is lossless, a broken residual (xLLM PR
2175's bug) is caught by the same test, a lossy rule is measured, and the chi-square tail
is right. Fixed seeds; 1e-3 is the false-alarm level of the lossless checks."""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine.acceptance import lab
from engine.acceptance import rules as d


def test_the_chi_square_tail():
    assert lab.chi2_sf(0.5, 2) == pytest.approx(math.exp(-0.25), rel=1e-12)  # 2 dof: e^-x/2
    assert lab.chi2_sf(3.841458820694124, 1) == pytest.approx(0.05, rel=1e-9)
    assert lab.chi2_sf(18.307038053275146, 10) == pytest.approx(0.05, rel=1e-9)
    assert lab.chi2_sf(124.342113404, 100) == pytest.approx(0.05, rel=1e-7)  # series side too
    assert lab.chi2_sf(0.0, 3) == 1.0 and lab.chi2_sf(math.inf, 3) == 0.0


def contexts(count, vocab, seed):
    """Target and draft pairs from the Zipf family with logit noise."""
    rng = np.random.default_rng(seed)
    exponents = rng.uniform(0.8, 1.6, count)
    target = d.zipf_logits(exponents, vocab)
    draft = d.draft_logits(target, "noise", 0.8, rng)
    return d.sampled(target, 1.0), d.sampled(draft, 1.0)


@pytest.mark.parametrize("rule", ["rejection", "one_hot", "exact_match"])
def test_a_lossless_rule_emits_the_targets_distribution(rule):
    p, q = contexts(4, 60, seed=3)
    rng = np.random.default_rng(5)
    total, accepted = None, []
    for row in range(len(p)):
        tokens, kept = lab.emit(p[row], q[row], rule, 250_000, rng)
        test = lab.chi_square(np.bincount(tokens, minlength=60), p[row])
        total = test if total is None else total + test
        accepted.append(kept.mean())
    assert total.p_value > 1e-3, total
    # What it accepts is the rule's expected acceptance (4 standard errors).
    expected = d.acceptance(p, q, rule)
    error = np.abs(np.array(accepted) - expected)
    assert np.all(error < 4 * np.sqrt(expected * (1 - expected) / 250_000))


@pytest.mark.parametrize("rule", ["rejection", "one_hot"])
def test_a_correction_drawn_from_p_instead_of_the_residual_is_caught(rule):
    p, q = contexts(4, 60, seed=3)
    rng = np.random.default_rng(5)
    tests = [
        lab.chi_square(np.bincount(lab.emit(p[r], q[r], rule, 250_000, rng, broken=True)[0],
                                   minlength=60), p[r])
        for r in range(len(p))
    ]  # fmt: skip
    total = tests[0] + tests[1] + tests[2] + tests[3]
    assert total.p_value < 1e-12, total


def test_typical_acceptance_is_lossy_and_greedy_is_exact_at_temperature_zero():
    p, q = contexts(1, 60, seed=3)
    rng = np.random.default_rng(9)
    tokens, kept = lab.emit(p[0], q[0], "typical", 200_000, rng)
    counts = np.bincount(tokens, minlength=60)
    assert kept.all()  # the draft's argmax passes the threshold here
    assert lab.chi_square(counts, p[0]).p_value < 1e-12
    assert lab.tv_distance(counts, p[0]) == pytest.approx(1 - p[0][np.argmax(q[0])], abs=1e-9)
    cold = d.sampled(np.log(p), 0.0)[0]
    tokens, _ = lab.emit(cold, q[0], "greedy", 1000, rng)
    assert lab.chi_square(np.bincount(tokens, minlength=60), cold).p_value == 1.0


def test_a_token_the_target_never_gives_fails_at_once():
    p = np.array([0.5, 0.5, 0.0])
    assert lab.chi_square(np.array([10, 10, 1]), p).p_value == 0.0


def test_an_unknown_rule_is_refused():
    with pytest.raises(ValueError, match="unknown acceptance rule"):
        lab.emit(np.array([1.0]), np.array([1.0]), "optimistic", 3, np.random.default_rng(0))


def test_bins_expected_below_five_are_pooled():
    """Expected 90, 4, 3, 3 of 100: the last three pool into one bin of 10."""
    test = lab.chi_square(np.array([80, 10, 5, 5]), np.array([0.9, 0.04, 0.03, 0.03]))
    assert (test.statistic, test.dof) == (pytest.approx(100 / 90 + 100 / 10), 1)


def test_the_exact_emitted_distributions():
    """Lossless rules emit p; greedy and typical a single token; a broken residual a mix.
    A vocabulary of 50,000 costs one vector, not a square matrix."""
    p, q = P3, Q3
    for rule in ("rejection", "one_hot", "exact_match"):
        assert lab.emitted_distribution(p, q, rule) == pytest.approx(p)
    assert lab.emitted_distribution(p, q, "greedy").tolist() == [1.0, 0.0, 0.0]
    # rejection, broken: min(p, q) kept, the rest (0.3) spread as p.
    assert lab.emitted_distribution(p, q, "rejection", broken=True) == pytest.approx(
        np.minimum(p, q) + 0.3 * p
    )
    big = np.full(50_000, 1 / 50_000)
    assert lab.emitted_distribution(big, big, "typical").sum() == 1.0


P3, Q3 = np.array([0.5, 0.3, 0.2]), np.array([0.2, 0.5, 0.3])
