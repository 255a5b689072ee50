"""`spectui tree`, `spectui run` and the Tree view bounded (issue #41): a Sequoia tree too
large to compute is refused in one line, with the estimate and the bound, before any work
starts; `spectui tree` with many rank probabilities runs one Sequoia program, not 254."""

from __future__ import annotations

import json
import re

import pytest

import engine.shapes.trees
import engine.simulate.tree_scenario
from tests.engine.test_trees_bounds import top_path_sums

REFUSAL = (
    "shape.tree: tree 'sequoia:4096,64': Sequoia's program would compare about "
    "2,687,631,360 candidates (64 depths x 5 ranks x 8,398,848 a step), above the bound of "
    "1,073,741,824: ask for a smaller budget or depth"
)


@pytest.fixture
def no_program(monkeypatch):
    """Sequoia's program, and the comparison of `spectui tree`, fail the test if they start."""

    def never(*_, **__):
        raise AssertionError("the work started")

    monkeypatch.setattr(engine.shapes.trees, "_sequoia_program", never)
    monkeypatch.setattr(engine.simulate.tree_scenario, "compare_shapes", never)


@pytest.mark.parametrize("command", ["tree", "run"])
def test_a_sequoia_tree_too_large_is_refused_before_any_work(cli, no_program, command):
    """Before issue #41 `spectui tree` ran its comparison, then 672 MB and no answer after
    60 s in the program; `spectui run` the same program."""
    status, out, err = cli(command, "--shape", "tree", "--tree", "sequoia:4096,64")
    assert (status, out) == (2, "")
    assert err == f"spectui {command}: error: {REFUSAL}\n"


def test_tree_with_many_rank_probabilities_runs_one_sequoia_program(cli, monkeypatch):
    """64 rank probabilities (the field holds up to 1,024: before issue #41 no output after
    70 s, 254 programs of 16 x 1,024 steps each): the comparison and the grid by batch share
    one program of budget 128 and depth 16, and its best Sequoia row has the largest E[n + 1]
    of its budget and depth (the largest path probabilities, independently)."""
    programs = []
    real = engine.shapes.trees._sequoia_program

    def counted(table, budget):
        programs.append((table.shape, budget))
        return real(table, budget)

    monkeypatch.setattr(engine.shapes.trees, "_sequoia_program", counted)
    probs = [0.5, 0.2] + [0.004] * 62
    text = ",".join(map(str, probs))
    status, out, err = cli(
        "tree", "--rank-probs", text, "--tokens-per-seq", "16", "--cost", "linear", "--json"
    )
    assert status == 0, err
    assert programs == [((16, 64), 128)]
    row = json.loads(out)["shapes"][-1]
    budget, depth = map(int, re.fullmatch(r"Sequoia (\d+)/(\d+)", row["name"]).groups())
    assert row["nodes"] <= budget and row["depth"] <= depth
    expected = top_path_sums(probs, budget, depth)[budget]
    assert row["expected_tokens"] == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("tree", ["sequoia:１６,4", "kary:2,٣", "chain:1_0"])
def test_a_tree_text_takes_ascii_digits_only(cli, tree):
    status, out, err = cli("run", "--shape", "tree", "--tree", tree)
    assert (status, out) == (2, "")
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert err.startswith("spectui run: error: shape.tree: tree: ")
    assert "must be whole numbers (ASCII digits) separated by commas" in err


def test_the_tree_view_says_the_refusal_and_keeps_running(monkeypatch):
    """The app's Tree view builds the form's tree through the same bound: the refusal in its
    status line, no program started. (An app test outside tests/app: run in an event loop of
    its own, as tests/app/conftest.py runs those, timings hidden as there.)"""
    import asyncio

    monkeypatch.setenv("SPECTUI_HIDE_TIMINGS", "1")
    asyncio.run(_tree_view_refuses(monkeypatch))


async def _tree_view_refuses(monkeypatch) -> None:
    from engine.core.config import SpecConfig
    from spectui.widgets.tree_view import TreeView
    from tests.app.helpers import settle, until
    from tests.app.hosts_views import ViewHost
    from tests.app.screen import region_text
    from tests.app.test_tree_view import fake_grid

    def never(*_, **__):
        raise AssertionError("the program started")

    monkeypatch.setattr(engine.shapes.trees, "_sequoia_program", never)
    # the heatmap (of the form's rank probabilities, not of its tree) instant and known
    monkeypatch.setattr(engine.simulate.tree_scenario, "budget_by_batch", fake_grid)
    view = TreeView(id="tree-view")
    view.config = SpecConfig(shape="tree", tree="sequoia:4096,64")
    app = ViewHost(view, "trees", "8 Tree", form=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app, rounds=4)

        def status() -> str:
            return " ".join(region_text(app, app.query_one("#tree-status")).split())

        await until(pilot, lambda: "Sequoia's program" in status())
        assert status() == REFUSAL
        assert app.is_running
