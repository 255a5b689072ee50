"""Analysis of a sweep frame (the rows of :func:`engine.sweep.sweep.run_sweep` or its CSV).

Every function takes the frame and returns data (frames, dicts); formatting is the caller's.
Parameters a draft model does not read are inert: rows that differ only in them are one
configuration, and no table presents such an axis as a finding.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from engine.acceptance import draft_models
from engine.acceptance.draft_models import (
    DRAFT_MODELS,
    get_model,
    inert_parameters,
    model_parameters,
    original_models,
)
from engine.core.config import (
    CONFIG_FIELDS,
    DEFAULTS,
    FIELD_SPECS,
    SCENARIO_FIELDS,
    ConfigError,
    SpecConfig,
    check_value,
)
from engine.core.files import SWEEP_CSV_MAX_BYTES, open_input
from engine.simulate.simulator import METRIC_NAMES

# The parameters of the original's three models (always columns of a sweep frame).
ORIGINAL_PARAMETERS = frozenset(p for m in original_models() for p in get_model(m).reads)
REQUIRED_COLUMNS = (*CONFIG_FIELDS, *METRIC_NAMES)
# Columns that, with the model's own parameters, define a cell of the optimal-K table.
CELL_COLUMNS = ("draft_cost_us", "verify_cost_us", "tokens_per_seq", "n_sequences", "tail", "seed")


class SweepDataError(ValueError):
    """A sweep file or frame lacks what the analysis needs."""


def config_columns(frame: pd.DataFrame) -> list[str]:
    """The frame's configuration columns, in table order: the original's 14 fields and the
    newer ones (dotted keys, ``workload.batch_size``) the sweep wrote because some of its
    configurations set them (:func:`engine.sweep.sweep.sweep_columns`)."""
    return [key for key in FIELD_SPECS if key in frame.columns]


def row_config(row: pd.Series) -> SpecConfig:
    """The configuration of one sweep row, from every configuration column it has."""
    return SpecConfig.from_dict(
        {
            key: value.item() if hasattr(value, "item") else value
            for key, value in row.items()
            if key in FIELD_SPECS
        }
    )


def scenario_columns(frame: pd.DataFrame) -> list[str]:
    """The newer fields (dotted keys) among the frame's columns, in table order."""
    return [key for key in SCENARIO_FIELDS if key in frame.columns]


def read_sweep_csv(path: Path) -> pd.DataFrame:
    """Load a sweep CSV and check its columns; errors name the file and the problem."""
    try:
        with open_input(path, SWEEP_CSV_MAX_BYTES, "a sweep file") as handle:
            frame = pd.read_csv(handle)
    except FileNotFoundError:
        raise SweepDataError(f"{path}: no such file (run `spectui sweep` first)") from None
    except OSError as err:
        raise SweepDataError(f"{path}: cannot read: {err.strerror or err}") from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as err:
        # pandas' messages give the place (line 5, byte 0xff), never the text
        raise SweepDataError(f"{path}: cannot read as CSV: {err}") from None
    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
    if missing:
        raise SweepDataError(f"{path}: not a sweep file; missing columns: {', '.join(missing)}")
    if frame.empty:
        raise SweepDataError(f"{path}: holds no configurations")
    _check_row_lengths(path, len(frame.columns))
    for name in scenario_columns(frame):  # an empty file name is written as an empty cell
        if FIELD_SPECS[name].kind == "path":
            frame[name] = frame[name].fillna("")
    check_sweep_frame(frame, str(path))
    return frame


def _check_row_lengths(path: Path, width: int) -> None:
    """SweepDataError naming the first row with fewer cells than the header (pandas fills
    them with NaN, which a sweep never writes there). Streamed: memory flat in the file."""
    import csv

    with open(path, newline="", encoding="utf-8", errors="replace") as handle:
        reader = csv.reader(handle)
        next(reader, None)
        for row in reader:
            if row and len(row) < width:
                raise SweepDataError(
                    f"{path}: row {reader.line_num}: {len(row)} cells where the header has "
                    f"{width}: not a complete sweep result"
                )


