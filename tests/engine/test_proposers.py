"""Model-free proposers (n-gram / prompt lookup, suffix decoding; docs/model.md,
"Proposers"): hand-worked exact values, the Monte Carlo engine and the literal loop against
them within their sampling error, and what the default proposer must leave as it was.

Hand-worked cases use the linear cost: a verify pass over w tokens costs
``verify_cost_us + verify_token_us * (w - 1)``; a model-free step adds its look-up
``proposer.cpu_us`` and never a draft pass; a step without a match is one decoding step.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine.core.config import ConfigError, SpecConfig, seed_key_values
from engine.core.kernel import cycle_costs
from engine.simulate.exact import (
    exact_metrics,
    expected_sequence_time_us,
    tokens_per_cycle_at_length,
)


def scenario(**values: object) -> SpecConfig:
    return SpecConfig().replace(**values)


def ngram(**values: object) -> SpecConfig:
    return scenario(**{"proposer.name": "ngram", **values})


def suffix(**values: object) -> SpecConfig:
    return scenario(**{"proposer.name": "suffix", **values})


# ---- exact values, by hand ------------------------------------------------------------


@pytest.mark.parametrize("make", [ngram, suffix])
@pytest.mark.parametrize("tail", ["full", "clamp"])
def test_no_match_is_a_plain_step_plus_the_lookup(make, tail):
    """h = 0: every step is a decoding step (200 us) plus the look-up (1.5 us), so the
    speedup is T x 200 / (T x 201.5) = 400 / 403, below 1 by the look-up."""
    config = make(**{"proposer.hit_rate": 0.0, "proposer.cpu_us": 1.5, "tail": tail})
    figures = exact_metrics(config)
    assert figures["speedup_exact"] == pytest.approx(400 / 403, rel=1e-13)
    assert figures["speedup_limit"] == pytest.approx(400 / 403, rel=1e-13)
    assert figures["tokens_per_cycle_exact"] == 1.0
    assert tokens_per_cycle_at_length(config) == pytest.approx(1.0, rel=1e-13)
    assert expected_sequence_time_us(config) == pytest.approx(128 * 201.5, rel=1e-13)


def test_a_step_without_a_match_pays_no_speculative_tax():
    """cost.spec_overhead_us (30 us, a roofline's) is paid by a step that verifies drafts,
    never by a plain decoding step: at h = 0 every step is the baseline's step plus the
    look-up, so the time is the baseline's plus T x 1.5 us whatever the context."""
    from engine.core.parts import COST

    roofline = {
        "cost.model": "roofline",
        "cost.spec_overhead_us": 30.0,
        "workload.prompt_len": 512,
        "proposer.cpu_us": 1.5,
        "k": 3,
    }
    never = ngram(**{**roofline, "proposer.hit_rate": 0.0})
    baseline = cycle_costs(never).baseline_us
    expected = baseline / (baseline + 128 * 1.5)
    assert exact_metrics(never)["speedup_exact"] == pytest.approx(expected, rel=1e-12)
    costs = cycle_costs(never)
    model = COST.of(never).build(never)
    context = 512 + 128 - 7  # r = 7
    assert costs.miss_us is not None
    assert costs.miss_us[7] == pytest.approx(1.5 + model.verify_us(1, 1, context), rel=1e-13)
    checked = model.verify_us(4, 1, context) + 30.0
    assert costs.cycle_us[7] == pytest.approx(1.5 + checked, rel=1e-13)


def test_two_tokens_by_hand():
    """T = 2, K = 1, a = 0.8, h = 0.5, verify 200 + 20 a checked draft, look-up 10.

    f(1) = 10 + 0.5 x 220 + 0.5 x 200 = 220 (its outcomes all finish);
    f(2) = 220 + P(one token) f(1) = 220 x (1 + 1 - 0.5 x 0.8) = 352;
    speedup = 2 x 200 / 352 = 25/22. Long run: 1.4 tokens a step over 220 us, at a decoding
    step of 200: 1.4 x 200 / 220 = 14/11; target positions 1 + 0.5 per 1.4 tokens."""
    config = ngram(
        k=1,
        tokens_per_seq=2,
        **{
            "cost.verify_token_us": 20.0,
            "proposer.hit_rate": 0.5,
            "proposer.cpu_us": 10.0,
        },
    )
    figures = exact_metrics(config)
    assert figures["speedup_exact"] == pytest.approx(25 / 22, rel=1e-13)
    assert figures["speedup_limit"] == pytest.approx(14 / 11, rel=1e-13)
    assert figures["tokens_per_cycle_exact"] == pytest.approx(1.4, rel=1e-13)
    assert figures["compute_overhead_limit"] == pytest.approx(1.5 / 1.4 - 1, rel=1e-12)
    assert math.isnan(figures["breakeven_cost_ratio"])  # no draft pass to break even


@pytest.mark.parametrize(("tail", "expected"), [("full", 48 / 43), ("clamp", 240 / 209)])
def test_suffix_three_tokens_by_hand(tail, expected):
    """T = 3, K = 2, a = 0.5, h = 0.5, mean match 2 (P(L >= 2) = 1/2), verify 100 + 10 a
    checked draft, no look-up.

    A match drafts 1 or 2 tokens (1/2 each): P(n >= 1) = h a = 1/4, P(n >= 2) = h a^2 / 2
    = 1/16; a step costs 1/2 (1/2 110 + 1/2 120) + 1/2 100 = 107.5.
    full: f(1) = 107.5, f(2) = 107.5 + 3/4 f(1) = 188.125,
    f(3) = 107.5 + 3/4 f(2) + 3/16 f(1) = 268.75, speedup 300 / 268.75 = 48/43.
    clamp: r = 1 drafts nothing, f(1) = 100; r = 2 drafts at most 1, a step costs 105,
    f(2) = 105 + 3/4 100 = 180; f(3) = 107.5 + 3/4 180 + 3/16 100 = 261.25, 240/209."""
    config = suffix(
        k=2,
        tokens_per_seq=3,
        acceptance_rate=0.5,
        verify_cost_us=100.0,
        tail=tail,
        **{
            "cost.verify_token_us": 10.0,
            "proposer.hit_rate": 0.5,
            "proposer.cpu_us": 0.0,
            "proposer.mean_match": 2.0,
        },
    )
    assert exact_metrics(config)["speedup_exact"] == pytest.approx(expected, rel=1e-13)


def test_always_matching_ngram_is_a_draft_model_at_no_draft_cost():
    """h = 1: every step drafts K, as a draft model whose passes cost nothing; the look-up
    is then the draft's fixed cost per cycle (cost.draft_fixed_us). Leviathan's limit with a
    = 0.8, K = 5: (1 - 0.8^6) / 0.2 = 3.68928 tokens over 201.5 us a step."""
    lookup = 1.5
    free = ngram(**{"proposer.hit_rate": 1.0, "proposer.cpu_us": lookup})
    model = scenario(draft_cost_us=0.0, **{"cost.draft_fixed_us": lookup})
    ours, theirs = exact_metrics(free), exact_metrics(model)
    assert ours["speedup_exact"] == pytest.approx(theirs["speedup_exact"], rel=1e-13)
    assert ours["speedup_limit"] == pytest.approx(3.68928 * 200 / 201.5, rel=1e-13)
    assert ours["tokens_per_cycle_exact"] == pytest.approx(3.68928, rel=1e-13)
    assert tokens_per_cycle_at_length(free) == pytest.approx(3.68928, rel=1e-12)
    # No look-up: the draft model at draft cost 0 itself.
    bare = exact_metrics(ngram(**{"proposer.hit_rate": 1.0, "proposer.cpu_us": 0.0}))
    zero = exact_metrics(scenario(draft_cost_us=0.0))
    assert bare["speedup_exact"] == pytest.approx(zero["speedup_exact"], rel=1e-13)


@pytest.mark.parametrize("tail", ["full", "clamp"])
def test_suffix_of_one_token_is_ngram_with_k_1(tail):
    """A suffix match capped at 1 (K = 1), or one of mean length 1, drafts one token: the
    n-gram proposer at K = 1."""
    common = {
        "tail": tail,
        "acceptance_rate": 0.7,
        "cost.verify_token_us": 15.0,
        "proposer.hit_rate": 0.3,
        "proposer.cpu_us": 4.0,
    }
    reference = exact_metrics(ngram(k=1, **common))
    capped = exact_metrics(suffix(k=1, **common))
    one_long = exact_metrics(suffix(k=5, **{**common, "proposer.mean_match": 1.0}))
    for name in ("speedup_exact", "speedup_limit", "tokens_per_cycle_exact"):
        assert capped[name] == pytest.approx(reference[name], rel=1e-13), name
        assert one_long[name] == pytest.approx(reference[name], rel=1e-13), name


def test_a_step_is_priced_without_a_draft_pass():
    """The kernel prices a model-free step as its look-up plus the verify pass: no draft
    pass (draft_cost_us = 20 is never paid); a miss is the decoding step plus the look-up."""
    config = ngram(k=3, **{"cost.verify_token_us": 5.0, "proposer.cpu_us": 2.0})
    costs = cycle_costs(config)
    assert costs.draft_us[5] == 2.0
    assert costs.cycle_us[5] == 2.0 + 200.0 + 3 * 5.0
    assert costs.miss_us is not None and costs.miss_us[5] == 202.0
    assert costs.cost_ratio == 0.0


# ---- Monte Carlo and the literal loop against the exact values --------------------------


CASES = [
    ("ngram", "full"),
    ("ngram", "clamp"),
    ("suffix", "full"),
    ("suffix", "clamp"),
]


def _case(name: str, tail: str, sequences: int) -> SpecConfig:
    return scenario(
        n_sequences=sequences,
        tokens_per_seq=64,
        tail=tail,
        **{
            "proposer.name": name,
            "proposer.hit_rate": 0.4,
            "proposer.cpu_us": 5.0,
            "cost.verify_token_us": 12.0,
        },
    )


@pytest.mark.parametrize(("name", "tail"), CASES)
def test_monte_carlo_within_four_standard_errors(name, tail):
    from engine.simulate.simulator import simulate

    result = simulate(_case(name, tail, 1500))
    m = result.metrics
    se = m["speedup_ci95"] / 1.959963984540054
    assert abs(m["speedup"] - m["speedup_exact"]) < 4 * se
    # The hit rate observed: every hit drafts under the full tail (binomial error).
    assert result.totals is not None
    steps, hits = m["cycles"], result.totals.drafting_cycles
    hit_se = math.sqrt(0.4 * 0.6 / steps)
    observed = hits / steps
    if tail == "full":
        assert abs(observed - 0.4) < 4 * hit_se
    else:  # a last step with no room drafts nothing even on a match
        assert observed <= 0.4 + 4 * hit_se


@pytest.mark.parametrize(("name", "tail"), CASES)
def test_the_literal_loop_agrees_with_the_exact_value(name, tail):
    from engine.simulate.reference import simulate_reference

    m = simulate_reference(_case(name, tail, 150)).metrics
    se = m["speedup_ci95"] / 1.959963984540054
    assert abs(m["speedup"] - m["speedup_exact"]) < 4 * se


def test_records_add_up_to_the_run():
    """Per-step records: a miss has k = 0 and keeps one token, each sequence keeps T tokens,
    and the last record's cumulative time is what the totals hold."""
    from engine.simulate.simulator import simulate

    config = _case("suffix", "clamp", 40)
    result = simulate(config, records=True)
    cycles = result.cycles
    assert cycles is not None and len(cycles) == result.metrics["cycles"]
    misses = cycles[cycles["k"] == 0]
    assert (misses["accepted"] == 0).all() and (misses["kept"] == 1).all()
    assert (cycles["accepted"] <= cycles["k"]).all() and (cycles["k"] <= config.k).all()
    kept = cycles.groupby("sequence")["kept"].sum()
    assert (kept == config.tokens_per_seq).all() and len(kept) == 40
    last = cycles.groupby("sequence").tail(1)
    assert (last["cum_tokens"] == config.tokens_per_seq).all()
    total = float(last["cum_time_us"].sum())
    assert total == pytest.approx(result.metrics["spec_time_us"], rel=1e-12)
    assert (cycles.groupby("sequence")["cycle"].diff().dropna() == 1).all()
    assert result.totals is not None
    assert result.totals.drafting_cycles == int((cycles["k"] > 0).sum())


def _same(a: dict[str, float], b: dict[str, float]) -> bool:
    """Equal metrics, NaN equal to NaN (the break-even ratio of a model-free proposer)."""
    return a.keys() == b.keys() and all(
        a[k] == b[k] or (math.isnan(a[k]) and math.isnan(b[k])) for k in a
    )


def test_a_run_is_its_seed_and_shares_nothing_with_the_draft_model():
    """Same seed, same run; the hit rate keys the draws (a model-free configuration never
    shares a draft model's draws, which stay keyed as they were)."""
    from engine.simulate.simulator import simulate, simulate_shared

    config = _case("ngram", "full", 30)
    first, again = simulate(config), simulate(config)
    assert _same(first.metrics, again.metrics)
    assert "proposer.hit_rate" in seed_key_values(config)
    assert not any(key.startswith("proposer.") for key in seed_key_values(SpecConfig()))
    assert "proposer.name" not in SpecConfig().to_dict()
    # Configurations differing in cost only: each as if run alone.
    pricier = config.replace(**{"proposer.cpu_us": 50.0})
    shared = simulate_shared([config, pricier])
    assert _same(shared[0].metrics, first.metrics)
    assert _same(shared[1].metrics, simulate(pricier).metrics)
    assert shared[1].metrics["cycles"] == first.metrics["cycles"]
    assert shared[1].metrics["speedup"] < first.metrics["speedup"]


# ---- what is refused ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "field", "words"),
    [
        ({"policy.name": "hf_heuristic"}, "policy.name", "supports policy fixed and shape chain"),
        ({"shape.name": "tree"}, "shape.name", "supports policy fixed and shape chain"),
        ({"draft_model": "markov"}, "draft_model", "cycles are independent"),
        ({"proposer.hit_rate": 1.5}, "proposer.hit_rate", "[0, 1]"),
        ({"proposer.cpu_us": -1.0}, "proposer.cpu_us", "[0, 1e6]"),
        ({"proposer.mean_match": 0.5}, "proposer.mean_match", "[1, 1024]"),
    ],
)
def test_what_a_model_free_proposer_cannot_run_is_refused(values, field, words):
    name = "suffix" if "proposer.mean_match" in values else "ngram"
    with pytest.raises(ConfigError) as caught:
        scenario(**{"proposer.name": name, **values})
    assert caught.value.field == field
    assert words in str(caught.value) and "\n" not in str(caught.value)


def test_a_long_suffix_program_is_refused_before_it_runs():
    with pytest.raises(ConfigError) as caught:
        suffix(tokens_per_seq=10**6, k=100)
    assert caught.value.field == "tokens_per_seq" and "T x (K + 1)" in str(caught.value)


def test_every_accepted_extreme_gives_finite_figures():
    """Hit rates at both ends, the longest match, a free look-up: finite exact figures."""
    for values in (
        {"proposer.name": "ngram", "proposer.hit_rate": 1.0, "proposer.cpu_us": 0.0},
        {"proposer.name": "suffix", "proposer.hit_rate": 1.0, "proposer.mean_match": 1024.0},
        {"proposer.name": "suffix", "proposer.hit_rate": 0.0, "proposer.cpu_us": 1e6},
    ):
        figures = exact_metrics(scenario(k=64, **values))
        finite = [v for n, v in figures.items() if n != "breakeven_cost_ratio"]
        assert np.all(np.isfinite(finite)) and figures["speedup_exact"] > 0, values
