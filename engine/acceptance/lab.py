"""The losslessness lab (issue #28): each acceptance rule's real algorithm run token by
token at one draft position, and a test of whether what it emits follows the target.

:func:`emit` runs a rule ``n`` times on one context (target ``p``, draft ``q``, after their
sampling transforms) and returns the token each run emits and whether the drafted token was
accepted:

- ``rejection``: the draft samples ``d ~ q``; it is kept with probability
  ``min(1, p(d)/q(d))``, else the token comes from the residual ``norm(max(0, p - q))``;
- ``one_hot``: the draft proposes ``d = argmax q``, kept with probability ``p(d)``, else the
  token comes from ``p`` without ``d``, renormalised;
- ``exact_match``: the target samples its own token ``x ~ p``; the sampled draft ``d ~ q``
  is accepted when they agree, and ``x`` is emitted either way;
- ``greedy``: the target's argmax (the rule of temperature 0);
- ``typical`` (Medusa): ``d = argmax q`` is kept when ``p(d) > min(eps, delta exp(-H(p)))``,
  else the target's own sample is emitted: lossy, as Medusa means it to be.

``broken=True`` draws a rejected position's token from ``p`` instead of the residual (or
``p`` without ``d``): the bug an engine shipped (xLLM PR 2175), which :func:`chi_square`
detects. The emitted tokens of a lossless rule follow ``p``: :func:`chi_square` tests it
(Pearson's statistic, bins of expected count below 5 merged, its p-value from the
regularised incomplete gamma function), and :func:`tv_distance` measures how far a lossy
rule's tokens are from ``p``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from engine.acceptance.distribution import RULES
from engine.acceptance.rules import typical_kept


def _draw(probs: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Tokens drawn from ``probs`` by inverse transform of the uniforms ``u``."""
    cdf = np.cumsum(probs)
    return np.minimum(np.searchsorted(cdf, u * cdf[-1], side="right"), probs.size - 1)


