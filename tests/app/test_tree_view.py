"""The Tree view (key 8): the scenario's tree with each node's path probability, a sampled
cycle's accepted path marked, the best tree size by batch, and a bad shape said in one line;
at 80x24 with the form hidden, and without colour."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np
import pytest
from textual.widgets import TabbedContent

from engine.trees import parse_tree, path_probs
from spectui.app import create_app
from spectui.messages import ConfigChanged
from spectui.widgets.tree_view import (
    ACCEPTED_MARK,
    BATCH_SIZES,
    BUDGETS,
    path_to,
    prob_text,
    summary_cell,
)
from tests.app.helpers import settle
from tests.app.screen import region_text, screen_text, style_of

TREE_TEXT = "parents=0,0,1,1,2,3 ranks=1,2,1,2,1,1"
RANK_PROBS = np.array([0.6, 0.25])


@dataclass
class Grid:
    """A BudgetGrid as engine.tree_scenario.budget_by_batch returns it."""

    batch_sizes: tuple[int, ...]
    budgets: tuple[int, ...]
    speedup: np.ndarray
    best_budget: np.ndarray
    best_speedup: np.ndarray
    chain_k: np.ndarray
    chain_speedup: np.ndarray


def fake_grid(batch_sizes, budgets) -> Grid:
    """Trees that pay less as the batch grows: the best budget shrinks row by row."""
    b, j = len(batch_sizes), len(budgets)
    speedup = np.array([[1.6 + 0.25 * c - 0.06 * r * (c + 1) for c in range(j)] for r in range(b)])
    best = speedup.argmax(axis=1)
    return Grid(
        tuple(batch_sizes),
        tuple(budgets),
        speedup,
        np.array([budgets[c] for c in best]),
        speedup.max(axis=1),
        np.array([max(1, 5 - r // 2) for r in range(b)]),
        np.array([2.1 - 0.12 * r for r in range(b)]),
    )


@pytest.fixture
def scenario(monkeypatch):
    """A stand-in engine.tree_scenario: TREE_TEXT (or ``shape.text``) under RANK_PROBS."""
    shape = SimpleNamespace(text=TREE_TEXT, grids=[])

    def budget_by_batch(config, batch_sizes, budgets):
        grid = fake_grid(batch_sizes, budgets)
        shape.grids.append(grid)
        return grid

    fake = SimpleNamespace(
        rank_probs_of=lambda config: RANK_PROBS,
        tree_of=lambda config: parse_tree(shape.text, RANK_PROBS),
        budget_by_batch=budget_by_batch,
    )
    monkeypatch.setitem(sys.modules, "engine.tree_scenario", fake)
    return shape


async def _open_tree(pilot, app) -> None:
    await settle(pilot, app)
    await pilot.press("ctrl+b")  # the form hidden: 80 columns for the view
    await pilot.press("8")
    await settle(pilot, app, rounds=4)
    await pilot.pause()


def _tree_lines(app) -> list[str]:
    """The tree's rows on screen, root first."""
    lines = region_text(app, app.query_one("#tree-nodes")).splitlines()
    return [line.rstrip() for line in lines if line.strip()]


async def test_key_8_draws_each_node_with_its_path_probability(scenario):
    app = create_app("default")
    async with app.run_test(size=(80, 24)) as pilot:
        await _open_tree(pilot, app)
        assert app.query_one(TabbedContent).active == "tree"
        assert app.focused is app.query_one("#tree-nodes")
        assert "8 Tree" in screen_text(app)
        tree = parse_tree(TREE_TEXT)
        probs = path_probs(tree, RANK_PROBS)
        lines = _tree_lines(app)
        assert "root" in lines[0]
        # Drawn depth first: node 1 (r1 0.60), its children 3 and 4, node 3's child 6, then 2.
        order = (1, 3, 6, 4, 2, 5)
        assert len(lines) == 1 + tree.nodes
        for line, node in zip(lines[1:], order, strict=True):
            label = f"r{tree.ranks[node - 1]} {prob_text(float(probs[node - 1]))}"
            assert line.replace(ACCEPTED_MARK, "").split()[-2:] == label.split()
        assert [line.split()[-1] for line in lines[1:]] == [
            "0.60", "0.36", "0.22", "0.15", "0.25", "0.15"
        ]  # fmt: skip
        assert "6 nodes, depth 3 (widths 2,3,1), verify width 7" in screen_text(app)


