"""The data behind the six plots of a sweep (the original simulator's plots), as tidy frames.

Each function takes a sweep frame (rows of :func:`engine.sweep.sweep.run_sweep` or its CSV, possibly
partial: a sweep still running, or a grid with missing cells or models) and returns a tidy
frame, one row per plotted point, that a renderer (matplotlib, plotext) draws without further
computation. An empty or irrelevant frame gives an empty result with the same columns.

Conventions shared by every function:

* Rows that differ only in parameters their model does not read are one configuration
  (:func:`engine.analysis.analysis.effective`): an inert axis is never drawn as if it mattered.
* The plotted speedup is the Monte Carlo one (with its 95 % half-width) when the sweep has it,
  else the exact finite-length one (:func:`engine.analysis.analysis.speedup_column`).
* A configuration axis that a plot does not show and that varies in the sweep (for example
  ``tokens_per_seq``) is held at its most common value; ``result.attrs["notes"]`` says so.
  Plots 2 and 3 instead average over the costs, which do not change acceptance or waste.
* ``result.attrs["speedup_column"]`` names the column the speedups came from.

Units: costs in microseconds, ``k`` in draft tokens per cycle, speedups and ratios unitless.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from engine.acceptance.draft_models import DRAFT_MODELS, model_parameters
from engine.analysis.analysis import effective, pareto_front, speedup_column
from engine.analysis.optimal_k_grid import (  # plot 6, re-exported
    HEATMAP_COLUMNS as HEATMAP_COLUMNS,
)
from engine.analysis.optimal_k_grid import column_label as column_label
from engine.analysis.optimal_k_grid import column_title as column_title
from engine.analysis.optimal_k_grid import heatmap_cell_rows as heatmap_cell_rows
from engine.analysis.optimal_k_grid import heatmap_model as heatmap_model
from engine.analysis.optimal_k_grid import optimal_k_heatmap
from engine.analysis.plot_frames import (
    _BUILT_IN_PARAMETERS,
    _combined_ci,
    _empty,
    _fmt,
    _hold_constant,
    _usable,
)
from engine.analysis.plot_frames import SHORT_NAMES as SHORT_NAMES
from engine.analysis.plot_frames import _line_label as _line_label
from engine.core.parts import ACCEPTANCE

# Axes that do not change the expected acceptance or waste (only the timing, or the noise).
_TIMING_AND_NOISE_AXES = ("draft_cost_us", "verify_cost_us", "n_sequences", "seed")

SPEEDUP_VS_K_COLUMNS = (
    "draft_cost_us",
    "cost_ratio",
    "acceptance_rate",
    "k",
    "speedup",
    "speedup_ci95",
    "speedup_exact",
)
BY_MODEL_COLUMNS = ("draft_model", "line", *sorted(_BUILT_IN_PARAMETERS), "k", "n_configs")
SPEEDUP_VS_COST_COLUMNS = (
    "line",
    "statistic",
    "acceptance_rate",
    "cost_ratio",
    "k_best",
    "speedup",
    "speedup_ci95",
    "speedup_exact",
    "n_configs",
)
PARETO_COLUMNS = (
    "draft_model",
    "k",
    *sorted(_BUILT_IN_PARAMETERS),
    "draft_cost_us",
    "cost_ratio",
    "compute_overhead",
    "speedup",
    "speedup_ci95",
    "on_front",
    "front_order",
)


def rate_models() -> tuple[str, ...]:
    """The acceptance models that read ``acceptance_rate`` (fixed): the ones plots by
    acceptance rate show, a line per rate."""
    return ACCEPTANCE.where(lambda model: "acceptance_rate" in model.reads)


def speedup_vs_k_fixed(frame: pd.DataFrame) -> pd.DataFrame:
    """Plot 1: speedup against K for the fixed model; a line per acceptance, a panel per cost.

    One row per (draft_cost_us, acceptance_rate, k), sorted that way. ``speedup`` is the
    Monte Carlo speedup (exact for an exact-only sweep) with its 95 % half-width
    ``speedup_ci95``; ``speedup_exact`` is the exact finite-length value beside it. The
    break-even line is speedup 1.0 (the baseline). Duplicate rows are averaged.
    """
    if not _usable(frame):
        return _empty(SPEEDUP_VS_K_COLUMNS)
    col = speedup_column(frame)
    rows = effective(frame)
    rows = rows[rows["draft_model"].isin(rate_models())]
    rows, notes = _hold_constant(rows, ("k", "acceptance_rate", "draft_cost_us"))
    if rows.empty:
        return _empty(SPEEDUP_VS_K_COLUMNS, speedup_column=col)
    grouped = rows.groupby(["draft_cost_us", "acceptance_rate", "k"], sort=True)
    out = pd.DataFrame(
        {
            "cost_ratio": grouped["cost_ratio"].mean(),
            "speedup": grouped[col].mean(),
            "speedup_ci95": grouped["speedup_ci95"].apply(_combined_ci)
            if col == "speedup"
            else np.nan,
            "speedup_exact": grouped["speedup_exact"].mean(),
        }
    ).reset_index()
    out = out[list(SPEEDUP_VS_K_COLUMNS)]
    out.attrs.update(notes=notes, speedup_column=col)
    return out


def _by_model(frame: pd.DataFrame, metric: str) -> tuple[pd.DataFrame, list[str]]:
    """Mean of ``metric`` per (model, its quality parameters, k), over timing/noise axes."""
    rows = effective(frame)
    rows, notes = _hold_constant(rows, ("k", *model_parameters()), averaged=_TIMING_AND_NOISE_AXES)
    if any(rows[a].nunique() > 1 for a in ("draft_cost_us", "verify_cost_us") if a in rows):
        notes.append("averaged over draft and verify costs (they do not change this metric)")
    parts = []
    for model_name, model in DRAFT_MODELS.items():
        model_rows = rows[rows["draft_model"] == model_name]
        if model_rows.empty:
            continue
        reads = list(model.reads)
        varying = [p for p in reads if model_rows[p].nunique() > 1]
        grouped = model_rows.groupby([*reads, "k"], sort=True, dropna=False)
        part = grouped[metric].mean().rename("value").reset_index()
        part["n_configs"] = grouped.size().to_numpy()
        part["value_exact"] = grouped["_exact"].mean().to_numpy()
        part["draft_model"] = model_name
        part["line"] = [
            _line_label(model_name, dict(zip(reads, values, strict=True)), varying)
            for values in part[reads].itertuples(index=False)
        ]
        parts.append(part)
    if not parts:
        return pd.DataFrame(), notes
    out = pd.concat(parts, ignore_index=True)
    for p in model_parameters():
        if p not in out.columns:
            out[p] = np.nan
    return out, notes


def _with_exact_acceptance(frame: pd.DataFrame) -> pd.DataFrame:
    """Add ``_exact``: expected accepted / drafted tokens, infinite sequence, K drafts a cycle.

    ``tokens_per_cycle_exact - 1`` is E[n], the expected accepted drafts of a cycle.
    """
    out = frame.copy()
    if "tokens_per_cycle_exact" in out.columns:
        out["_exact"] = (out["tokens_per_cycle_exact"] - 1.0) / out["k"]
    else:
        out["_exact"] = np.nan
    return out


def acceptance_vs_k_by_model(frame: pd.DataFrame) -> pd.DataFrame:
    """Plot 2: observed acceptance (accepted / drafted tokens) against K, by draft model.

    One line per draft model and value of the parameters it reads (``line``): the fixed model
    gets one line per ``acceptance_rate``, since its acceptance depends on it; the other
    models ignore ``acceptance_rate``, so it never splits their lines. Values are means over
    draft and verify costs, which do not change acceptance. Columns: ``acceptance_observed``
    (in [0, 1]; for an exact-only sweep the expected value), ``acceptance_expected`` (the
    exact expectation for an infinite sequence: E[accepted drafts per cycle] / K), ``n_configs``
    (rows averaged).
    """
    columns = (*BY_MODEL_COLUMNS, "acceptance_observed", "acceptance_expected")
    if not _usable(frame):
        return _empty(columns)
    data = _with_exact_acceptance(frame)
    metric = "acceptance_observed" if data["acceptance_observed"].notna().any() else "_exact"
    out, notes = _by_model(data, metric)
    if out.empty:
        return _empty(columns)
    out = out.rename(columns={"value": "acceptance_observed", "value_exact": "acceptance_expected"})
    out = out[list(columns)]
    out.attrs.update(notes=notes, speedup_column=speedup_column(frame), metric_source=metric)
    return out


def waste_vs_k(frame: pd.DataFrame) -> pd.DataFrame:
    """Plot 3: waste against K, by draft model (lines as in :func:`acceptance_vs_k_by_model`).

    ``waste`` in [0, 1] is 1 - (accepted drafts kept) / (drafted tokens): rejected drafts,
    drafts after a rejection, accepted drafts discarded at the tail. For an exact-only sweep it
    is the infinite-sequence expectation ``waste_expected`` = 1 - E[accepted per cycle] / K.
    """
    columns = (*BY_MODEL_COLUMNS, "waste", "waste_expected")
    if not _usable(frame):
        return _empty(columns)
    data = _with_exact_acceptance(frame)
    data["_exact"] = 1.0 - data["_exact"]
    metric = "waste" if data["waste"].notna().any() else "_exact"
    out, notes = _by_model(data, metric)
    if out.empty:
        return _empty(columns)
    out = out.rename(columns={"value": "waste", "value_exact": "waste_expected"})
    out = out[list(columns)]
    out.attrs.update(notes=notes, speedup_column=speedup_column(frame), metric_source=metric)
    return out


MEAN_LINE = "mean over K and acceptance"


def speedup_vs_cost_ratio(frame: pd.DataFrame) -> pd.DataFrame:
    """Plot 4: fixed model, speedup against cost ratio (draft / verify cost), per acceptance.

    For each acceptance rate (``statistic`` = ``"best K"``), the speedup at the best K of each
    cost ratio (``k_best``; ties in speedup go to the smaller K), with its 95 % half-width
    and the exact speedup at that K. One more line (``statistic`` = ``"mean over K and
    acceptance"``, ``acceptance_rate`` NaN) is the original's table: the mean speedup over every
    K and acceptance at that cost ratio, which a user who picks K well never sees.
    """
    if not _usable(frame):
        return _empty(SPEEDUP_VS_COST_COLUMNS)
    col = speedup_column(frame)
    rows = effective(frame)
    rows = rows[rows["draft_model"].isin(rate_models())]
    rows, notes = _hold_constant(rows, ("k", "acceptance_rate", "draft_cost_us"))
    if rows.empty:
        return _empty(SPEEDUP_VS_COST_COLUMNS, speedup_column=col)
    ranked = rows.sort_values([col, "k"], ascending=[False, True], kind="stable")
    best = ranked.groupby(["acceptance_rate", "cost_ratio"], sort=True).head(1)
    counts = rows.groupby(["acceptance_rate", "cost_ratio"]).size()
    best_rows = pd.DataFrame(
        {
            "line": [f"a={_fmt(a)}" for a in best["acceptance_rate"]],
            "statistic": "best K",
            "acceptance_rate": best["acceptance_rate"].to_numpy(),
            "cost_ratio": best["cost_ratio"].to_numpy(),
            "k_best": best["k"].to_numpy(),
            "speedup": best[col].to_numpy(),
            "speedup_ci95": best["speedup_ci95"].to_numpy() if col == "speedup" else np.nan,
            "speedup_exact": best["speedup_exact"].to_numpy(),
            "n_configs": [
                counts[(a, c)]
                for a, c in zip(best["acceptance_rate"], best["cost_ratio"], strict=True)
            ],
        }
    ).sort_values(["acceptance_rate", "cost_ratio"])
    grouped = rows.groupby("cost_ratio", sort=True)
    mean_rows = pd.DataFrame(
        {
            "line": MEAN_LINE,
            "statistic": MEAN_LINE,
            "acceptance_rate": np.nan,
            "cost_ratio": grouped[col].mean().index.to_numpy(),
            "k_best": np.nan,
            "speedup": grouped[col].mean().to_numpy(),
            "speedup_ci95": grouped["speedup_ci95"].apply(_combined_ci).to_numpy()
            if col == "speedup"
            else np.nan,
            "speedup_exact": grouped["speedup_exact"].mean().to_numpy(),
            "n_configs": grouped.size().to_numpy(),
        }
    )
    out = pd.concat([best_rows, mean_rows], ignore_index=True)[list(SPEEDUP_VS_COST_COLUMNS)]
    out.attrs.update(notes=notes, speedup_column=col)
    return out


def pareto_speedup_vs_overhead(frame: pd.DataFrame) -> pd.DataFrame:
    """Plot 5: every distinct configuration as a point, speedup against compute overhead.

    ``compute_overhead`` (unitless, >= 0) is target positions evaluated plus cost ratio times
    drafted tokens, per emitted token, minus 1 (its exact limit for an exact-only sweep).
    ``on_front`` marks the Pareto front of :func:`engine.analysis.analysis.pareto_front` (no other
    configuration is both faster and cheaper); ``front_order`` orders the front by overhead
    (NaN off the front). Rows sorted by model, then overhead.
    """
    if not _usable(frame) or "compute_overhead" not in frame.columns:
        return _empty(PARETO_COLUMNS)
    col = speedup_column(frame)
    overhead = "compute_overhead" if col == "speedup" else "compute_overhead_limit"
    if overhead not in frame.columns:
        return _empty(PARETO_COLUMNS, speedup_column=col)
    tagged = frame.assign(_row=np.arange(len(frame)))
    points = effective(tagged)
    points = points[points[col].notna() & points[overhead].notna()]
    if points.empty:
        return _empty(PARETO_COLUMNS, speedup_column=col)
    front = pareto_front(points)
    order = {row: i for i, row in enumerate(front["_row"])}
    out = pd.DataFrame(
        {
            "draft_model": points["draft_model"],
            "k": points["k"],
            **{p: points.get(p, np.nan) for p in sorted(model_parameters())},
            "draft_cost_us": points["draft_cost_us"],
            "cost_ratio": points["cost_ratio"],
            "compute_overhead": points[overhead],
            "speedup": points[col],
            "speedup_ci95": points["speedup_ci95"] if col == "speedup" else np.nan,
            "on_front": points["_row"].map(lambda r: r in order),
            "front_order": points["_row"].map(lambda r: order.get(r, np.nan)).astype(float),
        }
    )
    model_rank = {m: i for i, m in enumerate(DRAFT_MODELS)}
    out = (
        out.assign(_m=out["draft_model"].map(model_rank))
        .sort_values(["_m", "compute_overhead", "speedup"], kind="stable")
        .drop(columns="_m")
        .reset_index(drop=True)
    )
    notes = [f"{len(out)} distinct configurations ({len(frame)} sweep rows)"]
    out.attrs.update(notes=notes, speedup_column=col)
    return out


@dataclass(frozen=True)
class PlotSpec:
    """One plot: ``plot_id`` is also the image file's stem; ``data`` computes its frame."""

    plot_id: str
    title: str
    data: Callable[[pd.DataFrame], pd.DataFrame]


PLOTS: tuple[PlotSpec, ...] = (
    PlotSpec(
        "01_speedup_vs_k_fixed",
        "Speedup vs K, fixed model: a line per acceptance, a panel per draft cost",
        speedup_vs_k_fixed,
    ),
    PlotSpec(
        "02_acceptance_vs_k_by_model",
        "Observed acceptance vs K, by draft model (mean over costs)",
        acceptance_vs_k_by_model,
    ),
    PlotSpec("03_waste_vs_k", "Waste vs K, by draft model (mean over costs)", waste_vs_k),
    PlotSpec(
        "04_speedup_vs_cost_ratio",
        "Speedup vs cost ratio, fixed model, at the best K per cost ratio",
        speedup_vs_cost_ratio,
    ),
    PlotSpec(
        "05_pareto_speedup_vs_overhead",
        "Pareto front: speedup vs compute overhead, all configurations",
        pareto_speedup_vs_overhead,
    ),
    PlotSpec(
        "06_optimal_k_heatmap",
        "Optimal K (K*) by quality and draft cost",
        optimal_k_heatmap,
    ),
)

PLOT_IDS: tuple[str, ...] = tuple(p.plot_id for p in PLOTS)


def get_plot(plot_id: str) -> PlotSpec:
    """The plot registered as ``plot_id`` (KeyError lists the known ids)."""
    for spec in PLOTS:
        if spec.plot_id == plot_id:
            return spec
    raise KeyError(f"unknown plot {plot_id!r}; known: {', '.join(PLOT_IDS)}")
