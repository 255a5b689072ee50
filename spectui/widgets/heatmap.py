"""The optimal-K heatmap of one draft model, as built by
engine.analysis.plot_data.optimal_k_heatmap."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from rich.style import Style
from rich.text import Text
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey, RowKey

from engine.analysis.formatting import PENDING_MARK, SHORT_LEGEND, cell_text
from spectui.colours import heat_style
from spectui.widgets.table_hint import HidesColumnsHint

if TYPE_CHECKING:
    import pandas as pd

KNOWN_GRIDS = 8  # grids whose cells a heatmap remembers (a sweep's models)
CELL_WIDTH = 10  # " 4≈✗ 2.41…": fixed, so cells never change width as they fill
LEGEND = f"K* and its speedup per cell · {SHORT_LEGEND}"
# A row label's most characters: at 80 columns beside the form a sweep's cells still show
# beside labels such as regime-study's "prompt=128, batch=1, gpu=a100-80gb, draft=eagle-…"
LABEL_WIDTH = 36


def short_label(label: str, width: int = LABEL_WIDTH) -> str:
    """``label`` in at most ``width`` characters: whole if it fits, else its values alone
    ("128, 1, a100-80gb, …": the title names the row parameters, in order), cut with … if
    even those do not fit."""
    if len(label) <= width:
        return label
    parts = label.split(", ")
    if all("=" in part for part in parts):
        label = ", ".join(part.split("=", 1)[1] for part in parts)
    return label if len(label) <= width else label[: width - 1] + "…"


def speedup_kind(grid: pd.DataFrame) -> str:
    """Where a K* grid's speedups come from: "Monte Carlo", or "exact" (an exact-only
    sweep's; the grid's ``speedup_column``)."""
    return "exact" if grid.attrs.get("speedup_column") == "speedup_exact" else "Monte Carlo"


def legend(grid: pd.DataFrame | None) -> str:
    """The legend under a K* grid, saying whether its speedups are Monte Carlo or exact."""
    if grid is None:
        return LEGEND
    return f"K* and its {speedup_kind(grid)} speedup per cell · {SHORT_LEGEND}"


@functools.lru_cache(maxsize=16384)
def _heat_style(speedup: float, no_color: bool) -> Style:
    """:func:`heat_style`, remembered: switching models redraws every cell."""
    return heat_style(speedup, no_color)


class Heatmap(DataTable):
    """A DataTable with a cell cursor showing one K* grid.

    ``cells`` maps (row label, draft_cost_us) to the K* shown; ``grid`` is the grid drawn.
    """

    def __init__(self, **kwargs: Any) -> None:
        # The cell under the cursor takes the cursor's colours whole (the theme's contrast),
        # not the cursor's text on the cell's heat background.
        super().__init__(
            cursor_type="cell",
            zebra_stripes=False,
            cursor_foreground_priority="css",
            cursor_background_priority="css",
            **kwargs,
        )
        self.model: str | None = None
        self.grid: pd.DataFrame | None = None
        self.row_title: str = ""
        self.cells: dict[tuple[str, float], int] = {}
        self._shape: tuple[tuple[str, ...], tuple[float, ...]] | None = None
        self._shown: dict[tuple[int, int], tuple[str, Any]] = {}  # (row, column) -> drawn
        self._row_keys: list[RowKey] = []  # the table's keys of the grid's rows, columns
        self._column_keys: list[ColumnKey] = []
        self._known: dict[int, tuple[pd.DataFrame, bool, Any, Any]] = {}  # see _cells_of
        self._labels_cut = False  # some row label drawn shorter than it is (short_label)

    def show(self, grid: pd.DataFrame) -> None:
        """Draw ``grid`` (engine.analysis.plot_data.optimal_k_heatmap, ideally with ``planned`` so
        that pending cells show as ``·``); cells with results show :func:`cell_text`."""
        self.grid = grid
        self.model = grid.attrs.get("model")
        self.row_title = ", ".join(grid.attrs.get("row_parameters", []))
        labels = tuple(grid.attrs.get("row_labels", []))
        costs = tuple(float(c) for c in grid.attrs.get("costs", []))
        if (labels, costs) != self._shape:
            self.clear(columns=True)
            self._row_keys, self._column_keys = [], []
            labels_of = grid.attrs.get("column_labels") or [f"{c:g} us" for c in costs]
            for cost, heading in zip(costs, labels_of, strict=True):
                # "20us": a heading fits the cell's width
                column_key = self.add_column(
                    heading.replace(" us", "us")[:CELL_WIDTH], key=repr(cost), width=CELL_WIDTH
                )
                self._column_keys.append(column_key)
            for i, label in enumerate(labels):
                row_key = self.add_row(
                    *[""] * len(costs), key=str(i), label=Text(short_label(label), style="bold")
                )
                self._row_keys.append(row_key)
            self._shape = (labels, costs)
            self._shown = {}
            self._labels_cut = any(len(label) > LABEL_WIDTH for label in labels)
        self.cells, wanted = self._cells_of(grid, labels, costs)
        pending = (PENDING_MARK.center(CELL_WIDTH), None)
        # Only the cells whose text or colour changed are written: a snapshot of a running
        # sweep costs the cells it changed, not the whole grid.
        changes = []
        for i in range(len(labels)):
            for j in range(len(costs)):
                shown = wanted.get((i, j), pending)
                if self._shown.get((i, j)) != shown:
                    self._shown[(i, j)] = shown
                    changes.append((i, j, shown))
        if changes:
            self._put(changes)

    def _cells_of(
        self, grid: pd.DataFrame, labels: tuple[str, ...], costs: tuple[float, ...]
    ) -> tuple[dict[tuple[str, float], int], dict[tuple[int, int], tuple[str, Any]]]:
        """The K* of each (row label, cost), and the (text, style) of each (row, column) of
        ``grid``; remembered for the last few grids (``m`` goes back and forth)."""
        no_color = bool(getattr(self.app, "no_color", False))
        known = self._known.get(id(grid))
        if known is not None and known[0] is grid and known[1] == no_color:
            return known[2], known[3]
        fixed_k = grid.attrs.get("k_count") == 1
        cells: dict[tuple[str, float], int] = {}
        wanted: dict[tuple[int, int], tuple[str, Any]] = {}
        # One array of the grid's values, not grid.iterrows() nor grid[column]: a row or a
        # column as a Series copies the grid's attrs (its 960 row keys, deeply).
        columns = ["row", "column", "k_opt", "speedup_opt", "tie", "loses", "complete"]
        values = grid.to_numpy()[:, grid.columns.get_indexer(columns)]
        for i, j, k, speedup, tie, loses, complete in values:
            i, j = int(i), int(j)
            if not (0 <= i < len(labels) and 0 <= j < len(costs)):
                continue
            cells[(labels[i], costs[j])] = int(k)
            # A grid whose K does not vary has no K* to lose with: the title says K is fixed.
            cell = {"k_opt": k, "speedup_opt": speedup, "tie": tie, "complete": complete}
            cell["loses"] = False if fixed_k else loses
            style = _heat_style(float(speedup), no_color)
            wanted[(i, j)] = (cell_text(cell, aligned=True), style)
        if len(self._known) >= KNOWN_GRIDS:
            del self._known[next(iter(self._known))]
        self._known[id(grid)] = (grid, no_color, cells, wanted)  # the grid held: its id stays
        return cells, wanted

    def _update_dimensions(self, new_rows: Any) -> None:
        # DataTable measures new rows' labels here, when it is next idle, from renderables
        # it caches by its update count; a frame drawn before (a sweep's first grid and its
        # results in one go) cached them without labels, and the labels were measured as
        # none and never drawn. A new count makes the measure see the labels.
        self._update_count += 1
        super()._update_dimensions(new_rows)

    def _put(self, changes: list[tuple[int, int, tuple[str, Any]]]) -> None:
        """Write cells (row, column, (text, style)) as DataTable.update_cell does, with one
        refresh for them all (a refresh a cell made ``m`` on a grid of 960 cells slow)."""
        for i, j, (text, style) in changes:
            row = self._data[self._row_keys[i]]
            row[self._column_keys[j]] = Text(text, style=style or "")
        self._update_count += 1
        self.refresh()

    def blank(self) -> None:
        """No grid: an empty table (until :meth:`show`)."""
        self.clear(columns=True)
        self.grid, self.model, self.row_title, self.cells = None, None, "", {}
        self._shape, self._shown, self._row_keys, self._column_keys = None, {}, [], []
        self._labels_cut = False

    def labels_cut(self) -> bool:
        """Whether some row label is drawn shorter than it is (:func:`short_label`)."""
        return self._labels_cut

    def row_label(self, row: int) -> str:
        """The whole label of the grid's ``row`` ("" for none)."""
        labels = self._shape[0] if self._shape is not None else ()
        return labels[row] if 0 <= row < len(labels) else ""

    def cell_at_cursor(self) -> tuple[int, int] | None:
        """(row, column) of the grid under the cursor, or None."""
        if self._shape is None:
            return None
        labels, costs = self._shape
        row, column = self.cursor_row, self.cursor_column
        if not (0 <= row < len(labels) and 0 <= column < len(costs)):
            return None
        return row, column


class SweepHeatmap(HidesColumnsHint, Heatmap):
    """The Sweep view's heatmap: scrolls by whole columns, and the ColumnsHint beside it
    names the columns out of sight (:mod:`spectui.widgets.table_hint`)."""
