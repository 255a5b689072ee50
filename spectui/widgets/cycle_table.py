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

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from engine.core.config import SpecConfig

MAX_ROWS = 2000
PACES: tuple[int, ...] = (5, 20, 100, 250, 500)  # rows per second: readable, then skimmable
TICK_S = 0.2
MAX_GLYPHS = 6
PATTERN = "✓✗·"
# (label, record column): the columns' widths follow the widest value of each run.
COLUMNS = (
    ("seq", "sequence"),
    ("cyc", "cycle"),
    ("K", "k"),
    ("acc", "accepted"),
    ("kept", "kept"),
    (PATTERN, None),
    ("us", "cycle_time_us"),
    ("speedup", None),
)
# A token tree's cycle (shape tree): its accepted depth and the accepted path, the nodes
# from the root down (engine.shapes.trees.Tree.path_texts), last: its width varies with the tree.
PATH = "path"
TREE_COLUMNS = (
    ("seq", "sequence"),
    ("cyc", "cycle"),
    ("depth", "accepted"),
    ("kept", "kept"),
    ("us", "cycle_time_us"),
    ("speedup", None),
    (PATH, None),
)
MAX_PATH = 24  # characters of a path shown; a longer one ends in "…"


def _cut(text: str, limit: int) -> str:
    """``text`` in at most ``limit`` characters, a longer one ending in "…"."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


US_DIGITS = 7  # cycle times up to 9,999,999 us in full; longer ones as 1.23e+12


def cycle_us(value: float) -> str:
    """A cycle time for the table: whole microseconds, or 3 significant digits if huge."""
    text = f"{value:.0f}"
    return text if len(text) <= US_DIGITS else f"{value:.2e}"


class CycleTable(ScrollView, can_focus=True):
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

    @property
    def pace(self) -> int:
        return PACES[self.pace_index]

    @property
    def shown(self) -> int:
        return self._next

    @property
    def total(self) -> int:
        return 0 if self._records is None else len(self._records)

    def start(self, records: pd.DataFrame, config: SpecConfig) -> None:
        """Replay ``records`` (the engine's per-cycle frame of a run of ``config``) from the
        first row."""
        import numpy as np  # here, not at import: numpy is not needed for the first screen

        from engine.core.kernel import baseline_time_us
        from engine.core.parts import SHAPE

        self._records = records
        self._columns, self._paths = COLUMNS, None
        if SHAPE.of(config).tree:
            from engine.simulate.tree_scenario import tree_of

            self._columns, self._paths = TREE_COLUMNS, tree_of(config).path_texts()
        tokens = records["cum_tokens"].to_numpy()
        kept = records["kept"].to_numpy()
        # The baseline's time for the tokens each cycle kept, at their own contexts.
        baseline = baseline_time_us(config, tokens) - baseline_time_us(config, tokens - kept)
        time_us = records["cycle_time_us"].to_numpy(dtype=float)
        with np.errstate(invalid="ignore", divide="ignore"):
            self._speedup_so_far = np.cumsum(baseline) / np.cumsum(time_us)
        self._set_columns(self._column_widths(records))
        self._next = 0
        self._credit = 0.0
        self.paused = False
        if self._timer is None and self.autoplay:
            self._timer = self.set_interval(TICK_S, self.advance)

    def stop(self) -> None:
        """Forget the replayed run: an empty table (its columns stay)."""
        self._records = None
        self._speedup_so_far = None
        self._next = 0
        self._credit = 0.0
        self.clear()

    def _column_widths(self, records: pd.DataFrame) -> dict[str, int]:
        widths = {}
        for label, column in self._columns:
            widest = len(label)
            if column is not None and len(records):
                top = records[column].max()
                widest = max(widest, len(cycle_us(top) if column == "cycle_time_us" else str(top)))
            widths[label] = widest + 1
        widths[PATTERN] = MAX_GLYPHS + 1
        if self._paths is not None:
            nodes = records["node"].unique() if len(records) else []
            widest = max((len(self._paths[node]) for node in nodes), default=0)
            widths[PATH] = min(max(widest, len(PATH)), MAX_PATH) + 1
        if self._speedup_so_far is not None and len(self._speedup_so_far):
            top = float(max(self._speedup_so_far.max(), 0.0))
            widths["speedup"] = max(widths["speedup"], len(f"{top:.3f}") + 1)
        return widths

    def _rows(self, start: int, stop: int) -> list[tuple]:
        from engine.analysis.formatting import speedup_text
        from engine.core.runs import accept_pattern

        assert self._records is not None and self._speedup_so_far is not None
        part = self._records.iloc[start:stop]
        w = self._widths
        out: list[tuple] = []
        if self._paths is not None:  # a token tree's cycles
            for i, row in enumerate(part.itertuples(index=False), start=start):
                path = _cut(self._paths[row.node], MAX_PATH)
                out.append(
                    (
                        f"{row.sequence:>{w['seq']}}",
                        f"{row.cycle:>{w['cyc']}}",
                        f"{row.accepted:>{w['depth']}}",
                        f"{row.kept:>{w['kept']}}",
                        f"{cycle_us(row.cycle_time_us):>{w['us']}}",
                        speedup_text(self._speedup_so_far[i], 3, unit="").rjust(w["speedup"]),
                        f" {path}".ljust(w[PATH]),
                    )
                )
            return out
        for i, row in enumerate(part.itertuples(index=False), start=start):
            pattern = _cut(accept_pattern(int(row.k), int(row.accepted)), MAX_GLYPHS)
            # Every cell exactly its column's width: the row is drawn as one line.
            out.append(
                (
                    f"{row.sequence:>{w['seq']}}",
                    f"{row.cycle:>{w['cyc']}}",
                    f"{row.k:>{w['K']}}",
                    f"{row.accepted:>{w['acc']}}",
                    f"{row.kept:>{w['kept']}}",
                    f" {pattern}".ljust(w[PATTERN]),
                    f"{cycle_us(row.cycle_time_us):>{w['us']}}",
                    speedup_text(self._speedup_so_far[i], 3, unit="").rjust(w["speedup"]),
                )
            )
        return out

    def _append(self, stop: int) -> None:
        stop = min(stop, self.total)
        if stop <= self._next:
            return
        start = self._next
        start = max(start, stop - MAX_ROWS)  # older rows would fall out of the table at once
        self.add_rows(self._rows(start, stop))
        self._next = stop
        self.move_cursor(row=-1)

    def advance(self, ticks: int = 1) -> None:
        """Advance the replay by ``ticks`` ticks at the current pace (the timer does one per
        :data:`TICK_S`); a paused or finished replay does not move."""
        if self.paused or self._records is None or self._next >= self.total:
            return
        self._credit += self.pace * TICK_S * ticks
        step = int(self._credit)
        if step:
            self._credit -= step
            self._append(self._next + step)

    def advance_to(self, row: int) -> None:
        """Show the rows up to ``row`` (at most the run's), at once."""
        self._append(row)

    def run_to_end(self) -> None:
        """Show the last rows at once (the table keeps at most MAX_ROWS)."""
        self._append(self.total)

    def faster(self) -> None:
        self.pace_index = min(self.pace_index + 1, len(PACES) - 1)

    def slower(self) -> None:
        self.pace_index = max(self.pace_index - 1, 0)
