"""The replay of a run's records in the per-cycle table: its pace, its rows and their columns.

:class:`CycleReplay` is a mixin of :class:`spectui.widgets.cycle_table.CycleTable`; the
constants and formatting helpers here are re-exported by that module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections import deque

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


class CycleReplay:
    """Mixin for :class:`~spectui.widgets.cycle_table.CycleTable`: replays a run's records,
    :data:`TICK_S` at a time, at ``pace`` rows per second."""

    autoplay: bool
    pace_index: int
    paused: bool
    _records: pd.DataFrame | None
    _columns: tuple[tuple[str, str | None], ...]
    _paths: tuple[str, ...] | None
    _speedup_so_far: np.ndarray | None
    _widths: dict[str, int]
    _lines: deque[str]
    _next: int
    _credit: float
    _timer: Any

    if TYPE_CHECKING:  # provided by CycleTable (a ScrollView)

        def set_interval(self, *args: Any, **kwargs: Any) -> Any: ...
        def _set_columns(self, widths: dict[str, int]) -> None: ...
        def clear(self) -> None: ...
        def add_rows(self, rows: list[tuple[str, ...]]) -> None: ...
        def move_cursor(self, row: int) -> None: ...

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