def check_sweep_frame(frame: pd.DataFrame, where: str) -> None:
    """Every configuration cell present and valid (the newer fields' columns too), every
    metric column numeric."""
    for name in config_columns(frame):
        column = frame[name]
        if FIELD_SPECS[name].numeric and not pd.api.types.is_numeric_dtype(column):
            numeric = pd.to_numeric(column, errors="coerce")
            text = column[numeric.isna() & column.notna()]
            if len(text):
                row = int(text.index[0])
                raise SweepDataError(f"{where}: row {row + 2}: {name}: not a number")
            column = numeric
        for value in column.unique():
            problem = None
            if pd.isna(value):
                problem = "an empty cell is not allowed"
            else:
                try:
                    check_value(name, value.item() if hasattr(value, "item") else value)
                except ConfigError as err:  # a text cell is not repeated (a file's secret)
                    problem = (
                        f"not allowed; expected {FIELD_SPECS[name].allowed()}"
                        if isinstance(value, str)
                        else str(err).split(": ", 1)[1]
                    )
            if problem:
                row = int(np.flatnonzero(column.isna() if pd.isna(value) else column == value)[0])
                raise SweepDataError(f"{where}: row {row + 2}: {name}: {problem}")
    for name in METRIC_NAMES:
        if not pd.api.types.is_numeric_dtype(frame[name]):
            raise SweepDataError(f"{where}: column {name} holds non-numeric values")
        infinite = np.flatnonzero(np.isinf(frame[name].to_numpy(dtype=float)))
        if len(infinite):  # every accepted configuration has finite metrics
            row = int(infinite[0])
            raise SweepDataError(
                f"{where}: row {row + 2}: {name}: {float(frame[name].iloc[row])!r} is not finite "
                "(a sweep writes finite metrics)"
            )
    missing = frame["speedup_exact"].isna()
    if "policy.name" in frame:  # a K policy may have no exact value (goodput, threshold)
        missing &= frame["policy.name"] == "fixed"
    if missing.any():
        raise SweepDataError(f"{where}: column speedup_exact has empty cells")


def speedup_column(frame: pd.DataFrame) -> str:
    """'speedup' (Monte Carlo) when the frame has it, else 'speedup_exact' (exact-only sweep)."""
    return "speedup" if frame["speedup"].notna().any() else "speedup_exact"


def effective(frame: pd.DataFrame) -> pd.DataFrame:
    """The frame with inert parameters blanked (NaN) and the duplicates they made dropped."""
    out = frame.copy()
    models = out["draft_model"].to_numpy()
    present = [name for name in DRAFT_MODELS if (models == name).any()]
    for name in present:  # a newer model's parameter left at its default has no column
        for column in get_model(name).reads:
            if column not in out:
                out[column] = DEFAULTS[column]
    for name in present:
        rows = models == name
        for column in inert_parameters(name):
            if column not in out and column not in ORIGINAL_PARAMETERS:
                continue  # a newer model's parameter, absent: nothing to blank
            # Whole-column assignment: a .loc[rows, columns] write costs ~10x more, and this
            # runs on every heatmap snapshot of a live sweep.
            if column in out:
                values = out[column].to_numpy(copy=True)
                values = values.astype(float if values.dtype.kind in "fiub" else object)
            else:
                values = np.full(len(out), np.nan)
            values[rows] = np.nan
            out[column] = values
    return out.drop_duplicates(subset=config_columns(out)).reset_index(drop=True)


def quality_parameter(model: str, frame: pd.DataFrame | None = None) -> str:
    """:func:`engine.acceptance.draft_models.quality_parameter` with distinct counts from
    ``frame``."""
    if frame is None or "draft_model" not in frame.columns:
        return draft_models.quality_parameter(model)
    rows = frame[frame["draft_model"] == model]
    distinct = {p: rows[p].nunique() for p in get_model(model).reads if p in rows}
    return draft_models.quality_parameter(model, distinct)


def best_configuration(frame: pd.DataFrame) -> pd.Series:
    """The row with the highest speedup (Monte Carlo, or exact for an exact-only sweep)."""
    col = speedup_column(frame)
    return frame.loc[frame[col].idxmax()]


def _noise(ci_a: float, ci_b: float) -> float:
    """95 % half-width of the difference of two independent speedups."""
    if math.isnan(ci_a) or math.isnan(ci_b):
        return 0.0
    return math.hypot(ci_a, ci_b)


