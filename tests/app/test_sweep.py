"""The Sweep view: the heatmap holds the engine's optimal K; cancel keeps finished cells.

What the app's keys and views take part in (F6, escape, enter, the Analysis view, presets
loaded) boots the whole app; what is about the view alone runs it in a small host app
(tests/app/hosts_sweep.py)."""

from __future__ import annotations

import asyncio
import threading
from types import SimpleNamespace

import pandas as pd
import pytest
from textual.widgets import TabbedContent

from engine.analysis.analysis import best_configuration
from engine.analysis.plot_data import optimal_k_heatmap
from engine.presets import load_preset
from engine.sweep.sweep import run_sweep
from spectui.app import create_app
from spectui.widgets.heatmap import Heatmap
from spectui.widgets.speedup_view import SpeedupView
from spectui.widgets.sweep_view import SweepView
from tests.app.app_waits import booted
from tests.app.helpers import notifications, until
from tests.app.hosts_sweep import finished, laid_out, sweep_host
from tests.app.screen import screen_lines


@pytest.fixture
def gated_sweep(monkeypatch):
    """Sweeps run in the app's own thread and pause once ``gate.after`` configurations are
    done, until the test sets ``gate.release``: a sweep runs as long as a test needs,
    however fast the machine (the seed sweep takes well under a second)."""
    import engine.sweep.sweep

    monkeypatch.setenv("SPECTUI_SWEEP_WORKERS", "0")
    gate = SimpleNamespace(after=0, done=0, reached=threading.Event(), release=threading.Event())
    real = engine.sweep.sweep.evaluate_many

    def evaluate_many(configs, *args, **kwargs):
        if gate.done >= gate.after:
            gate.reached.set()
            gate.release.wait(30)
        rows = real(configs, *args, **kwargs)
        gate.done += len(rows)
        return rows

    monkeypatch.setattr(engine.sweep.sweep, "evaluate_many", evaluate_many)
    yield gate
    gate.release.set()


async def _until(event: threading.Event) -> None:
    for _ in range(3000):
        if event.is_set():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the sweep never reached the gate")


def expected_cells(frame: pd.DataFrame, model: str) -> dict:
    """(row label, draft cost) -> K* of the one K* grid
    (engine.analysis.plot_data.optimal_k_heatmap)."""
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


async def _analysis_shown(pilot, app) -> str:
    """Key 4: the Analysis view's text once it has analysed the sweep's rows."""
    await pilot.press("4")
    await until(pilot, lambda: "Best configuration" in _analysis(app))
    return _analysis(app)


def _cancelled(view: SweepView) -> bool:
    """Escape has reached the sweep: its worker is told to stop."""
    return view.sweep_worker is not None and view.sweep_worker.is_cancelled


def _analysis(app) -> str:
    found = app.query("#analysis-body")
    return _plain(found.first()) if found else ""


async def test_tiny_sweep_fills_heatmap_with_engine_optimal_k(isolated_dirs):
    _, results = isolated_dirs
    app = create_app("tiny")  # in the app's worker process (SPECTUI_SWEEP_WORKERS=1)
    async with app.run_test(size=(120, 40)) as pilot:
        await booted(pilot, app)
        await pilot.press("f6")
        view = await finished(pilot, app)
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

        def cell_curve() -> bool:
            found = app.query(SpeedupView)
            last = found.first().last if found else None
            return last is not None and last.title.startswith("sweep cell")

        await until(pilot, cell_curve)
        assert app.query_one(TabbedContent).active == "speedup"
        speedup = app.query_one(SpeedupView)
        assert app.focused is speedup
        assert speedup.last is not None and speedup.last.title.startswith("sweep cell")
        assert [p[0] for p in speedup.last.points] == [1, 2, 4, 8]
        # The Analysis view analyses the finished sweep.
        body = await _analysis_shown(pilot, app)
        best = best_configuration(frame)
        assert "Best configuration" in body
        assert f"K={int(best['k'])}" in body and f"{best['speedup']:.3f}" in body


async def test_cancel_midway_keeps_finished_cells_and_saves_partial(isolated_dirs, gated_sweep):
    _, results = isolated_dirs
    gated_sweep.after = 40
    app = create_app("seed-576")
    async with app.run_test(size=(120, 40)) as pilot:
        await booted(pilot, app)
        # Not pilot.press: it waits for the app to go idle, which a running sweep delays.
        await app.action_start_sweep()
        view = app.query_one(SweepView)
        await _until(gated_sweep.reached)
        app.simulate_key("escape")
        await until(pilot, lambda: _cancelled(view))
        gated_sweep.release.set()  # the group in hand finishes, then the sweep stops
        await finished(pilot, app)
        finished_sweep = view.finished
        assert finished_sweep is not None and finished_sweep.cancelled
        assert 40 <= finished_sweep.done < 60 and finished_sweep.total == 576
        files = list(results.glob("sweep-seed-576-*.csv"))
        assert len(files) == 1 and not list(results.glob("*.partial"))
        saved = pd.read_csv(files[0])
        assert len(saved) == finished_sweep.done
        # The cells shown are the engine's optimal K of the finished rows.
        heatmap = app.query_one(Heatmap)
        assert heatmap.cells == expected_cells(finished_sweep.frame, "fixed")
        assert heatmap.cells
        # (A notification reaches the app a moment after the view has drawn the end.)
        await until(pilot, lambda: any("partial results saved" in m for m in notifications(app)))
        assert any("partial results saved" in m for m in notifications(app))
        # The Analysis view, first shown now, analyses the finished part and says so.
        body = await _analysis_shown(pilot, app)
        assert "Best configuration (partial sweep)" in body


