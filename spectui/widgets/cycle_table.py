"""The live per-cycle table: replays a run's records at an adjustable pace.

The replay advances in ticks of :data:`TICK_S` (at most five table updates a second, each
appending every row due since the last). A test (or ``autoplay=False``) drives it with
:meth:`CycleTable.advance` instead of the timer.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, ClassVar

from rich.segment import Segment
from textual.binding import Binding, BindingType
from textual.geometry import Region, Size
from textual.reactive import Reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from spectui.widgets.cycle_replay import (  # re-exported: the table's constants and helpers
    COLUMNS,
    MAX_GLYPHS,
    MAX_PATH,
    MAX_ROWS,
    PACES,
    PATH,
    PATTERN,
    TICK_S,
    TREE_COLUMNS,
    US_DIGITS,
    CycleReplay,
    _cut,
    cycle_us,
)

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

__all__ = [
    "COLUMNS",
    "MAX_GLYPHS",
    "MAX_PATH",
    "MAX_ROWS",
    "PACES",
    "PATH",
    "PATTERN",
    "TICK_S",
    "TREE_COLUMNS",
    "US_DIGITS",
    "CycleTable",
    "_cut",
    "cycle_us",
]


class CycleTable(CycleReplay, ScrollView, can_focus=True):
    """Rows appear at ``pace`` rows per second; at most :data:`MAX_ROWS` are kept.

    Not a DataTable: a DataTable re-renders every visible cell through Rich after each
    added row, which made a key wait up to a second behind the replay. Here a row is one
    preformatted line, drawn as a single segment; the header stays on the first line.
    """

    DEFAULT_CSS = """
    CycleTable {
        background: $surface;
        color: $foreground;
        & > .cycle-table--header { text-style: bold; background: $panel; color: $foreground; }
        &:ansi > .cycle-table--header { background: ansi_bright_blue; color: ansi_default; }
        & > .cycle-table--even-row { background: $surface-lighten-1 50%; }
        &:dark > .cycle-table--even-row { background: $surface-darken-1 40%; }
        & > .cycle-table--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
            text-style: $block-cursor-blurred-text-style;
        }
        &:focus > .cycle-table--cursor {
            background: $block-cursor-background;
            color: $block-cursor-foreground;
            text-style: $block-cursor-text-style;
        }
    }
    """
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "cycle-table--header",
        "cycle-table--even-row",
        "cycle-table--cursor",
    }
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "cursor(-1)", "Up", show=False),
        Binding("down", "cursor(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "cursor_to(0)", "First", show=False),
        Binding("end", "cursor_to(-1)", "Last", show=False),
    ]

    # The table grows on every tick: a change of its scrollable size must not re-lay out
    # the whole screen (that made every key wait behind a full redraw). The scrollbars are
    # updated in watch_virtual_size; a layout follows only when one appears or goes.
    virtual_size: Reactive[Size] = Reactive(Size(0, 0), layout=False)

    def __init__(self, *, autoplay: bool = True, **kwargs) -> None:
        super().__init__(**kwargs)
        self.autoplay = autoplay
        self.pace_index = 2
        self.paused = False
        self._records: pd.DataFrame | None = None
        self._columns: tuple[tuple[str, str | None], ...] = COLUMNS
        self._paths: tuple[str, ...] | None = None  # a tree's path texts by last node
        self._speedup_so_far: np.ndarray | None = None
        self._widths: dict[str, int] = {}
        self._header = ""
        self._lines: deque[str] = deque(maxlen=MAX_ROWS)
        self.cursor_row = 0
        self._next = 0
        self._credit = 0.0
        self._timer = None

    def watch_virtual_size(self, size: Size) -> None:
        if self.is_mounted:
            self._scroll_update(size)

    def on_mount(self) -> None:
        self._set_columns({label: len(label) + 1 for label, _ in COLUMNS})

    # --- the rows ----------------------------------------------------------------------
    @property
    def row_count(self) -> int:
        return len(self._lines)

    def get_row_at(self, index: int) -> list[str]:
        """The cells of a kept row, as shown (padded to their columns' widths)."""
        line, cells, at = self._lines[index], [], 0
        for label, _ in self._columns:
            cells.append(line[at : at + self._widths[label]])
            at += self._widths[label]
        return cells

    def _set_columns(self, widths: dict[str, int]) -> None:
        """Set each column one wider than its widest text; empty the table."""
        self._widths = widths
        self._header = "".join(
            " " + label.ljust(widths[label] - 1)
            if label in (PATTERN, PATH)
            else label.rjust(widths[label])
            for label, _ in self._columns
        )
        self.clear()

    def clear(self) -> None:
        self._lines.clear()
        self.cursor_row = 0
        self._resize()
        self.scroll_to(0, 0, animate=False, immediate=True)
        self.refresh()

    def _resize(self) -> None:
        self.virtual_size = Size(len(self._header), len(self._lines) + 1)

    def add_rows(self, rows: list[tuple[str, ...]]) -> None:
        self._lines.extend("".join(row) for row in rows)
        self._resize()
        self.refresh()

    def move_cursor(self, row: int) -> None:
        """Put the cursor on kept row ``row`` (negative: from the end) and scroll to it."""
        if not self._lines:
            return
        if row < 0:
            row += len(self._lines)
        self.cursor_row = max(0, min(row, len(self._lines) - 1))
        # Line 0 of the view is the header: row r must be in virtual lines y + 1 ... so that
        # r >= scroll_y and r + 1 < scroll_y + height.
        self.scroll_to_region(
            Region(0, self.cursor_row, 1, 2),
            spacing=None,
            animate=False,
            immediate=True,
            top=False,
        )
        self.refresh()

    def action_cursor(self, step: int) -> None:
        self.move_cursor(self.cursor_row + step)

    def action_page(self, direction: int) -> None:
        self.move_cursor(self.cursor_row + direction * max(1, self.size.height - 2))

    def action_cursor_to(self, row: int) -> None:
        self.move_cursor(row)

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        scroll_x, scroll_y = self.scroll_offset
        if y == 0:
            text, style = self._header, self.get_component_rich_style("cycle-table--header")
        else:
            index = scroll_y + y - 1
            if index >= len(self._lines):
                return Strip.blank(width, self.rich_style)
            text = self._lines[index]
            if index == self.cursor_row:
                style = self.get_component_rich_style("cycle-table--cursor")
            elif index % 2:
                style = self.get_component_rich_style("cycle-table--even-row")
            else:
                style = self.rich_style
        text = text[scroll_x : scroll_x + width].ljust(width)
        return Strip([Segment(text, style)], width)
