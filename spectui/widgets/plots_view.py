"""The Plots view: the six plots of a sweep, one at a time, redrawn while the sweep runs."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import Static

from engine.analysis.plot_data import PLOTS
from spectui.widgets.common import ReportsWorkerErrors
from spectui.widgets.plot import Plot
from spectui.widgets.plots_navigation import HEATMAP_ID, PlotsNavigation

if TYPE_CHECKING:
    import pandas as pd

EMPTY_TEXT = "Run a sweep to see plots"
REDRAW_INTERVAL_S = 0.25  # at most four redraws a second while a sweep streams rows in
# ...and drawing takes at most this share of the app's time then (plot 6 of a regime sweep
# derives its K* grid from 46,080 rows: half a second each time).
DRAW_SHARE = 0.2


class PlotCanvas(Plot):
    """The plot; tells its view when its size changes (ticks are spaced for the size)."""

    def on_resize(self) -> None:
        view = self.parent
        if isinstance(view, PlotsView) and view.drawn_size not in (None, self.size):
            view.call_after_refresh(view.redraw)


class PlotsView(PlotsNavigation, ReportsWorkerErrors, Widget, can_focus=True):
    """One plot of :data:`engine.analysis.plot_data.PLOTS` at a time; ``n``/``p`` cycle through
    them.

    ``m`` (on the heatmap) shows the next draft model; ``d`` the next page: plot 1's next
    draft costs, or the heatmap's next rows, when they do not all fit. The legend and notes
    are under the plot, not over the curves. While hidden behind another tab the view only
    remembers the newest frame, and draws it when shown.
    """

    DEFAULT_CSS = """
    PlotsView {
        height: 1fr;
        width: 1fr;
    }
    PlotsView #plots-title {
        height: 1;
        padding: 0 1;
        text-style: bold;
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    PlotsView #plots-canvas {
        height: 1fr;
    }
    PlotsView #plots-legend {
        height: auto;
        padding: 0 1;
    }
    PlotsView.-empty #plots-legend {
        display: none;
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
            "d",
            "next_panels",
            "Next page",
            tooltip="Plot 1: the next draft costs' panels; plot 6: the next rows (when they "
            "do not all fit)",
        ),
        Binding(
            "m",
            "next_model",
            "Heatmap model",
            tooltip="Show the optimal-K heatmap of the next draft model in the sweep",
        ),
    ]

    index: reactive[int] = reactive(0, init=False)
    """Which plot is shown: an index into :data:`engine.analysis.plot_data.PLOTS`."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.frame: pd.DataFrame | None = None
        self.heatmap_model: str | None = None  # None: fixed, else the sweep's first model
        self._last_draw = 0.0
        self._draw_cost = 0.0  # how long the last redraw took
        self._timer: Any = None
        self._stale = False
        self.page = 0  # plot 1: which page of draft-cost panels
        self.pages = 1
        self.drawn_size: Any = None  # the canvas size the current drawing was spaced for

    def compose(self) -> ComposeResult:
        yield Static(EMPTY_TEXT, id="plots-title")
        yield Static(
            "The six plots of the original simulator appear here as soon as a sweep has "
            "results, and follow it while it runs.",
            id="plots-empty",
        )
        yield PlotCanvas(id="plots-canvas")
        yield Static("", id="plots-legend")

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
        return f"Plot {self.index + 1}/{len(PLOTS)}: {title}  ({rows} sweep rows)"

    def update_results(self, frame: pd.DataFrame) -> None:
        """Show a sweep's rows (called again with the growing frame while the sweep runs)."""
        self.frame = frame
        self.set_class(frame is None or frame.empty, "-empty")
        self.refresh_bindings()
        if self.region.area == 0:
            # Hidden (another tab is showing): draw once it is shown, not on every snapshot.
            self._stale = True
            return
        interval = max(REDRAW_INTERVAL_S, self._draw_cost / DRAW_SHARE)
        wait = interval - (time.monotonic() - self._last_draw)
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
        """Draw the current plot of the current frame now (and note how long it took)."""
        self._last_draw = started = time.monotonic()
        try:
            self._draw()
        finally:
            self._draw_cost = time.monotonic() - started

    def _draw(self) -> None:
        from spectui.plotting.terminal import draw, legend_lines

        self._stale = False
        title = self.query_one("#plots-title", Static)
        title.update(self.title_text)
        legend = self.query_one("#plots-legend", Static)
        if self.frame is None or self.frame.empty:
            legend.update("")
            return
        canvas = self.query_one("#plots-canvas", PlotCanvas)
        size = canvas.size
        self.drawn_size = size
        color = not self.app.no_color  # without colours, lines differ by marker character
        try:
            drawing = draw(
                canvas.plt,
                PLOTS[self.index].plot_id,
                self.frame,
                width=size.width or None,
                height=size.height or None,
                color=color,
                heatmap_model=self._model_shown(),
                page=self.page,
            )
        except Exception as err:  # a plotting bug must not take the app down mid-sweep
            self.log.error(f"plot {PLOTS[self.index].plot_id} failed: {err!r}")
            title.update(f"{self.title_text}\nCould not draw this plot: {err}")
            legend.update("")
        else:
            if (self.page, self.pages) != (drawing.page, drawing.pages):
                self.page, self.pages = drawing.page, drawing.pages
                self.refresh_bindings()
            width = max(10, self.size.width - 2)
            if drawing.pages > 1:  # the first note says which panels are shown
                drawing.notes[0] += " (d: next)"
            lines = legend_lines(drawing, width, color)
            legend.update(Text.from_ansi("\n".join(lines)))
        canvas.refresh()

    def on_resize(self) -> None:
        # Tick spacing, plot 1's panels and the heatmap's cell text depend on the size.
        if self.frame is not None and not self.frame.empty:
            self.call_after_refresh(self.redraw)
