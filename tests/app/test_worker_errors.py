"""Worker errors are never silent: every failed worker is a notification with its reason.

``Worker.StateChanged`` does not bubble, so each view reports its own workers through
``common.ReportsWorkerErrors``; the failure is forced here by making the engine raise. A
view's own worker is failed in a small host app with the view alone (tests/app/
hosts_views.py); the app's (the Exact panel's) and the Run view's, started by F5, in the
whole app.
"""

from __future__ import annotations

import engine.simulate.exact
import engine.simulate.simulator
import engine.sweep.sweep
from engine.presets import load_preset
from spectui.app import create_app
from spectui.widgets.exact_panel import ExactPanel
from spectui.widgets.speedup_view import SpeedupView
from tests.app.app_waits import booted
from tests.app.helpers import notifications, type_into, until
from tests.app.hosts_sweep import laid_out, sweep_host
from tests.app.hosts_views import ViewHost
from tests.app.screen import screen_text


def _boom(*args, **kwargs):
    raise ValueError("boom: the engine refused")


def _failures(app) -> list[str]:
    return [m for m in notifications(app) if "failed" in m]


async def test_speedup_curve_failure_is_notified_with_its_reason(monkeypatch):
    monkeypatch.setattr(engine.simulate.exact, "speedup_curve", _boom)
    view = SpeedupView(id="speedup-view", classes="main-view")  # as key 2 shows it
    view.config = load_preset("tiny").config
    app = ViewHost(view, "speedup", "2 Speedup")
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await until(pilot, lambda: _failures(app))  # its worker draws the curve
        await app.workers.wait_for_complete()
        await until(pilot, lambda: "Speedup curve failed: ValueError" in screen_text(app))
        assert _failures(app) == ["Speedup curve failed: ValueError: boom: the engine refused"]
        assert "Speedup curve failed: ValueError" in screen_text(app)  # the toast is shown
        assert "computing…" not in screen_text(app)  # and the view left its busy state


async def test_run_and_exact_figures_failures_are_notified_with_their_reasons(monkeypatch):
    """In the app: F5's run, then the Exact panel's figures (the app's own worker) fail."""
    monkeypatch.setattr(engine.simulate.simulator, "simulate", _boom)
    app = create_app("tiny")
    async with app.run_test(size=(80, 24)) as pilot:
        await booted(pilot, app)
        await pilot.press("f5")
        await until(pilot, lambda: _failures(app))
        await app.workers.wait_for_complete()
        await until(pilot, lambda: "running…" not in screen_text(app))
        assert _failures(app) == ["Monte Carlo run failed: ValueError: boom: the engine refused"]
        text = screen_text(app)
        assert "simulating…" not in text and "running…" not in text
        # The Exact panel's figures: a form change computes them again, and they fail.
        monkeypatch.setattr(engine.simulate.exact, "exact_metrics", _boom)
        await type_into(pilot, app, "k", "6")
        panel = app.query_one(ExactPanel)
        failed = "Exact figures failed: ValueError: boom: the engine refused"
        await until(pilot, lambda: str(panel.content).startswith("✗"))
        await until(pilot, lambda: failed in notifications(app))  # a moment after the panel
        assert failed in notifications(app)
        assert str(panel.content) == "✗ not computed: ValueError: boom: the engine refused"


async def test_sweep_failure_is_notified_once(monkeypatch):
    """One notification (the one handler), and the view leaves its running state."""
    monkeypatch.setattr(engine.sweep.sweep, "sweep_rows", _boom)
    app = sweep_host("tiny")  # in a thread of the host, as with SPECTUI_SWEEP_WORKERS=0
    async with app.run_test(size=(80, 24)) as pilot:
        view = await laid_out(pilot, app)
        view.action_start()  # F6 in the app
        await until(pilot, lambda: "sweep failed (see notification)" in screen_text(app))
        await until(pilot, lambda: _failures(app))  # a moment after the view said so
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert _failures(app) == ["Sweep failed: ValueError: boom: the engine refused"]
        assert "sweep failed (see notification)" in screen_text(app)
        assert not view.running
