"""The Tree view (key 8): the scenario's tree with each node's path probability, a sampled
cycle's accepted path marked, the best tree size by batch, and a bad shape said in one line;
at 80x24 with the form hidden, and without colour."""

from __future__ import annotations

import numpy as np
import pytest
from textual.widgets import Input, TabbedContent

import engine.simulate.tree_scenario
from engine.core.config import SpecConfig
from engine.presets import load_preset
from engine.shapes.trees import parse_tree, path_probs
from engine.simulate.exact import survival
from engine.simulate.tree_scenario import BATCH_SIZES, BUDGETS, BudgetGrid
from spectui.app import create_app
from spectui.widgets.regime_view import map_config
from spectui.widgets.tree_view import (
    ACCEPTED_MARK,
    TreeView,
    path_to,
    prob_text,
    summary_cell,
)
from tests.app.app_waits import booted
from tests.app.helpers import settle, until
from tests.app.hosts_views import ViewHost
from tests.app.screen import region_text, screen_text, style_of

TREE_TEXT = "parents=0,0,1,1,2,3 ranks=1,2,1,2,1,1"
TREE = SpecConfig(shape="tree", tree=TREE_TEXT, rank_probs="0.6,0.25")
RANK_PROBS = np.array([0.6, 0.25])


def fake_grid(config, batch_sizes=BATCH_SIZES, budgets=BUDGETS, should_stop=None) -> BudgetGrid:
    """A grid where trees pay less as the batch grows: the best budget shrinks row by row."""
    b, j = len(batch_sizes), len(budgets)
    speedup = np.array([[1.6 + 0.1 * c - 0.03 * r * (c + 1) for c in range(j)] for r in range(b)])
    best = speedup.argmax(axis=1)
    return BudgetGrid(
        tuple(batch_sizes),
        tuple(budgets),
        speedup,
        np.array([budgets[c] for c in best]),
        speedup.max(axis=1),
        np.array([max(1, 5 - r // 2) for r in range(b)]),
        np.array([2.1 - 0.12 * r for r in range(b)]),
    )


@pytest.fixture
def grids(monkeypatch) -> list[BudgetGrid]:
    """budget_by_batch stands in by :func:`fake_grid` (instant, known); the grids it made."""
    made: list[BudgetGrid] = []

    def fake(config, *args, **kwargs):
        made.append(fake_grid(config, *args, **kwargs))
        return made[-1]

    monkeypatch.setattr(engine.simulate.tree_scenario, "budget_by_batch", fake)
    return made


def _drawn(app) -> bool:
    """The Tree view shows the form's tree and its heatmap (or why it cannot)."""
    found = app.query("#tree-view")
    if not found:
        return False
    view = found.first()
    done = view.error or (view.draft is not None and view.grid is not None)
    busy = [w for w in app.workers if w.node is view and not w.is_finished]
    return not view.dirty and bool(done) and not busy


async def _open_tree(pilot, app, config: SpecConfig | None = TREE, hide: bool = True) -> None:
    """Load ``config`` into the form (None: keep the preset's), press 8, hide the form.

    The form is hidden once the view is drawn: hidden just before, the tab bar sometimes
    kept its short labels at 80 columns (ViewTabs refits them on a resize, and Textual sent
    it none when a layout after the tree's scroll had taken the new width first)."""
    await booted(pilot, app)
    if config is not None:
        app.form.load_config(config)
        await until(pilot, lambda: app.config == config)
    await pilot.press("8")
    await until(pilot, lambda: _drawn(app))
    if hide:
        await pilot.press("ctrl+b")  # the form hidden: 80 columns for the view
        await until(pilot, lambda: app.query_one("#tree-view").size.width == 80)
    await pilot.pause()


def _host(config: SpecConfig | None = TREE, form: bool = False) -> ViewHost:
    """The Tree view alone on the form's ``config`` (None: the default preset's), the form
    hidden (ctrl+b) unless ``form``: as after key 8."""
    view = TreeView(id="tree-view")
    view.config = config if config is not None else load_preset("default").config
    return ViewHost(view, "trees", "8 Tree", form=form)


async def _open_hosted(pilot, app) -> None:
    await settle(pilot, app, rounds=4)
    app.query_one("#tree-nodes").focus()
    await pilot.pause()


def _tree_lines(app) -> list[str]:
    """The tree's rows on screen, root first."""
    lines = region_text(app, app.query_one("#tree-nodes")).splitlines()
    return [line.rstrip() for line in lines if line.strip()]


async def test_key_8_draws_each_node_with_its_path_probability_and_a_bad_shape_in_one_line(
    grids,
):
    """In the app: key 8 shows the form's tree at 80x24 (the form hidden); then, beside the
    form at 100x30, a bad shape typed in the form is said in one line."""
    app = create_app("default")
    async with app.run_test(size=(80, 24)) as pilot:
        await _open_tree(pilot, app)
        assert app.query_one(TabbedContent).active == "trees"
        assert app.focused is app.query_one("#tree-nodes")
        await until(pilot, lambda: "8 Tree" in screen_text(app))  # drawn whole, under load too
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
        assert (
            "6 nodes, depth 3 (widths 2,3,1) · verify 7 · exact 2.726 tokens/cycle"
            in screen_text(app)
        )
        # Beside the form, at 100x30: a bad shape text says so in one line.
        await pilot.press("ctrl+b")
        await pilot.resize_terminal(100, 30)
        side = app.query_one("#side")
        await until(pilot, lambda: app.size == (100, 30) and side.display and side.size.width)
        await until(pilot, lambda: _drawn(app))
        app.query_one("#tree", Input).value = "parents=0,3"  # node 2 under a later node
        await until(pilot, lambda: "node 2 has parent 3" in _status(app))
        status = _status(app)
        assert status.endswith("shape.tree: tree: node 2 has parent 3; it must be 0..1")
        assert "\n" not in status
        await pilot.press("f3", "s")  # nothing to sample: the app keeps running
        app.query_one("#rank_probs", Input).value = "0.9,0.2"  # an invalid form says why
        await until(pilot, lambda: "rank_probs" in _status(app))
        status = " ".join(_status(app).split())  # wrapped
        assert app.config is None
        assert status == (
            "form invalid: shape.rank_probs: 0.9,0.2 sums to more than 1: at most one child "
            "of a node is accepted"
        )
        app.query_one("#rank_probs", Input).value = "0.6,0.25"
        app.query_one("#tree", Input).value = "parents=0,1"
        await until(pilot, lambda: len(_tree_lines(app)) == 3)
        await until(pilot, lambda: _drawn(app))
        assert len(_tree_lines(app)) == 3
        assert app.is_running


def _marked(app) -> list[int]:
    """The nodes whose rows carry the accepted mark on screen (0 the root), by row."""
    view = app.query_one("#tree-nodes")
    rows = _tree_lines(app)
    shown = [node for node in _row_nodes(view)]
    return [node for node, row in zip(shown, rows, strict=True) if ACCEPTED_MARK in row]


def _row_nodes(view) -> list[int]:
    """The node index of each row of the drawn tree (all expanded, none scrolled off)."""
    return [view.get_node_at_line(line).data for line in range(view.last_line + 1)]


async def test_s_marks_a_root_to_node_path(grids):
    app = _host()
    async with app.run_test(size=(80, 24)) as pilot:
        await _open_hosted(pilot, app)
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


async def test_the_heatmap_row_shows_the_best_budget(grids):
    app = _host()
    async with app.run_test(size=(80, 24)) as pilot:
        await _open_hosted(pilot, app)
        grid = grids[-1]
        assert grid.batch_sizes == BATCH_SIZES and grid.budgets == BUDGETS
        lines = region_text(app, app.query_one("#tree-budgets")).splitlines()
        assert lines[0].split()[:4] == ["tree", "n*", "chain", "K*"]
        for b, batch in enumerate(BATCH_SIZES):
            row = lines[1 + b]
            assert row.split()[0] == str(batch)
            best = summary_cell(int(grid.best_budget[b]), float(grid.best_speedup[b]))
            chain = summary_cell(int(grid.chain_k[b]), float(grid.chain_speedup[b]))
            assert f"{best}{chain}" in row
        assert grid.best_budget[0] == 128 and grid.best_budget[-1] == 1  # rows differ
        assert "batch 1: best tree 128 nodes 2.60x" in screen_text(app)
        # The linear form is mapped as roofline, and the title says so.
        assert "Best tree by batch, exact · roofline h100 (form is linear)" in screen_text(app)
        assert "rank p 0.6,0.25" in screen_text(app)


def _status(app) -> str:
    return region_text(app, app.query_one("#tree-status")).strip()


async def test_the_form_chain_on_the_real_engine(monkeypatch):
    """The default form (a chain of K = 5, p = 0.8) with the real budget_by_batch: the chain's
    nodes read its survival P(n >= i); each heatmap row its best budget (the real grid, of
    the form mapped as the Regime view maps it, computed once: it takes seconds)."""
    real = engine.simulate.tree_scenario.budget_by_batch
    made: list[tuple[SpecConfig, BudgetGrid]] = []

    def recorded(config, *args, **kwargs):
        made.append((config, real(config, *args, **kwargs)))
        return made[-1][1]

    monkeypatch.setattr(engine.simulate.tree_scenario, "budget_by_batch", recorded)
    app = _host(config=None)
    async with app.run_test(size=(80, 24)) as pilot:
        await _open_hosted(pilot, app)
        config = app.query_one("#tree-view").config
        lines = _tree_lines(app)
        assert len(lines) == 1 + config.k
        for i, line in enumerate(lines[1:], start=1):
            assert line.replace(ACCEPTED_MARK, "").split()[-2:] == [
                "r1",
                prob_text(float(survival(config)[i - 1])),
            ]
        [(mapped, grid)] = made  # the real engine's grid, of the form mapped
        assert mapped == map_config(config)[0]
        rows = region_text(app, app.query_one("#tree-budgets")).splitlines()[1:]
        for b, batch in enumerate(grid.batch_sizes):
            best = summary_cell(int(grid.best_budget[b]), float(grid.best_speedup[b]))
            assert rows[b].split()[0] == str(batch) and best in rows[b]


async def test_readable_without_colour(grids, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    app = _host()
    async with app.run_test(size=(80, 24)) as pilot:
        await _open_hosted(pilot, app)
        assert app.no_color
        assert f"{ACCEPTED_MARK} root" in screen_text(app)
        assert _marked(app)[0] == 0


async def test_at_80x24_beside_the_form_every_budget_is_reached_by_keys(grids):
    """Issue 22: the budget columns after 1 were cut at 80 columns with no sign of them."""
    app = _host(form=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await _open_hosted(pilot, app)
        table = app.query_one("#tree-budgets")
        header = region_text(app, table).splitlines()[0].split()
        assert header[:4] == ["tree", "n*", "chain", "K*"] and str(BUDGETS[-1]) not in header
        hint = " ".join(region_text(app, app.query_one("#tree-more")).split())
        # The tree has the focus: Tab brings it to the heatmap (cut at this width: "…").
        assert hint.startswith("→ ") and "more columns (Tab, then" in hint
        await pilot.press("tab")
        assert app.focused is table
        await pilot.press("end")
        await pilot.pause()
        header = region_text(app, table).splitlines()[0].split()
        assert header[-1] == str(BUDGETS[-1])
        assert all(h in [str(b) for b in BUDGETS] for h in header)  # whole columns only
        assert f"the best tree of {BUDGETS[-1]} nodes" in screen_text(app)
        assert "(← or Home)" in region_text(app, app.query_one("#tree-more"))


async def test_the_heatmap_title_says_exact_its_cost_and_its_acceptance(grids):
    """Issue 22: the chain K* of the heatmap is not the Speedup view's: it is a roofline's,
    on the rank probabilities; the title says so, and that it is exact."""
    app = _host(config=None)  # a linear chain of fixed acceptance 0.8
    async with app.run_test(size=(120, 40)) as pilot:
        await _open_hosted(pilot, app)
        title = " ".join(region_text(app, app.query_one("#tree-grid-title")).split())
        rank_probs = app.query_one("#tree-view").config.rank_probs
        assert title == (
            "Best tree by batch, exact · roofline h100 (form is linear) "
            f"rank p {rank_probs} · the form's chain: fixed (acceptance 0.8)"
        )
        assert "exact 3.689 tokens/cycle" in screen_text(app)
        app.query_one("#tree-view").set_config(TREE.replace(cost_model="roofline"))
        await settle(pilot, app, rounds=4)
        title = " ".join(region_text(app, app.query_one("#tree-grid-title")).split())
        assert title == "Best tree by batch, exact rank p 0.6,0.25"
