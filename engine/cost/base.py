"""What every cost model answers, and the small helpers they share."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from engine.core.cost_model import CostModel, Times

__all__ = ["CostModel", "Times", "as_float", "check_parameter", "scalar_or_array"]


def as_float(name: str, value: npt.ArrayLike, minimum: float) -> npt.NDArray[np.float64]:
    """``value`` as a float array, every element finite and >= ``minimum``, else ValueError."""
    if type(value) is float or type(value) is int:  # a scalar: checked without array passes
        if not (math.isfinite(value) and value >= minimum):
            raise ValueError(f"{name}: must be a finite number >= {minimum:g}, got {value!r}")
        return np.asarray(value, dtype=np.float64)
    array = np.asarray(value, dtype=np.float64)
    if not np.isfinite(array).all() or (array < minimum).any():
        raise ValueError(f"{name}: must be a finite number >= {minimum:g}, got {value!r}")
    return array


def scalar_or_array(array: npt.NDArray[np.float64]) -> Times:
    """A 0-d result as a plain float, anything else as the array."""
    return float(array) if array.ndim == 0 else array


def check_parameter(name: str, value: float, low: float, high: float, low_open: bool) -> None:
    """Raise ValueError naming ``name`` unless ``value`` lies in its range."""
    ok = (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and (value > low if low_open else value >= low)
        and value <= high
    )
    if not ok:
        bracket = "(" if low_open else "["
        raise ValueError(f"{name}: must be in {bracket}{low:g}, {high:g}], got {value!r}")
