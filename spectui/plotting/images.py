"""The six plots as PNG files, drawn with matplotlib (the optional ``images`` extra).

matplotlib is imported inside the functions, never at module import, and only its
object-oriented API is used (``Figure`` with the Agg canvas): no pyplot global state, no
backend switching, safe to call from a worker thread.
"""

from __future__ import annotations

import itertools
import math
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from engine.analysis.formatting import HEATMAP_LEGEND, PARTIAL_LEGEND, PARTIAL_MARK, cell_text
from engine.analysis.plot_data import MEAN_LINE, PLOTS, PlotSpec
from engine.core.files import atomic_open
from spectui.errors import UsageError

FIGSIZE = (10.0, 6.0)  # inches; at DPI this is 1100 x 660 pixels, legible at 100 % zoom
FIGSIZE_PANELS = (12.0, 8.0)
DPI = 110
MODEL_COLORMAPS = {"fixed": "Blues", "position_decay": "Oranges", "entropy_aware": "Greens"}
MODEL_COLORS = {"fixed": "tab:blue", "position_decay": "tab:orange", "entropy_aware": "tab:green"}
MODEL_MARKERS = {"fixed": "o", "position_decay": "s", "entropy_aware": "^"}
BREAKEVEN_STYLE = {"color": "0.35", "linestyle": "--", "linewidth": 1.2}
SPEEDUP_LABEL = {
    "speedup": "speedup over autoregressive decoding (Monte Carlo, 95 % CI)",
    "speedup_exact": "speedup over autoregressive decoding (exact, finite length)",
}


class MatplotlibMissingError(UsageError):
    """matplotlib, needed for PNG files, is not installed (the CLI reports it in one line)."""


def _figure_class() -> Any:
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise MatplotlibMissingError(
            "matplotlib is not installed: pip install 'spectui[images]'"
        ) from None
    return Figure


def write_pngs(frame: pd.DataFrame, out_dir: Path) -> list[Path]:
    """Write the six plots of a sweep frame as ``<plot id>.png`` into ``out_dir``.

    Creates ``out_dir`` if needed; each file is replaced atomically (a reader never sees a
    half-written PNG). A plot whose data the sweep lacks (say, no fixed-model rows) is still
    written, with a message saying what is missing. Returns the paths in plot order.
    Raises :class:`MatplotlibMissingError` when matplotlib is not installed.
    """
    figure_class = _figure_class()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for spec in PLOTS:
        figure = render(figure_class, spec, frame)
        path = out_dir / f"{spec.plot_id}.png"
        _save_atomic(figure, path)
        paths.append(path)
    return paths


def render(figure_class: Any, spec: PlotSpec, frame: pd.DataFrame) -> Any:
    """One plot as a matplotlib Figure (not saved)."""
    data = spec.data(frame)
    if data.empty:
        figure = figure_class(figsize=FIGSIZE, dpi=DPI, layout="constrained")
        axes = figure.add_subplot()
        axes.set_axis_off()
        axes.text(0.5, 0.5, _missing_message(spec.plot_id), ha="center", va="center", fontsize=13)
        figure.suptitle(spec.title, fontsize=14)
        return figure
    return DRAWERS[spec.plot_id](figure_class, spec, data)


def _missing_message(plot_id: str) -> str:
    if plot_id in ("01_speedup_vs_k_fixed", "04_speedup_vs_cost_ratio"):
        return "No fixed-model configurations in this sweep."
    return "No configurations in this sweep."


def _save_atomic(figure: Any, path: Path) -> None:
    with atomic_open(path, "wb") as handle:
        figure.savefig(handle, format="png", dpi=DPI)


def _notes(data: pd.DataFrame) -> str:
    return "\n".join(data.attrs.get("notes", []))


def _caption(figure: Any, text: str) -> None:
    """A note under the axes; the constrained layout leaves room for its lines."""
    if not text:
        return
    lines = text.count("\n") + 1
    height_px = figure.get_figheight() * DPI
    bottom = (lines * 13 + 8) / height_px
    figure.get_layout_engine().set(rect=(0, bottom, 1, 1 - bottom))
    figure.text(0.01, 0.008, text, ha="left", va="bottom", fontsize=9, color="0.25")


def _sequential_colors(n: int, cmap_name: str = "viridis", low: float = 0.0, high: float = 0.9):
    from matplotlib import colormaps

    cmap = colormaps[cmap_name]
    if n == 1:
        return [cmap((low + high) / 2)]
    return [cmap(low + (high - low) * i / (n - 1)) for i in range(n)]


