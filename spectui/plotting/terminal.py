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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

import pandas as pd

from engine.analysis.formatting import MARKS_LEGEND, SHORT_LEGEND, cell_text
from engine.analysis.plot_data import MEAN_LINE, get_plot, optimal_k_heatmap, rate_models

# Anchors of matplotlib's viridis, for sequential lines (low acceptance dark, high bright).
_VIRIDIS = ((68, 1, 84), (59, 82, 139), (33, 145, 140), (94, 201, 98), (253, 231, 37))
# The stretch of it the lines take: its darkest quarter (purple) is near-black on a dark
# terminal, 1.1:1 on the app's plot (tests/test_colours.py).
_VIRIDIS_SPAN = (0.25, 0.9)
MODEL_COLORS = {"fixed": "blue", "position_decay": "orange", "entropy_aware": "green"}
MODEL_MARKERS = {"fixed": "o", "position_decay": "s", "entropy_aware": "^"}
PLAIN_MARKERS = ("o", "x", "+", "*", "#", "@", "%", "&", "=", "$", "~", "v")
LINE_MARKER = "hd"
BREAKEVEN_COLOR = "gray"
BREAKEVEN_NOTE = "line at 1: break-even"
DEFAULT_SIZE = (100, 30)  # width, height when the caller gives none
# Plot 1: a panel needs about this many columns and rows to stay readable.
PANEL_MIN_WIDTH = 25
PANEL_MIN_HEIGHT = 12
# What plotext takes around the plot area: y tick labels and frame; ticks, label and frame.
Y_AXIS_COLUMNS = 6
X_AXIS_ROWS = 5


def _sequential(n: int) -> list[tuple[int, int, int]]:
    """``n`` colours along viridis (as RGB tuples plotext understands)."""
    if n <= 1:
        return [_VIRIDIS[2]]
    colors = []
    for i in range(n):
        start, end = _VIRIDIS_SPAN
        position = (start + (end - start) * i / (n - 1)) * (len(_VIRIDIS) - 1)
        low = int(position)
        high = min(low + 1, len(_VIRIDIS) - 1)
        frac = position - low
        (r0, g0, b0), (r1, g1, b1) = _VIRIDIS[low], _VIRIDIS[high]
        colors.append(
            (
                round(r0 + (r1 - r0) * frac),
                round(g0 + (g1 - g0) * frac),
                round(b0 + (b1 - b0) * frac),
            )
        )
    return colors


@dataclass(frozen=True)
class LegendEntry:
    """One line of a legend: ``glyph`` as drawn in the plot, in ``color`` (plotext's name or
    RGB tuple; None: uncoloured), then ``label``."""

    label: str
    glyph: str
    color: Any = None


@dataclass
class Drawing:
    """What :func:`draw` drew besides the plot itself: the legend, notes (what a line or a
    mark means) and, for plot 1, which page of panels of how many is shown."""

    legend: list[LegendEntry] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    page: int = 0
    pages: int = 1


# How a plotext marker looks in a legend.
GLYPHS = {LINE_MARKER: "━━", "dot": "•", "-": "──", "sd": "█"}


class _Style:
    """Markers and colours: colour with a smooth marker, or distinct characters without.

    Also collects the legend and the notes, and knows the plot's size in character cells.
    """

    def __init__(self, color: bool, width: int, height: int) -> None:
        self.color = color
        self.width = width
        self.height = height
        self.drawing = Drawing()
        self._plain = 0

    def marker(self, preferred: str | None = None) -> str:
        if self.color:
            return LINE_MARKER
        marker = PLAIN_MARKERS[self._plain % len(PLAIN_MARKERS)]
        self._plain += 1
        return marker if preferred is None else preferred

    def paint(self, color: Any) -> Any:
        """``color`` when colours are on, else None (plotext's default)."""
        return color if self.color else None

    def legend(self, label: str, marker: str, color: Any = None) -> None:
        glyph = GLYPHS.get(marker, marker)
        self.drawing.legend.append(LegendEntry(label, glyph, self.paint(color)))

    def note(self, text: str) -> None:
        self.drawing.notes.append(text)


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


def legend_lines(drawing: Drawing, width: int, color: bool = False) -> list[str]:
    """The legend (entries side by side, wrapped at ``width``) and then the notes, as lines;
    ANSI-coloured when ``color``."""
    import plotext

    lines: list[str] = []
    line, used = "", 0
    for entry in drawing.legend:
        glyph = plotext.colorize(entry.glyph, entry.color) if color and entry.color else entry.glyph
        size = len(entry.glyph) + 1 + len(entry.label)
        if used and used + 2 + size > width:
            lines.append(line)
            line, used = "", 0
        line += ("  " if used else "") + f"{glyph} {entry.label}"
        used += (2 if used else 0) + size
    if used:
        lines.append(line)
    if drawing.notes:
        lines.append(" · ".join(drawing.notes))
    return lines


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


