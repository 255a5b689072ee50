"""The optimal-K heatmap of one draft model, as built by engine.plot_data.optimal_k_heatmap."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.widgets import DataTable

from engine.formatting import PENDING_MARK, SHORT_LEGEND, cell_text
from spectui.colours import heat_style

if TYPE_CHECKING:
    import pandas as pd

CELL_WIDTH = 10  # " 4≈✗ 2.41…": fixed, so cells never change width as they fill
LEGEND = f"K* and its speedup per cell · {SHORT_LEGEND}"


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

    def show(self, grid: pd.DataFrame) -> None:
        """Draw ``grid`` (engine.plot_data.optimal_k_heatmap, ideally with ``planned`` so
        that pending cells show as ``·``); cells with results show :func:`cell_text`."""
        self.grid = grid
        self.model = grid.attrs.get("model")
        self.row_title = ", ".join(grid.attrs.get("row_parameters", []))
        labels = tuple(grid.attrs.get("row_labels", []))
        costs = tuple(float(c) for c in grid.attrs.get("costs", []))
        if (labels, costs) != self._shape:
            self.clear(columns=True)
            labels_of = grid.attrs.get("column_labels") or [f"{c:g} us" for c in costs]
            for cost, heading in zip(costs, labels_of, strict=True):
                # "20us": a heading fits the cell's width
                self.add_column(
                    heading.replace(" us", "us")[:CELL_WIDTH], key=repr(cost), width=CELL_WIDTH
                )
            for i, label in enumerate(labels):
                self.add_row(*[""] * len(costs), key=str(i), label=Text(label, style="bold"))
            self._shape = (labels, costs)
        no_color = bool(getattr(self.app, "no_color", False))
        found = {(int(r["row"]), int(r["column"])): r for _, r in grid.iterrows()}
        self.cells = {}
        for i, label in enumerate(labels):
            for j, cost in enumerate(costs):
                cell = found.get((i, j))
                if cell is None:
                    text = Text(PENDING_MARK.center(CELL_WIDTH))
                else:
                    self.cells[(label, cost)] = int(cell["k_opt"])
                    style = heat_style(float(cell["speedup_opt"]), no_color)
                    text = Text(cell_text(cell, aligned=True), style=style)
                self.update_cell(str(i), repr(cost), text)

    def cell_at_cursor(self) -> tuple[int, int] | None:
        """(row, column) of the grid under the cursor, or None."""
        if self._shape is None:
            return None
        labels, costs = self._shape
        row, column = self.cursor_row, self.cursor_column
        if not (0 <= row < len(labels) and 0 <= column < len(costs)):
            return None
        return row, column
