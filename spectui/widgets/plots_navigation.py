"""The Plots view's navigation: which plot, which page of it, which model's heatmap.

:class:`PlotsNavigation` is a mixin of :class:`spectui.widgets.plots_view.PlotsView`: its
``watch_index``, ``check_action`` and ``action_*`` methods serve the view's reactive and key
bindings.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.acceptance.draft_models import DRAFT_MODELS
from engine.analysis.plot_data import PLOTS, heatmap_model

if TYPE_CHECKING:
    import pandas as pd

HEATMAP_ID = "06_optimal_k_heatmap"
PANELS_ID = "01_speedup_vs_k_fixed"


class PlotsNavigation:
    """Cycling through the plots, plot 1's and plot 6's pages and the heatmap's models.

    Uses the view's ``index`` (the plot shown), ``frame``, ``heatmap_model``, ``page``,
    ``pages``, ``redraw()`` and ``refresh_bindings()``.
    """

    index: int
    frame: pd.DataFrame | None
    heatmap_model: str | None
    page: int
    pages: int

    if TYPE_CHECKING:

        def redraw(self) -> None: ...

        def refresh_bindings(self) -> None: ...

    def _models(self) -> list[str]:
        if self.frame is None or self.frame.empty:
            return []
        present = set(self.frame["draft_model"])
        return [m for m in DRAFT_MODELS if m in present]

    def _model_shown(self) -> str | None:
        models = self._models()
        if self.heatmap_model in models:
            return self.heatmap_model
        return heatmap_model(self.frame) if self.frame is not None else None

    def watch_index(self) -> None:
        self.page = 0  # each plot starts at its first page (plot 1's panels, plot 6's rows)
        self.refresh_bindings()
        self.redraw()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "next_panels":
            return PLOTS[self.index].plot_id in (PANELS_ID, HEATMAP_ID) and self.pages > 1
        if action == "next_model":
            # Only on the heatmap, and only when the sweep has another model to show.
            return PLOTS[self.index].plot_id == HEATMAP_ID and len(self._models()) > 1
        return True

    def action_next_model(self) -> None:
        models = self._models()
        if not models:
            return
        current = self._model_shown()
        position = models.index(current) if current in models else -1
        self.heatmap_model = models[(position + 1) % len(models)]
        self.page = 0
        self.redraw()

    def action_next_panels(self) -> None:
        self.page += 1
        self.redraw()

    def action_next_plot(self) -> None:
        self.index = (self.index + 1) % len(PLOTS)

    def action_previous_plot(self) -> None:
        self.index = (self.index - 1) % len(PLOTS)
