"""A Monte Carlo run in the app shows progress, can be cancelled, and never outlives the app;
the Run view says when what it shows is from an earlier configuration; wide values fit."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from textual.widgets import Static

import engine.simulator as simulator
from spectui.app import create_app
from spectui.widgets.cycle_table import CycleTable
from spectui.widgets.run_view import STALE_NOTE, RunView, progress_text
from spectui.widgets.summary_cards import SummaryCards
from tests.app.helpers import settle, type_into

HUGE = "10000000"  # sequences, far more records than memory allows
LONG = "100000"  # tokens per sequence: with HUGE, hours of work (10M x 128 took 5 s)


async def type_huge_run(pilot, app) -> None:
    """A run that cannot end while a test looks at it, however fast the engine."""
    await type_into(pilot, app, "n_sequences", HUGE)
    await type_into(pilot, app, "tokens_per_seq", LONG)


def _status(app) -> str:
    return str(app.query_one("#run-status", Static).render())


def _card(app, key: str = "speedup") -> str:
    return str(app.query_one(f"#card-{key}", Static).render())


async def _until(pilot, condition, rounds: int = 400) -> None:
    """Wait for a condition (never asserting how long it took); fail if it never holds."""
    for _ in range(rounds):
        if condition():
            return
        await pilot.pause(0.05)
    raise AssertionError("condition never held")


@pytest.fixture
def simulate_calls(monkeypatch):
    """Every simulate() call the app makes: an Event set when the call returned or raised.

    A huge run (HUGE sequences) goes to a controllable engine instead of the real one: it
    reports progress as simulate does and runs until ``should_stop()`` turns true (or a
    minute has passed), then raises RunStopped, as simulate does (the engine's own stop is
    tested in tests/engine); the real engine spent seconds of CPU on it before the app
    could cancel."""
    calls: list[threading.Event] = []
    real = simulator.simulate

    def endless(config, *, should_stop, on_progress, **_):
        # Gives up after a minute, so that an app that never says stop fails its test's
        # wait for the thread instead of keeping the test process alive.
        for sequences in range(1, 12_001):
            if should_stop():
                break
            on_progress(sequences, sequences * config.tokens_per_seq)
            time.sleep(0.005)
        raise simulator.RunStopped()

    def spy(config, *args, **kwargs):
        ended = threading.Event()
        calls.append(ended)
        try:
            if config.n_sequences >= int(HUGE):
                return endless(config, **kwargs)
            return real(config, *args, **kwargs)
        finally:
            ended.set()

    monkeypatch.setattr(simulator, "simulate", spy)
    return calls


async def test_a_long_run_shows_progress_and_escape_cancels_it(simulate_calls):
    app = create_app("default", replay_autoplay=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        await type_huge_run(pilot, app)
        await pilot.press("f5")
        view = app.query_one(RunView)
        assert view.busy and _card(app) == "running…"
        await _until(pilot, lambda: view.progress is not None)
        status = _status(app)
        assert "% · " in status and "/10.00M seq" in status, status
        await pilot.press("escape")
        assert not view.busy
        assert _status(app).startswith("run cancelled at ")
        assert _card(app) == "—"
        # The thread stops, long before the run would have ended.
        assert await asyncio.to_thread(simulate_calls[0].wait, 30)
        await settle(pilot, app)
        assert view.result is None


async def test_a_new_run_cancels_the_old_one_and_clears_its_replay(simulate_calls):
    app = create_app("tiny", replay_autoplay=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("f5")
        await settle(pilot, app)
        view, table = app.query_one(RunView), app.query_one(CycleTable)
        table.advance(2)
        assert table.row_count > 0
        await type_huge_run(pilot, app)
        await pilot.press("f5")
        assert table.row_count == 0 and table.total == 0  # the old replay is gone
        assert _card(app) == "running…"
        await _until(pilot, lambda: view.progress is not None)
        await type_into(pilot, app, "n_sequences", "60")
        await pilot.press("f5")  # the huge run is still going: this one replaces it
        assert await asyncio.to_thread(simulate_calls[1].wait, 30)
        await settle(pilot, app)
        assert view.result is not None and view.result.config.n_sequences == 60
        assert not view.busy


async def test_quitting_during_a_run_stops_its_thread(simulate_calls):
    app = create_app("default", replay_autoplay=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        await type_huge_run(pilot, app)
        await pilot.press("f5")
        await _until(pilot, lambda: app.query_one(RunView).progress is not None)
        await pilot.press("ctrl+q")
    assert app.return_code in (0, None)
    # Without the stop flag the thread would keep the process alive for minutes.
    assert await asyncio.to_thread(simulate_calls[0].wait, 30)


async def test_the_palette_cancels_a_run(simulate_calls):
    app = create_app("default", replay_autoplay=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        await type_huge_run(pilot, app)
        await pilot.press("f5")
        commands = {c.title: c.callback for c in app.get_system_commands(app.screen)}
        commands["Cancel run"]()
        assert not app.query_one(RunView).busy
        assert await asyncio.to_thread(simulate_calls[0].wait, 30)


async def test_cards_and_status_say_when_the_run_is_of_an_earlier_configuration():
    app = create_app("tiny", replay_autoplay=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        await pilot.press("f5")
        await settle(pilot, app)
        cards = app.query_one(SummaryCards)
        assert not cards.has_class("-stale") and STALE_NOTE not in _status(app)
        await type_into(pilot, app, "k", "6")
        await settle(pilot, app)
        assert cards.has_class("-stale")
        assert _status(app) == STALE_NOTE
        await type_into(pilot, app, "k", "3")  # back to the run's configuration
        await settle(pilot, app)
        assert not cards.has_class("-stale") and STALE_NOTE not in _status(app)
        app.apply_preset("default")  # a preset load is a configuration change too
        await settle(pilot, app)
        assert cards.has_class("-stale") and _status(app) == STALE_NOTE


async def test_k_1024_fits_the_table_columns():
    app = create_app("tiny", replay_autoplay=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await type_into(pilot, app, "k", "1024")
        await type_into(pilot, app, "acceptance_rate", "0.999")
        await type_into(pilot, app, "draft_cost_us", "1000000000")
        await pilot.press("f5")
        await settle(pilot, app)
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
    from engine.config import SpecConfig

    monkeypatch.delenv("SPECTUI_HIDE_TIMINGS", raising=False)
    config = SpecConfig(n_sequences=10_000_000, tokens_per_seq=100)
    text = progress_text(config, 2_500_000, 250_000_000, 10.0)
    assert text == "25% · 2.50M/10.00M seq · 250.0k seq/s · ETA 30s"


async def test_a_failed_run_leaves_its_busy_state(monkeypatch):
    def broken(*args, **kwargs):
        raise ValueError("no")

    monkeypatch.setattr(simulator, "simulate", broken)
    app = create_app("tiny", replay_autoplay=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        await pilot.press("f5")
        view = app.query_one(RunView)
        await settle(pilot, app)
        await pilot.pause()
        assert not view.busy  # the one worker-error handler called RunView.worker_failed
        assert _status(app) == "run failed · r / F5: run again"
        assert _card(app) == "—"


async def test_export_writes_every_cycle_when_only_the_first_are_kept(isolated_dirs, monkeypatch):
    import pandas as pd

    import spectui.widgets.run_view as run_view
    from engine.presets import load_preset

    monkeypatch.setattr(run_view, "RECORDS_KEPT", 100)
    _, results = isolated_dirs
    app = create_app("tiny", replay_autoplay=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("f5")
        await settle(pilot, app)
        view = app.query_one(RunView)
        assert view.result is not None and len(view.result.cycles) == 100
        total = int(view.result.metrics["cycles"])
        assert total > 100
        assert _status(app).endswith(f"first of {total}")
        await pilot.press("x")
        await settle(pilot, app)
    (path,) = results.glob("run-*.csv")
    written = pd.read_csv(path)
    config = load_preset("tiny").config
    expected = simulator.simulate(config, records=True).cycles
    assert len(written) == total
    pd.testing.assert_frame_equal(written[list(expected.columns)], expected, check_dtype=False)
    # The very file `spectui run --cycles-out` writes: accept pattern, running speedup.
    from engine.cycles_file import csv_blocks, csv_header

    assert path.read_bytes() == csv_header() + b"".join(csv_blocks(expected, config))


async def test_the_stale_note_reads_as_a_whole_sentence_at_80_columns():
    """It read "... · F5 runs the form's", as if cut off (issue 22)."""
    from tests.app.screen import row_with, screen_lines

    app = create_app("tiny", replay_autoplay=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        await pilot.press("f5")
        await settle(pilot, app)
        await type_into(pilot, app, "k", "6")
        await settle(pilot, app)
        line = screen_lines(app)[row_with(app, "from an earlier configuration")]
        assert line.rstrip().endswith("from an earlier configuration · F5 runs the form"), line
