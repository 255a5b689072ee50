"""Token trees as a scenario's draft shape: a chain reduces to the original, Monte Carlo
holds the exact values, and the comparisons `spectui tree` prints."""

from __future__ import annotations

import numpy as np
import pytest

from engine.core.config import ConfigError, SpecConfig
from engine.shapes.trees import chain
from engine.simulate.exact import speedup_exact
from engine.simulate.simulator import simulate
from engine.simulate.tree_scenario import BUDGETS, best_sequoia, budget_by_batch, tree_exact
from engine.sweep.sweep import evaluate_many

WIDE = 4.5 / 1.959963984540054  # 4.5 standard errors, in 95 % half-widths


def _tree(text: str, probs: str = "0.6,0.15,0.06,0.03,0.02", **changes: object) -> SpecConfig:
    return SpecConfig(**changes).replace(
        **{"shape.name": "tree", "shape.tree": text, "shape.rank_probs": probs}
    )


@pytest.mark.parametrize("cost", ["linear", "roofline"])
@pytest.mark.parametrize(("k", "p"), [(1, 0.5), (5, 0.8), (9, 0.93)])
def test_a_chain_tree_is_the_original_chain(cost, k, p):
    original = SpecConfig(k=k, acceptance_rate=p, cost_model=cost, batch_size=8)
    as_tree = _tree(f"chain:{k}", repr(p), cost_model=cost, batch_size=8)
    assert speedup_exact(as_tree) == pytest.approx(speedup_exact(original), rel=1e-12)
    assert tree_exact(as_tree)["tokens_per_cycle_exact"] == pytest.approx(
        1 + sum(p**i for i in range(1, k + 1))
    )


@pytest.mark.parametrize(
    ("text", "cost"),
    [("eagle", "linear"), ("kary:2,3", "roofline"), ("sequoia:24,5", "roofline_max")],
)
def test_monte_carlo_of_sampled_paths_holds_the_exact_speedup(text, cost):
    config = _tree(text, cost_model=cost, n_sequences=3000, seed=11)
    m = simulate(config).metrics
    assert abs(m["speedup"] - m["speedup_exact"]) <= WIDE * m["speedup_ci95"], m
    assert m["tokens_per_cycle"] == pytest.approx(m["tokens_per_cycle_exact"], rel=0.02)


def test_a_sweep_row_of_a_tree_says_its_sampler():
    rows = evaluate_many([_tree("kary:2,2", n_sequences=100), SpecConfig(n_sequences=100)])
    assert [r["sampler"] for r in rows] == ["tree/1", "prefix/2"]
    assert rows[0]["drafted_tokens"] == 6 * rows[0]["cycles"]  # every cycle drafts 6 nodes


def test_sequoia_beats_the_chains_it_contains():
    config = _tree("eagle", cost_model="roofline", tokens_per_seq=64)
    best = best_sequoia(config, budgets=(1, 2, 4, 8))
    for k in (1, 2, 4):
        assert best.speedup >= tree_exact(config, chain(k))["speedup_exact"] - 1e-12


def test_trees_stop_paying_before_chains_as_the_batch_grows():
    """Roofline (Llama-3.1-8B on an H100): at batch 1 a wide tree is nearly free to verify
    and beats the best chain; at batch 256 the best tree is a single node, no better than
    the chain."""
    config = _tree("eagle", cost_model="roofline", tokens_per_seq=64)
    grid = budget_by_batch(config, batch_sizes=(1, 16, 256), budgets=BUDGETS[:8])
    assert grid.best_budget[0] > grid.best_budget[1] > grid.best_budget[2]
    assert grid.best_speedup[0] > 1.2 * grid.chain_speedup[0]
    assert grid.best_speedup[2] == pytest.approx(grid.chain_speedup[2], rel=1e-9)
    assert np.all(grid.best_speedup >= grid.chain_speedup - 1e-12)


@pytest.mark.parametrize(
    ("changes", "match"),
    [
        ({"shape.rank_probs": "0.7,0.5"}, "shape.rank_probs: 0.7,0.5 sums to more than 1"),
        ({"tail": "clamp"}, "tail: clamp is for chains"),
        ({"policy.name": "hf_heuristic"}, "policy.name: hf_heuristic runs on chains"),
    ],
)
def test_a_tree_refuses_what_it_cannot_run(changes, match):
    with pytest.raises(ConfigError, match=match):
        _tree("eagle").replace(**changes)


def test_a_bad_tree_text_names_its_field():
    with pytest.raises(ConfigError, match="shape.tree"):
        speedup_exact(_tree("kary:x"))