def tied_to_best(speedup: np.ndarray, ci: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """Which K of a cell are within sampling noise of the best (index 0 of the arrays).

    Where both exact speedups exist, their gap is compared with the Monte Carlo noise of a
    difference (95 % half-width of the difference of the two estimates); otherwise the Monte
    Carlo 95 % intervals must overlap. In an exact-only sweep (no noise) only an equal speedup
    ties. :data:`engine.analysis.formatting.TIE_RULE` says this in words.
    """
    with np.errstate(invalid="ignore"):
        noise = np.where(np.isnan(ci[0]) | np.isnan(ci), 0.0, np.hypot(ci[0], ci))
        reach = np.nan_to_num(ci[0]) + np.nan_to_num(ci)
        have_exact = ~np.isnan(exact[0]) & ~np.isnan(exact)
        by_exact = np.abs(exact[0] - exact) <= noise
        by_overlap = speedup[0] - speedup <= reach
    return np.where(have_exact, by_exact, by_overlap)


def optimal_k(frame: pd.DataFrame) -> pd.DataFrame:
    """K* for every (model, its quality parameters, costs, length) cell.

    Columns: the cell's keys, ``k_opt`` and ``speedup_opt`` (with ``speedup_ci95``), the
    runner-up ``k_second``/``speedup_second``, ``tie`` (another K is within sampling noise of
    the best, by :func:`tied_to_best`: the exact gap within the Monte Carlo noise, or without exact
    values overlapping Monte Carlo intervals), ``tied_ks`` (every K within noise of the best),
    ``k_opt_exact``/``speedup_exact_opt`` from the exact values, ``loses`` (even K* is
    slower than the baseline) and ``n_k``.
    """
    col = speedup_column(frame)
    rows: list[dict[str, Any]] = []
    eff = effective(frame)
    for model_name, model_rows in eff.groupby("draft_model", sort=False):
        # A newer field the sweep varies (workload.batch_size) makes cells of its own.
        keys = [*get_model(str(model_name)).reads, *CELL_COLUMNS, *scenario_columns(eff)]
        # One sort for every cell (keys ascending, then speedup descending, then K), not one
        # per cell: this runs on every heatmap snapshot of a live sweep.
        ranked = model_rows.assign(_position=np.arange(len(model_rows))).sort_values(
            [*keys, col, "k"],
            ascending=[True] * len(keys) + [False, True],
            na_position="last",
            kind="mergesort",
        )
        group = ranked.groupby(keys, sort=False, dropna=False).ngroup().to_numpy()
        starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
        ends = np.r_[starts[1:], len(group)]
        ks_all = ranked["k"].to_numpy(dtype=int)
        speedup_all = ranked[col].to_numpy(dtype=float)
        ci_all = (
            ranked["speedup_ci95"].to_numpy(dtype=float)
            if col == "speedup"
            else np.full(len(ranked), math.nan)
        )
        exact_all = ranked["speedup_exact"].to_numpy(dtype=float)
        position_all = ranked["_position"].to_numpy()
        ratio_all = ranked["cost_ratio"].to_numpy(dtype=float)  # the cost model's
        key_rows = ranked[keys].to_numpy(dtype=object)
        for start, end in zip(starts, ends, strict=True):
            ks, speedup = ks_all[start:end], speedup_all[start:end]
            ci, exact = ci_all[start:end], exact_all[start:end]
            tied = ks[tied_to_best(speedup, ci, exact)]
            # The exact optimum: the first row of the cell, in the frame's order, with the
            # highest exact speedup.
            in_frame_order = np.argsort(position_all[start:end], kind="stable")
            cell_exact, cell_ks = exact[in_frame_order], ks[in_frame_order]
            has_exact = not np.isnan(cell_exact).all()
            exact_at = int(np.nanargmax(cell_exact)) if has_exact else -1
            row = dict(zip(keys, key_rows[start], strict=True))
            row.update(
                draft_model=model_name,
                cost_ratio=float(ratio_all[start]),
                k_opt=int(ks[0]),
                speedup_opt=float(speedup[0]),
                speedup_ci95=float(ci[0]),
                k_second=int(ks[1]) if len(ks) > 1 else None,
                speedup_second=float(speedup[1]) if len(ks) > 1 else math.nan,
                tie=len(tied) > 1,
                tied_ks=",".join(str(k) for k in sorted(tied)),
                k_opt_exact=int(cell_ks[exact_at]) if has_exact else int(ks[0]),
                speedup_exact_opt=float(cell_exact[exact_at]) if has_exact else math.nan,
                loses=bool(speedup[0] < 1.0),
                n_k=end - start,
            )
            rows.append(row)
    out = pd.DataFrame(rows)
    lead = ["draft_model", *sorted(model_parameters() & set(out.columns))]
    return out[lead + [c for c in out.columns if c not in lead]]


def k_star_ranges(opt: pd.DataFrame, model: str = "fixed") -> pd.DataFrame:
    """For each value of the model's quality parameter: the smallest and largest K* over costs."""
    rows = opt[opt["draft_model"] == model]
    quality = quality_parameter(model, rows)
    return (
        rows.groupby(quality)["k_opt"].agg(k_min="min", k_max="max").reset_index()
        if not rows.empty
        else pd.DataFrame(columns=[quality, "k_min", "k_max"])
    )


def breakeven_by_cost_ratio(frame: pd.DataFrame, model: str = "fixed") -> pd.DataFrame:
    """Per cost ratio: mean speedup over K and quality (the original's table), and more.

    Columns: ``cost_ratio``, ``mean_speedup``, ``mean_speedup_exact``, ``min_speedup``,
    ``max_speedup``, ``losing`` (count below 1.0) and ``configs``.
    """
    col = speedup_column(frame)
    rows = effective(frame)
    rows = rows[rows["draft_model"] == model]
    if rows.empty:
        return pd.DataFrame()
    grouped = rows.groupby("cost_ratio")
    return pd.DataFrame(
        {
            "mean_speedup": grouped[col].mean(),
            "mean_speedup_exact": grouped["speedup_exact"].mean(),
            "min_speedup": grouped[col].min(),
            "max_speedup": grouped[col].max(),
            "losing": grouped[col].apply(lambda s: int((s < 1.0).sum())),
            "configs": grouped[col].size(),
        }
    ).reset_index()


def mean_breakeven_ratio(table: pd.DataFrame) -> float:
    """Where the mean speedup of :func:`breakeven_by_cost_ratio` crosses 1.0 (linear
    interpolation between the cost ratios around the crossing); NaN if it never crosses."""
    ratios, means = table["cost_ratio"].to_numpy(), table["mean_speedup"].to_numpy()
    for i in range(1, len(ratios)):
        if means[i - 1] >= 1.0 > means[i]:
            frac = (means[i - 1] - 1.0) / (means[i - 1] - means[i])
            return float(ratios[i - 1] + frac * (ratios[i] - ratios[i - 1]))
    return math.nan


def breakeven_by_quality(frame: pd.DataFrame, model: str = "fixed") -> pd.DataFrame:
    """Per value of the model's quality parameter: the largest cost ratio at which some K in
    the sweep still breaks even as sequences grow long (exact), and that K.

    Columns: the quality parameter, ``breakeven_cost_ratio``, ``k``.
    """
    rows = effective(frame)
    rows = rows[rows["draft_model"] == model]
    quality = quality_parameter(model, rows)
    if rows.empty:
        return pd.DataFrame(columns=[quality, "breakeven_cost_ratio", "k"])
    best = rows.loc[rows.groupby(quality)["breakeven_cost_ratio"].idxmax()]
    return best[[quality, "breakeven_cost_ratio", "k"]].reset_index(drop=True)


def losing_configurations(frame: pd.DataFrame) -> dict[str, Any]:
    """Configurations slower than the baseline, counted and described from the data.

    ``count``/``total`` count rows as the sweep has them (the original's way);
    ``distinct``/``distinct_total`` count after merging rows that differ only in inert
    parameters. ``min_cost_ratio`` is the cheapest draft among losers; ``max_quality`` the
    best quality parameter among each model's losers (only for a model whose quality
    parameter varies in the sweep: a constant says nothing); ``by_model`` counts per model.
    """
    col = speedup_column(frame)
    losers = frame[frame[col] < 1.0]
    eff = effective(frame)
    eff_losers = eff[eff[col] < 1.0]
    by_model = {}
    max_quality = {}
    # The original's three models always (its report lists them), the others when present.
    present = set(eff["draft_model"]) | set(original_models())
    for name in (m for m in DRAFT_MODELS if m in present):
        model_losers = eff_losers[eff_losers["draft_model"] == name]
        by_model[name] = len(model_losers)
        quality = quality_parameter(name, eff)
        # Only an axis that varies in the sweep says something about the losers.
        varies = eff.loc[eff["draft_model"] == name, quality].nunique() > 1
        if len(model_losers) and varies:
            max_quality[name] = (quality, float(model_losers[quality].max()))
    return {
        "count": len(losers),
        "total": len(frame),
        "fraction": len(losers) / len(frame) if len(frame) else math.nan,
        "distinct": len(eff_losers),
        "distinct_total": len(eff),
        "min_cost_ratio": float(losers["cost_ratio"].min()) if len(losers) else math.nan,
        "min_k": int(losers["k"].min()) if len(losers) else None,
        "max_quality": max_quality,
        "by_model": by_model,
        "rows": losers,
    }


def pareto_front(frame: pd.DataFrame) -> pd.DataFrame:
    """Configurations not dominated in (higher speedup, lower compute overhead).

    Sorted by compute overhead (its exact limit for an exact-only sweep); ties in overhead
    keep the faster one.
    """
    col = speedup_column(frame)
    overhead = "compute_overhead" if col == "speedup" else "compute_overhead_limit"
    ordered = effective(frame).sort_values([overhead, col], ascending=[True, False])
    keep, best = [], -math.inf
    for index, speedup in zip(ordered.index, ordered[col], strict=True):
        if speedup > best:
            keep.append(index)
            best = speedup
    return ordered.loc[keep].reset_index(drop=True)
