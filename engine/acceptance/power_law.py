"""Exact acceptance of the ordered Zipf family in closed form (issue #28's speed goal).

A Zipf target over ``V`` ranks is ``p_r ~ r^-a``; a temperature-mismatched draft is
``q_r ~ r^-b`` and a truncated one is the target cut to its first ``m`` ranks. Temperature
multiplies an exponent by ``1/T``, and top-k, top-p and min-p each keep a prefix of the
ranks (the most probable tokens come first on both sides), so after every transform each
side is a power law on a prefix: ``(exponent, n)``. Every rule's acceptance is then a few
power sums, ``S(n, a) = sum_{r <= n} r^-a`` and ``L(n, a) = sum_{r <= n} r^-a log r``, which
:func:`power_sum` and :func:`log_power_sum` give by the Euler-Maclaurin formula (the first
``HEAD - 1`` terms summed, the rest as an integral and ``TERMS`` Bernoulli corrections; their
error is below 1e-14 of the sum), for a block of contexts at once and at any ``V``:

- rejection: ``p_r / q_r`` is monotone in ``r``, so ``min(p, q)`` is one side up to the
  rank where they cross and the other after it;
- exact_match: ``S(n, a + b) / (Z_p Z_q)``; one_hot: ``p_1 = 1 / Z_p`` (the draft's argmax is
  rank 1); greedy: 1 (both argmaxes are rank 1);
- typical: ``p_1 > min(eps, delta exp(-H))`` with ``H = log Z_p + a L(n, a) / Z_p``.

The direct computation (:mod:`engine.acceptance.rules` on whole distributions) is the
reference; the tests hold the two to 1e-12.
"""

from __future__ import annotations

import math

import numpy as np

from engine.acceptance.rules import TYPICAL_DELTA, TYPICAL_EPS
from engine.acceptance.samplers import FULL

HEAD = 16  # ranks below this are summed term by term
TERMS = 4  # Bernoulli corrections B_2 .. B_8 (the next is below 1e-14 of the sum)
_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30)
_WEIGHTS = tuple(b / math.factorial(2 * k + 2) for k, b in enumerate(_BERNOULLI))
_RANKS = np.arange(1, HEAD, dtype=np.float64)
_LOG_RANKS = np.log(_RANKS)


def _phi1(z: np.ndarray) -> np.ndarray:
    """``(e^z - 1) / z`` (1 at 0)."""
    safe = np.where(z == 0.0, 1.0, z)
    return np.where(z == 0.0, 1.0, np.expm1(safe) / safe)


def _phi2(z: np.ndarray) -> np.ndarray:
    """``(e^z (z - 1) + 1) / z^2``, by its series near 0."""
    small = np.abs(z) < 1e-2
    safe = np.where(small, 1.0, z)
    with np.errstate(over="ignore", invalid="ignore"):
        far = ((safe - 1.0) * np.expm1(safe) + safe) / (safe * safe)
    series = 0.5 + z / 3 + z**2 / 8 + z**3 / 30 + z**4 / 144 + z**5 / 840
    return np.where(small, series, far)


def head_terms(a: np.ndarray) -> np.ndarray:
    """``r^-a`` for r = 1 .. HEAD - 1 (last axis): pass to the sums that share ``a``."""
    return np.exp(-np.asarray(a, dtype=np.float64)[..., None] * _LOG_RANKS)


def _head(n: np.ndarray, a: np.ndarray, logged: bool, terms: np.ndarray | None) -> np.ndarray:
    """The first ``min(n, HEAD - 1)`` terms, summed."""
    terms = head_terms(a) if terms is None else np.broadcast_to(terms, (*n.shape, HEAD - 1))
    if logged:
        terms = terms * _LOG_RANKS
    kept = np.minimum(n, HEAD - 1)[..., None] >= _RANKS
    return np.where(kept, terms, 0.0).sum(axis=-1)


