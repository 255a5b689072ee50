"""The Sweep view: the heatmap holds the engine's optimal K; cancel keeps finished cells."""

from __future__ import annotations

import asyncio
import threading
from types import SimpleNamespace

import pandas as pd
import pytest
from textual.widgets import TabbedContent

from engine.analysis import best_configuration
from engine.plot_data import optimal_k_heatmap
from engine.presets import load_preset
from engine.sweep import run_sweep
from spectui.app import create_app
from spectui.widgets.heatmap import Heatmap
from spectui.widgets.speedup_view import SpeedupView
from spectui.widgets.sweep_view import SweepView
from tests.app.helpers import notifications, settle, until
from tests.app.screen import screen_lines


@pytest.fixture
def gated_sweep(monkeypatch):
    """Sweeps run in the app's own thread and pause once ``gate.after`` configurations are
    done, until the test sets ``gate.release``: a sweep runs as long as a test needs,
    however fast the machine (the seed sweep takes well under a second)."""
    import engine.sweep

    monkeypatch.setenv("SPECTUI_SWEEP_WORKERS", "0")
    gate = SimpleNamespace(after=0, done=0, reached=threading.Event(), release=threading.Event())
    real = engine.sweep.evaluate_many

    def evaluate_many(configs, *args, **kwargs):
        if gate.done >= gate.after:
            gate.reached.set()
            gate.release.wait(30)
        rows = real(configs, *args, **kwargs)
        gate.done += len(rows)
        return rows

    monkeypatch.setattr(engine.sweep, "evaluate_many", evaluate_many)
    yield gate
    gate.release.set()


async def _until(event: threading.Event) -> None:
    for _ in range(3000):
        if event.is_set():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the sweep never reached the gate")


def expected_cells(frame: pd.DataFrame, model: str) -> dict:
    """(row label, draft cost) -> K* of the one K* grid (engine.plot_data.optimal_k_heatmap)."""
    grid = optimal_k_heatmap(frame, model)
    return {
        (str(r["row_label"]), float(r["draft_cost_us"])): int(r["k_opt"])
        for _, r in grid.iterrows()
    }


def _plain(widget) -> str:
    from io import StringIO

    from rich.console import Console

    console = Console(width=200, record=True, file=StringIO())
    console.print(widget.content)
    return console.export_text()


async def test_tiny_sweep_fills_heatmap_with_engine_optimal_k(isolated_dirs):
    _, results = isolated_dirs
    app = create_app("tiny")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("f6")
        await settle(pilot, app)
        view = app.query_one(SweepView)
        assert view.finished is not None and not view.finished.cancelled
        # The footer's Cancel went with the sweep (its finish is handled while its worker
        # still counts as running: the bindings are looked at again when the worker ends).
        await until(pilot, lambda: "esc Cancel" not in screen_lines(app)[-1])
        frame = run_sweep(load_preset("tiny").sweep.configs())
        pd.testing.assert_frame_equal(view.frame, frame)
        heatmap = app.query_one(Heatmap)
        assert heatmap.cells == expected_cells(frame, "fixed")
        assert len(heatmap.cells) == 6
        # The CSV was written as the sweep ran, and finished atomically.
        files = list(results.glob("sweep-tiny-*.csv"))
        assert len(files) == 1 and not list(results.glob("*.partial"))
        saved = pd.read_csv(files[0])
        assert len(saved) == 24
        assert saved["speedup"].tolist() == frame["speedup"].tolist()
        # Enter on a cell shows its curve in the Speedup vs K view.
        heatmap.focus()
        heatmap.move_cursor(row=1, column=1)
        await pilot.press("enter")
        await settle(pilot, app)
        assert app.query_one(TabbedContent).active == "speedup"
        speedup = app.query_one(SpeedupView)
        assert app.focused is speedup
        assert speedup.last is not None and speedup.last.title.startswith("sweep cell")
        assert [p[0] for p in speedup.last.points] == [1, 2, 4, 8]
        # The Analysis view analyses the finished sweep.
        await pilot.press("4")
        await settle(pilot, app)
        body = _plain(app.query_one("#analysis-body"))
        best = best_configuration(frame)
        assert "Best configuration" in body
        assert f"K={int(best['k'])}" in body and f"{best['speedup']:.3f}" in body


