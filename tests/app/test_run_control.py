"""A Monte Carlo run in the app shows progress, can be cancelled, and never outlives the app;
the Run view says when what it shows is from an earlier configuration; wide values fit.

Runs that only need to last until they are stopped go to a controllable engine (the
``engine`` fixture): the tests wait on its states, not on a real run's length. Tests of the
Run view alone run it in :class:`tests.app.hosts_run.RunHost`; Escape, the palette and the
form driving the view are the whole app's.
"""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass, field

import pytest
from textual.widgets import Static

import engine.simulate.simulator as simulator
import spectui.widgets.run_view as run_view
from spectui.app import create_app
from spectui.widgets.cycle_table import CycleTable
from spectui.widgets.run_view import STALE_NOTE, RunView, progress_text
from spectui.widgets.summary_cards import SummaryCards
from tests.app.helpers import notifications, settle, type_into, until
from tests.app.hosts_run import RunHost, run_finished, tiny

HUGE = "10000000"  # sequences: a run the controllable engine holds until it is stopped


def _status(app) -> str:
    return str(app.query_one("#run-status", Static).render())


def _card(app, key: str = "speedup") -> str:
    return str(app.query_one(f"#card-{key}", Static).render())


@dataclass
class Call:
    """One simulate() call the app made."""

    held: bool  # a run of HUGE sequences, held by the controllable engine
    ended: threading.Event = field(default_factory=threading.Event)  # returned or raised
    stopped: bool = False  # held, and ended because the app said stop


class Engine:
    """Stands in for the engine's simulate(), as the Run view calls it.

    A run of HUGE sequences is held: it reports its first sequence done (the Run view shows
    progress at once: its PROGRESS_EVERY_S is 0 here), then waits until ``should_stop()``
    turns true and raises RunStopped, as simulate does (the engine's own stop is tested in
    tests/engine). It gives up after GIVE_UP_S, so that an app that never says stop fails
    its test's wait for the thread (30 s) instead of keeping the test process alive. Other
    runs are the real engine's."""

    GIVE_UP_S = 60.0

    def __init__(self) -> None:
        self.real = simulator.simulate
        self.calls: list[Call] = []

    def simulate(self, config, *args, **kwargs):
        call = Call(held=config.n_sequences >= int(HUGE))
        self.calls.append(call)
        try:
            if call.held:
                return self._hold(call, config, **kwargs)
            return self.real(config, *args, **kwargs)
        finally:
            call.ended.set()

    def _hold(self, call: Call, config, *, should_stop, on_progress, **_):
        on_progress(1, config.tokens_per_seq)
        deadline = time.monotonic() + self.GIVE_UP_S
        while time.monotonic() < deadline:
            if should_stop():
                call.stopped = True
                break
            time.sleep(0.005)
        raise simulator.RunStopped()


@pytest.fixture
def engine(monkeypatch) -> Engine:
    stand_in = Engine()
    monkeypatch.setattr(simulator, "simulate", stand_in.simulate)
    monkeypatch.setattr(run_view, "PROGRESS_EVERY_S", 0.0)
    return stand_in


async def _thread_stopped(call: Call) -> bool:
    """The call's thread ended because it was told to stop (long before a real run of
    HUGE sequences would have)."""
    return await asyncio.to_thread(call.ended.wait, 30) and call.stopped


async def huge_run_in_form(pilot, app) -> None:
    """The form holds a run of HUGE sequences, and the app has it."""
    await until(pilot, lambda: app.form.ready)
    app.form.set_field("n_sequences", HUGE)
    await until(pilot, lambda: app.config is not None and app.config.n_sequences == int(HUGE))


