"""The Plots view: the six plots of a sweep, one at a time, redrawn while the sweep runs."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import Static
from textual_plotext import PlotextPlot

from engine.draft_models import DRAFT_MODELS
from engine.plot_data import PLOTS, heatmap_model
from spectui.widgets.common import ReportsWorkerErrors

if TYPE_CHECKING:
    import pandas as pd

EMPTY_TEXT = "Run a sweep to see plots"
HEATMAP_ID = "06_optimal_k_heatmap"
REDRAW_INTERVAL_S = 0.25  # at most four redraws a second while a sweep streams rows in


class PlotsView(ReportsWorkerErrors, Widget, can_focus=True):
    """One plot of :data:`engine.plot_data.PLOTS` at a time; ``n``/``p`` cycle through them.

    ``m`` (on the heatmap) shows the next draft model. While hidden behind another tab the view
    only remembers the newest frame, and draws it when shown.
    """

    DEFAULT_CSS = """
    PlotsView {
        height: 1fr;
        width: 1fr;
    }
    PlotsView #plots-title {
        height: auto;
        padding: 0 1;
        text-style: bold;
    }
    PlotsView #plots-canvas {
        height: 1fr;
    }
    PlotsView.-empty #plots-canvas {
        display: none;
    }
    PlotsView #plots-empty {
        display: none;
        padding: 1 2;
        color: $text-muted;
    }
    PlotsView.-empty #plots-empty {
        display: block;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "n,right_square_bracket",
            "next_plot",
            "Next plot",
            key_display="n",
            tooltip="Show the next of the six plots",
        ),
        Binding(
            "p,left_square_bracket",
            "previous_plot",
            "Previous plot",
            key_display="p",
            tooltip="Show the previous of the six plots",
        ),
        Binding(
            "m",
            "next_model",
            "Heatmap model",
            tooltip="Show the optimal-K heatmap of the next draft model in the sweep",
        ),
    ]

    index: reactive[int] = reactive(0, init=False)
    """Which plot is shown: an index into :data:`engine.plot_data.PLOTS`."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.frame: pd.DataFrame | None = None
        self.heatmap_model: str | None = None  # None: fixed, else the sweep's first model
        self._last_draw = 0.0
        self._timer: Any = None
        self._stale = False

    def compose(self) -> ComposeResult:
        yield Static(EMPTY_TEXT, id="plots-title")
        yield Static(
            "The six plots of the original simulator appear here as soon as a sweep has "
            "results, and follow it while it runs.",
            id="plots-empty",
        )
        yield PlotextPlot(id="plots-canvas")

    def on_mount(self) -> None:
        self.set_class(True, "-empty")

    @property
    def title_text(self) -> str:
        """The title line as shown: 'Plot 1/6: ...' or the empty-state text."""
        if self.frame is None or self.frame.empty:
            return EMPTY_TEXT
        spec = PLOTS[self.index]
        rows = len(self.frame)
        title = spec.title
        if spec.plot_id == HEATMAP_ID:
            title += f", {self._model_shown()} model (m: next model)"
        return f"Plot {self.index + 1}/{len(PLOTS)}: {title}  ({rows} sweep rows; n/p: change)"

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

    def update_results(self, frame: pd.DataFrame) -> None:
        """Show a sweep's rows (called again with the growing frame while the sweep runs)."""
        self.frame = frame
        self.set_class(frame is None or frame.empty, "-empty")
        self.refresh_bindings()
        if self.region.area == 0:
            # Hidden (another tab is showing): draw once it is shown, not on every snapshot.
            self._stale = True
            return
        wait = REDRAW_INTERVAL_S - (time.monotonic() - self._last_draw)
        if wait <= 0:
            self.redraw()
        elif self._timer is None:
            self._timer = self.set_timer(wait, self._redraw_from_timer)

    def on_show(self) -> None:
        if self._stale:
            self.call_after_refresh(self.redraw)

    def _redraw_from_timer(self) -> None:
        self._timer = None
        self.redraw()

    def redraw(self) -> None:
        """Draw the current plot of the current frame now."""
        from spectui.plotting.terminal import draw

        self._last_draw = time.monotonic()
        self._stale = False
        title = self.query_one("#plots-title", Static)
        title.update(self.title_text)
        if self.frame is None or self.frame.empty:
            return
        canvas = self.query_one("#plots-canvas", PlotextPlot)
        size = canvas.size
        try:
            draw(
                canvas.plt,
                PLOTS[self.index].plot_id,
                self.frame,
                width=size.width or None,
                height=size.height or None,
                heatmap_model=self._model_shown(),
            )
        except Exception as err:  # a plotting bug must not take the app down mid-sweep
            self.log.error(f"plot {PLOTS[self.index].plot_id} failed: {err!r}")
            title.update(f"{self.title_text}\nCould not draw this plot: {err}")
        canvas.refresh()

    def watch_index(self) -> None:
        self.refresh_bindings()
        self.redraw()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
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
        self.redraw()

    def on_resize(self) -> None:
        # Cell text of the heatmap depends on the width; the rest plotext rescales itself.
        if self.frame is not None and not self.frame.empty:
            self.call_after_refresh(self.redraw)

    def action_next_plot(self) -> None:
        self.index = (self.index + 1) % len(PLOTS)

    def action_previous_plot(self) -> None:
        self.index = (self.index - 1) % len(PLOTS)
