"""`spectui run --shape tree` (issue 22, item 1): its cycles file holds every cycle (the
accepted path of each), and the draft and verify times it prints are the tree's, not a
chain of K's. Expectations are computed here from the tree's parents and the cost model's
passes, not by the code that writes or prints them."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from engine.core.config import SpecConfig
from engine.cost.models import build_cost
from engine.shapes.trees import parse_tree
from engine.simulate.simulator import simulate
from spectui.cli import main

ARGS = ["--shape", "tree", "--n-sequences", "30", "--tokens-per-seq", "40", "--seed", "5"]
CONFIG = SpecConfig(shape="tree", n_sequences=30, tokens_per_seq=40, seed=5)


@pytest.fixture
def run(capsys, monkeypatch):
    """`spectui run ARGS` in this process: (status, stdout, stderr)."""
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "100")

    def invoke(*args: str) -> tuple[int, str, str]:
        status = main(["run", *args])
        out = capsys.readouterr()
        return status, out.out, out.err

    return invoke


def _paths(parents: tuple[int, ...]) -> list[str]:
    """Each node's path from the root, written out from the parents ("-" for the root)."""
    paths = ["-"]
    for node, parent in enumerate(parents, start=1):
        paths.append(str(node) if parent == 0 else f"{paths[parent]}>{node}")
    return paths


def test_cycles_out_of_a_tree_writes_every_cycle_with_its_path(run, tmp_path):
    out = tmp_path / "tree.csv"
    status, stdout, _ = run(*ARGS, "--cycles-out", str(out), "--json")
    assert status == 0
    metrics = json.loads(stdout)["metrics"]
    written = pd.read_csv(out, dtype={"path": str})
    assert len(written) == metrics["cycles"] > 0  # a header and every row, not a header alone
    tree = parse_tree("eagle", [0.6, 0.15, 0.06, 0.03, 0.02])
    records = simulate(CONFIG, records=True).cycles
    assert records is not None
    expected = records.copy()
    expected["path"] = [_paths(tree.parents)[node] for node in records["node"]]
    # Linear cost: the baseline pays verify_cost_us per token.
    expected["running_speedup"] = (
        records["cum_tokens"] * CONFIG.verify_cost_us / records["cum_time_us"]
    )
    assert out.read_text() == expected.to_csv(index=False)
    assert list(written.columns) == [
        "sequence", "cycle", "k", "accepted", "kept", "cycle_time_us", "cum_tokens",
        "cum_time_us", "node", "path", "running_speedup",
    ]  # fmt: skip
    assert (
        written["accepted"] == written["path"].map(lambda p: 0 if p == "-" else p.count(">") + 1)
    ).all()


def test_cycles_out_of_a_tree_as_parquet_holds_the_csvs_rows(run, tmp_path):
    pytest.importorskip("pyarrow")
    assert run(*ARGS, "--cycles-out", str(tmp_path / "t.csv"))[0] == 0
    assert run(*ARGS, "--cycles-out", str(tmp_path / "t.parquet"))[0] == 0
    csv = pd.read_csv(tmp_path / "t.csv", dtype={"path": str})
    parquet = pd.read_parquet(tmp_path / "t.parquet")
    assert len(parquet) > 0  # a schema and every row, not a schema alone
    pd.testing.assert_frame_equal(parquet, csv, check_dtype=False)


def test_a_tree_runs_times_are_the_trees_own_under_linear(run):
    # 60 nodes in 7 levels: 7 draft passes (+ the fixed cost), one verify over 61 tokens.
    extra = ["--verify-token-us", "2", "--draft-fixed-us", "5"]
    status, stdout, _ = run(*ARGS, *extra, "--json")
    assert status == 0
    cost = json.loads(stdout)["cost"]
    assert (cost["tree_nodes"], cost["tree_depth"]) == (60, 7)
    assert cost["draft_us"] == pytest.approx(7 * 20 + 5)
    assert cost["verify_us"] == pytest.approx(200 + 2 * 60)
    assert cost["cycle_us"] == pytest.approx(145 + 320)
    status, stdout, _ = run(*ARGS, *extra)
    assert "145.0 us  60 nodes, depth 7" in stdout
    assert "320.0 us  61 tokens/seq" in stdout


@pytest.mark.parametrize("batch", [1, 16])
def test_a_tree_runs_times_and_bound_under_a_roofline(run, batch):
    config = CONFIG.replace(cost_model="roofline", batch_size=batch)
    cost = build_cost(config)
    tree = parse_tree("eagle", [0.6, 0.15, 0.06, 0.03, 0.02])
    widths = np.bincount(np.array(tree.depths))[1:]  # nodes per level
    draft = sum(float(cost.draft_pass_us(int(w), batch, 0)) for w in widths)
    verify = float(cost.verify_us(tree.nodes + 1, batch, 0))
    bound = str(cost.bound(tree.nodes + 1, batch, 0))
    assert bound == ("memory" if batch == 1 else "compute")  # a chain of 5 is memory-bound
    status, stdout, _ = run(*ARGS, "--cost", "roofline", "--batch-size", str(batch), "--json")
    assert status == 0
    figures = json.loads(stdout)["cost"]
    assert figures["draft_us"] == pytest.approx(draft, rel=1e-12)
    assert figures["verify_us"] == pytest.approx(verify, rel=1e-12)
    assert figures["verify_bound"] == bound
    _, text, _ = run(*ARGS, "--cost", "roofline", "--batch-size", str(batch))
    assert f"{draft:,.1f} us  60 nodes, depth 7" in text
    assert f"{bound}-bound" in text


def test_the_reference_engine_says_it_runs_no_tree(run):
    # Before: it ran the chain of the inert K and printed that as the tree's speedup.
    status, stdout, stderr = run(*ARGS, "--engine", "reference")
    assert status == 2 and stdout == ""
    assert stderr.strip().splitlines() == [
        "spectui run: error: shape.name: the reference engine runs chains, not a tree; use "
        "the fast engine"
    ]