def nice_ticks(low: float, high: float, rows: int) -> list[float]:
    """Ticks at round values from ``low`` to ``high``, about one per two rows of plot."""
    most = max(2, rows // 2 + 1)
    span = high - low if high > low else 1.0
    for step in (0.05, 0.1, 0.2, 0.25, 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000):
        first = math.ceil(low / step - 1e-9)
        last = math.floor(high / step + 1e-9)
        if last - first + 1 <= most:
            return [round(i * step, 10) for i in range(first, last + 1)]
    return [low, high] if span else [low]


def _yticks(axes: Any, low: float, high: float, rows: int) -> None:
    """Round y ticks that do not collide in a plot area ``rows`` high."""
    ticks = nice_ticks(low, high, rows)
    axes.yticks(ticks, [f"{t:g}" for t in ticks])


def spaced_ticks(
    values: Sequence[float], labels: Sequence[str], columns: int, log: bool = False
) -> tuple[list[float], list[str]]:
    """The ticks (from the left) whose labels do not touch in a plot area ``columns`` wide,
    on a linear or log scale; the last value is kept in place of its neighbour."""
    if not values:
        return [], []
    where = [math.log10(v) for v in values] if log else list(values)
    low, high = min(where), max(where)
    scale = (columns - 1) / (high - low) if high > low else 0.0
    centres = [(w - low) * scale for w in where]
    kept: list[int] = []
    for i in range(len(values)):
        if kept and _overlap(centres, labels, kept[-1], i):
            if i == len(values) - 1 and len(kept) > 1:
                kept[-1] = i  # the range's end matters more than its neighbour
                if _overlap(centres, labels, kept[-2], i):
                    kept.pop()
            continue
        kept.append(i)
    return [values[i] for i in kept], [labels[i] for i in kept]


def _overlap(centres: list[float], labels: Sequence[str], a: int, b: int) -> bool:
    return centres[b] - centres[a] < (len(labels[a]) + len(labels[b])) / 2 + 1


def _plot_columns(style: _Style, cols: int = 1) -> int:
    return max(10, style.width // cols - Y_AXIS_COLUMNS - 1)


def _plot_rows(style: _Style, rows: int = 1, title: bool = False) -> int:
    return max(2, style.height // rows - X_AXIS_ROWS - (1 if title else 0))


def _draw_empty(figure: Any, title: str) -> None:
    figure.title(title)
    figure.xlim(0, 1)
    figure.ylim(0, 1)
    figure.xticks([], [])
    figure.yticks([], [])
    figure.text("No data for this plot in the sweep yet", 0.5, 0.5, alignment="center")


def _k_ticks(axes: Any, data: pd.DataFrame, columns: int) -> None:
    ks = sorted(int(k) for k in data["k"].unique())
    axes.xticks(*spaced_ticks(ks, [str(k) for k in ks], columns))


def _speedup_vs_k(figure: Any, data: pd.DataFrame, style: _Style, width: int | None) -> None:
    costs = sorted(data["draft_cost_us"].unique())
    acceptances = sorted(data["acceptance_rate"].unique())
    colors = dict(zip(acceptances, _sequential(len(acceptances)), strict=True))
    markers = {a: style.marker() for a in acceptances}
    cols = 1 if len(costs) == 1 else 2
    rows = math.ceil(len(costs) / cols)
    low, high = data.attrs.get("speedup_range") or (
        min(1.0, float(data["speedup"].min())),
        max(1.0, float(data["speedup"].max())),
    )
    pad = 0.05 * (high - low or 1.0)
    ks = sorted(data["k"].unique())
    figure.subplots(rows, cols)
    for index, cost in enumerate(costs):
        axes = figure.subplot(index // cols + 1, index % cols + 1)
        panel = data[data["draft_cost_us"] == cost]
        for acceptance in acceptances:
            line = panel[panel["acceptance_rate"] == acceptance]
            if line.empty:
                continue
            axes.plot(
                line["k"].tolist(),
                line["speedup"].tolist(),
                marker=markers[acceptance],
                color=style.paint(colors[acceptance]),
            )
        axes.hline(1.0, color=BREAKEVEN_COLOR)
        axes.ylim(max(0.0, low - pad), high + pad)
        _yticks(axes, max(0.0, low - pad), high + pad, _plot_rows(style, rows, title=True))
        axes.xlim(min(ks) - 0.5, max(ks) + 0.5)
        _k_ticks(axes, data, _plot_columns(style, cols))
        ratio = float(panel["cost_ratio"].iloc[0])
        axes.title(f"draft {cost:g} us (ratio {ratio:.3g})")
        # Every panel gets both labels, so that plotext gives the panels equal heights.
        axes.ylabel("speedup")
        axes.xlabel("K")
    for acceptance in acceptances:
        style.legend(f"a={acceptance:g}", markers[acceptance], colors[acceptance])
    style.note(BREAKEVEN_NOTE)
    figure.main()


def _by_model(figure: Any, data: pd.DataFrame, style: _Style, value: str, ylabel: str) -> None:
    by_rate = data["draft_model"].isin(rate_models())  # a line per acceptance rate
    fixed_lines = list(dict.fromkeys(data.loc[by_rate, "line"]))
    fixed_colors = dict(zip(fixed_lines, _sequential(len(fixed_lines)), strict=True))
    for label, line in data.groupby("line", sort=False):
        model = str(line["draft_model"].iloc[0])
        color = fixed_colors.get(str(label), MODEL_COLORS.get(model))
        marker = style.marker()
        figure.plot(
            line["k"].tolist(),
            line[value].tolist(),
            marker=marker,
            color=style.paint(color),
        )
        # The fixed model's lines are told apart by acceptance alone: "a=0.8".
        style.legend(str(label).removeprefix("fixed "), marker, color)
    figure.ylim(0, 1)
    _yticks(figure, 0.0, 1.0, _plot_rows(style))
    _k_ticks(figure, data, _plot_columns(style))
    figure.xlabel("K (draft tokens per cycle)")
    figure.ylabel(ylabel)
    kind = "exact (expected)" if data.attrs.get("metric_source") == "_exact" else "observed"
    style.note(f"{kind}, mean over draft costs")
    if any(str(label).startswith("fixed a=") for label in fixed_lines):
        style.note("a=: fixed model")


def _acceptance(figure: Any, data: pd.DataFrame, style: _Style, width: int | None) -> None:
    _by_model(figure, data, style, "acceptance_observed", "accepted/drafted")


def _waste(figure: Any, data: pd.DataFrame, style: _Style, width: int | None) -> None:
    _by_model(figure, data, style, "waste", "not kept/drafted")


def _speedup_vs_cost(figure: Any, data: pd.DataFrame, style: _Style, width: int | None) -> None:
    best = data[data["statistic"] == "best K"]
    acceptances = sorted(best["acceptance_rate"].unique())
    for acceptance, color in zip(acceptances, _sequential(len(acceptances)), strict=True):
        line = best[best["acceptance_rate"] == acceptance]
        marker = style.marker()
        figure.plot(
            line["cost_ratio"].tolist(),
            line["speedup"].tolist(),
            marker=marker,
            color=style.paint(color),
        )
        style.legend(f"a={acceptance:g}", marker, color)
    mean = data[data["statistic"] == MEAN_LINE]
    if not mean.empty:
        marker = style.marker("M")
        figure.plot(
            mean["cost_ratio"].tolist(),
            mean["speedup"].tolist(),
            marker=marker,
            color=style.paint("red"),
        )
        style.legend("mean over K and a (original)", marker, "red")
    figure.hline(1.0, color=BREAKEVEN_COLOR)
    low = min(1.0, float(data["speedup"].min()))
    high = max(1.0, float(data["speedup"].max()))
    figure.ylim(low, high)
    _yticks(figure, low, high, _plot_rows(style))
    ratios = sorted(data["cost_ratio"].unique())
    figure.xticks(*spaced_ticks(ratios, [f"{r:g}" for r in ratios], _plot_columns(style)))
    figure.xlabel("cost ratio (draft/verify)")
    figure.ylabel("speedup")
    style.note("fixed model at its best K")
    style.note(BREAKEVEN_NOTE)


def _pareto(figure: Any, data: pd.DataFrame, style: _Style, width: int | None) -> None:
    # A log axis when every overhead is positive, drawn as log10 values on a linear axis:
    # plotext's own log scale takes the log of its data in place, so the second build of the
    # same figure (any re-render of the widget) took the log of a log and raised.
    log = bool((data["compute_overhead"] > 0).all())

    def x_of(values: pd.Series) -> list[float]:
        return [math.log10(v) for v in values] if log else values.tolist()

    for model, points in data.groupby("draft_model", sort=False):
        marker = MODEL_MARKERS.get(str(model), "o") if not style.color else "dot"
        color = MODEL_COLORS.get(str(model))
        figure.scatter(
            x_of(points["compute_overhead"]),
            points["speedup"].tolist(),
            marker=marker,
            color=style.paint(color),
        )
        style.legend(str(model), marker, color)
    front = data[data["on_front"]].sort_values("front_order")
    marker = style.marker("F")
    figure.plot(
        x_of(front["compute_overhead"]),
        front["speedup"].tolist(),
        marker=marker,
        color=style.paint("red"),
    )
    style.legend("Pareto front", marker, "red")
    figure.hline(1.0, color=BREAKEVEN_COLOR)
    low = min(1.0, float(data["speedup"].min()))
    high = max(1.0, float(data["speedup"].max()))
    figure.ylim(low, high)
    _yticks(figure, low, high, _plot_rows(style))
    if log:
        _log_xticks(figure, data["compute_overhead"], _plot_columns(style))
    figure.xlabel("compute overhead/token" + (" (log)" if log else ""))
    figure.ylabel("speedup")
    style.note(BREAKEVEN_NOTE)


def _log_xticks(figure: Any, values: pd.Series, columns: int) -> None:
    """Ticks of a log10 axis: at 1 (or 1, 2, 5) times powers of ten, labelled in the data's
    units, as many as fit; the ends of the range when none falls inside it."""
    low, high = float(values.min()), float(values.max())
    exponents = range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1)
    for mantissas in ((1,), (1, 2, 5)):
        ticks = [m * 10.0**e for e in exponents for m in mantissas]
        ticks = [t for t in ticks if low <= t <= high]
        if len(ticks) >= 3:
            break
    if len(ticks) < 2:
        ticks = sorted({low, high})
    where = [math.log10(t) for t in ticks]
    kept, labels = spaced_ticks(where, [f"{t:.3g}" for t in ticks], columns)
    figure.xticks(kept, labels)


def _heatmap(figure: Any, data: pd.DataFrame, style: _Style, width: int | None) -> None:
    from rich.color import Color

    from spectui.colours import heat_style

    row_labels: list[str] = data.attrs.get("row_labels") or sorted(set(data["row_label"]))
    costs: list[float] = data.attrs.get("costs") or sorted(data["draft_cost_us"].unique())
    n_rows, n_cols = len(row_labels), len(costs)
    label_width = max(len(label) for label in row_labels) + 2
    cell_width = ((width or 100) - label_width) // max(n_cols, 1)
    figure.xlim(-0.5, n_cols - 0.5)
    figure.ylim(-0.5, n_rows - 0.5)
    ratios = data.groupby("column")["cost_ratio"].first()
    linear = data.attrs.get("column_title", "draft cost (us)") == "draft cost (us)"
    ticks = [f"{c:g}us r={ratios.get(i, math.nan):g}" for i, c in enumerate(costs)]
    if not linear:  # the draft cost is inert: the column is the cost model
        ticks = list(data.attrs.get("column_labels", ticks))
    elif max(len(t) for t in ticks) >= cell_width - 1:  # plotext drops ticks that collide
        ticks = [f"{c:g}us" for c in costs]
    figure.xticks(list(range(n_cols)), ticks)
    # Row 0 (lowest quality) at the top, as in the PNG and the original's table.
    figure.yticks([n_rows - 1 - i for i in range(n_rows)], row_labels)
    for _, cell in data.iterrows():
        text = cell_text(cell)
        if cell["tie"] and len(text) + len(str(cell["tied_ks"])) + 3 <= cell_width - 1:
            text += f" ({cell['tied_ks']})"
        colours: dict[str, Any] = {}
        if style.color:  # the app's scale: text colour chosen by the background
            cell_style = heat_style(float(cell["speedup_opt"]))
            for key, colour in (("color", cell_style.color), ("background", cell_style.bgcolor)):
                if colour is not None:
                    colours[key] = tuple(Color.parse(colour.name).get_truecolor())
        figure.text(
            f" {text} " if colours else text,
            int(cell["column"]),
            n_rows - 1 - int(cell["row"]),
            alignment="center",
            **colours,
        )
    model = data.attrs.get("model", "fixed")
    held = "".join(f", {k}={v:g} only" for k, v in data.attrs.get("held", {}).items())
    figure.title(f"K* and its speedup, {model} model{held}")
    axis = "draft cost" if linear else "cost model"
    legend = f"{axis} · {SHORT_LEGEND}"
    if len(legend) > (width or 100) - 2:  # plotext drops a label that does not fit
        legend = f"{axis} · {MARKS_LEGEND}"
    figure.xlabel(legend)


DRAWERS: dict[str, Callable[[Any, pd.DataFrame, _Style, int | None], None]] = {
    "01_speedup_vs_k_fixed": _speedup_vs_k,
    "02_acceptance_vs_k_by_model": _acceptance,
    "03_waste_vs_k": _waste,
    "04_speedup_vs_cost_ratio": _speedup_vs_cost,
    "05_pareto_speedup_vs_overhead": _pareto,
    "06_optimal_k_heatmap": _heatmap,
}


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
