"""Shared pieces of the plot tables (:mod:`engine.analysis.plot_data`,
:mod:`engine.analysis.optimal_k_grid`): empty frames, axes held at their most common value,
combined half-widths, and the parameters' short names in labels.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from engine.acceptance.draft_models import model_parameters
from engine.analysis.analysis import config_columns
from engine.core.config import FIELD_SPECS

# Short names of the quality parameters, for line labels.
SHORT_NAMES = {
    "acceptance_rate": "a",
    "decay_base": "base",
    "decay_factor": "factor",
    "entropy_high": "high",
    "entropy_low": "low",
    "entropy_frac": "frac",
}

# The column schemas of the plot data (results/plots/*.csv): the parameters of the models
# registered when this module loads (the built-in ones, unless a plug-in came first).
_BUILT_IN_PARAMETERS = model_parameters()


def _empty(columns: Sequence[str], **attrs: Any) -> pd.DataFrame:
    out = pd.DataFrame({c: pd.Series(dtype=float) for c in columns})
    out.attrs.update({"notes": [], "speedup_column": "speedup", **attrs})
    return out


def _usable(frame: pd.DataFrame) -> bool:
    """Whether the frame has rows and the columns every plot needs."""
    needed = ("draft_model", "k", "speedup", "speedup_exact")
    return not frame.empty and all(c in frame.columns for c in needed)


def _fmt(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float | int | np.number) else str(value)


def _held_values(rows: pd.DataFrame, shown: Sequence[str]) -> tuple[dict[str, Any], list[str]]:
    """The value kept for each varying configuration axis not ``shown``, and a note on each.

    The most common value (ties go to the smallest), counted axis by axis among the rows kept
    so far.
    """
    held: dict[str, Any] = {}
    notes: list[str] = []
    for column in config_columns(rows):
        if column in shown or column == "draft_model":
            continue
        counts = rows[column].dropna().value_counts()
        if len(counts) <= 1:
            continue
        ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
        held[column] = ranked[0][0]
        rows = _keep(rows, {column: held[column]})  # the next axis is counted among these
        notes.append(f"{column} varies in this sweep; showing {column}={_fmt(held[column])} only")
    return held, notes


def _keep(rows: pd.DataFrame, held: dict[str, Any]) -> pd.DataFrame:
    for column, value in held.items():
        if column in rows.columns:
            rows = rows[rows[column].isna() | (rows[column] == value)]
    return rows


def _hold_constant(
    rows: pd.DataFrame, shown: Sequence[str], averaged: Sequence[str] = ()
) -> tuple[pd.DataFrame, list[str]]:
    """Keep the most common value of every configuration axis not shown that varies.

    Ties in frequency go to the smallest value. Returns the rows kept and one note per axis.
    """
    held, notes = _held_values(rows, (*shown, *averaged))
    return _keep(rows, held), notes


def _combined_ci(ci: pd.Series) -> float:
    """95 % half-width of the mean of independent estimates with half-widths ``ci``."""
    values = ci.to_numpy(dtype=float)
    if len(values) == 0 or np.isnan(values).any():
        return float("nan")
    return float(np.sqrt(np.sum(values**2)) / len(values))


def _short_name(parameter: str) -> str:
    """A parameter's name in a label: the model's short names, a newer field's form label."""
    if parameter in SHORT_NAMES:
        return SHORT_NAMES[parameter]
    spec = FIELD_SPECS.get(parameter)
    return spec.label if spec is not None and "." in parameter and spec.label else parameter


def _line_label(model: str, params: dict[str, Any], varying: Sequence[str]) -> str:
    """'fixed a=0.8' (the parameters that vary), or 'position_decay (base=0.9, factor=0.95)'."""
    if varying:
        return f"{model} " + ", ".join(
            f"{SHORT_NAMES.get(p, p)}={_fmt(params[p])}" for p in varying
        )
    constant = ", ".join(f"{SHORT_NAMES.get(p, p)}={_fmt(v)}" for p, v in params.items())
    return f"{model} ({constant})"