async def test_failing_sweep_notifies_and_app_survives(monkeypatch):
    import engine.sweep.sweep

    def broken(*args, **kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(engine.sweep.sweep, "sweep_rows", broken)
    app = sweep_host("tiny")  # in a thread of the host, as with SPECTUI_SWEEP_WORKERS=0
    async with app.run_test(size=(80, 24)) as pilot:
        view = await laid_out(pilot, app)
        view.action_start()  # F6 in the app
        await until(pilot, lambda: any("disk on fire" in m for m in notifications(app)))
        await until(pilot, lambda: not view.running)
        assert app.is_running
        # It answers keys still: s starts the sweep again (not "already running").
        app.query_one(Heatmap).focus()
        await pilot.press("s")
        await until(pilot, lambda: [m for m in notifications(app) if "disk on fire" in m][1:])
        assert not [m for m in notifications(app) if "already running" in m]
        assert app.is_running


async def test_sweep_preset_given_by_path_is_the_one_selected(isolated_dirs, tmp_path, monkeypatch):
    monkeypatch.setenv("SPECTUI_SWEEP_WORKERS", "0")  # in a thread: no processes to start
    path = tmp_path / "mysweep.toml"
    path.write_text((load_preset("tiny").path).read_text())
    app = create_app(str(path))
    async with app.run_test(size=(120, 40)) as pilot:
        await booted(pilot, app)
        await pilot.press("f6")
        view = await finished(pilot, app)
        assert view.finished is not None and view.finished.total == 24
        other = tmp_path / "other.toml"
        other.write_text(path.read_text().replace("k = [1, 2, 4, 8]", "k = [1, 2]"))
        assert app.apply_preset(str(other))  # loaded by path from inside the app: no crash
        await until(pilot, lambda: view._selected().name == "other")
        assert view._selected().name == "other"
        assert len(view._configs(view._selected())) == 12


async def test_info_line_tells_which_preset_the_next_sweep_runs(isolated_dirs, gated_sweep):
    app = create_app("default")
    async with app.run_test(size=(120, 40)) as pilot:
        await booted(pilot, app)
        await app.action_show_view("sweep")
        await pilot.pause()
        app.apply_preset("seed-576")
        await app.action_start_sweep()  # before the choice was described
        info = app.query_one("#sweep-info")
        view = app.query_one(SweepView)
        await until(pilot, lambda: "running" in str(info.render()))
        assert view.running
        assert str(info.render()) == "576 configs · running (Escape cancels)"
        app.apply_preset("tiny")  # chosen while seed-576 runs: for the next sweep
        await until(pilot, lambda: str(info.render()).startswith("24 "))
        assert view.running
        assert str(info.render()) == "24 configs · s starts it when this sweep ends"
        app.simulate_key("escape")
        await until(pilot, lambda: _cancelled(view))
        gated_sweep.release.set()
        await finished(pilot, app)
        assert view.finished is not None and view.finished.cancelled
        assert str(info.render()) == "24 configs · s start"  # the next one can start now


async def test_a_grid_that_cannot_be_built_is_one_notification():
    """A combination the preset's loading did not check (a preset built in code here) is
    one notification when the view expands the grid; nothing starts and the app goes on."""
    from dataclasses import replace

    from engine.core.config import SpecConfig
    from engine.sweep.grid import SweepSpec

    base = SpecConfig().replace(**{"policy.name": "goodput", "policy.k_max": 8})
    bad = replace(load_preset("tiny"), name="bad", sweep=SweepSpec(base, ({"k": [3, 9]},)))
    app = sweep_host("tiny")
    async with app.run_test(size=(80, 24)) as pilot:
        view = await laid_out(pilot, app)
        view.choose(bad)
        count = view.query_one("#sweep-count")

        def notified() -> bool:
            return any("k: 9 is above policy.k_max 8" in m for m in notifications(app))

        await until(pilot, lambda: "cannot run" in str(count.render()) and notified())
        assert notified()
        assert "cannot run: k" in str(count.render())
        app.query_one(Heatmap).focus()
        await pilot.press("s")
        await pilot.pause()
        await app.workers.wait_for_complete()
        assert not view.running and app.is_running
