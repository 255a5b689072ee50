"""The six plots drawn with plotext: on stdout (``spectui plot --terminal``) or in the app.

:func:`draw` takes a plotext module-like object: the ``plotext`` module itself, or
textual-plotext's ``PlotextPlot.plt``. Both expose a figure through ``plt.main()``, and all
drawing goes through that figure object (and its subplots), so the same code serves both.

Choices forced by the terminal's resolution:

* legends are not drawn inside the plot (plotext puts them over the curves): :func:`draw`
  returns them, and the caller prints them under the plot (:func:`legend_lines`);
* tick labels are thinned to what the plot's width and height can hold without colliding;
* plot 1 draws one panel per draft cost (a grid of subplots, two columns, shared y range);
  when the panels do not all fit, :func:`draw` shows one page of them (``page``); the 95 %
  intervals are not drawn (they are a fraction of a character cell at 500 sequences), the
  PNG has them;
* plot 4 leaves out the K* labels of the PNG (plot 6 gives K* per cell);
* plot 6 is a text grid: one cell per (quality, draft cost) with K* and its speedup as every
  view writes it (:func:`engine.analysis.formatting.cell_text`), on the app's colour scale when
  colours are on (:mod:`spectui.colours`).
"""

from __future__ import annotations

import math
import shutil
import sys
from typing import Any, TextIO

import pandas as pd

from engine.analysis.formatting import cell_text
from engine.analysis.plot_data import get_plot, optimal_k_heatmap

# The public names are re-exported: the widgets and screens import them from here.
from spectui.plotting.chart_style import (
    BREAKEVEN_COLOR,
    BREAKEVEN_NOTE,
    DEFAULT_SIZE,
    GLYPHS,
    LINE_MARKER,
    MODEL_COLORS,
    MODEL_MARKERS,
    PANEL_MIN_HEIGHT,
    PANEL_MIN_WIDTH,
    PLAIN_MARKERS,
    X_AXIS_ROWS,
    Y_AXIS_COLUMNS,
    Drawing,
    LegendEntry,
    _plot_rows,
    _Style,
    legend_lines,
    nice_ticks,
    spaced_ticks,
)
from spectui.plotting.charts import DRAWERS

__all__ = [
    "BREAKEVEN_COLOR",
    "BREAKEVEN_NOTE",
    "DEFAULT_SIZE",
    "DRAWERS",
    "GLYPHS",
    "LINE_MARKER",
    "MODEL_COLORS",
    "MODEL_MARKERS",
    "PANEL_MIN_HEIGHT",
    "PANEL_MIN_WIDTH",
    "PLAIN_MARKERS",
    "X_AXIS_ROWS",
    "Y_AXIS_COLUMNS",
    "Drawing",
    "LegendEntry",
    "draw",
    "legend_lines",
    "nice_ticks",
    "panels_per_page",
    "print_all",
    "render_text",
    "spaced_ticks",
]


def draw(
    plt: Any,
    plot_id: str,
    frame: pd.DataFrame,
    width: int | None = None,
    height: int | None = None,
    color: bool = True,
    heatmap_model: str | None = None,
    page: int | None = None,
) -> Drawing:
    """Draw one plot of a sweep frame on ``plt`` (cleared first); the caller shows it.

    ``width``/``height`` in character cells (``None``: leave the figure's size alone, as
    textual-plotext sets it from the widget; ticks are then spaced for 100x30). With
    ``color`` false, lines differ by marker character instead of colour. ``heatmap_model``
    picks plot 6's draft model (default: fixed, else the first model in the sweep).
    ``page``: plot 1 shows the panels that fit in the size, this page of them (wrapping
    around); None shows every panel. Returns the legend and notes for the caller to print
    under the plot (see :func:`legend_lines`).
    """
    spec = get_plot(plot_id)
    if plot_id == "06_optimal_k_heatmap":
        data = _heatmap_of(frame, heatmap_model)
    else:
        data = spec.data(frame)
    style = _Style(color, width or DEFAULT_SIZE[0], height or DEFAULT_SIZE[1])
    if plot_id == "01_speedup_vs_k_fixed" and not data.empty:
        data = _panel_page(data, style, page)
    if plot_id == "06_optimal_k_heatmap" and not data.empty:
        data = _heatmap_page(data, style, page)
    figure = plt.main()
    figure.clear_figure()
    figure = plt.main()
    if width is not None or height is not None:
        # An explicit size wins over the terminal's (plotext clips to it by default).
        figure._limit_size(False, False)
        figure.plotsize(width, height)
    if data.empty:
        _draw_empty(figure, spec.title)
    else:
        DRAWERS[plot_id](figure, data, style, width)
    _ticks_in_order(figure)
    plt.main()
    return style.drawing


