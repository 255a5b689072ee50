"""Which acceptance rule and temperature a log's per-position counts look like, under the
``distribution`` model's family (issue #28; docs/model.md, "Calibration from serving logs").

The family is the model's defaults (Zipf targets over 32,000 tokens of 1.5 and 5 bits, 30 %
hard, 64 contexts each) with a temperature mismatch of size ``c`` growing by ``g`` a
position (``c (1 + g (i - 1))`` at position i), sampled at temperature T by the hf order
(engine.acceptance.samplers). For each rule of :data:`RULES` and each T of
:data:`TEMPERATURES`, ``(c, g)`` is fitted by maximum likelihood to the binomial counts
(engine.acceptance.fitting) on a grid: each difficulty's acceptance is computed in closed
form (engine.acceptance.power_law) for :data:`SIZES`, a position's is interpolated in log
``c``, and the cycle's conditional rates mix the difficulties as the model does. Then, per
rule, the profile likelihood over T gives the best T and its 95 % interval (the Ts within
``chi2_1(0.95) / 2`` of the best log-likelihood), and the deviance against the observed
rates (``G^2`` on ``m`` degrees of freedom: the best grid point tested as a simple
hypothesis) whether the rule fits at all.
A one-hot draft's acceptance is ``p(argmax q)``, the target's top probability, which the
mismatch does not move: its rates pin T. A sampled draft's (rejection, exact match) trade T
against ``c``, so their intervals are wide.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

RULES = ("one_hot", "rejection", "exact_match")
TEMPERATURES = tuple(round(0.05 * i, 2) for i in range(1, 31))  # 0.05 .. 1.5
SIZES = np.geomspace(0.25, 8.0, 61)  # the draft's temperature ratio (> 1: a flatter draft)
GROWTHS = np.linspace(0.0, 1.0, 11)
CHI2_1_95 = 3.841458820694124
P_CONSISTENT = 0.05


@dataclass(frozen=True)
class RuleFit:
    """A rule's fit: the best T, its 95 % interval, the mismatch and growth at that T (NaN
    for one_hot, which they do not move), the log-likelihood, the deviance ``G^2`` with its
    degrees of freedom and p-value."""

    rule: str
    temperature: float
    low: float
    high: float
    size: float
    growth: float
    log_likelihood: float
    deviance: float
    dof: int
    p_value: float

    @property
    def consistent(self) -> bool:
        return self.p_value >= P_CONSISTENT


def family_config() -> Any:
    from engine.core.config import SpecConfig

    return SpecConfig().replace(
        **{"draft_model": "distribution", "acceptance.mismatch": "temperature"}
    )


def _curves(family: Any, rule: str, temperature: float) -> np.ndarray:
    """Each difficulty's first-position acceptance at every size of SIZES: (2, sizes)."""
    from engine.acceptance import power_law
    from engine.acceptance.distribution import zipf_exponents

    out = np.empty((2, SIZES.size))
    # One-hot accepts with p(argmax q), the target's top probability: no size moves it.
    sizes = SIZES[:1] if rule == "one_hot" else SIZES
    for g in (0, 1):
        s = zipf_exponents(family, g)[None, :]
        cap = np.full((sizes.size, s.size), family.vocab, dtype=np.int64)
        sampling = (temperature, family.top_k, family.top_p, family.min_p)
        a, n_p = power_law.side(np.broadcast_to(s, cap.shape), cap, *sampling)
        b, n_q = power_law.side(s / sizes[:, None], cap, *sampling)
        out[g] = power_law.acceptance(a, n_p, b, n_q, rule).mean(axis=1)
    return out


def _profile(
    curves: np.ndarray, weights: tuple[float, float], accepted: np.ndarray, reached: np.ndarray
) -> tuple[float, float, float]:
    """(log-likelihood, size, growth) at the best (size, growth) of the grid."""
    from engine.acceptance.fitting import log_likelihood

    m = accepted.size
    depth = np.arange(m, dtype=np.float64)
    log_sizes = np.log(SIZES)
    best = (-math.inf, float(SIZES[0]), 0.0)
    for growth in GROWTHS:
        here = np.log(SIZES[:, None] * (1.0 + growth * depth[None, :]))  # (sizes, m)
        survival = np.zeros((SIZES.size, m + 1))
        for g, weight in enumerate(weights):
            rates = np.interp(here, log_sizes, curves[g])
            survival += weight * np.concatenate(
                (np.ones((SIZES.size, 1)), np.cumprod(rates, axis=1)), axis=1
            )
        with np.errstate(divide="ignore", invalid="ignore"):
            conditional = np.clip(survival[:, 1:] / survival[:, :-1], 1e-12, 1 - 1e-12)
        values = log_likelihood(accepted[None, :], reached[None, :], conditional)
        i = int(np.argmax(values))
        if values[i] > best[0]:
            best = (float(values[i]), float(SIZES[i]), float(growth))
    return best


def fit_rules(accepted: Any, reached: Any) -> list[RuleFit]:
    """Each rule's fit to the per-position counts (module docstring), best first."""
    counts = (tuple(float(a) for a in accepted), tuple(float(n) for n in reached))
    return list(_fit_rules(*counts))


@lru_cache(maxsize=16)
def _fit_rules(accepted: Any, reached: Any) -> tuple[RuleFit, ...]:
    from engine.acceptance.distribution import difficulty_weights, family_of
    from engine.acceptance.fitting import log_likelihood
    from engine.acceptance.lab import chi2_sf

    accepted = np.asarray(accepted, dtype=np.float64)
    reached = np.asarray(reached, dtype=np.float64)
    config = family_config()
    family, weights = family_of(config), difficulty_weights(config)
    observed = np.clip(accepted / reached, 1e-12, 1 - 1e-12)
    saturated = float(log_likelihood(accepted, reached, observed))
    # Each grid point is a simple hypothesis, and the best one is tested on all m degrees of
    # freedom: drawn from a point of the grid, the counts are refused 5 % of the time (the
    # grid cannot move to absorb their noise as a continuous fit's m - 3 would assume).
    dof = accepted.size
    fits = []
    for rule in RULES:
        profile = [
            (t, *_profile(_curves(family, rule, t), weights, accepted, reached))
            for t in TEMPERATURES
        ]
        t, top, size, growth = max(profile, key=lambda row: row[1])
        if rule == "one_hot":  # the mismatch does not move p(argmax q): nothing fitted
            size = growth = math.nan
        inside = [row[0] for row in profile if 2.0 * (top - row[1]) <= CHI2_1_95]
        deviance = max(2.0 * (saturated - top), 0.0)
        p_value = chi2_sf(deviance, dof)
        fit = RuleFit(rule, t, min(inside), max(inside), size, growth, top, deviance, dof, p_value)
        fits.append(fit)
    return tuple(sorted(fits, key=lambda f: -f.log_likelihood))


DRAFTS = {
    "one_hot": "a one-hot (argmax) draft",
    "rejection": "a sampled draft verified by rejection",
    "exact_match": "a sampled draft verified by exact match",
}


def verdict(fits: list[RuleFit]) -> str:
    """What the fits say, in words: every rule that fits and its T, or that none does."""
    good = [f for f in fits if f.consistent]
    if not good:
        return (
            "no rule of the distribution family fits these rates (every G^2 p-value < "
            f"{P_CONSISTENT:g}): the family's defaults do not describe this draft"
        )
    looks = "; or ".join(
        f"{DRAFTS[f.rule]} at T ~ {f.temperature:g} ({f.low:g} to {f.high:g})" for f in good
    )
    return f"your rates look like {looks}"
