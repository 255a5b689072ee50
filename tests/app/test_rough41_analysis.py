"""Issue #41, the app's rough edges: the Analysis view during a running sweep says the sweep
runs (not "No sweep yet", nor the sweep before's rows), then shows the rows done so far, of
how many, and follows them (a snapshot that comes before its turn is drawn when its turn
comes: the timer, driven here), until the sweep's end.

The sweep's rows are the tiny preset's, computed once (two sequences each); the app gets
them as the Sweep view's worker sends them (SweepSnapshot, SweepFinished).
"""

from __future__ import annotations

import re

import pytest

from engine.presets import load_preset
from engine.sweep.sweep import run_sweep
from spectui.app import create_app
from spectui.messages import SweepFinished, SweepSnapshot, SweepStarted
from spectui.widgets.analysis_view import NO_ROWS_YET, NO_SWEEP
from tests.app.app_waits import booted
from tests.app.helpers import until
from tests.app.screen import region_text


@pytest.fixture(scope="module")
def rows():
    configs = load_preset("tiny").sweep.lazy()
    return run_sweep([configs[i].replace(n_sequences=2) for i in range(len(configs))])


def _body(app) -> str:
    """The Analysis view's text on screen, its lines joined."""
    found = app.query("#analysis-view")
    return " ".join(region_text(app, found.first()).split()) if found else ""


async def test_the_analysis_follows_a_running_sweep(rows, monkeypatch):
    assert len(rows) == 24
    app = create_app("tiny", replay_autoplay=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await booted(pilot, app)
        await app.action_show_view("analysis")
        await until(pilot, lambda: NO_SWEEP in _body(app))
        running = True
        monkeypatch.setattr(app, "_sweep_running", lambda: running)  # started, no rows yet
        app.query_one("#analysis-body").update("")
        await app.action_show_view("run")
        await app.action_show_view("analysis")
        await until(pilot, lambda: " ".join(NO_ROWS_YET.split()) in _body(app))
        app.post_message(SweepSnapshot(rows.iloc[:5], {}, 24))
        await until(pilot, lambda: "5 of 24 rows done" in _body(app))
        assert (
            "Sweep running: 5 of 24 rows done, analysed here; redrawn as rows come, at most "
            "every 5 s" in _body(app)
        )
        assert re.search(r"\(speedup < 1\): \d+ of 5 rows", _body(app))
        # The next rows, before their turn: drawn when it comes (the timer, driven here).
        app.post_message(SweepSnapshot(rows.iloc[:12], {}, 24))
        await pilot.pause()
        assert "5 of 24 rows done" in _body(app)
        assert app._analysis_timer is not None
        app._analysis_timer.stop()
        app._analysis_due()
        await until(pilot, lambda: "12 of 24 rows done" in _body(app))
        assert re.search(r"\(speedup < 1\): \d+ of 12 rows", _body(app))
        # The end: every row, at once, and no progress line.
        running = False
        app.post_message(SweepFinished(rows, {}, None, False, 1.0, 24, 24))
        await until(pilot, lambda: re.search(r"\(speedup < 1\): \d+ of 24 rows", _body(app)))
        assert "rows done" not in _body(app)
        # The next sweep: not the rows of this one, until its own come.
        running = True
        app.post_message(SweepStarted(24))
        await until(pilot, lambda: " ".join(NO_ROWS_YET.split()) in _body(app))
