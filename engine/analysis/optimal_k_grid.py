"""Plot 6 and every other view of K*: the optimal-K grid of one model, quality x draft cost
(:func:`optimal_k_heatmap`), and the rows behind one of its cells (:func:`heatmap_cell_rows`).
Re-exported by :mod:`engine.analysis.plot_data`, whose conventions it follows.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from engine.acceptance.draft_models import DRAFT_MODELS, inert_parameters, model_parameters
from engine.analysis.analysis import effective, optimal_k, speedup_column
from engine.analysis.analysis import scenario_columns as scenario_columns_of
from engine.analysis.plot_frames import (
    _BUILT_IN_PARAMETERS,
    _empty,
    _fmt,
    _held_values,
    _keep,
    _short_name,
    _usable,
)

HEATMAP_COLUMNS = (
    "draft_model",
    "row_label",
    "row",
    *sorted(_BUILT_IN_PARAMETERS),
    "draft_cost_us",
    "column",
    "cost_ratio",
    "k_opt",
    "speedup_opt",
    "speedup_ci95",
    "k_second",
    "speedup_second",
    "tie",
    "tied_ks",
    "loses",
    "k_opt_exact",
    "speedup_exact_opt",
    "n_k",
    "complete",
)


def heatmap_model(frame: pd.DataFrame) -> str | None:
    """The model plot 6 shows by default: ``fixed`` if the frame has it, else the first one."""
    if frame.empty or "draft_model" not in frame.columns:
        return None
    models = [m for m in DRAFT_MODELS if (frame["draft_model"] == m).any()]
    return "fixed" if "fixed" in models else (models[0] if models else None)


def column_title(cost_models: set[str]) -> str:
    """What the K* grid's columns are: the draft cost of the linear cost model (the
    original's axis); under other cost models that field is inert, and the column says
    which cost model priced the cycles."""
    return "draft cost (us)" if "linear" in cost_models else "cost model"


def column_label(cost_models: set[str], draft_cost_us: float, compact: bool = False) -> str:
    """One column's heading: "20 us" ("20us" compact), or the cost model's name."""
    if "linear" in cost_models:
        return f"{draft_cost_us:g}us" if compact else f"{draft_cost_us:g} us"
    return "/".join(sorted(cost_models))


def optimal_k_heatmap(
    frame: pd.DataFrame, model: str | None = None, planned: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Plot 6 and every other view of K*: one model's optimal-K grid, quality x draft cost.

    The one definition of the K* grid: the CLI report, the PNG, the plotext plot and the
    app's Sweep and Plots views all draw this frame, and :func:`heatmap_cell_rows` gives a
    cell's own rows by the same rule.

    One row per grid cell that has results (cells still pending are absent). Rows of the grid
    are the distinct values of the model's parameters that vary in the sweep, then of the
    newer fields that vary (``workload.batch_size``: one K* per batch size), all of them
    together (``decay_base`` x ``decay_factor`` gives one row per pair; the first parameter it
    reads if none varies): ``row`` (0 = first) and ``row_label``. ``column`` indexes
    ``draft_cost_us`` (us). Every other configuration axis that varies (``tokens_per_seq``,
    ``verify_cost_us``, ``seed``...) is held at its most common value and
    ``attrs["notes"]`` says so. The rest is :func:`engine.analysis.analysis.optimal_k`: ``k_opt``
    (K*,
    ties in speedup to the smaller K), ``speedup_opt`` with ``speedup_ci95``, ``tie`` and
    ``tied_ks`` (:data:`engine.analysis.formatting.TIE_RULE`), ``loses`` (even K* is slower than the
    baseline), the exact ``k_opt_exact``/``speedup_exact_opt``; ``n_k`` counts the K values
    the cell has and ``complete`` is false while it lacks some K of the grid (a running sweep:
    K* is the best so far).

    ``planned`` (the configurations of the whole sweep, :func:`engine.sweep.sweep.config_frame`)
    fixes the grid's shape before results arrive: rows, columns, held values and K count come
    from it, so a running sweep's grid does not change shape as it fills. ``model`` defaults
    to :func:`heatmap_model`. ``attrs``: ``model``, ``row_labels``, ``row_keys`` (tuples of
    ``row_parameters`` values), ``costs``, ``held`` (axis -> value shown), ``k_count``,
    ``notes``, ``speedup_column``.
    """
    basis = planned if planned is not None else frame
    model = model if model is not None else heatmap_model(basis)
    if model is None or basis.empty or not (basis["draft_model"] == model).any():
        return _empty(HEATMAP_COLUMNS, model=model)
    reads = list(DRAFT_MODELS[model].reads)
    shape_rows = effective(basis[basis["draft_model"] == model])
    newer = [c for c in scenario_columns_of(shape_rows) if shape_rows[c].nunique() > 1]
    held, notes = _held_values(shape_rows, ("k", *reads, *newer, "draft_cost_us"))
    shape_rows = _keep(shape_rows, held)
    varying = [p for p in reads if shape_rows[p].nunique() > 1]
    varying = [*varying, *newer] if varying or newer else reads[:1]
    row_keys = sorted(set(shape_rows[varying].itertuples(index=False, name=None)))
    costs = sorted(float(c) for c in shape_rows["draft_cost_us"].unique())
    k_count = int(shape_rows["k"].nunique())
    row_labels = [
        ", ".join(f"{_short_name(p)}={_fmt(v)}" for p, v in zip(varying, key, strict=True))
        for key in row_keys
    ]
    cost_models = (
        set(shape_rows["cost.model"].astype(str)) if "cost.model" in shape_rows else {"linear"}
    )
    attrs = {
        "column_title": column_title(cost_models),
        "column_labels": [column_label(cost_models, c) for c in costs],
        "notes": notes,
        "model": model,
        "k_count": k_count,
        "row_parameters": varying,
        "row_keys": row_keys,
        "row_labels": row_labels,
        "costs": costs,
        "held": held,
    }
    if not _usable(frame) or not (frame["draft_model"] == model).any():
        out = _empty(HEATMAP_COLUMNS, **attrs)
        return out
    col = speedup_column(frame)
    rows = _keep(effective(frame[frame["draft_model"] == model]), held)
    if rows.empty:
        return _empty(HEATMAP_COLUMNS, **attrs, speedup_column=col)
    opt = optimal_k(rows)
    row_index = {key: i for i, key in enumerate(row_keys)}
    column_index = {c: i for i, c in enumerate(costs)}
    keys = list(opt[varying].itertuples(index=False, name=None))
    opt["row"] = [row_index.get(tuple(key), -1) for key in keys]
    opt["column"] = [column_index.get(float(c), -1) for c in opt["draft_cost_us"]]
    opt = opt[(opt["row"] >= 0) & (opt["column"] >= 0)].copy()  # outside the planned grid
    opt["row_label"] = [row_labels[i] for i in opt["row"]]
    opt["complete"] = opt["n_k"] >= k_count
    for p in model_parameters():
        if p not in opt.columns:
            opt[p] = np.nan
    out = opt.sort_values(["row", "column"]).reset_index(drop=True)[list(HEATMAP_COLUMNS)]
    out.attrs.update(attrs, speedup_column=col)
    return out


def heatmap_cell_rows(
    frame: pd.DataFrame, grid: pd.DataFrame, row: int, column: int
) -> pd.DataFrame:
    """The rows of ``frame`` behind cell (``row``, ``column``) of ``grid``, one per K, by K.

    ``grid`` is :func:`optimal_k_heatmap` of the same sweep; the rows are picked by the same
    rule (the row's parameter values, the column's draft cost, the held axes), with their full
    configuration (parameters the model ignores are not blanked). Empty if the cell has none.
    """
    model = grid.attrs.get("model")
    keys = grid.attrs.get("row_keys") or []
    costs = grid.attrs.get("costs") or []
    if model is None or frame.empty or not (0 <= row < len(keys) and 0 <= column < len(costs)):
        return frame.iloc[0:0]
    mask = (frame["draft_model"] == model) & (frame["draft_cost_us"] == costs[column])
    for parameter, value in zip(grid.attrs["row_parameters"], keys[row], strict=True):
        mask &= frame[parameter] == value
    inert = set(inert_parameters(model))
    for axis, value in grid.attrs.get("held", {}).items():
        if axis not in inert:
            mask &= frame[axis] == value
    return frame[mask].drop_duplicates(subset=["k"]).sort_values("k", kind="stable")
