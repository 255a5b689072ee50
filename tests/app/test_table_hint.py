"""A table wider than its place (spectui.widgets.table_hint): the line under it says how many
columns are out of sight and which keys bring them in; arrows, Home and End reach every
column header; it scrolls by whole columns, so no cut column stands beside the row labels
or the fixed column. In a small host app, with a row cursor (as the Arena's board) and a
cell cursor (as the Regime map and the Tree view's heatmap)."""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult
from textual.widgets import DataTable

from spectui.widgets.table_hint import ColumnsHint, HidesColumnsHint
from tests.app.screen import region_text

HEADERS = [f"c{i}" for i in range(10)]  # 8 wide with padding: 80 columns in a 30-column box


class Wide(HidesColumnsHint, DataTable):
    pass


class Host(App):
    def __init__(self, cursor_type: str, fixed_columns: int, width: int = 30) -> None:
        super().__init__()
        self.cursor, self.fixed, self.width = cursor_type, fixed_columns, width

    def compose(self) -> ComposeResult:
        yield Wide(cursor_type=self.cursor, fixed_columns=self.fixed)
        yield ColumnsHint()

    def on_mount(self) -> None:
        table = self.query_one(Wide)
        table.styles.width, table.styles.height = self.width, 6
        for header in HEADERS:
            table.add_column(header.rjust(6), width=6)
        for row in range(8):
            table.add_row(*[f"{row}.{c}".rjust(6) for c in range(len(HEADERS))], label=str(row))
        table.focus()


def _header(app) -> list[str]:
    return region_text(app, app.query_one(Wide)).splitlines()[0].split()


def _hint(app) -> str:
    hint = app.query_one(ColumnsHint)
    return region_text(app, hint).strip() if hint.display else ""


@pytest.mark.parametrize(("cursor", "fixed"), [("row", 1), ("cell", 0)])
async def test_every_column_is_reached_by_keys_and_the_hint_says_what_is_hidden(cursor, fixed):
    app = Host(cursor, fixed)
    async with app.run_test(size=(40, 12)) as pilot:
        await pilot.pause()
        first = _header(app)
        assert first[0] == "c0" and "c9" not in first
        hidden = len(HEADERS) - len(first)
        assert _hint(app) == f"→ {hidden} more columns (→ or End)"
        seen = set(first)
        for _ in range(len(HEADERS)):  # right, column by column, to the last
            await pilot.press("right")
            await pilot.pause()
            shown = _header(app)
            seen.update(shown)
            if fixed:
                assert shown[0] == "c0"  # the fixed column stays
            # Whole columns only: the first after the row label (and the fixed column) is a
            # header of its own, never the tail of a cut one.
            assert all(name in HEADERS for name in shown), shown
        assert seen == set(HEADERS)
        await pilot.press("home")
        await pilot.pause()
        assert _header(app) == first
        await pilot.press("end")
        await pilot.pause()
        last = _header(app)
        assert last[-1] == "c9" and "c1" not in last
        assert all(name in HEADERS for name in last), last  # the first one whole too
        assert _hint(app).startswith("← ") and _hint(app).endswith("(← or Home)")
        await pilot.press("left")
        await pilot.pause()
        if cursor == "row":  # the view moves one column back: some are out of sight each side
            assert _hint(app).endswith("(←/→, Home/End)")


async def test_no_hint_when_every_column_fits():
    app = Host("cell", 0, width=90)
    async with app.run_test(size=(100, 12)) as pilot:
        await pilot.pause()
        assert _header(app) == HEADERS
        assert _hint(app) == ""
        assert not app.query_one(ColumnsHint).display


async def test_no_hint_when_only_the_last_columns_padding_is_cut():
    """seed-576 beside the form said '→ 1 more column' with every column in sight."""
    app = Host("cell", 0, width=120)
    async with app.run_test(size=(130, 12)) as pilot:
        await pilot.pause()
        table = app.query_one(Wide)
        chrome = table.size.width - table.scrollable_content_region.width  # the scrollbar
        text_end = table._row_label_column_width + 8 * len(HEADERS) - table.cell_padding
        table.styles.width = text_end + chrome
        await pilot.pause()
        assert _header(app) == HEADERS  # c9 whole, only its trailing space cut
        assert _hint(app) == ""
        table.styles.width = text_end + chrome - 1  # now c9's last letter is cut
        await pilot.pause()
        assert _hint(app) == "→ 1 more column (→ or End)"


async def test_the_hint_says_tab_first_when_the_table_has_not_the_focus():
    app = Host("cell", 0)
    async with app.run_test(size=(40, 12)) as pilot:
        await pilot.pause()
        hidden = len(HEADERS) - len(_header(app))
        app.query_one(Wide).blur()
        await pilot.pause()
        assert _hint(app) == f"→ {hidden} more columns (Tab, then → or End)"
        await pilot.press("tab")
        await pilot.pause()
        assert _hint(app) == f"→ {hidden} more columns (→ or End)"


@pytest.mark.parametrize("cursor", ["row", "cell"])
async def test_page_keys_reach_every_row(cursor):
    app = Host(cursor, 0)  # 8 rows in a box of 6 lines: the header and 5 rows
    async with app.run_test(size=(40, 12)) as pilot:
        await pilot.pause()

        def labels() -> list[str]:  # the row labels shown (not the scrollbar's row)
            lines = region_text(app, app.query_one(Wide)).splitlines()[1:]
            return [line.split()[0] for line in lines if line.split()[0].isdigit()]

        assert labels()[0] == "0" and "7" not in labels()
        await pilot.press("pagedown", "pagedown")
        await pilot.pause()
        assert labels()[-1] == "7"
        await pilot.press("pageup", "pageup")
        await pilot.pause()
        assert labels()[0] == "0"
