"""The ordered Zipf family's acceptance in closed form (engine.acceptance.power_law): its
power sums against sums term by term, and every rule, mismatch and sampling transform against
the direct computation on whole distributions (engine.acceptance.rules)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from engine.acceptance import power_law as pl
from engine.acceptance import rules as d
from engine.acceptance.distribution import (
    Family,
    family_contexts,
    family_of,
    position_rate,
)
from engine.acceptance.samplers import SAMPLERS
from engine.core.config import SpecConfig

RANKS = np.arange(1, 40_001, dtype=np.float64)


EXPONENTS = [0.0, 0.3, 0.999, 1 - 1e-7, 1.0, 1 + 1e-7, 1.001, 1.7, 7.5, 40.0, 800.0]


@pytest.mark.parametrize("a", EXPONENTS)
def test_power_sums_are_the_sums_term_by_term(a):
    ns = np.array([0, 1, 5, 31, 32, 33, 100, 4_321, 40_000])
    fast = pl.power_sum(ns, np.full(ns.size, a))
    logged = pl.log_power_sum(ns, np.full(ns.size, a))
    for n, s, with_log in zip(ns, fast, logged, strict=True):
        terms = RANKS[:n] ** -a
        assert s == pytest.approx(terms.sum(), rel=1e-13, abs=0)
        assert with_log == pytest.approx((terms * np.log(RANKS[:n])).sum(), rel=1e-12, abs=1e-300)


SAMPLINGS = [  # temperature, top_k, top_p, min_p
    (1.0, 0, 1.0, 0.0),
    (0.5, 0, 1.0, 0.0),
    (1.5, 50, 1.0, 0.0),
    (1.0, 0, 0.9, 0.0),
    (0.8, 0, 1.0, 0.05),
    (1.0, 100, 0.7, 0.01),
    (0.0, 0, 1.0, 0.0),
]


@pytest.mark.parametrize("rule", ["rejection", "one_hot", "exact_match", "greedy", "typical"])
def test_every_rule_transform_and_sampler_is_the_direct_computation(rule):
    rng = np.random.default_rng(7)
    vocab, exponents = 1_000, rng.uniform(0.2, 3.0, 20)
    mismatches = [("temperature", 1.3), ("temperature", 0.7), ("temperature", 1.0)]
    mismatches += [("truncation", 40), ("truncation", 3)]
    for (mismatch, size), sampling, sampler in itertools.product(
        mismatches, SAMPLINGS, SAMPLERS.values()
    ):
        target = d.zipf_logits(exponents, vocab)
        draft = d.draft_logits(target, mismatch, size, rng)
        p = d.sampled(target, *sampling, sampler.target)
        direct = d.acceptance(p, d.sampled(draft, *sampling, sampler.draft), rule)
        full = np.full(exponents.size, vocab)
        if mismatch == "temperature":
            b, cap = exponents / size, full
        else:
            b, cap = exponents, np.full(exponents.size, size)
        a, n_p = pl.side(exponents, full, *sampling, sampler.target)
        b, n_q = pl.side(b, cap, *sampling, sampler.draft)
        closed = pl.acceptance(a, n_p, b, n_q, rule)
        assert closed == pytest.approx(direct, abs=1e-12), (mismatch, size, sampling, sampler)


@pytest.mark.parametrize(
    "fields",
    [
        {"accept_rule": "rejection", "mismatch_growth": 0.4},
        {"accept_rule": "exact_match", "top_p": 0.8, "temperature": 0.7},
        {"accept_rule": "rejection", "top_p": 0.8, "temperature": 0.7, "sampler": "vllm"},
        {"accept_rule": "rejection", "min_p": 0.1, "temperature": 1.4, "sampler": "llama.cpp"},
        {
            "accept_rule": "one_hot",
            "mismatch": "truncation",
            "mismatch_size": 50.0,
            "mismatch_growth": 1.0,
        },
    ],
)
def test_the_models_rates_in_closed_form_are_the_contexts_mean(fields):
    """position_rate takes the closed form for these families: the same as averaging the
    rule over the contexts family_contexts builds, at each depth."""
    values = {"vocab": 2_000, "family_size": 24, **fields}
    config = SpecConfig().replace(
        draft_model="distribution", **{f"acceptance.{k}": v for k, v in values.items()}
    )
    family = family_of(config)
    for g in (0, 1):
        for position in (1, 3):
            direct = np.concatenate(
                [d.acceptance(p, q, family.rule) for p, q in family_contexts(family, g, position)]
            )
            assert position_rate(family, g, position) == pytest.approx(direct.mean(), abs=1e-12)


def test_the_speed_goals_size_is_computed_whole():
    """V = 32,000, 1,000 contexts, 16 depths: every rate is finite, in [0, 1], and falls
    with depth as the mismatch grows (its time: benchmarks/bench_distributions.py)."""
    family = Family(32_000, 1.5, 5.0, "temperature", 1.3, 0.2, "rejection", 1.0, 0, 0.95, 0.0,
                    "hf", 1_000, ())  # fmt: skip
    rates = [position_rate(family, 1, i) for i in range(1, 17)]
    assert all(0.0 < r < 1.0 for r in rates)
    assert rates == sorted(rates, reverse=True) and rates[0] - rates[-1] > 0.1
