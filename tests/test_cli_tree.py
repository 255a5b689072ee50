"""`spectui tree` and tree scenarios on the command line, asserted on what they print."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from engine.core.config import SpecConfig
from engine.shapes.trees import kary
from engine.simulate.tree_scenario import tree_exact


@pytest.fixture
def run(cli):
    """`spectui ARGS` in this process (the `cli` fixture of tests/conftest.py)."""
    return cli


def test_tree_compares_shapes_and_batches(run):
    status, out, err = run("tree", "--tokens-per-seq", "64", "--kary", "2,2")
    assert status == 0, err
    rows = {
        found[1]: line.split()
        for line in out.splitlines()
        if (found := re.match(r"^(\S.*?)\s{2,}\d", line))
    }
    two = rows["2-ary depth 2"]
    assert two[-6:-4] == ["6", "2"]  # nodes, depth
    config = SpecConfig(cost_model="roofline", tokens_per_seq=64).replace(**{"shape.name": "tree"})
    found = tree_exact(config, kary(2, 2))
    assert (
        two[-4] == f"{found['tokens_per_cycle_exact']:.3f}"
        and two[-1] == f"{found['speedup_exact']:.2f}x"
    )
    assert "Sequoia-optimal budget by batch size" in out
    status, out, _ = run("tree", "--tokens-per-seq", "64", "--json")
    payload = json.loads(out)
    assert [b["batch"] for b in payload["by_batch"]][:3] == [1, 2, 4]
    assert payload["shapes"][-1]["name"].startswith("Sequoia")


def test_run_takes_a_tree(run):
    status, out, err = run(
        "run", "--shape", "tree", "--tree", "sequoia:16,4", "--n-sequences", "200", "--json"
    )
    assert status == 0, err
    payload = json.loads(out)
    assert payload["sampler"] == "tree/1" and payload["metrics"]["speedup_exact"] > 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "--shape", "tree", "--tree", "kary:x"], "shape.tree: "),
        (["run", "--shape", "tree", "--rank-probs", "0.8,0.5"], "shape.rank_probs: 0.8,0.5 sums"),
        (["tree", "--kary", "9,9"], "K^DEPTH <= 4096"),
    ],
)
def test_bad_trees_are_one_line(run, args, message):
    status, _, err = run(*args)
    assert status == 2 and message in err and "Traceback" not in err


@pytest.mark.parametrize("tree", ["kary:2,40", "eagle:10,100,1000", "sequoia:100000,16"])
def test_a_tree_too_large_is_refused_before_it_is_built(run, tree):
    status, _, err = run("run", "--shape", "tree", "--tree", tree)
    assert status == 2 and "shape.tree: tree" in err and "Traceback" not in err


def test_tree_rows_are_left_out_of_the_analysis_of_k(run, tmp_path):
    preset = tmp_path / "trees.toml"
    preset.write_text(
        'description = "trees"\n[config]\nn_sequences = 40\ntokens_per_seq = 32\n'
        '[[grid]]\n"shape.name" = ["tree"]\n"shape.tree" = ["kary:2,2", "chain:3"]\n'
    )
    out = tmp_path / "trees.csv"
    assert run("sweep", "--preset", str(preset), "--out", str(out))[0] == 0
    status, printed, err = run("analyze", str(out))
    assert status == 0, err
    assert "2 rows of token trees left out" in " ".join(printed.split())


def test_tree_prints_the_tree_asked_for_and_table_clamps(run):
    status, out, err = run(
        "tree",
        "--cost",
        "table",
        "--cost-table",
        str(Path(__file__).parent / "engine" / "cost" / "fixtures" / "latency_table.csv"),
        "--tree",
        "kary:2,2",
    )
    assert status == 0, err
    assert any(line.startswith("given kary:2,2") for line in out.splitlines())
    assert "is outside the table's" in err
