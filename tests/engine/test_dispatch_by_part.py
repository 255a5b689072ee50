"""The engines choose their path by asking the scenario's parts (issue #24): a token tree
(the shape's ``tree``) has its own exact figures, refuses the reference loop and never
shares draws; a policy that chooses k cycle by cycle (``stepwise``) is what the reference
loop names when it refuses one."""

from __future__ import annotations

import pytest

from engine.core.config import ConfigError, SpecConfig
from engine.core.kernel import cycle_costs
from engine.simulate.exact import (
    exact_metrics,
    expected_sequence_time_us,
    tokens_per_cycle_at_length,
)
from engine.simulate.reference import simulate_reference
from engine.simulate.simulator import simulate, simulate_shared
from engine.sweep.sweep import evaluate_many


def _tree(**changes: object) -> SpecConfig:
    return SpecConfig(n_sequences=40, tokens_per_seq=64, **changes).replace(
        **{"shape.name": "tree", "shape.tree": "kary:2,2"}
    )


def test_a_trees_exact_time_and_tokens_per_cycle_are_its_own():
    """The exact time of a sequence and the tokens per cycle at its length agree with the
    tree's exact speedup and tokens per cycle (not a chain of K's)."""
    tree = _tree()
    exact = exact_metrics(tree)
    baseline = cycle_costs(tree).baseline_us
    assert baseline / expected_sequence_time_us(tree) == pytest.approx(exact["speedup_exact"])
    assert tokens_per_cycle_at_length(tree) == pytest.approx(exact["tokens_per_cycle_exact"])


def test_trees_never_share_draws():
    """Two trees that differ only in their costs run alone, each as it would by itself."""
    trees = [_tree(draft_cost_us=10.0), _tree(draft_cost_us=40.0)]
    rows = evaluate_many(trees)
    assert [row["speedup"] for row in rows] == [simulate(t).metrics["speedup"] for t in trees]
    with pytest.raises(ValueError, match="runs alone"):
        simulate_shared(trees)


@pytest.mark.parametrize(
    ("changes", "field"),
    [({"policy.name": "hf_heuristic"}, "policy.name"), ({"draft_model": "markov"}, "draft_model")],
)
def test_the_reference_loop_names_what_it_cannot_run(changes, field):
    with pytest.raises(ConfigError, match="the reference engine runs a fixed K") as err:
        simulate_reference(SpecConfig(n_sequences=5).replace(**changes))
    assert err.value.field == field
