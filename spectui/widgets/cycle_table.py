"""The live per-cycle table: replays a run's records at an adjustable pace."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.widgets import DataTable

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

MAX_ROWS = 2000
SLACK_ROWS = 500  # rows beyond MAX_ROWS before the table is trimmed
PACES: tuple[int, ...] = (5, 20, 100, 250, 500)  # rows per second: readable, then skimmable
TICK_S = 0.2
MAX_GLYPHS = 6
COLUMNS = (
    ("seq", 4),
    ("cyc", 4),
    ("K", 3),
    ("acc", 4),
    ("kept", 5),
    ("✓✗·", 7),
    ("us", 5),
    ("speedup", 8),
)


class CycleTable(DataTable):
    """Rows appear at ``pace`` rows per second; at most :data:`MAX_ROWS` are kept."""

    def __init__(self, **kwargs) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, cell_padding=0, **kwargs)
        self.pace_index = 2
        self.paused = False
        self._records: pd.DataFrame | None = None
        self._speedup_so_far: np.ndarray | None = None
        self._next = 0
        self._credit = 0.0
        self._timer = None

    def on_mount(self) -> None:
        # No cell padding: every column is one wider than its text and right-aligned.
        for label, width in COLUMNS:
            justify = "left" if label == "✓✗·" else "right"
            text = Text(label if justify == "right" else " " + label, justify=justify)
            self.add_column(text, width=width, key=label)

    @property
    def pace(self) -> int:
        return PACES[self.pace_index]

    @property
    def shown(self) -> int:
        return self._next

    @property
    def total(self) -> int:
        return 0 if self._records is None else len(self._records)

    def start(self, records: pd.DataFrame, verify_cost_us: float) -> None:
        """Replay ``records`` (the engine's per-cycle frame) from the first row."""
        import numpy as np  # here, not at import: numpy is not needed for the first screen

        self.clear()
        self._records = records
        kept = records["kept"].to_numpy(dtype=float)
        time_us = records["cycle_time_us"].to_numpy(dtype=float)
        self._speedup_so_far = verify_cost_us * np.cumsum(kept) / np.cumsum(time_us)
        self._next = 0
        self._credit = 0.0
        self.paused = False
        if self._timer is None:
            self._timer = self.set_interval(TICK_S, self._tick)

    def _rows(self, start: int, stop: int) -> list[tuple]:
        from engine.simulator import accept_pattern

        assert self._records is not None and self._speedup_so_far is not None
        part = self._records.iloc[start:stop]
        out = []
        for i, row in enumerate(part.itertuples(index=False), start=start):
            pattern = accept_pattern(int(row.k), int(row.accepted))
            if len(pattern) > MAX_GLYPHS:
                pattern = pattern[: MAX_GLYPHS - 1] + "…"
            # Plain strings, right-aligned by hand: much cheaper to measure than Text.
            out.append(
                (
                    f"{row.sequence:>3}",
                    f"{row.cycle:>3}",
                    f"{row.k:>2}",
                    f"{row.accepted:>3}",
                    f"{row.kept:>4}",
                    f" {pattern}",
                    f"{row.cycle_time_us:>4.0f}",
                    f"{self._speedup_so_far[i]:>6.3f}",
                )
            )
        return out

    def _append(self, stop: int) -> None:
        stop = min(stop, self.total)
        if stop <= self._next:
            return
        start = self._next
        if self.row_count + stop - start > MAX_ROWS + SLACK_ROWS:
            # Rebuild with the newest MAX_ROWS rows: DataTable.remove_row is O(rows) per call,
            # while adding 2,000 rows takes tens of milliseconds.
            self.clear()
            start = max(0, stop - MAX_ROWS)
        self.add_rows(self._rows(start, stop))
        self._next = stop
        self.move_cursor(row=self.row_count - 1, animate=False)

    def _tick(self) -> None:
        if self.paused or self._records is None or self._next >= self.total:
            return
        self._credit += self.pace * TICK_S
        step = int(self._credit)
        if step:
            self._credit -= step
            self._append(self._next + step)

    def run_to_end(self) -> None:
        """Show the last rows at once (the table keeps at most MAX_ROWS)."""
        self._append(self.total)

    def faster(self) -> None:
        self.pace_index = min(self.pace_index + 1, len(PACES) - 1)

    def slower(self) -> None:
        self.pace_index = max(self.pace_index - 1, 0)
