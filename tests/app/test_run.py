"""The Run view: rows stream in, the summary is the engine's, CSV export, view switching.

Tests of one view run it in a small host app (:mod:`tests.app.hosts_run`); the number keys
routed between views are tested in the whole app by tests/app/test_view_tabs.py.
"""

from __future__ import annotations

import pandas as pd
from textual.widgets import Static

from engine.simulate.simulator import simulate
from spectui.widgets.cycle_table import MAX_ROWS, TICK_S, CycleTable
from tests.app.helpers import until
from tests.app.hosts_run import RunHost, curve_drawn, run_finished, speedup_host, tiny


async def test_run_streams_rows_and_matches_engine():
    app = RunHost()  # the test moves the replay
    config = tiny()
    async with app.run_test(size=(120, 40)) as pilot:
        view = await run_finished(pilot, app, config)
        table = app.query_one(CycleTable)
        expected = simulate(config, records=True)
        assert view.result.metrics == expected.metrics  # same seed: identical numbers
        pd.testing.assert_frame_equal(view.result.cycles, expected.cycles)
        assert table.row_count == 0  # nothing shown until the replay moves
        per_tick = int(table.pace * TICK_S)
        table.advance()  # what the timer does every TICK_S
        assert table.row_count == per_tick  # streaming at a visible pace, not all at once
        table.advance(3)
        assert table.row_count == 4 * per_tick < table.total
        await pilot.pause()
        newest = expected.cycles.iloc[table.row_count - 1]
        # The newest row as drawn: the cursor follows it (line 0 is the header).
        line = table.render_line(table.cursor_row - table.scroll_offset.y + 1).text
        assert line.split()[:5] == [
            str(int(newest[c])) for c in ("sequence", "cycle", "k", "accepted", "kept")
        ]
        await pilot.press("e")  # run to end
        await pilot.pause()
        assert table.shown == table.total == len(expected.cycles)
        card = str(app.query_one("#card-speedup", Static).content)
        assert f"{expected.metrics['speedup']:.3f}" in card
        assert f"{expected.metrics['speedup_ci95']:.3f}" in card
        # Row contents: sequence, cycle, K, accepted, kept and the glyph pattern.
        last = expected.cycles.iloc[-1]
        row = [str(c).strip() for c in table.get_row_at(table.row_count - 1)]
        assert row[0] == str(int(last["sequence"])) and row[3] == str(int(last["accepted"]))
        assert "✓" in row[5] or "✗" in row[5]


async def test_the_replay_timer_moves_the_table_by_itself():
    app = RunHost(autoplay=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await run_finished(pilot, app, tiny())
        table = app.query_one(CycleTable)
        await until(pilot, lambda: table.row_count > 0)  # a state, not a time
        assert 0 < table.row_count < table.total


# Sequences of the tiny preset's configuration for a run of more cycles than the table keeps
# (4,480 cycles: about twice MAX_ROWS), with a quarter of the default preset's rows to
# export twice and read back.
MANY_CYCLES = 400


async def test_table_keeps_a_bounded_number_of_rows_and_exports_all(isolated_dirs):
    _, results = isolated_dirs
    app = RunHost()
    async with app.run_test(size=(120, 40)) as pilot:
        await run_finished(pilot, app, tiny().replace(n_sequences=MANY_CYCLES))
        table = app.query_one(CycleTable)
        await pilot.press("e")
        await pilot.pause()
        pace = table.pace
        await pilot.press("plus", "plus", "minus")
        assert table.pace > pace
        assert table.total > MAX_ROWS
        assert table.shown == table.total
        assert table.row_count <= MAX_ROWS
        await pilot.press("x")
        await until(pilot, lambda: len(list(results.glob("run-*.csv"))) == 1)
        await app.workers.wait_for_complete()
        await pilot.press("x")  # a second export never overwrites the first
        await until(pilot, lambda: len(list(results.glob("run-*.csv"))) == 2)
        await app.workers.wait_for_complete()
        files = list(results.glob("run-*.csv"))
        assert len(files) == 2
        assert all(len(pd.read_csv(f)) == table.total for f in files)


async def test_speedup_view_keys_overlay_comparison():
    app = speedup_host(tiny())
    async with app.run_test(size=(80, 24)) as pilot:
        view = await curve_drawn(pilot, app)
        view.focus()  # as key 2 does (test_view_tabs.py)
        assert view.last is not None and len(view.last.curves) == 1
        assert view.last.points and view.last.k_star is not None
        before = view.last
        await pilot.press("c")  # the other two models
        await curve_drawn(pilot, app, after=before)
        assert view.overlay == "models" and len(view.last.curves) == 3
        before = view.last
        await pilot.press("c")  # half and double draft cost
        await curve_drawn(pilot, app, after=before)
        assert view.overlay == "costs" and len(view.last.curves) == 3


async def test_an_older_run_finishing_late_never_replaces_a_newer_one():
    app = RunHost()
    async with app.run_test(size=(120, 40)) as pilot:
        view = await run_finished(pilot, app, tiny())
        older = view.result
        assert older is not None
        await run_finished(pilot, app, tiny().replace(k=6))
        assert view.result is not None and view.result.config.k == 6
        view.post_message(older)  # the first run's message, arriving after the second's
        await pilot.pause()  # (a pause: every message posted before it is handled)
        assert view.result.config.k == 6


async def test_speedup_view_finds_a_peak_beyond_the_default_range():
    from engine.simulate.exact import speedup_curve

    config = tiny().replace(acceptance_rate=0.98, draft_cost_us=5.0)
    app = speedup_host(config)
    async with app.run_test(size=(120, 40)) as pilot:
        view = await curve_drawn(pilot, app)
        curve = speedup_curve(config, range(1, 129))
        expected = int(curve["k"][curve["speedup_exact"].argmax()])
        assert expected > 15  # the case the old fixed range got wrong
        assert view.last is not None and view.last.k_star == expected


async def test_the_status_line_is_redrawn_only_when_its_text_changes(monkeypatch):
    """The status timer ticks 4 times a second on whichever view shows; an update of the
    same text repainted the line (and the screen under it) every time."""
    from textual.widgets import Static

    from tests.app.screen import screen_text

    app = RunHost()
    async with app.run_test(size=(100, 30)) as pilot:
        view = await run_finished(pilot, app, tiny())
        status = view.query_one("#run-status", Static)
        texts: list[str] = []
        update = Static.update

        def counted(self, content="", *, layout=True):
            if self is status:
                texts.append(str(content))
            update(self, content, layout=layout)

        monkeypatch.setattr(Static, "update", counted)
        view._refresh_status()  # the line the run left
        texts.clear()
        for _ in range(5):  # the timer's ticks while nothing changes
            view._refresh_status()
        assert texts == []
        view.action_run_to_end()
        await pilot.pause()
        assert len(texts) == 1 and texts[0].startswith("cycle ") and " · done · " in texts[0]
        assert texts[0] in screen_text(app)
        for _ in range(5):
            view._refresh_status()
        assert len(texts) == 1