def _marked(app) -> list[int]:
    """The nodes whose rows carry the accepted mark on screen (0 the root), by row."""
    view = app.query_one("#tree-nodes")
    rows = _tree_lines(app)
    shown = [node for node in _row_nodes(view)]
    return [node for node, row in zip(shown, rows, strict=True) if ACCEPTED_MARK in row]


def _row_nodes(view) -> list[int]:
    """The node index of each row of the drawn tree (all expanded, none scrolled off)."""
    return [view.get_node_at_line(line).data for line in range(view.last_line + 1)]


async def test_s_marks_a_root_to_node_path(scenario):
    app = create_app("default")
    async with app.run_test(size=(80, 24)) as pilot:
        await _open_tree(pilot, app)
        view = app.query_one("#tree-view")
        tree = view.draft
        seen = set()
        for _ in range(12):
            await pilot.press("s")
            await pilot.pause()
            marked = _marked(app)
            last = max(marked, key=lambda node: 0 if node == 0 else tree.depths[node - 1])
            assert sorted(marked) == sorted(path_to(tree, last))  # root, then parent to child
            seen.add(last)
            cycle = " ".join(region_text(app, app.query_one("#tree-cycle")).split())
            assert f"{len(marked) - 1} drafts accepted" in cycle
        assert len(seen) > 2  # several paths, some ending below depth 1
        assert view.cycles == 13  # the first cycle is drawn with the tree
        assert style_of(app, f"{ACCEPTED_MARK} root").reverse


async def test_the_heatmap_row_shows_the_best_budget(scenario):
    app = create_app("default")
    async with app.run_test(size=(80, 24)) as pilot:
        await _open_tree(pilot, app)
        (grid,) = scenario.grids
        assert grid.batch_sizes == BATCH_SIZES and grid.budgets == BUDGETS
        lines = region_text(app, app.query_one("#tree-budgets")).splitlines()
        assert lines[0].split()[:4] == ["tree", "n*", "chain", "K*"]
        for b, batch in enumerate(BATCH_SIZES):
            row = lines[1 + b]
            assert row.split()[0] == str(batch)
            best = summary_cell(int(grid.best_budget[b]), float(grid.best_speedup[b]))
            chain = summary_cell(int(grid.chain_k[b]), float(grid.chain_speedup[b]))
            assert f"{best}{chain}" in row
        assert "batch 1: best tree 128 nodes 2.85x" in screen_text(app)
        # The linear form is mapped as roofline, and the title says so.
        assert "Best tree by batch (linear cost: as roofline)" in screen_text(app)


async def test_a_bad_shape_text_says_so_in_one_line(scenario):
    app = create_app("default")
    async with app.run_test(size=(80, 24)) as pilot:
        await _open_tree(pilot, app)
        scenario.text = "parents=0,3"
        app.post_message(ConfigChanged(app.config.replace(seed=7)))
        await settle(pilot, app, rounds=4)
        status = region_text(app, app.query_one("#tree-status"))
        assert status.strip() == "shape: tree: node 2 has parent 3; it must be 0..1"
        assert app.query_one("#tree-view").draft is None
        assert not _tree_lines(app)[1:]  # the root alone
        await pilot.press("s")  # nothing to sample: still running
        scenario.text = "parents=0,1"
        app.post_message(ConfigChanged(app.config.replace(seed=8)))
        await settle(pilot, app, rounds=4)
        assert len(_tree_lines(app)) == 3
        assert app.is_running


async def test_readable_without_colour(scenario, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    app = create_app("default")
    async with app.run_test(size=(80, 24)) as pilot:
        await _open_tree(pilot, app)
        assert app.no_color
        assert f"{ACCEPTED_MARK} root" in screen_text(app)
        assert _marked(app)[0] == 0
