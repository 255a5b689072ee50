"""The drawers of the six terminal plots, one function per plot id (:data:`DRAWERS`).

Each takes the plotext figure, the plot's data, the :class:`~spectui.plotting.chart_style._Style`
collecting its legend and notes, and the width asked for; :func:`spectui.plotting.terminal.draw`
picks one and prepares the data and the figure.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pandas as pd

from engine.analysis.formatting import MARKS_LEGEND, SHORT_LEGEND, cell_text
from engine.analysis.plot_data import MEAN_LINE, rate_models
from spectui.plotting.chart_style import (
    BREAKEVEN_COLOR,
    BREAKEVEN_NOTE,
    MODEL_COLORS,
    MODEL_MARKERS,
    _plot_columns,
    _plot_rows,
    _sequential,
    _Style,
    _yticks,
    spaced_ticks,
)


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
