"""The Sweep view draws the one K* grid: every row of a two-parameter grid, `enter` opens that
very cell, losing cells never read 1.00, provisional cells say so, NO_COLOR drops the colours,
and the status line describes the preset chosen. (Issue 9, items 3, 8-10, 12.)

What is about the view alone runs it in a small host app, where the app puts it
(tests/app/hosts_sweep.py); ``enter`` opening the Speedup view boots the whole app."""

from __future__ import annotations

import io

import pandas as pd
from textual.coordinate import Coordinate
from textual.widgets import ProgressBar, Static, TabbedContent

from engine.analysis.plot_data import heatmap_cell_rows, optimal_k_heatmap
from engine.core.config import SpecConfig
from engine.presets import load_preset
from spectui.app import create_app
from spectui.widgets.heatmap import Heatmap
from spectui.widgets.speedup_view import SpeedupView
from tests.app.app_waits import booted
from tests.app.helpers import until
from tests.app.hosts_sweep import finished, laid_out, sweep_host
from tests.engine.test_plot_data import frame, row

DECAY = """description = "position_decay, decay_base x decay_factor"

[config]
draft_model = "position_decay"
n_sequences = 30
tokens_per_seq = 32
seed = 3

[[grid]]
k = [1, 2, 4]
decay_base = [0.8, 0.9]
decay_factor = [0.6, 0.9]
draft_cost_us = [10.0, 50.0]
"""


def cell_texts(heatmap: Heatmap) -> list[list[str]]:
    return [
        [heatmap.get_cell_at(Coordinate(r, c)).plain for c in range(len(heatmap.columns))]
        for r in range(heatmap.row_count)
    ]


async def test_two_parameter_grid_shows_every_row_and_enter_opens_that_cell(
    isolated_dirs, monkeypatch
):
    monkeypatch.setenv("SPECTUI_SWEEP_WORKERS", "0")  # in a thread: no processes to start
    presets, _ = isolated_dirs
    presets.mkdir(parents=True, exist_ok=True)
    (presets / "decay-grid.toml").write_text(DECAY)
    app = create_app("decay-grid")
    async with app.run_test(size=(120, 40)) as pilot:
        await booted(pilot, app)
        await pilot.press("f6")
        view = await finished(pilot, app)
        assert view.finished is not None and not view.finished.cancelled
        heatmap = app.query_one(Heatmap)
        grid = optimal_k_heatmap(view.frame, "position_decay")
        # 4 rows (was 2: only one decay_factor), labelled by both parameters.
        assert heatmap.row_count == 4
        labels = [heatmap.rows[key].label.plain for key in heatmap.rows]
        assert labels == grid.attrs["row_labels"]
        assert "base=0.9, factor=0.6" in labels
        texts = cell_texts(heatmap)
        from engine.analysis.formatting import cell_text

        for _, cell in grid.iterrows():
            assert texts[int(cell["row"])][int(cell["column"])] == cell_text(cell, aligned=True)
        title = app.query_one("#heatmap-title", Static).render()
        assert "decay_base, decay_factor" in str(title)
        # Enter on (base=0.9, factor=0.6, 50 us) opens exactly that cell's curve at its K*.
        row_index = grid.attrs["row_labels"].index("base=0.9, factor=0.6")
        heatmap.focus()
        heatmap.move_cursor(row=row_index, column=1)
        await pilot.press("enter")

        def cell_curve() -> bool:
            found = app.query(SpeedupView)
            last = found.first().last if found else None
            return last is not None and last.title.startswith("sweep cell")

        await until(pilot, cell_curve)
        assert app.query_one(TabbedContent).active == "speedup"
        speedup = app.query_one(SpeedupView)
        assert speedup.last is not None
        expected = heatmap_cell_rows(view.frame, grid, row_index, 1)
        assert [p[0] for p in speedup.last.points] == expected["k"].tolist() == [1, 2, 4]
        assert [p[1] for p in speedup.last.points] == expected["speedup"].tolist()
        chosen = grid[(grid["row"] == row_index) & (grid["column"] == 1)].iloc[0]
        config = speedup.config
        assert config is not None and config.k == int(chosen["k_opt"])
        assert (config.decay_base, config.decay_factor, config.draft_cost_us) == (0.9, 0.6, 50.0)


async def test_losing_partial_and_pending_cells_read_as_they_are():
    f = frame(
        row(k=1, acceptance_rate=0.5, draft_cost_us=100, speedup=0.997, exact=0.996, ci=0.001),
        row(k=2, acceptance_rate=0.5, draft_cost_us=100, speedup=0.90, exact=0.90, ci=0.001),
        row(k=1, acceptance_rate=0.9, draft_cost_us=100, speedup=1.40, exact=1.40, ci=0.001),
    )
    planned = pd.DataFrame(
        [
            SpecConfig(k=k, acceptance_rate=a, draft_cost_us=c).to_dict()
            for k in (1, 2)
            for a in (0.5, 0.9)
            for c in (10.0, 100.0)
        ]
    )
    grid = optimal_k_heatmap(f, "fixed", planned)
    app = sweep_host("tiny")  # the Sweep view (key 3) at 80x24, no sweep started
    async with app.run_test(size=(80, 24)) as pilot:
        await laid_out(pilot, app)
        heatmap = app.query_one(Heatmap)
        heatmap.show(grid)
        await pilot.pause()
        texts = cell_texts(heatmap)
        assert texts[0][1] == " 1 ✗ 0.99 "  # was " 1 ✗1.00": a loss read as break-even
        assert texts[1][1] == " 1   1.40…"  # best so far: K=2 still to come
        assert texts[0][0].strip() == texts[1][0].strip() == "·"  # pending
        loser = heatmap.get_cell_at(Coordinate(0, 1))
        assert loser.style.bgcolor is not None and loser.style.color is not None


