"""The Sweep view's heatmap: the K* grids of a sweep (built from its planned configurations
and its rows so far), the title and the row line around them, and the cell chosen."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.text import Text
from textual.widgets import DataTable, Static

from engine.core.config import SpecConfig
from spectui.messages import CellChosen
from spectui.widgets.heatmap import Heatmap, legend
from spectui.widgets.sweep.base import SweepBase


class SweepGrid(SweepBase):
    """The heatmap of the model shown (``m``: the next), its title, the line naming the
    highlighted row, and ``enter`` on a cell (:class:`spectui.messages.CellChosen`)."""

    def _clear_grid(self, title: str) -> None:
        """No grid on screen (one is being laid out, or none is chosen): ``title`` says why."""
        self.planned, self.grids, self.models, self.shown_name = None, {}, [], None
        self.query_one(Heatmap).blank()
        self.query_one("#heatmap-title", Static).update(title)
        self._row_line()

    def action_next_model(self) -> None:
        if self.models:
            self.model_index = (self.model_index + 1) % len(self.models)
            self._draw()

    @property
    def model(self) -> str | None:
        return self.models[self.model_index] if self.models else None

    def _row_line(self) -> None:
        """The line under the heatmap naming the highlighted row whole, shown while some
        row labels are drawn cut."""
        heatmap = self.query_one(Heatmap)
        line = self.query_one("#heatmap-row", Static)
        line.display = heatmap.labels_cut()
        if line.display:
            line.update(Text(f"row: {heatmap.row_label(heatmap.cursor_row)}"))

    def on_data_table_cell_highlighted(self, event: DataTable.CellHighlighted) -> None:
        event.stop()
        self._row_line()

    def _title(self) -> None:
        """The heatmap's title: which preset's grid it is (and, if the picker shows another,
        that ``s`` runs that one), the model, the axes, what is held and whether K varies;
        the legend says whether the speedups are Monte Carlo or exact."""
        heatmap = self.query_one(Heatmap)
        grid, model = heatmap.grid, self.model
        if grid is None or model is None or self.shown_name is None:
            return
        position = f"{self.model_index + 1}/{len(self.models)}"
        # Axes that vary but are not drawn are held at one value: say which (the grid's notes).
        held = "".join(f" · {k}={_value(v)} only" for k, v in grid.attrs.get("held", {}).items())
        if grid.attrs.get("k_count") == 1 and len(ks := set(self.planned["k"])) == 1:
            # No K* to find: each cell is the speedup at the grid's one K.
            held += f" · K={ks.pop()} only: K does not vary"
        name = self.shown_name
        selected = self._selected()
        if selected is not None and selected.name != name:
            name += f" (s runs {selected.name})"
        self.query_one("#heatmap-title", Static).update(
            f"{name} · K* of {model} ({position}, m: next) · {heatmap.row_title} × draft "
            f"cost{held}",
            layout=False,
        )
        self.query_one("#heatmap-legend", Static).update(f"{legend(grid)} · enter: curve")

    def on_data_table_cell_selected(self, event: DataTable.CellSelected) -> None:
        event.stop()
        from engine.analysis.analysis import row_config
        from engine.analysis.plot_data import heatmap_cell_rows

        heatmap = self.query_one(Heatmap)
        cell = heatmap.cell_at_cursor()
        grid = heatmap.grid
        if cell is None or self.frame is None or grid is None:
            return
        row, column = cell
        shown = grid[(grid["row"] == row) & (grid["column"] == column)]
        rows = heatmap_cell_rows(self.frame, grid, row, column)
        if shown.empty or rows.empty:
            self.notify("That cell has no finished configurations yet.", severity="warning")
            return
        # The configuration at the K* the cell shows (the grid's rule, ties to the smaller K).
        best = rows[rows["k"] == int(shown["k_opt"].iloc[0])].iloc[0]
        config = row_config(best)
        self.post_message(CellChosen(config, rows))


def _planned(configs: Sequence[SpecConfig]) -> Any:
    from engine.sweep.sweep import config_frame

    return config_frame(configs)


def _grids(frame: Any, planned: Any, models: list[str] | None = None) -> dict[str, Any]:
    """The K* grid (engine.analysis.plot_data.optimal_k_heatmap) of ``models`` (default: every model
    of the sweep), each in the sweep's own shape."""
    import pandas as pd

    from engine.analysis.plot_data import optimal_k_heatmap

    rows = frame if frame is not None else pd.DataFrame()
    models = models if models is not None else list(dict.fromkeys(planned["draft_model"]))
    return {str(model): optimal_k_heatmap(rows, str(model), planned) for model in models}


def _value(value: Any) -> str:
    return f"{value:g}" if isinstance(value, int | float) else str(value)
