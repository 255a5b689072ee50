"""Worker errors are never silent: every failed worker is a notification with its reason.

``Worker.StateChanged`` does not bubble, so each view reports its own workers through
``common.ReportsWorkerErrors``; the failure is forced here by making the engine raise.
"""

from __future__ import annotations

import engine.exact
import engine.simulator
import engine.sweep
from spectui.app import create_app
from spectui.widgets.exact_panel import ExactPanel
from tests.app.helpers import notifications, settle, type_into
from tests.app.screen import screen_text


def _boom(*args, **kwargs):
    raise ValueError("boom: the engine refused")


async def test_speedup_curve_failure_is_notified_with_its_reason(monkeypatch):
    monkeypatch.setattr(engine.exact, "speedup_curve", _boom)
    app = create_app("tiny")
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await settle(pilot, app)
        await pilot.press("f3", "2")  # the Speedup view: its worker draws the curve
        await settle(pilot, app)
        failures = [m for m in notifications(app) if "failed" in m]
        assert failures == ["Speedup curve failed: ValueError: boom: the engine refused"]
        assert "Speedup curve failed: ValueError" in screen_text(app)  # the toast is shown
        assert "computing…" not in screen_text(app)  # and the view left its busy state


async def test_run_failure_is_notified_with_its_reason(monkeypatch):
    monkeypatch.setattr(engine.simulator, "simulate", _boom)
    app = create_app("tiny")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        await pilot.press("f5")
        await settle(pilot, app)
        failures = [m for m in notifications(app) if "failed" in m]
        assert failures == ["Monte Carlo run failed: ValueError: boom: the engine refused"]
        text = screen_text(app)
        assert "simulating…" not in text and "running…" not in text


async def test_exact_figures_failure_is_notified_and_shown_in_the_panel(monkeypatch):
    app = create_app("tiny")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        monkeypatch.setattr(engine.exact, "exact_metrics", _boom)
        await type_into(pilot, app, "k", "6")
        await settle(pilot, app)
        assert "Exact figures failed: ValueError: boom: the engine refused" in notifications(app)
        panel = str(app.query_one(ExactPanel).content)
        assert panel == "✗ not computed: ValueError: boom: the engine refused"


async def test_sweep_failure_is_notified_once(monkeypatch):
    """One notification (the one handler), and the view leaves its running state."""
    monkeypatch.setenv("SPECTUI_SWEEP_WORKERS", "0")
    monkeypatch.setattr(engine.sweep, "sweep_rows", _boom)
    app = create_app("tiny")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        await pilot.press("f6")
        await settle(pilot, app)
        failures = [m for m in notifications(app) if "failed" in m]
        assert failures == ["Sweep failed: ValueError: boom: the engine refused"]
        await pilot.pause()
        assert "sweep failed (see notification)" in screen_text(app)
