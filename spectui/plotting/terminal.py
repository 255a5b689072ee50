"""The six plots drawn with plotext: on stdout (``spectui plot --terminal``) or in the app.

:func:`draw` takes a plotext module-like object: the ``plotext`` module itself, or
textual-plotext's ``PlotextPlot.plt``. Both expose a figure through ``plt.main()``, and all
drawing goes through that figure object (and its subplots), so the same code serves both.

Choices forced by the terminal's resolution:

* plot 1 draws one panel per draft cost (a grid of subplots, two columns, shared y range);
  the acceptance legend is in the first panel only; the 95 % intervals are not drawn (they
  are a fraction of a character cell at 500 sequences), the PNG has them;
* plot 4 leaves out the K* labels of the PNG (plot 6 gives K* per cell);
* plot 6 is a text grid: one cell per (quality, draft cost) with K* and its speedup as every
  view writes it (:func:`engine.formatting.cell_text`), on the app's colour scale when
  colours are on (:mod:`spectui.colours`).
"""

from __future__ import annotations

import math
import shutil
import sys
from collections.abc import Callable
from typing import Any, TextIO

import pandas as pd

from engine.formatting import MARKS_LEGEND, SHORT_LEGEND, cell_text
from engine.plot_data import MEAN_LINE, get_plot, optimal_k_heatmap

# Anchors of matplotlib's viridis, for sequential lines (low acceptance dark, high bright).
_VIRIDIS = ((68, 1, 84), (59, 82, 139), (33, 145, 140), (94, 201, 98), (253, 231, 37))
MODEL_COLORS = {"fixed": "blue", "position_decay": "orange", "entropy_aware": "green"}
MODEL_MARKERS = {"fixed": "o", "position_decay": "s", "entropy_aware": "^"}
PLAIN_MARKERS = ("o", "x", "+", "*", "#", "@", "%", "&", "=", "$", "~", "v")
LINE_MARKER = "hd"
BREAKEVEN_COLOR = "gray"


def _sequential(n: int) -> list[tuple[int, int, int]]:
    """``n`` colours along viridis (as RGB tuples plotext understands)."""
    if n <= 1:
        return [_VIRIDIS[2]]
    colors = []
    for i in range(n):
        position = 0.9 * i / (n - 1) * (len(_VIRIDIS) - 1)
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


class _Style:
    """Markers and colours: colour with a smooth marker, or distinct characters without."""

    def __init__(self, color: bool) -> None:
        self.color = color
        self._plain = 0

    def marker(self, preferred: str | None = None) -> str:
        if self.color:
            return LINE_MARKER
        marker = PLAIN_MARKERS[self._plain % len(PLAIN_MARKERS)]
        self._plain += 1
        return marker if preferred is None else preferred


def draw(
    plt: Any,
    plot_id: str,
    frame: pd.DataFrame,
    width: int | None = None,
    height: int | None = None,
    color: bool = True,
    heatmap_model: str | None = None,
) -> None:
    """Draw one plot of a sweep frame on ``plt`` (cleared first); the caller shows it.

    ``width``/``height`` in character cells (``None``: leave the figure's size alone, as
    textual-plotext sets it from the widget). With ``color`` false, lines differ by marker
    character instead of colour. ``heatmap_model`` picks plot 6's draft model (default:
    fixed, else the first model in the sweep).
    """
    spec = get_plot(plot_id)
    if plot_id == "06_optimal_k_heatmap":
        data = optimal_k_heatmap(frame, heatmap_model)
    else:
        data = spec.data(frame)
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
        DRAWERS[plot_id](figure, data, _Style(color), width)
    plt.main()


def _draw_empty(figure: Any, title: str) -> None:
    figure.title(title)
    figure.xlim(0, 1)
    figure.ylim(0, 1)
    figure.xticks([], [])
    figure.yticks([], [])
    figure.text("No data for this plot in the sweep yet", 0.5, 0.5, alignment="center")


def _k_ticks(axes: Any, data: pd.DataFrame) -> None:
    ks = sorted(int(k) for k in data["k"].unique())
    axes.xticks(ks, [str(k) for k in ks])


def _integer_yticks(axes: Any, low: float, high: float) -> None:
    """Ticks at whole speedups (so 1.0, the break-even, is labelled) when there are few."""
    ticks = list(range(math.floor(low), math.ceil(high) + 1))
    if 2 <= len(ticks) <= 12:
        axes.yticks(ticks, [str(t) for t in ticks])


def _speedup_vs_k(figure: Any, data: pd.DataFrame, style: _Style, width: int | None) -> None:
    costs = sorted(data["draft_cost_us"].unique())
    acceptances = sorted(data["acceptance_rate"].unique())
    colors = dict(zip(acceptances, _sequential(len(acceptances)), strict=True))
    markers = {a: style.marker() for a in acceptances}
    cols = 1 if len(costs) == 1 else 2
    rows = math.ceil(len(costs) / cols)
    low = min(1.0, float(data["speedup"].min()))
    high = max(1.0, float(data["speedup"].max()))
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
                color=colors[acceptance] if style.color else None,
                label=f"a={acceptance:g}" if index == 0 else None,
            )
        axes.hline(1.0, color=BREAKEVEN_COLOR)
        axes.ylim(max(0.0, low - pad), high + pad)
        _integer_yticks(axes, max(0.0, low - pad), high + pad)
        axes.xlim(min(ks) - 0.5, max(ks) + 0.5)
        _k_ticks(axes, data)
        ratio = float(panel["cost_ratio"].iloc[0])
        axes.title(f"draft {cost:g} us (cost ratio {ratio:g})")
        # Every panel gets both labels, so that plotext gives the panels equal heights.
        axes.ylabel("speedup")
        axes.xlabel("K (draft tokens/cycle); gray: break-even 1.0")
    figure.main()


