"""A token tree's per-cycle records (issue 22, item 1): one row per cycle with the accepted
depth, the last accepted node and the times, ordered by sequence then cycle; the same draws
with or without them, streamed in bounded groups, and bounded when only the first are kept."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import engine.simulate.tree_scenario as tree_scenario
from engine.core.config import ConfigError, SpecConfig
from engine.core.runs import RunStopped
from engine.shapes.trees import parse_tree
from engine.simulate.reference import simulate_reference
from engine.simulate.simulator import simulate

TREE = SpecConfig(shape="tree", n_sequences=40, tokens_per_seq=48, seed=3)
ROOFLINE = TREE.replace(tree="kary:2,3", cost_model="roofline", prompt_len=512, batch_size=8)


def _depths(parents: tuple[int, ...]) -> list[int]:
    """Depth of nodes 0..n, walked from the parents here (not the Tree's own)."""
    depth = [0]
    for parent in parents:
        depth.append(depth[parent] + 1)
    return depth


@pytest.mark.parametrize("config", [TREE, ROOFLINE], ids=["eagle-linear", "kary-roofline"])
def test_records_are_every_cycle_and_agree_with_the_runs_totals(config):
    plain = simulate(config)
    run = simulate(config, records=True)
    assert run.metrics == plain.metrics  # records do not change the draws
    cycles = run.cycles
    assert cycles is not None and len(cycles) == plain.metrics["cycles"]
    tree = parse_tree(config.tree, [float(p) for p in config.rank_probs.split(",")])
    assert (cycles["k"] == tree.nodes).all()
    assert int(cycles["accepted"].sum()) == plain.metrics["accepted_tokens"]
    # Ordered by sequence, then cycle 0, 1, ... of each.
    assert cycles["sequence"].is_monotonic_increasing
    assert (cycles.groupby("sequence")["cycle"].diff().dropna() == 1).all()
    # The last accepted node lies at the accepted depth (0, the root, for none).
    depth = np.array(_depths(tree.parents))
    assert (depth[cycles["node"].to_numpy()] == cycles["accepted"].to_numpy()).all()
    # kept = min(depth + 1, tokens still needed); cumulative columns add up per sequence.
    before = cycles.groupby("sequence")["cum_tokens"].shift(fill_value=0)
    need = config.tokens_per_seq - before
    assert (cycles["kept"] == np.minimum(cycles["accepted"] + 1, need)).all()
    assert (cycles["cum_tokens"] == before + cycles["kept"]).all()
    last = cycles.groupby("sequence").tail(1)
    assert len(last) == config.n_sequences and (last["cum_tokens"] == config.tokens_per_seq).all()
    time = cycles.groupby("sequence")["cycle_time_us"].cumsum()
    np.testing.assert_allclose(cycles["cum_time_us"], time, rtol=1e-12)
    assert last["cum_time_us"].sum() == pytest.approx(plain.metrics["spec_time_us"], rel=1e-12)


def test_streamed_records_in_groups_are_the_records_of_one_run(monkeypatch):
    whole = simulate(TREE, records=True)
    monkeypatch.setattr(tree_scenario, "TREE_RECORDS_PER_PASS", 100)  # a few sequences each
    chunks: list[pd.DataFrame] = []
    streamed = simulate(TREE, on_cycles=chunks.append)
    assert len(chunks) > 3
    assert streamed.metrics == whole.metrics
    pd.testing.assert_frame_equal(pd.concat(chunks, ignore_index=True), whole.cycles)


def test_kept_records_are_the_first_and_the_metrics_cover_every_cycle():
    whole = simulate(TREE, records=True)
    first = simulate(TREE, records=True, max_records=100)
    assert first.metrics == whole.metrics
    assert first.cycles is not None and len(first.cycles) == 100
    pd.testing.assert_frame_equal(first.cycles, whole.cycles.iloc[:100])


def test_acceptance_by_depth_of_a_chain_tree_is_its_rank_probability():
    # chain:6 with p_1 = 0.7: the path goes one level further with probability 0.7.
    config = TREE.replace(tree="chain:6", rank_probs="0.7", n_sequences=3000)
    model = tree_scenario.depth_acceptance(config)
    np.testing.assert_allclose(model, [0.7] * 6, rtol=1e-12)
    observed = simulate(config, position_counts=True).position_acceptance(6)
    np.testing.assert_allclose(observed, 0.7, atol=0.03)
    # Node 2 is a leaf above the tree's depth: a path that takes it goes no further.
    leafy = TREE.replace(tree="parents=0,0,1", rank_probs="0.5,0.3")
    np.testing.assert_allclose(tree_scenario.depth_acceptance(leafy), [0.8, 0.5 * 0.5 / 0.8])


def test_a_tree_run_stops_after_the_step_it_is_in():
    # Before: asked every 16 steps only, so a run of fewer steps could not be stopped.
    asked: list[int] = []

    def stop() -> bool:
        asked.append(1)
        return True

    with pytest.raises(RunStopped):
        simulate(TREE.replace(tokens_per_seq=10), should_stop=stop)
    assert len(asked) == 1


def test_the_reference_engine_refuses_a_tree_rather_than_run_a_chain():
    with pytest.raises(ConfigError) as err:
        simulate_reference(TREE)
    assert err.value.field == "shape.name" and "fast engine" in str(err.value)


def test_path_texts_name_the_nodes_from_the_root_down():
    tree = parse_tree("parents=0,0,1,1,3")
    assert tree.path_texts() == ("-", "1", "2", "1>3", "1>4", "1>3>5")
