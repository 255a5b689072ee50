"""The optimal-K heatmap of one draft model: rows its quality parameter, columns draft cost."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.widgets import DataTable

from spectui.widgets.common import speedup_colour

if TYPE_CHECKING:
    import pandas as pd

CELL_WIDTH = 10  # " 4≈✗2.41…": fixed, so cells never change width as they fill
LEGEND = "K* per cell · ≈ tie within noise · ✗ loses to baseline · … cell not complete"


class Heatmap(DataTable):
    """A DataTable with a cell cursor; ``cells`` maps (quality, draft_cost_us) to K*."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(cursor_type="cell", zebra_stripes=False, **kwargs)
        self.model: str | None = None
        self.quality: str = ""
        self.cells: dict[tuple[float, float], int] = {}
        self._shape: tuple[tuple[float, ...], tuple[float, ...]] | None = None

    def show(
        self,
        optimal: pd.DataFrame | None,
        model: str,
        axes: tuple[list[float], list[float]] | None = None,
        complete_n_k: int | None = None,
        quality: str | None = None,
    ) -> None:
        """Fill the grid for ``model`` from an optimal-K table (engine.analysis.optimal_k).

        ``axes`` (quality values, draft costs) gives the full grid so pending cells show too;
        ``quality`` names the rows' parameter (default: the model's first).
        """
        from engine.draft_models import quality_parameter

        self.model = model
        self.quality = quality or quality_parameter(model)
        rows = None if optimal is None or optimal.empty else optimal
        # Cells straight from the optimal-K rows (as engine.analysis.heatmap pivots them, first
        # row per cell), without six pivot tables on the UI thread.
        found: dict[tuple[float, float], Any] = {}
        if rows is not None:
            mine = rows[rows["draft_model"] == model]
            for r in mine.itertuples(index=False):
                key = (float(getattr(r, self.quality)), float(r.draft_cost_us))
                found.setdefault(key, r)
        qualities = sorted({q for q, _ in found} | set(axes[0] if axes else []))
        costs = sorted({c for _, c in found} | set(axes[1] if axes else []))
        shape = (tuple(qualities), tuple(costs))
        if shape != self._shape:
            self.clear(columns=True)
            for cost in costs:
                self.add_column(f"{cost:g}us", key=f"{cost!r}", width=CELL_WIDTH)
            for quality in qualities:
                label = Text(f"{quality:g}", style="bold")
                self.add_row(*[""] * len(costs), key=repr(quality), label=label)
            self._shape = shape
        self.cells = {}
        for quality in qualities:
            for cost in costs:
                text = Text("·", style="dim")
                r = found.get((quality, cost))
                if r is not None:
                    self.cells[(quality, cost)] = int(r.k_opt)
                    complete = complete_n_k is None or int(r.n_k) >= complete_n_k
                    text = _cell_text(
                        int(r.k_opt), bool(r.tie), bool(r.loses), float(r.speedup_opt), complete
                    )
                self.update_cell(repr(quality), repr(cost), text)

    def cell_at_cursor(self) -> tuple[float, float] | None:
        if self._shape is None:
            return None
        qualities, costs = self._shape
        row, column = self.cursor_row, self.cursor_column
        if not (0 <= row < len(qualities) and 0 <= column < len(costs)):
            return None
        return qualities[row], costs[column]


def _cell_text(k_opt: int, tie: bool, loses: bool, speedup: float, complete: bool) -> Text:
    marks = ("≈" if tie else " ") + ("✗" if loses else " ")
    label = f"{k_opt:>2}{marks}{speedup:4.2f}" + ("" if complete else "…")
    style = f"bold white on {speedup_colour(speedup)}"
    if not complete:
        style = "dim " + style
    return Text(label, style=style)
