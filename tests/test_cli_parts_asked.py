"""What `spectui run`, `regime` and `tree` print where they ask the chosen part (issue 24:
no part name compared to a literal): a fixed K against a policy that chooses each cycle's
k, the break-even cost ratio only under a cost of fixed draft and verify passes, the note
of a map or a batch table whose cost has no batch dependence, and the tree command's
default shape."""

from __future__ import annotations

import json

import pytest

from engine.core.parts import COST
from spectui.cli import main


@pytest.fixture
def cli(capsys, monkeypatch):
    """`spectui ARGS` in this process: (status, stdout with its lines joined)."""
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "200")

    def invoke(*args: str) -> tuple[int, str]:
        status = main(list(args))
        return status, capsys.readouterr().out

    return invoke


def test_a_fixed_k_run_names_its_k_and_its_break_even_ratio(cli):
    status, out = cli("run", "--preset", "tiny")
    assert status == 0
    assert "fixed (acceptance 0.8), K=3, linear: draft 20 us" in out
    assert "K=3, context 0" in out and "a cycle of K" not in out
    assert "break-even cost ratio" in out


def test_a_policy_run_names_its_policy_and_prices_a_full_cycle(cli):
    status, out = cli("run", "--preset", "tiny", "--policy", "hf_heuristic")
    assert status == 0
    assert "fixed (acceptance 0.8), policy hf_heuristic K0=3, linear" in out
    assert "K=3, linear" not in out
    assert "a cycle of K=3, context 0" in out


def test_a_tree_run_names_its_tree_and_prices_its_own_cycle(cli):
    status, out = cli("run", "--preset", "tiny", "--shape", "tree")
    assert status == 0
    assert "tree eagle (rank probabilities 0.6,0.15,0.06,0.03,0.02), linear" in out
    assert "fixed (acceptance" not in out
    assert "60 nodes, depth 7, context 0" in out


def test_a_roofline_run_has_no_break_even_ratio(cli):
    status, out = cli("run", "--preset", "tiny", "--cost", "roofline")
    assert status == 0
    assert "K=3, roofline on h100" in out
    assert "break-even cost ratio" not in out
    assert "verify pass             memory-bound  batch 1" in out


def test_a_linear_map_names_the_cost_models_that_vary(cli):
    status, out = cli("regime", "--preset", "tiny", "--cost", "linear", "--contexts", "1k")
    assert status == 0
    assert (
        "note: the linear cost model has no batch or context dependence: every cell is the "
        "same (choose --cost roofline, roofline_max or table)"
    ) in out


def test_the_tree_command_runs_a_tree_and_notes_a_cost_without_batch_dependence(cli):
    status, out = cli("tree", "--preset", "tiny", "--json")
    assert status == 0
    scenario = json.loads(out)["scenario"]
    assert scenario["shape.name"] == "tree" and scenario["cost.model"] == "roofline"
    status, out = cli("tree", "--preset", "tiny")
    assert status == 0 and "no batch dependence" not in out
    status, out = cli("tree", "--preset", "tiny", "--cost", "linear")
    assert status == 0
    assert "note: a linear cost has no batch dependence: every row is the same" in out


def test_the_tree_commands_help_names_its_default_cost(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    with pytest.raises(SystemExit):
        main(["tree", "--help"])
    choices = ",".join(COST.names())  # every cost model, in the registry's order
    cost_help = capsys.readouterr().out.split(f"--cost {{{choices}}}")[-1]
    assert "(default: roofline)" in cost_help.split("--")[0]