def emit(
    p: np.ndarray,
    q: np.ndarray,
    rule: str,
    n: int,
    rng: np.random.Generator,
    broken: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """``n`` runs of ``rule`` on one context (module docstring): (emitted tokens, whether
    the drafted token was accepted)."""
    p = np.asarray(p, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    if rule == "greedy":
        token = int(np.argmax(p))
        return np.full(n, token), np.full(n, token == int(np.argmax(q)))
    if rule == "exact_match":
        own, drafted = _draw(p, rng.random(n)), _draw(q, rng.random(n))
        return own, own == drafted
    if rule == "rejection":
        drafted = _draw(q, rng.random(n))
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(q[drafted] > 0, p[drafted] / q[drafted], 0.0)
        accepted = rng.random(n) < np.minimum(1.0, ratio)
        fallback = p if broken else np.maximum(p - q, 0.0)
        if fallback.sum() <= 0.0:  # p == q: every draft is kept
            fallback = p
        corrected = _draw(fallback, rng.random(n))
        return np.where(accepted, drafted, corrected), accepted
    drafted_one = int(np.argmax(q))
    if rule == "one_hot":
        accepted = rng.random(n) < p[drafted_one]
        rest = p.copy()
        if not broken:
            rest[drafted_one] = 0.0
        if rest.sum() <= 0.0:
            rest = p
        corrected = _draw(rest, rng.random(n))
        return np.where(accepted, drafted_one, corrected), accepted
    if rule == "typical":
        keep = bool(typical_kept(p[None], np.array([drafted_one]))[0])
        own = _draw(p, rng.random(n))
        return (np.full(n, drafted_one) if keep else own), np.full(n, keep)
    raise ValueError(f"unknown acceptance rule {rule!r}; known: {', '.join(RULES)}")


@dataclass(frozen=True)
class ChiSquare:
    """Pearson's test that counts follow a distribution: the statistic, its degrees of
    freedom and the p-value (the chance of a statistic at least this large if they do)."""

    statistic: float
    dof: int
    p_value: float

    def __add__(self, other: ChiSquare) -> ChiSquare:
        """Independent tests (contexts) pooled: statistics and degrees of freedom add."""
        statistic = self.statistic + other.statistic
        dof = self.dof + other.dof
        return ChiSquare(statistic, dof, chi2_sf(statistic, dof))


def chi_square(counts: np.ndarray, p: np.ndarray) -> ChiSquare:
    """Pearson's test of ``counts`` (by token) against ``p``. Tokens whose expected count is
    below 5 are pooled into one bin (dropped if the pool is still below 5); a token emitted
    that ``p`` never gives makes the p-value 0."""
    counts = np.asarray(counts, dtype=np.float64)
    n = counts.sum()
    expected = n * np.asarray(p, dtype=np.float64)
    if np.any((expected == 0) & (counts > 0)):
        return ChiSquare(math.inf, max(int((expected > 0).sum()) - 1, 1), 0.0)
    big = expected >= 5.0
    observed_bins = list(counts[big])
    expected_bins = list(expected[big])
    if expected[~big].sum() >= 5.0:
        observed_bins.append(counts[~big].sum())
        expected_bins.append(expected[~big].sum())
    observed, wanted = np.array(observed_bins), np.array(expected_bins)
    if wanted.size < 2:
        return ChiSquare(0.0, 1, 1.0)
    statistic = float(((observed - wanted) ** 2 / wanted).sum())
    dof = int(wanted.size - 1)
    return ChiSquare(statistic, dof, chi2_sf(statistic, dof))


def tv_distance(counts: np.ndarray, p: np.ndarray) -> float:
    """Total variation distance between the emitted tokens' frequencies and ``p``."""
    counts = np.asarray(counts, dtype=np.float64)
    return 0.5 * float(np.abs(counts / counts.sum() - p).sum())


def chi2_sf(x: float, dof: int) -> float:
    """P(X >= x) for X chi-square with ``dof`` degrees of freedom: the regularised upper
    incomplete gamma function Q(dof/2, x/2), by its series below a + 1 and its continued
    fraction above (Numerical Recipes, section 6.2), to 1e-14 relative."""
    if x <= 0.0:
        return 1.0
    if math.isinf(x):
        return 0.0
    a, z = dof / 2.0, x / 2.0
    log_front = a * math.log(z) - z - math.lgamma(a)
    if z < a + 1.0:  # the series of P(a, z)
        term = total = 1.0 / a
        k = a
        for _ in range(10_000):
            k += 1.0
            term *= z / k
            total += term
            if abs(term) < abs(total) * 1e-15:
                break
        return max(0.0, 1.0 - total * math.exp(log_front))
    # Lentz's continued fraction of Q(a, z).
    tiny = 1e-300
    b = z + 1.0 - a
    c = 1.0 / tiny
    d = 1.0 / b
    h = d
    for i in range(1, 10_000):
        an = -i * (i - a)
        b += 2.0
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1.0 / d
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return min(1.0, math.exp(log_front) * h)


def emitted_distribution(
    p: np.ndarray, q: np.ndarray, rule: str, broken: bool = False
) -> np.ndarray:
    """The exact distribution of the token :func:`emit` gives: ``p`` itself for a lossless
    rule; the draft's argmax or ``p`` for typical acceptance; a mix for a broken residual."""
    p = np.asarray(p, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    if rule == "exact_match":
        return p
    if rule == "greedy":
        return _one_hot(p.size, int(np.argmax(p)))
    if rule == "rejection":
        kept = np.minimum(p, q)
        residual = p if broken else np.maximum(p - q, 0.0)
        if residual.sum() <= 0.0:
            return kept / kept.sum()
        return kept + (1.0 - kept.sum()) * residual / residual.sum()
    drafted = int(np.argmax(q))
    if rule == "one_hot":
        rest = p.copy()
        if not broken:
            rest[drafted] = 0.0
        if rest.sum() <= 0.0:
            return p
        out = (1.0 - p[drafted]) * rest / rest.sum()
        out[drafted] += p[drafted]
        return out
    if rule == "typical":
        if typical_kept(p[None], np.array([drafted]))[0]:
            return _one_hot(p.size, drafted)
        return p
    raise ValueError(f"unknown acceptance rule {rule!r}; known: {', '.join(RULES)}")


def _one_hot(size: int, token: int) -> np.ndarray:
    out = np.zeros(size)
    out[token] = 1.0
    return out


@dataclass(frozen=True)
class LabRow:
    """One rule in the lab: its exact acceptance and the emitted tokens' exact distance from
    the target (both over the family's contexts at the first position, weighted by
    difficulty), the acceptance measured over the tokens sampled, and the chi-square test
    of those tokens against the target."""

    rule: str
    broken: bool
    expected: float
    measured: float
    tv: float
    test: ChiSquare

    @property
    def lossless(self) -> bool:
        """What the sampled tokens say: no evidence against p at the 0.001 level."""
        return self.test.p_value >= 1e-3


def lab_rows(config: object, tokens: int, seed: int = 0, broken: bool = False) -> list[LabRow]:
    """Every rule (and, with ``broken``, rejection and one_hot with the broken residual) on
    the ``distribution`` scenario ``config``: ``tokens`` tokens in all, shared by the
    contexts in proportion to their difficulty's weight (one at least each)."""
    from engine.acceptance.distribution import check, context_count, family_contexts, family_of
    from engine.acceptance.rules import acceptance

    check(config)
    from engine.acceptance.distribution import difficulty_weights

    family = family_of(config)
    weights = difficulty_weights(config)
    cases = [(rule, False) for rule in RULES]
    if broken:
        cases += [("rejection", True), ("one_hot", True)]
    rows = []
    for rule, is_broken in cases:
        rng = np.random.default_rng([seed, RULES.index(rule), int(is_broken)])
        expected = measured = tv = 0.0
        test: ChiSquare | None = None
        for g, weight in enumerate(weights):
            if weight == 0.0:
                continue
            contexts = context_count(family)
            share, each = weight / contexts, max(1, round(tokens * weight / contexts))
            for p_block, q_block in family_contexts(family, g, 1):
                expected += share * float(acceptance(p_block, q_block, rule).sum())
                for p, q in zip(p_block, q_block, strict=True):
                    emitted, kept = emit(p, q, rule, each, rng, broken=is_broken)
                    measured += share * float(kept.mean())
                    exact = emitted_distribution(p, q, rule, broken=is_broken)
                    tv += share * 0.5 * float(np.abs(exact - p).sum())
                    here = chi_square(np.bincount(emitted, minlength=p.size), p)
                    test = here if test is None else test + here
        assert test is not None
        rows.append(LabRow(rule, is_broken, expected, measured, tv, test))
    return rows