async def test_a_long_run_shows_progress_and_escape_or_the_palette_cancels_it(engine):
    app = create_app("default", replay_autoplay=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await huge_run_in_form(pilot, app)
        await pilot.press("f5")
        view = app.query_one(RunView)
        assert view.busy and _card(app) == "running…"
        await until(pilot, lambda: view.progress is not None)
        status = _status(app)
        assert "% · " in status and "/10.00M seq" in status, status
        await pilot.press("escape")
        assert not view.busy
        assert _status(app).startswith("run cancelled at ")
        assert _card(app) == "—"
        assert await _thread_stopped(engine.calls[0])
        await settle(pilot, app)
        assert view.result is None
        # The palette's "Cancel run" stops a run too.
        await pilot.press("f5")
        await until(pilot, lambda: len(engine.calls) == 2)
        assert view.busy
        commands = {c.title: c.callback for c in app.get_system_commands(app.screen)}
        commands["Cancel run"]()
        assert not app.query_one(RunView).busy
        assert await _thread_stopped(engine.calls[1])


async def test_a_new_run_cancels_the_old_one_and_clears_its_replay(engine):
    app = RunHost()
    async with app.run_test(size=(120, 40)) as pilot:
        view = await run_finished(pilot, app, tiny())
        table = app.query_one(CycleTable)
        table.advance(2)
        assert table.row_count > 0
        app.run(tiny().replace(n_sequences=int(HUGE)))
        assert table.row_count == 0 and table.total == 0  # the old replay is gone
        assert _card(app) == "running…"
        await until(pilot, lambda: view.progress is not None)
        app.run(tiny())  # the huge run is still going: this one (60 sequences) replaces it
        assert await _thread_stopped(engine.calls[1])
        await until(pilot, lambda: view.result is not None)
        assert view.result.config.n_sequences == 60
        assert not view.busy


async def test_quitting_during_a_run_stops_its_thread(engine):
    app = RunHost()
    async with app.run_test(size=(80, 24)) as pilot:
        view = app.run(tiny().replace(n_sequences=int(HUGE)))
        await until(pilot, lambda: view.progress is not None)
        await pilot.press("ctrl+q")
    assert app.return_code in (0, None)
    # Without the stop flag the thread would keep the process alive for minutes.
    assert await _thread_stopped(engine.calls[0])


async def test_cards_and_status_say_when_the_run_is_of_an_earlier_configuration():
    """In the app, as the form changes. The note reads as a whole sentence at 80 columns:
    it read "... · F5 runs the form's", as if cut off (issue 22)."""
    from engine.presets import load_preset
    from tests.app.screen import row_with, screen_lines, screen_text

    tiny_k = tiny().replace
    app = create_app("tiny", replay_autoplay=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.form.ready)
        await pilot.press("f5")
        view = app.query_one(RunView)
        await until(pilot, lambda: view.result is not None)
        cards = app.query_one(SummaryCards)
        assert not cards.has_class("-stale") and STALE_NOTE not in _status(app)
        await type_into(pilot, app, "k", "6")
        await until(pilot, lambda: app.config == tiny_k(k=6) and cards.has_class("-stale"))
        assert _status(app) == STALE_NOTE
        await until(pilot, lambda: "from an earlier configuration" in screen_text(app))
        line = screen_lines(app)[row_with(app, "from an earlier configuration")]
        assert line.rstrip().endswith("from an earlier configuration · F5 runs the form"), line
        await type_into(pilot, app, "k", "3")  # back to the run's configuration
        await until(pilot, lambda: app.config == tiny() and not cards.has_class("-stale"))
        assert STALE_NOTE not in _status(app)
        app.apply_preset("default")  # a preset load is a configuration change too
        default = load_preset("default").config
        await until(pilot, lambda: app.config == default and cards.has_class("-stale"))
        assert _status(app) == STALE_NOTE


async def test_k_1024_fits_the_table_columns():
    config = tiny().replace(k=1024, acceptance_rate=0.999, draft_cost_us=1_000_000_000)
    app = RunHost()
    async with app.run_test(size=(120, 40)) as pilot:
        await run_finished(pilot, app, config)
        table = app.query_one(CycleTable)
        table.run_to_end()
        await pilot.pause()
        header = table.render_line(0).text.split()
        assert header[:5] == ["seq", "cyc", "K", "acc", "kept"]
        line = table.render_line(table.cursor_row - table.scroll_offset.y + 1).text
        cells = line.split()
        assert cells[2] == "1024"  # not cut to 102, not run into its neighbours
        assert cells[0].isdigit() and cells[1].isdigit() and cells[3].isdigit()
        assert "e+" in line  # a cycle of 1024 billion-microsecond drafts, as 1.02e+12


def test_progress_text_names_sequences_rate_and_eta(monkeypatch):
    from engine.core.config import SpecConfig

    monkeypatch.delenv("SPECTUI_HIDE_TIMINGS", raising=False)
    config = SpecConfig(n_sequences=10_000_000, tokens_per_seq=100)
    text = progress_text(config, 2_500_000, 250_000_000, 10.0)
    assert text == "25% · 2.50M/10.00M seq · 250.0k seq/s · ETA 30s"


async def test_a_failed_run_leaves_its_busy_state(monkeypatch):
    def broken(*args, **kwargs):
        raise ValueError("no")

    monkeypatch.setattr(simulator, "simulate", broken)
    app = RunHost()
    async with app.run_test(size=(80, 24)) as pilot:
        view = app.run(tiny())
        await until(pilot, lambda: not view.busy)
        await pilot.pause()
        assert not view.busy  # the one worker-error handler called RunView.worker_failed
        assert _status(app) == "run failed · r / F5: run again"
        assert _card(app) == "—"


async def test_export_writes_every_cycle_when_only_the_first_are_kept(isolated_dirs, monkeypatch):
    import pandas as pd

    monkeypatch.setattr(run_view, "RECORDS_KEPT", 100)
    _, results = isolated_dirs
    config = tiny()
    app = RunHost()
    async with app.run_test(size=(120, 40)) as pilot:
        view = await run_finished(pilot, app, config)
        assert view.result is not None and len(view.result.cycles) == 100
        total = int(view.result.metrics["cycles"])
        assert total > 100
        assert _status(app).endswith(f"first of {total}")
        await pilot.press("x")
        await until(pilot, lambda: any(m.startswith("Wrote ") for m in notifications(app)))
    (path,) = results.glob("run-*.csv")
    written = pd.read_csv(path)
    expected = simulator.simulate(config, records=True).cycles
    assert len(written) == total
    pd.testing.assert_frame_equal(written[list(expected.columns)], expected, check_dtype=False)
    # The very file `spectui run --cycles-out` writes: accept pattern, running speedup.
    from engine.simulate.cycles_file import csv_blocks, csv_header

    assert path.read_bytes() == csv_header() + b"".join(csv_blocks(expected, config))