# The last K* grid drawn, by the frame it came from (kept: its id cannot be reused) and the
# model: paging through its rows or resizing redraws without deriving it again (0.5 s for a
# regime sweep's 46,080 rows).
_HEATMAP_MEMO: list[Any] = []


def _heatmap_of(frame: pd.DataFrame, model: str | None) -> pd.DataFrame:
    key = (len(frame), tuple(frame.columns), model)
    if _HEATMAP_MEMO and _HEATMAP_MEMO[0] is frame and _HEATMAP_MEMO[1] == key:
        return _HEATMAP_MEMO[2]
    data = optimal_k_heatmap(frame, model)
    _HEATMAP_MEMO[:] = [frame, key, data]
    return data


def _ticks_in_order(figure: Any) -> None:
    """Put every axis's ticks back in order of value.

    plotext drops a tick label that would touch one already written, and writes them in the
    order of a ``set`` (so, of Python's string hashing): which colliding label survived
    changed from one run to the next. In order, the leftmost (lowest) one wins, every time.
    """
    if figure._no_plots:
        monitors = [figure.monitor]
    else:
        monitors = [figure._get_subplot(r, c).monitor for r in figure._Rows for c in figure._Cols]
    for monitor in monitors:
        for ticks, labels in ((monitor.xticks, monitor.xlabels), (monitor.yticks, monitor.ylabels)):
            for side in range(len(ticks)):
                if ticks[side] is None or labels[side] is None:
                    continue
                pairs = sorted(zip(ticks[side], labels[side], strict=True))
                ticks[side] = [tick for tick, _ in pairs]
                labels[side] = [label for _, label in pairs]


