"""Issue #41: the Regime map shows no cut column. Beside the form at 80 columns six of the
eight contexts fit whole (8 cells each after the 3 of the batch labels, in the view's 54);
the map is as wide as those, the hint under it names the two out of sight, and every
scroll shows whole columns; without the form all eight fit."""

from __future__ import annotations

from engine.analysis.regime import CONTEXTS, context_label
from tests.app.screen import region_text
from tests.app.test_regime_view import _host, _open_hosted

HEADERS = [context_label(c) for c in CONTEXTS]  # 1k ... 128k


def map_lines(app) -> list[str]:
    """The map's lines on screen (its region), header first, without trailing blanks."""
    table = app.query_one("#regime-map")
    return [line.rstrip() for line in region_text(app, table).splitlines()]


def assert_whole(app, headers: list[str]) -> None:
    """The map shows exactly the columns ``headers``, each whole: the heading's row names
    them, and every batch's row has a K* and a speedup under each, and nothing more."""
    header, *rows = map_lines(app)
    assert header.split() == headers
    batches = [str(b) for b in app.query_one("#regime-map").regime.batch_sizes]
    shown = [row for row in rows if row]
    assert [row.split()[0] for row in shown] == batches[: len(shown)]
    for row in shown:
        cells = row.split()[1:]
        assert len(cells) == 2 * len(headers), row
        assert all(speedup.count(".") == 1 for speedup in cells[1::2]), row
    # Label column and headings right-aligned in 8 cells: nothing past the last heading.
    assert all(len(row) <= len(header) for row in rows)


def hint(app) -> str:
    return region_text(app, app.query_one("#regime-more")).strip()


async def test_beside_the_form_at_80x24_every_column_is_whole_and_the_rest_named():
    app = _host()
    async with app.run_test(size=(80, 24)) as pilot:
        await _open_hosted(pilot, app)
        assert app.query_one("#regime-map").region.width == 3 + 6 * 8
        assert_whole(app, HEADERS[:6])
        assert map_lines(app)[0] == "         1k      2k      4k      8k     16k     32k"
        assert hint(app) == "→ 2 more columns (→ or End)"
        await pilot.press("right", "right", "right", "right", "right", "right")
        await pilot.pause()
        assert_whole(app, HEADERS[1:7])  # the cursor on 64k: scrolled one column
        assert hint(app) == "← 1 · 1 more columns → (←/→, Home/End)"
        await pilot.press("end")
        await pilot.pause()
        assert_whole(app, HEADERS[2:])
        assert hint(app) == "← 2 more columns (← or Home)"


async def test_with_a_scrollbar_the_columns_stay_whole():
    """79x16: the view 53 wide, the map too short for its 10 rows; its scrollbar's 2 columns
    leave 51: the labels and six columns, exactly."""
    app = _host()
    async with app.run_test(size=(79, 16)) as pilot:
        await _open_hosted(pilot, app)
        table = app.query_one("#regime-map")
        assert table.show_vertical_scrollbar
        assert table.region.width == 3 + 6 * 8 + 2
        assert_whole(app, HEADERS[:6])


async def test_hiding_the_form_shows_every_column_and_showing_it_cuts_none():
    """ctrl+b in the app hides the side panel: the view 80 wide holds all eight."""
    app = _host()
    async with app.run_test(size=(80, 24)) as pilot:
        await _open_hosted(pilot, app)
        assert_whole(app, HEADERS[:6])
        app.query_one("#side").display = False
        await pilot.pause()
        assert_whole(app, HEADERS)
        assert hint(app) == ""
        app.query_one("#side").display = True
        await pilot.pause()
        assert_whole(app, HEADERS[:6])
        assert hint(app) == "→ 2 more columns (→ or End)"