def _sums(n: np.ndarray, a: np.ndarray, logged: bool, terms: np.ndarray | None) -> np.ndarray:
    n = np.asarray(n, dtype=np.float64)
    a = np.asarray(a, dtype=np.float64)
    n, a = np.broadcast_arrays(n, a)
    out = _head(n, a, logged, terms)
    tail = n >= HEAD
    if not tail.any():
        return out
    m, x, e = float(HEAD), n[tail], a[tail]
    t0, span = math.log(m), np.log(x / m)
    u = 1.0 - e
    scale = np.exp(u * t0)
    if logged:  # integral of t e^{ut} over [t0, t0 + span]
        integral = scale * (t0 * span * _phi1(u * span) + span**2 * _phi2(u * span))
        ends = (np.exp(-e * t0) * t0 + np.exp(-e * np.log(x)) * np.log(x)) / 2
    else:
        integral = scale * span * _phi1(u * span)
        ends = (np.exp(-e * t0) + np.exp(-e * np.log(x))) / 2
    # f^(j)(x) = (-1)^j x^(-a-j) (P_j log x - D_j) with P_j the rising factorial (a)_j and
    # D_j its derivative in a; for f = x^-a (not logged), f^(j) = (-1)^j P_j x^(-a-j).
    corrections = np.zeros_like(e)
    rising, slope = np.ones_like(e), np.zeros_like(e)
    for j in range(1, 2 * TERMS):
        rising, slope = rising * (e + j - 1), slope * (e + j - 1) + rising
        if j % 2 == 0:
            continue
        weight = _WEIGHTS[j // 2]
        at = []
        for point in (np.log(x), np.full_like(e, t0)):
            power = -np.exp(-(e + j) * point)  # (-1)^j with j odd
            at.append(power * (rising * point - slope) if logged else power * rising)
        corrections += weight * (at[0] - at[1])
    out[tail] += integral + ends + corrections  # after the head's HEAD - 1 terms
    return out


def power_sum(n: np.ndarray, a: np.ndarray, terms: np.ndarray | None = None) -> np.ndarray:
    """``S(n, a) = sum_{r=1}^{n} r^-a`` (0 when n = 0), elementwise; ``terms``: a's
    :func:`head_terms`, when already computed."""
    return _sums(n, a, False, terms)


def log_power_sum(n: np.ndarray, a: np.ndarray, terms: np.ndarray | None = None) -> np.ndarray:
    """``L(n, a) = sum_{r=1}^{n} r^-a log r``, elementwise."""
    return _sums(n, a, True, terms)


def top_p_prefix(a: np.ndarray, n: np.ndarray, top_p: float) -> np.ndarray:
    """The ranks top-p keeps of ``r^-a`` on ``1..n``: those whose more probable ranks hold
    less than ``top_p`` of the mass (bisection on the rank)."""
    if top_p >= 1.0:
        return n
    terms = head_terms(a)  # the same exponents at every step of the bisection
    goal = top_p * power_sum(n, a, terms)
    low, high = np.zeros_like(n), n.copy()  # S(low) < goal <= S(high)
    while True:
        open_ = high - low > 1
        if not open_.any():
            return low + 1
        mid = (low + high) // 2
        below = power_sum(mid, a, terms) < goal
        low = np.where(open_ & below, mid, low)
        high = np.where(open_ & ~below, mid, high)


def min_p_prefix(a: np.ndarray, n: np.ndarray, min_p: float) -> np.ndarray:
    """The ranks min-p keeps: ``r^-a >= min_p`` (the top rank's share is 1)."""
    if min_p <= 0.0:
        return n
    with np.errstate(divide="ignore", over="ignore"):
        last = np.floor(np.exp(np.minimum(-math.log(min_p) / a, 700.0)))
    return np.clip(last, 1, n).astype(n.dtype)


def side(
    exponent: np.ndarray,
    cap: np.ndarray,
    temperature: float,
    top_k: int,
    top_p: float,
    min_p: float,
    order: tuple[str, ...] = FULL,
) -> tuple[np.ndarray, np.ndarray]:
    """One side after the transforms in ``order`` (as rules.sampled applies them):
    (exponent, kept ranks); temperature 0 keeps rank 1 alone."""
    if temperature == 0.0 and "temperature" in order:
        return exponent, np.ones_like(cap)
    for step in order:
        if step == "temperature":
            exponent = exponent / temperature
        elif step == "top_k" and top_k > 0:
            cap = np.minimum(cap, top_k)
        elif step == "top_p":
            cap = top_p_prefix(exponent, cap, top_p)
        elif step == "min_p":
            cap = min_p_prefix(exponent, cap, min_p)
    return exponent, cap


def acceptance(
    a: np.ndarray, n_p: np.ndarray, b: np.ndarray, n_q: np.ndarray, rule: str
) -> np.ndarray:
    """Each context's acceptance by ``rule``: target ``r^-a`` on ``1..n_p``, draft ``r^-b``
    on ``1..n_q`` (module docstring)."""
    a, b = np.broadcast_arrays(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64))
    n_p, n_q = np.broadcast_to(n_p, a.shape), np.broadcast_to(n_q, a.shape)
    t_a = head_terms(a)
    z_p = power_sum(n_p, a, t_a)
    if rule == "greedy":
        return np.ones_like(z_p)
    if rule == "one_hot":
        return 1.0 / z_p
    if rule == "typical":
        entropy = np.log(z_p) + a * log_power_sum(n_p, a, t_a) / z_p
        threshold = np.minimum(TYPICAL_EPS, TYPICAL_DELTA * np.exp(-entropy))
        return (1.0 / z_p > threshold).astype(np.float64)
    t_b = head_terms(b)
    z_q = power_sum(n_q, b, t_b)
    n = np.minimum(n_p, n_q)
    if rule == "exact_match":
        return power_sum(n, a + b, t_a * t_b) / (z_p * z_q)
    # rejection: log(p_r / q_r) = (b - a) log r + log(z_q / z_p), monotone in r.
    gap = b - a
    same = gap == 0.0
    safe = np.where(same, 1.0, gap)
    with np.errstate(over="ignore"):
        cross = np.floor(np.exp(np.clip(np.log(z_p / z_q) / safe, -1.0, 60.0)))
    # For gap > 0 (the draft falls faster) p is the smaller up to the crossing and q after
    # it; for gap < 0, q up to it and p after.
    j = np.clip(cross, 0, n).astype(n.dtype)
    up_p, up_q = power_sum(j, a, t_a) / z_p, power_sum(j, b, t_b) / z_q
    all_p, all_q = power_sum(n, a, t_a) / z_p, power_sum(n, b, t_b) / z_q
    mixed = np.where(gap > 0, up_p + (all_q - up_q), up_q + (all_p - up_p))
    return np.where(same, np.minimum(all_p, all_q), mixed)