def _by_model(
    figure: Any, data: pd.DataFrame, style: _Style, value: str, ylabel: str, title: str
) -> None:
    fixed_lines = list(dict.fromkeys(data.loc[data["draft_model"] == "fixed", "line"]))
    fixed_colors = dict(zip(fixed_lines, _sequential(len(fixed_lines)), strict=True))
    for label, line in data.groupby("line", sort=False):
        model = str(line["draft_model"].iloc[0])
        color = fixed_colors.get(str(label), MODEL_COLORS.get(model)) if style.color else None
        figure.plot(
            line["k"].tolist(),
            line[value].tolist(),
            marker=style.marker(),
            color=color,
            label=str(label),
        )
    figure.ylim(0, 1)
    _k_ticks(figure, data)
    figure.xlabel("K (draft tokens per cycle)")
    figure.ylabel(ylabel)
    figure.title(title)


def _acceptance(figure: Any, data: pd.DataFrame, style: _Style, width: int | None) -> None:
    kind = "expected" if data.attrs.get("metric_source") == "_exact" else "observed"
    _by_model(
        figure,
        data,
        style,
        "acceptance_observed",
        "accepted/drafted",
        f"{kind} acceptance vs K (mean over costs; a: fixed model only)",
    )


def _waste(figure: Any, data: pd.DataFrame, style: _Style, width: int | None) -> None:
    kind = "expected" if data.attrs.get("metric_source") == "_exact" else "observed"
    _by_model(
        figure,
        data,
        style,
        "waste",
        "not kept/drafted",
        f"{kind} waste vs K (mean over costs; a: fixed model only)",
    )


def _speedup_vs_cost(figure: Any, data: pd.DataFrame, style: _Style, width: int | None) -> None:
    best = data[data["statistic"] == "best K"]
    acceptances = sorted(best["acceptance_rate"].unique())
    for acceptance, color in zip(acceptances, _sequential(len(acceptances)), strict=True):
        line = best[best["acceptance_rate"] == acceptance]
        figure.plot(
            line["cost_ratio"].tolist(),
            line["speedup"].tolist(),
            marker=style.marker(),
            color=color if style.color else None,
            label=f"a={acceptance:g}, best K",
        )
    mean = data[data["statistic"] == MEAN_LINE]
    if not mean.empty:
        figure.plot(
            mean["cost_ratio"].tolist(),
            mean["speedup"].tolist(),
            marker=style.marker("M"),
            color="red" if style.color else None,
            label="mean over K and a (original's table)",
        )
    figure.hline(1.0, color=BREAKEVEN_COLOR)
    _integer_yticks(figure, min(1.0, float(data["speedup"].min())), float(data["speedup"].max()))
    ratios = sorted(data["cost_ratio"].unique())
    figure.xticks(ratios, [f"{r:g}" for r in ratios])
    figure.xlabel("cost ratio (draft / verify cost); gray: break-even 1.0")
    figure.ylabel("speedup")
    figure.title("speedup vs cost ratio, fixed model, at the best K per cost ratio")


def _pareto(figure: Any, data: pd.DataFrame, style: _Style, width: int | None) -> None:
    for model, points in data.groupby("draft_model", sort=False):
        figure.scatter(
            points["compute_overhead"].tolist(),
            points["speedup"].tolist(),
            marker=MODEL_MARKERS.get(str(model), "o") if not style.color else "dot",
            color=MODEL_COLORS.get(str(model)) if style.color else None,
            label=str(model),
        )
    front = data[data["on_front"]].sort_values("front_order")
    figure.plot(
        front["compute_overhead"].tolist(),
        front["speedup"].tolist(),
        marker=style.marker("F"),
        color="red" if style.color else None,
        label="Pareto front",
    )
    figure.hline(1.0, color=BREAKEVEN_COLOR)
    log = bool((data["compute_overhead"] > 0).all())
    if log:
        figure.xscale("log")
    figure.xlabel("compute overhead per emitted token" + (" (log scale)" if log else ""))
    figure.ylabel("speedup")
    figure.title("Pareto front: speedup vs compute overhead (all configurations)")


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
    ticks = [f"{c:g}us r={ratios.get(i, math.nan):g}" for i, c in enumerate(costs)]
    if max(len(t) for t in ticks) >= cell_width - 1:  # plotext drops ticks that collide
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
    legend = f"draft cost · {SHORT_LEGEND}"
    if len(legend) > (width or 100) - 2:  # plotext drops a label that does not fit
        legend = f"draft cost · {MARKS_LEGEND}"
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
    """One plot as text (ANSI-coloured when ``color``), drawn with the global plotext figure."""
    import plotext as plt

    draw(plt, plot_id, frame, width=width, height=height, color=color)
    # The terminal's own background, not plotext's default white canvas.
    plt.main().theme("clear")
    text: str = plt.main().build()
    plt.main().clear_figure()
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
    from engine.plot_data import PLOTS

    out = file if file is not None else sys.stdout
    if color is None:
        color = bool(getattr(out, "isatty", lambda: False)())
    columns = width or shutil.get_terminal_size((100, 30)).columns
    for number, spec in enumerate(PLOTS, start=1):
        rows = height or (44 if spec.plot_id == "01_speedup_vs_k_fixed" else 30)
        print(f"Plot {number}/{len(PLOTS)} [{spec.plot_id}]: {spec.title}", file=out)
        print(render_text(spec.plot_id, frame, columns, rows, color), file=out)
        print(file=out)