def panels_per_page(width: int, height: int) -> tuple[int, int]:
    """Plot 1's grid of panels (rows, columns) that fits ``width`` x ``height`` cells."""
    cols = 2 if width >= 2 * PANEL_MIN_WIDTH else 1
    rows = max(1, height // PANEL_MIN_HEIGHT)
    return rows, cols


def _panel_page(data: pd.DataFrame, style: _Style, page: int | None) -> pd.DataFrame:
    """Plot 1's rows for one page of panels (all of them when ``page`` is None), keeping the
    y range of every panel so that pages compare."""
    costs = sorted(data["draft_cost_us"].unique())
    rows, cols = panels_per_page(style.width, style.height)
    per_page = rows * cols
    pages = math.ceil(len(costs) / per_page)
    low = min(1.0, float(data["speedup"].min()))
    high = max(1.0, float(data["speedup"].max()))
    if page is None or pages <= 1:
        shown = data
    else:
        page %= pages
        chosen = costs[page * per_page : (page + 1) * per_page]
        shown = data[data["draft_cost_us"].isin(chosen)]
        style.drawing.page, style.drawing.pages = page, pages
        style.note(
            f"draft costs {page * per_page + 1}-{page * per_page + len(chosen)} of {len(costs)}"
        )
    shown = shown.copy()
    shown.attrs["speedup_range"] = (low, high)
    return shown


def _heatmap_page(data: pd.DataFrame, style: _Style, page: int | None) -> pd.DataFrame:
    """Plot 6's cells for the rows that fit the plot's height, one page of them (every row
    when ``page`` is None): a row per line of text, never two rows' cells on one line (a
    regime sweep has hundreds of rows), and only the cells shown are drawn. Labels too long
    to leave the cells their room lose their parameter names (a note names them), then
    their ends."""
    labels: list[str] = list(data.attrs.get("row_labels") or sorted(set(data["row_label"])))
    fit = _plot_rows(style, title=True)
    pages = math.ceil(len(labels) / fit)
    start, end = 0, len(labels)
    if page is not None and pages > 1:
        page %= pages
        start, end = page * fit, min(len(labels), (page + 1) * fit)
        style.drawing.page, style.drawing.pages = page, pages
        style.note(f"rows {start + 1}-{end} of {len(labels)}")
    shown = data[(data["row"] >= start) & (data["row"] < end)].copy()
    shown["row"] -= start
    labels = labels[start:end]
    parameters = list(data.attrs.get("row_parameters", []))
    keys = list(data.attrs.get("row_keys", []))[start:end]
    columns = len(data.attrs.get("costs") or data["column"].unique())
    cell = max((len(cell_text(c)) for _, c in shown.iterrows()), default=0) + 2
    room = max(8, style.width - 3 - columns * cell)
    if max(len(label) for label in labels) > room and len(keys) == len(labels) and parameters:
        labels = [", ".join(_value_text(v) for v in key) for key in keys]
        style.note(f"rows: {', '.join(parameters)}")
    labels = [label if len(label) <= room else label[: room - 1] + "…" for label in labels]
    shown.attrs = {**data.attrs, "row_labels": labels}
    return shown


def _value_text(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float | int) else str(value)


def _draw_empty(figure: Any, title: str) -> None:
    figure.title(title)
    figure.xlim(0, 1)
    figure.ylim(0, 1)
    figure.xticks([], [])
    figure.yticks([], [])
    figure.text("No data for this plot in the sweep yet", 0.5, 0.5, alignment="center")


def render_text(
    plot_id: str,
    frame: pd.DataFrame,
    width: int = 100,
    height: int = 30,
    color: bool = False,
) -> str:
    """One plot and its legend as text (ANSI-coloured when ``color``), drawn with the global
    plotext figure."""
    import plotext as plt

    drawing = draw(plt, plot_id, frame, width=width, height=height, color=color)
    # The terminal's own background, not plotext's default white canvas.
    plt.main().theme("clear")
    text: str = plt.main().build()
    plt.main().clear_figure()
    text = "\n".join([text, *legend_lines(drawing, width, color)])
    return text if color else plt.uncolorize(text)


def print_all(
    frame: pd.DataFrame,
    width: int | None = None,
    height: int | None = None,
    color: bool | None = None,
    file: TextIO | None = None,
) -> None:
    """Print the six plots to ``file`` (stdout), each after a line with its id and title.

    Size defaults to the terminal's width (100 columns when unknown) and 30 rows (44 for the
    panels of plot 1); colour defaults to on when ``file`` is a terminal.
    """
    from engine.analysis.plot_data import PLOTS

    out = file if file is not None else sys.stdout
    if color is None:
        color = bool(getattr(out, "isatty", lambda: False)())
    columns = width or shutil.get_terminal_size((100, 30)).columns
    for number, spec in enumerate(PLOTS, start=1):
        rows = height or (44 if spec.plot_id == "01_speedup_vs_k_fixed" else 30)
        if spec.plot_id == "06_optimal_k_heatmap" and height is None:
            # Every row of the grid on a line of its own (a regime sweep has hundreds).
            labels = optimal_k_heatmap(frame).attrs.get("row_labels", [])
            rows = max(rows, len(labels) + X_AXIS_ROWS + 1)
        print(f"Plot {number}/{len(PLOTS)} [{spec.plot_id}]: {spec.title}", file=out)
        print(render_text(spec.plot_id, frame, columns, rows, color), file=out)
        print(file=out)