async def test_no_color_cells_have_no_background(monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    f = frame(row(k=1, acceptance_rate=0.5, draft_cost_us=10, speedup=1.5, ci=0.01))
    app = sweep_host("tiny")
    async with app.run_test(size=(80, 24)) as pilot:
        assert app.no_color
        await laid_out(pilot, app)
        heatmap = app.query_one(Heatmap)
        heatmap.show(optimal_k_heatmap(f, "fixed"))
        await pilot.pause()
        cell = heatmap.get_cell_at(Coordinate(0, 0))
        assert cell.plain == " 1   1.50 "
        assert cell.style.bgcolor is None and cell.style.color is None and cell.style.bold


async def test_status_describes_the_chosen_preset_not_the_last_sweep():
    app = sweep_host("tiny")
    async with app.run_test(size=(80, 24)) as pilot:
        view = await laid_out(pilot, app)
        bar = app.query_one(ProgressBar)
        count = app.query_one("#sweep-count", Static)
        # Before any sweep: a still bar at 0 %, not the animated indeterminate one.
        assert bar.total == 24 and bar.progress == 0
        assert "not started" in str(count.render())
        view.action_start()  # F6 in the app
        await finished(pilot, app)
        assert view.finished is not None
        assert "done" in str(count.render())
        assert app.query_one(Heatmap).cells
        # Another preset chosen: status, bar and grid describe it (every cell pending).
        view.choose(view.presets["seed-576"])
        await until(pilot, lambda: view.shown_name == "seed-576")
        await pilot.pause()
        assert bar.total == 576 and bar.progress == 0
        assert str(count.render()).startswith("0/576")
        heatmap = app.query_one(Heatmap)
        assert heatmap.cells == {} and heatmap.row_count == 6
        assert all(t.strip() == "·" for line in cell_texts(heatmap) for t in line)


def test_saved_path_is_shortened_to_fit():
    from pathlib import Path

    from spectui.widgets.sweep_view import _short_path

    path = Path.home() / ".local/share/spectui/results/sweep-seed-576-20261201-041500.csv"
    assert (
        _short_path(path, 200)
        == "~/.local/share/spectui/results/sweep-seed-576-20261201-041500.csv"
    )
    short = _short_path(path, 45)
    assert short == "…/results/sweep-seed-576-20261201-041500.csv" and len(short) <= 45
    # The file name is always kept whole, even without room.
    assert _short_path(path, 5).endswith("sweep-seed-576-20261201-041500.csv")


def test_analysis_view_never_describes_a_constant_axis():
    from rich.console import Console

    from spectui.widgets.analysis_view import render_analysis

    f = frame(
        row(k=1, draft_model="position_decay", decay_base=0.9, decay_factor=0.6, speedup=0.9),
        row(k=2, draft_model="position_decay", decay_base=0.9, decay_factor=0.6, speedup=1.2),
        row(k=1, acceptance_rate=0.5, speedup=0.8),
        row(k=1, acceptance_rate=0.9, speedup=1.8),
    )
    console = Console(width=120, record=True, file=io.StringIO())
    console.print(render_analysis(f, partial=False))
    text = console.export_text()
    assert "fixed: losers have acceptance_rate up to 0.5" in text
    assert "losers have decay_base" not in text  # decay_base is 0.9 throughout


LENGTHS = """description = "fixed, acceptance x draft cost, at two sequence lengths"

[config]
n_sequences = 20

[[grid]]
k = [1, 2]
acceptance_rate = [0.6, 0.9]
draft_cost_us = [10.0, 50.0]
tokens_per_seq = [32, 64]
"""


async def test_an_axis_held_constant_is_named_above_the_grid(tmp_path):
    path = tmp_path / "lengths.toml"
    path.write_text(LENGTHS)
    app = sweep_host(load_preset(str(path)))  # the app's preset, shown with key 3
    async with app.run_test(size=(80, 24)) as pilot:
        await laid_out(pilot, app)
        title = str(app.query_one("#heatmap-title", Static).render())
        assert "tokens_per_seq=32 only" in title
        assert app.query_one(Heatmap).row_count == 2


def test_app_batches_hold_whole_cells():
    from engine.presets import load_preset
    from engine.sweep.pool import batch_size

    configs = load_preset("seed-576").sweep.configs()
    for workers in (1, 2, 4):
        size = batch_size(configs, workers)
        assert size % 8 == 0, (workers, size)  # 8 K values per cell (was 31 for 1 worker)


async def test_next_model_during_a_sweep_draws_its_last_grid_without_building_one(monkeypatch):
    """A snapshot brings the shown model's grid only; `m` must not build another model's grid
    on the UI thread (50-80 ms for seed-576): it draws the grid that model last had."""
    import spectui.widgets.sweep_view as sweep_view
    from spectui.messages import SweepSnapshot

    app = sweep_host("seed-576")
    async with app.run_test(size=(120, 40)) as pilot:
        view = await laid_out(pilot, app)
        assert set(view.grids) >= {"fixed", "position_decay"}  # the planned, empty grids
        shown = view.model
        built = []
        monkeypatch.setattr(sweep_view, "_grids", lambda *a, **k: built.append(a) or {})
        view.post_message(SweepSnapshot(pd.DataFrame(), {shown: view.grids[shown]}))
        await pilot.pause()
        app.query_one(Heatmap).focus()  # as key 3 does in the app: m is the view's key
        await pilot.press("m")
        await pilot.pause()
        assert view.model != shown
        assert built == []
        assert f"K* of {view.model}" in str(app.query_one("#heatmap-title", Static).render())