def _speedup_vs_k(figure_class: Any, spec: PlotSpec, data: pd.DataFrame) -> Any:
    costs = sorted(data["draft_cost_us"].unique())
    acceptances = sorted(data["acceptance_rate"].unique())
    colors = dict(zip(acceptances, _sequential_colors(len(acceptances)), strict=True))
    cols = 1 if len(costs) == 1 else 2
    rows = math.ceil(len(costs) / cols)
    size = FIGSIZE if len(costs) == 1 else FIGSIZE_PANELS
    figure = figure_class(figsize=size, dpi=DPI, layout="constrained")
    grid = figure.subplots(rows, cols, sharex=True, sharey=True, squeeze=False)
    ks = sorted(data["k"].unique())
    monte_carlo = data.attrs.get("speedup_column") == "speedup"
    for index, cost in enumerate(costs):
        axes = grid[index // cols][index % cols]
        panel = data[data["draft_cost_us"] == cost]
        for acceptance in acceptances:
            line = panel[panel["acceptance_rate"] == acceptance]
            if line.empty:
                continue
            color = colors[acceptance]
            axes.errorbar(
                line["k"],
                line["speedup"],
                yerr=line["speedup_ci95"] if monte_carlo else None,
                color=color,
                marker="o",
                markersize=4,
                capsize=2,
                label=f"acceptance {acceptance:g}",
            )
            if monte_carlo:
                axes.plot(line["k"], line["speedup_exact"], color=color, linestyle=":", lw=1.2)
        axes.axhline(1.0, **BREAKEVEN_STYLE)
        ratio = panel["cost_ratio"].iloc[0]
        axes.set_title(f"draft cost {cost:g} us (cost ratio {ratio:g})", fontsize=11)
        axes.set_xticks(ks)
        axes.grid(alpha=0.3)
        if index // cols == rows - 1 or len(costs) - index <= cols:
            axes.set_xlabel("K (draft tokens per cycle)")
            axes.tick_params(labelbottom=True)
        if index % cols == 0:
            axes.set_ylabel("speedup (x)")
    for index in range(len(costs), rows * cols):
        grid[index // cols][index % cols].set_axis_off()
    handles, labels = grid[0][0].get_legend_handles_labels()
    from matplotlib.lines import Line2D

    handles.append(Line2D([], [], **BREAKEVEN_STYLE))
    labels.append("break-even (1.0)")
    if monte_carlo:
        handles.append(Line2D([], [], color="0.2", linestyle=":"))
        labels.append("exact (finite length)")
    figure.legend(handles, labels, loc="outside right center", fontsize=9)
    kind = "Monte Carlo with 95 % CI" if monte_carlo else "exact"
    figure.suptitle(f"{spec.title}\n(speedup: {kind})", fontsize=13)
    _caption(figure, _notes(data))
    return figure


def _by_model_lines(
    figure_class: Any, spec: PlotSpec, data: pd.DataFrame, value: str, ylabel: str
) -> Any:
    figure = figure_class(figsize=FIGSIZE, dpi=DPI, layout="constrained")
    axes = figure.add_subplot()
    for model, model_rows in data.groupby("draft_model", sort=False):
        lines = list(dict.fromkeys(model_rows["line"]))
        cmap = MODEL_COLORMAPS.get(str(model), "Greys")
        colors = (
            [MODEL_COLORS.get(str(model), "0.3")]
            if len(lines) == 1
            else _sequential_colors(len(lines), cmap, 0.4, 1.0)
        )
        for label, color in zip(lines, colors, strict=True):
            line = model_rows[model_rows["line"] == label]
            axes.plot(
                line["k"],
                line[value],
                color=color,
                marker=MODEL_MARKERS.get(str(model), "o"),
                markersize=5,
                lw=2.2 if len(lines) == 1 else 1.4,
                label=label,
            )
    axes.set_xticks(sorted(data["k"].unique()))
    axes.set_xlabel("K (draft tokens per cycle)")
    axes.set_ylabel(ylabel)
    axes.set_ylim(0, 1)
    axes.grid(alpha=0.3)
    axes.legend(loc="best", fontsize=8)
    source = data.attrs.get("metric_source", value)
    kind = "expected, infinite sequence (exact-only sweep)" if source == "_exact" else "observed"
    figure.suptitle(f"{spec.title}\n({kind}; a = acceptance_rate, read by the fixed model only)")
    _caption(figure, _notes(data))
    return figure


def _acceptance(figure_class: Any, spec: PlotSpec, data: pd.DataFrame) -> Any:
    return _by_model_lines(
        figure_class,
        spec,
        data,
        "acceptance_observed",
        "acceptance (accepted / drafted tokens)",
    )


def _waste(figure_class: Any, spec: PlotSpec, data: pd.DataFrame) -> Any:
    return _by_model_lines(
        figure_class, spec, data, "waste", "waste (drafted tokens not kept / drafted tokens)"
    )


def _speedup_vs_cost(figure_class: Any, spec: PlotSpec, data: pd.DataFrame) -> Any:
    figure = figure_class(figsize=FIGSIZE, dpi=DPI, layout="constrained")
    axes = figure.add_subplot()
    best = data[data["statistic"] == "best K"]
    acceptances = sorted(best["acceptance_rate"].unique())
    colors = _sequential_colors(len(acceptances))
    monte_carlo = data.attrs.get("speedup_column") == "speedup"
    labels: list[tuple[float, float, str, Any]] = []
    for acceptance, color in zip(acceptances, colors, strict=True):
        line = best[best["acceptance_rate"] == acceptance]
        axes.errorbar(
            line["cost_ratio"],
            line["speedup"],
            yerr=line["speedup_ci95"] if monte_carlo else None,
            color=color,
            marker="o",
            capsize=2,
            label=f"acceptance {acceptance:g} (best K)",
        )
        labels.extend(
            (point["cost_ratio"], point["speedup"], f"K*={int(point['k_best'])}", color)
            for _, point in line.iterrows()
        )
    mean = data[data["statistic"] == MEAN_LINE]
    if not mean.empty:
        axes.plot(
            mean["cost_ratio"],
            mean["speedup"],
            color="black",
            linestyle="--",
            marker="D",
            lw=2,
            label="mean over all K and acceptances (the original's table)",
        )
    axes.axhline(1.0, label="break-even (1.0)", **BREAKEVEN_STYLE)
    _dodged_labels(figure, axes, labels)
    ratios = sorted(data["cost_ratio"].unique())
    axes.set_xticks(ratios, [f"{r:g}" for r in ratios])
    axes.set_xlabel("cost ratio (draft cost / verify cost per forward pass)")
    axes.set_ylabel(SPEEDUP_LABEL.get(data.attrs.get("speedup_column", ""), "speedup"))
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8, loc="upper right")
    figure.suptitle(spec.title)
    _caption(figure, _notes(data))
    return figure


def _dodged_labels(figure: Any, axes: Any, labels: list[tuple[float, float, str, Any]]) -> None:
    """Write each label right of its point, nudged up so labels at one x do not overlap."""
    from matplotlib.transforms import offset_copy

    if not labels:
        return
    low, high = axes.get_ylim()
    gap = 0.032 * (high - low)
    shifted = offset_copy(axes.transData, figure, x=6, y=0, units="points")
    for x in sorted({x for x, *_ in labels}):
        previous = -math.inf
        for _, y, text, color in sorted(
            (item for item in labels if item[0] == x), key=lambda i: i[1]
        ):
            y_text = max(y, previous + gap)
            axes.text(x, y_text, text, transform=shifted, fontsize=7.5, color=color, va="center")
            previous = y_text


def _pareto(figure_class: Any, spec: PlotSpec, data: pd.DataFrame) -> Any:
    figure = figure_class(figsize=FIGSIZE, dpi=DPI, layout="constrained")
    axes = figure.add_subplot()
    for model, points in data.groupby("draft_model", sort=False):
        axes.scatter(
            points["compute_overhead"],
            points["speedup"],
            s=18,
            alpha=0.55,
            color=MODEL_COLORS.get(str(model), "0.4"),
            marker=MODEL_MARKERS.get(str(model), "o"),
            label=f"{model} ({len(points)} configurations)",
        )
    front = data[data["on_front"]].sort_values("front_order")
    axes.plot(
        front["compute_overhead"],
        front["speedup"],
        color="crimson",
        lw=2,
        marker="o",
        markersize=4,
        label=f"Pareto front ({len(front)} configurations)",
    )
    for _, point in front.iterrows():
        axes.annotate(
            f"K={int(point['k'])}",
            (point["compute_overhead"], point["speedup"]),
            textcoords="offset points",
            xytext=(-6, 4),
            ha="right",
            fontsize=7.5,
            color="crimson",
        )
    axes.axhline(1.0, label="break-even (1.0)", **BREAKEVEN_STYLE)
    axes.set_xlabel(
        "compute overhead: (target positions + cost ratio x drafted tokens) / emitted token - 1"
    )
    axes.set_ylabel(SPEEDUP_LABEL.get(data.attrs.get("speedup_column", ""), "speedup"))
    axes.grid(alpha=0.3)
    if (data["compute_overhead"] > 0).all():
        from matplotlib.ticker import FuncFormatter

        axes.set_xscale("log")
        axes.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
        axes.set_xlabel(axes.get_xlabel() + " (log scale)")
    axes.legend(fontsize=9, loc="upper right")
    figure.suptitle(f"{spec.title}\n(front: no other configuration is both faster and cheaper)")
    _caption(figure, _notes(data))
    return figure


def _heatmap(figure_class: Any, spec: PlotSpec, data: pd.DataFrame) -> Any:
    import numpy as np
    from matplotlib import colormaps
    from matplotlib.colors import BoundaryNorm
    from matplotlib.patches import Rectangle

    row_labels = data.attrs.get("row_labels") or sorted(set(data["row_label"]))
    costs = data.attrs.get("costs") or sorted(data["draft_cost_us"].unique())
    grid = np.full((len(row_labels), len(costs)), np.nan)
    for _, cell in data.iterrows():
        grid[int(cell["row"]), int(cell["column"])] = cell["k_opt"]
    ks = sorted(int(k) for k in data["k_opt"].unique())
    bounds = [ks[0] - 0.5, *[(a + b) / 2 for a, b in itertools.pairwise(ks)], ks[-1] + 0.5]
    cmap = colormaps["viridis"].resampled(max(len(ks), 2))
    norm = BoundaryNorm(bounds, cmap.N)
    height = max(4.5, 1.0 + 0.85 * len(row_labels))
    figure = figure_class(figsize=(10.0, min(height, 12.0)), dpi=DPI, layout="constrained")
    axes = figure.add_subplot()
    image = axes.imshow(np.ma.masked_invalid(grid), cmap=cmap, norm=norm, aspect="auto")
    ratios = data.groupby("column")["cost_ratio"].first()
    ticks = [f"{c:g} us\n(cost ratio {ratios.get(i, math.nan):g})" for i, c in enumerate(costs)]
    xlabel = "draft cost per forward pass"
    if data.attrs.get("column_title", "draft cost (us)") != "draft cost (us)":
        # The draft cost is inert under this cost model: the column is the cost model.
        ticks = [
            f"{label}\n(cost ratio {ratios.get(i, math.nan):.3g})"
            for i, label in enumerate(data.attrs.get("column_labels", ticks))
        ]
        xlabel = "cost model"
    axes.set_xticks(range(len(costs)), ticks)
    axes.set_yticks(range(len(row_labels)), row_labels)
    axes.set_xlabel(xlabel)
    axes.set_ylabel(", ".join(data.attrs.get("row_parameters", [])))
    axes.set_xticks(np.arange(-0.5, len(costs)), minor=True)
    axes.set_yticks(np.arange(-0.5, len(row_labels)), minor=True)
    axes.grid(which="minor", color="white", lw=2)
    axes.tick_params(which="minor", length=0)
    for _, cell in data.iterrows():
        row, column = int(cell["row"]), int(cell["column"])
        rgba = cmap(norm(cell["k_opt"]))
        luminance = 0.299 * rgba[0] + 0.587 * rgba[1] + 0.114 * rgba[2]
        ink = "black" if luminance > 0.5 else "white"
        lines = [cell_text(cell).replace(PARTIAL_MARK, "")]
        if cell["tie"]:
            lines.append(f"tied: K={cell['tied_ks']}")
        if int(cell["k_opt_exact"]) != int(cell["k_opt"]):
            lines.append(f"exact K*={int(cell['k_opt_exact'])}")
        if not cell["complete"]:
            lines.append(f"{PARTIAL_MARK} {int(cell['n_k'])} of {data.attrs.get('k_count')} K")
        if cell["loses"]:
            axes.add_patch(
                Rectangle(
                    (column - 0.5, row - 0.5),
                    1,
                    1,
                    fill=False,
                    hatch="///",
                    edgecolor="crimson",
                    lw=2,
                )
            )
        axes.text(column, row, "\n".join(lines), ha="center", va="center", fontsize=9, color=ink)
    colorbar = figure.colorbar(image, ax=axes, ticks=ks, shrink=0.9)
    colorbar.set_label("K* (speedup-maximising K)")
    model = data.attrs.get("model", "fixed")
    monte_carlo = data.attrs.get("speedup_column") == "speedup"
    kind = "Monte Carlo" if monte_carlo else "exact"
    figure.suptitle(f"{spec.title}, {model} model ({kind} speedup at K*)")
    legend = textwrap.wrap(f"cell: K* and its speedup; {HEATMAP_LEGEND}", 150)
    if not data["complete"].all():
        legend.append(PARTIAL_LEGEND)
    _caption(figure, "\n".join([*legend, *data.attrs.get("notes", [])]))
    return figure


DRAWERS: dict[str, Callable[[Any, PlotSpec, pd.DataFrame], Any]] = {
    "01_speedup_vs_k_fixed": _speedup_vs_k,
    "02_acceptance_vs_k_by_model": _acceptance,
    "03_waste_vs_k": _waste,
    "04_speedup_vs_cost_ratio": _speedup_vs_cost,
    "05_pareto_speedup_vs_overhead": _pareto,
    "06_optimal_k_heatmap": _heatmap,
}