async def test_cancel_midway_keeps_finished_cells_and_saves_partial(isolated_dirs, gated_sweep):
    _, results = isolated_dirs
    gated_sweep.after = 40
    app = create_app("seed-576")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        view = app.query_one(SweepView)
        # Not pilot.press: it waits for the app to go idle, which a running sweep delays.
        await app.action_start_sweep()
        await _until(gated_sweep.reached)
        app.simulate_key("escape")
        await pilot.pause()
        gated_sweep.release.set()  # the group in hand finishes, then the sweep stops
        await settle(pilot, app)
        finished = view.finished
        assert finished is not None and finished.cancelled
        assert 40 <= finished.done < 60 and finished.total == 576
        files = list(results.glob("sweep-seed-576-*.csv"))
        assert len(files) == 1 and not list(results.glob("*.partial"))
        saved = pd.read_csv(files[0])
        assert len(saved) == finished.done
        # The cells shown are the engine's optimal K of the finished rows.
        heatmap = app.query_one(Heatmap)
        assert heatmap.cells == expected_cells(finished.frame, "fixed")
        assert heatmap.cells
        assert any("partial results saved" in m for m in notifications(app))
        # The Analysis view, first shown now, analyses the finished part and says so.
        await pilot.press("4")
        await settle(pilot, app)
        body = _plain(app.query_one("#analysis-body"))
        assert "Best configuration (partial sweep)" in body


async def test_failing_sweep_notifies_and_app_survives(monkeypatch):
    import engine.sweep

    def broken(*args, **kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(engine.sweep, "sweep_rows", broken)
    # In a thread: settle() waits for the worker, which re-raises once it has failed.
    monkeypatch.setenv("SPECTUI_SWEEP_WORKERS", "0")
    app = create_app("tiny")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        await pilot.press("f6")
        await settle(pilot, app)
        assert any("disk on fire" in m for m in notifications(app))
        assert app.is_running
        await pilot.press("1")
        assert app.query_one(TabbedContent).active in ("run", "sweep")


async def test_sweep_preset_given_by_path_is_the_one_selected(isolated_dirs, tmp_path):
    path = tmp_path / "mysweep.toml"
    path.write_text((load_preset("tiny").path).read_text())
    app = create_app(str(path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("f6")
        await settle(pilot, app)
        view = app.query_one(SweepView)
        assert view.finished is not None and view.finished.total == 24
        other = tmp_path / "other.toml"
        other.write_text(path.read_text().replace("k = [1, 2, 4, 8]", "k = [1, 2]"))
        assert app.apply_preset(str(other))  # loaded by path from inside the app: no crash
        await settle(pilot, app)
        assert view._selected().name == "other"
        assert len(view._configs(view._selected())) == 12


async def test_info_line_tells_which_preset_the_next_sweep_runs(isolated_dirs, gated_sweep):
    app = create_app("default")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await app.action_show_view("sweep")
        await pilot.pause()
        app.apply_preset("seed-576")
        await app.action_start_sweep()  # before the choice was described
        await pilot.pause()
        await pilot.pause()
        info = app.query_one("#sweep-info")
        view = app.query_one(SweepView)
        assert view.running
        assert str(info.render()) == "576 configs · running (Escape cancels)"
        app.apply_preset("tiny")  # chosen while seed-576 runs: for the next sweep
        await pilot.pause()
        await pilot.pause()
        assert view.running
        assert str(info.render()) == "24 configs · s starts it when this sweep ends"
        app.simulate_key("escape")
        await pilot.pause()
        gated_sweep.release.set()
        await settle(pilot, app)
        assert view.finished is not None and view.finished.cancelled
        assert str(info.render()) == "24 configs · s start"  # the next one can start now


async def test_a_grid_that_cannot_be_built_is_one_notification(isolated_dirs):
    """A combination the preset's loading did not check (a preset built in code here) is
    one notification when the view expands the grid; nothing starts and the app goes on."""
    from dataclasses import replace

    from engine.config import SpecConfig
    from engine.grid import SweepSpec

    base = SpecConfig().replace(**{"policy.name": "goodput", "policy.k_max": 8})
    bad = replace(load_preset("tiny"), name="bad", sweep=SweepSpec(base, ({"k": [3, 9]},)))
    app = create_app("tiny")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        await pilot.press("3")
        await settle(pilot, app)
        view = app.query_one(SweepView)
        view.choose(bad)
        await settle(pilot, app)
        assert any("k: 9 is above policy.k_max 8" in m for m in notifications(app))
        assert "cannot run: k" in str(view.query_one("#sweep-count").render())
        await pilot.press("s")
        await settle(pilot, app)
        assert not view.running and app.is_running
