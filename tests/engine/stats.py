"""Statistical helpers for tests: critical values without scipy."""

from __future__ import annotations

import math

import numpy as np

# Two-sided z for a false-alarm rate of 1e-4 per check: with fixed seeds a test is
# deterministic, and this keeps a correct engine comfortably inside the bound.
Z_STRICT = 3.89


def chi2_critical(dof: int, z: float = Z_STRICT) -> float:
    """Upper quantile of chi-square(dof) by the Wilson-Hilferty approximation."""
    h = 2.0 / (9.0 * dof)
    return dof * (1.0 - h + z * math.sqrt(h)) ** 3


def chi2_statistic(observed: np.ndarray, expected_prob: np.ndarray) -> tuple[float, int]:
    """Pearson's statistic of counts against probabilities, pooling cells expected < 5."""
    total = observed.sum()
    expected = expected_prob * total
    keep = expected >= 5
    obs = np.append(observed[keep], observed[~keep].sum())
    exp = np.append(expected[keep], expected[~keep].sum())
    if exp[-1] < 5:  # pool the rare tail into the last kept cell
        obs[-2] += obs[-1]
        exp[-2] += exp[-1]
        obs, exp = obs[:-1], exp[:-1]
    stat = float(((obs - exp) ** 2 / exp).sum())
    return stat, len(obs) - 1


def ks_two_sample(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """Two-sample Kolmogorov-Smirnov statistic and its critical value at alpha = 1e-4."""
    values = np.union1d(a, b)
    cdf_a = np.searchsorted(np.sort(a), values, side="right") / a.size
    cdf_b = np.searchsorted(np.sort(b), values, side="right") / b.size
    stat = float(np.max(np.abs(cdf_a - cdf_b)))
    c_alpha = math.sqrt(-0.5 * math.log(1e-4 / 2))
    return stat, c_alpha * math.sqrt((a.size + b.size) / (a.size * b.size))
