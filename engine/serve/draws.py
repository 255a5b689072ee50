"""The serving simulator's random numbers: counter-based, so that a request's draws at its
n-th step are the same whatever runs beside it (common random numbers across policies)."""

from __future__ import annotations

import numpy as np

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_STEP = np.uint64(0xD1B54A32D192ED03)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


def mix(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser, element-wise on uint64 (wrapping)."""
    x = (x ^ (x >> np.uint64(30))) * _M1
    x = (x ^ (x >> np.uint64(27))) * _M2
    return x ^ (x >> np.uint64(31))


def uniforms(key: int, ids: np.ndarray, counters: np.ndarray, stream: int) -> np.ndarray:
    """Uniforms in [0, 1) for request ``ids`` at their ``counters``-th step (arrays that
    broadcast), on ``stream``: the same numbers whatever else runs beside them."""
    with np.errstate(over="ignore"):
        x = np.uint64(key) ^ (np.asarray(ids).astype(np.uint64) * _GOLDEN)
        x = mix(x ^ (np.asarray(counters).astype(np.uint64) * _STEP + np.uint64(stream)))
        x = mix(x)
    return (x >> np.uint64(11)).astype(np.float64) * 2.0**-53
