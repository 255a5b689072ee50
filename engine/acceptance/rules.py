"""Acceptance from distributions (docs/model.md, "Acceptance from distributions"; issue #28).

At a draft position the target samples from ``p`` and the draft from ``q`` over the same
vocabulary, each after its sampling transforms (:func:`sampled`: temperature, ``T = 0``
meaning argmax, then top-k, top-p and min-p, each renormalised). The probability that a
drafted token is accepted, by rule (:data:`RULES`, :func:`acceptance`):

- ``rejection`` (Leviathan et al., Chen et al.; lossless): ``sum min(p, q) = 1 - TV(p, q)``;
- ``one_hot`` (the draft proposes its argmax, accepted with ``p(d)``; lossless): ``p(argmax q)``;
- ``exact_match`` (a sampled draft token, accepted when the target's own sample equals it;
  lossless): ``sum p q``;
- ``greedy`` (temperature 0 on both sides): 1 when the argmaxes agree, else 0;
- ``typical`` (Medusa's typical acceptance; lossy): the draft's argmax ``d`` is accepted
  when ``p(d) > min(eps, delta exp(-H(p)))``, ``H`` in nats, Medusa's defaults
  ``eps = 0.09`` (posterior_threshold) and ``delta = 0.3`` (posterior_alpha).

A synthetic family of contexts (:func:`zipf_logits`, :func:`draft_logits`): a power-law
(Zipf) target over ``V`` tokens whose exponent gives a stated entropy, and a draft derived
from it by a temperature mismatch (the draft's logits divided by ``size``), Gaussian noise
on the logits (standard deviation ``size``) or truncation (the draft keeps the target's top
``size`` tokens). Every function works on a block of contexts at once, one row each.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from engine.acceptance.rule_names import MISMATCHES, RULES
from engine.acceptance.samplers import FULL

TYPICAL_EPS = 0.09  # Medusa's posterior_threshold
TYPICAL_DELTA = 0.3  # Medusa's posterior_alpha
# Contexts are worked on this many vocabulary entries at a time (memory stays bounded).
BLOCK_ENTRIES = 1 << 21


def softmax(logits: np.ndarray) -> np.ndarray:
    """Row-wise softmax (``-inf`` logits get probability 0)."""
    shifted = logits - logits.max(axis=1, keepdims=True)
    weights = np.exp(shifted)
    return weights / weights.sum(axis=1, keepdims=True)


def sampled(
    logits: np.ndarray,
    temperature: float,
    top_k: int = 0,
    top_p: float = 1.0,
    min_p: float = 0.0,
    order: tuple[str, ...] = FULL,
) -> np.ndarray:
    """The distribution a side samples from, row by row: the transforms in ``order``
    (engine.acceptance.samplers), each on the last one's result: ``temperature`` on the
    logits (0: all mass on the argmax, the first on a tie; not in ``order``: 1), top-k (0:
    off), top-p (1: off) and min-p (0: off), each keeping the most probable tokens and
    renormalising (a tie at the edge of top-k keeps the lower token ids)."""
    rows, vocab = logits.shape
    if temperature == 0.0 and "temperature" in order:  # the argmax, whatever is cut before
        out = np.zeros_like(logits, dtype=np.float64)
        out[np.arange(rows), np.argmax(logits, axis=1)] = 1.0
        return out
    logits = np.asarray(logits, dtype=np.float64)
    if order[:1] == ("temperature",):  # on the logits themselves
        probs, order = softmax(logits / temperature), order[1:]
    else:
        probs = softmax(logits)
    for step in order:
        if step == "temperature" and temperature != 1.0:
            with np.errstate(divide="ignore"):
                probs = softmax(np.log(probs) / temperature)
        elif step == "top_k" and 0 < top_k < vocab:
            # The k-th largest value by partition (not a sort); of the tokens tied with it,
            # the lowest ids fill what the larger ones leave.
            kth = -np.partition(-probs, top_k - 1, axis=1)[:, top_k - 1 : top_k]
            above, tied = probs > kth, probs == kth
            room = top_k - above.sum(axis=1, keepdims=True)
            probs = _kept(probs, above | (tied & (np.cumsum(tied, axis=1) <= room)))
        elif step == "top_p" and top_p < 1.0:
            order_ = np.argsort(-probs, axis=1, kind="stable")
            ranked = np.take_along_axis(probs, order_, axis=1)
            before = np.cumsum(ranked, axis=1) - ranked  # mass of the more probable tokens
            keep_ranked = before < top_p  # the smallest prefix reaching top_p
            keep = np.zeros_like(keep_ranked)
            np.put_along_axis(keep, order_, keep_ranked, axis=1)
            probs = _kept(probs, keep)
        elif step == "min_p" and min_p > 0.0:
            probs = _kept(probs, probs >= min_p * probs.max(axis=1, keepdims=True))
    return probs


def _kept(probs: np.ndarray, keep: np.ndarray) -> np.ndarray:
    out = np.where(keep, probs, 0.0)
    return out / out.sum(axis=1, keepdims=True)


def acceptance(p: np.ndarray, q: np.ndarray, rule: str) -> np.ndarray:
    """The probability that the drafted token is accepted, one per row of ``p`` (the
    target's sampled distribution) and ``q`` (the draft's), by ``rule`` (module docstring)."""
    rows = np.arange(p.shape[0])
    if rule == "rejection":
        return np.minimum(p, q).sum(axis=1)
    if rule == "exact_match":
        return (p * q).sum(axis=1)
    drafted = np.argmax(q, axis=1)
    if rule == "one_hot":
        return p[rows, drafted]
    if rule == "greedy":
        return (np.argmax(p, axis=1) == drafted).astype(np.float64)
    if rule == "typical":
        return typical_kept(p, drafted).astype(np.float64)
    raise ValueError(f"unknown acceptance rule {rule!r}; known: {', '.join(RULES)}")


def rank_acceptance(p: np.ndarray, q: np.ndarray, rule: str, ranks: int) -> np.ndarray:
    """Acceptance by rank when the draft offers ``ranks`` candidates at a tree node: entry
    ``[i, c]`` is the probability that row i's (c + 1)-th candidate is the one accepted
    (docs/model.md, "Acceptance from distributions"; a row sums to at most 1):

    - ``rejection``: SpecInfer's multi-step speculative sampling (Miao et al., Algorithm 2):
      candidates drawn from ``q`` one by one; each is kept with ``min(1, p'(d)/q(d))``,
      ``p'`` the target after the earlier rejections, ``p' <- norm(max(0, p' - q))``;
      candidate c is kept with ``sum min(p', q)`` once the earlier ones were rejected;
    - ``exact_match``: candidates drawn from ``q``; the target's own sample ``x`` is
      accepted at the first candidate equal to it: ``sum_x p(x) (1 - q(x))^c q(x)``;
    - ``one_hot``: the draft's ``ranks`` most probable tokens (EAGLE's and SGLang's
      target-only tree): candidate c is accepted with ``p(d_c)`` (the rejected ones are
      taken out of ``p``);
    - ``greedy``: 1 at the candidate that is the target's argmax;
    - ``typical``: 1 at the first candidate (in the draft's order) Medusa's threshold keeps.
    """
    rows = np.arange(p.shape[0])
    out = np.zeros((p.shape[0], ranks))
    if rule == "rejection":
        reach, target = np.ones(p.shape[0]), p.copy()
        for c in range(ranks):
            kept = np.minimum(target, q).sum(axis=1)
            out[:, c] = reach * kept
            reach = reach * (1.0 - kept)
            rest = np.maximum(target - q, 0.0)
            mass = rest.sum(axis=1, keepdims=True)
            target = np.where(mass > 0, rest / np.where(mass > 0, mass, 1.0), target)
        return out
    if rule == "exact_match":
        for c in range(ranks):
            out[:, c] = (p * q * (1.0 - q) ** c).sum(axis=1)
        return out
    if rule not in RULES:
        raise ValueError(f"unknown acceptance rule {rule!r}; known: {', '.join(RULES)}")
    offered = np.argsort(-q, axis=1, kind="stable")[:, :ranks]  # fewer when V < ranks
    width = offered.shape[1]
    if rule == "one_hot":
        out[:, :width] = p[rows[:, None], offered]
    elif rule == "greedy":
        out[:, :width] = offered == np.argmax(p, axis=1)[:, None]
    else:  # typical
        passing = np.stack([typical_kept(p, offered[:, c]) for c in range(width)], axis=1)
        out[:, :width] = passing & (np.cumsum(passing, axis=1) == 1)
    return out


def typical_kept(p: np.ndarray, drafted: np.ndarray) -> np.ndarray:
    """Whether Medusa's typical acceptance keeps token ``drafted[i]`` of row ``p[i]``:
    ``p(d) > min(eps, delta exp(-H(p)))``, ``H`` in nats."""
    with np.errstate(divide="ignore", invalid="ignore"):
        entropy = -np.where(p > 0, p * np.log(p), 0.0).sum(axis=1)
    threshold = np.minimum(TYPICAL_EPS, TYPICAL_DELTA * np.exp(-entropy))
    return p[np.arange(p.shape[0]), drafted] > threshold


@lru_cache(maxsize=8)
def _entropy_curve(vocab: int) -> tuple[np.ndarray, np.ndarray]:
    """Zipf exponents s on a grid and the entropy (bits) of p_r ~ r^-s over ``vocab``
    ranks, falling from log2(vocab) at s = 0."""
    exponents = np.concatenate((np.linspace(0.0, 3.0, 301), np.linspace(3.02, 40.0, 300)))
    log_rank = np.log(np.arange(1, vocab + 1, dtype=np.float64))
    entropies = np.empty(exponents.size)
    for i, s in enumerate(exponents):
        probs = softmax((-s * log_rank)[None, :])[0]
        nonzero = probs[probs > 0]
        entropies[i] = -(nonzero * np.log2(nonzero)).sum()
    return exponents, entropies


def zipf_exponent(entropy_bits: np.ndarray, vocab: int) -> np.ndarray:
    """The Zipf exponents whose targets over ``vocab`` tokens have these entropies (bits,
    in (0, log2 vocab)), interpolated on a grid of 601 exponents (the entropy falls
    smoothly with the exponent)."""
    exponents, entropies = _entropy_curve(vocab)
    target = np.asarray(entropy_bits, dtype=np.float64)
    # entropies fall with s: interpolate on the reversed arrays.
    return np.interp(-target, -entropies, exponents)


def zipf_logits(exponents: np.ndarray, vocab: int) -> np.ndarray:
    """Logits ``-s log r`` of Zipf targets, one row per exponent, ranks 1..vocab."""
    log_rank = np.log(np.arange(1, vocab + 1, dtype=np.float64))
    return -np.asarray(exponents, dtype=np.float64)[:, None] * log_rank[None, :]


def draft_logits(
    target: np.ndarray, mismatch: str, size: float, rng: np.random.Generator
) -> np.ndarray:
    """The draft's logits from the target's (module docstring): ``temperature`` divides
    them by ``size``; ``noise`` adds Gaussian noise of standard deviation ``size``;
    ``truncation`` keeps the target's ``size`` most probable tokens."""
    if mismatch == "temperature":
        return target / size
    if mismatch == "noise":
        return target + size * rng.standard_normal(target.shape)
    if mismatch == "truncation":
        keep = max(1, min(round(size), target.shape[1]))
        order = np.argsort(-target, axis=1, kind="stable")
        out = np.full_like(target, -np.inf)
        rows = np.arange(target.shape[0])[:, None]
        out[rows, order[:, :keep]] = target[rows, order[:, :keep]]
        return out
    raise ValueError(f"unknown mismatch {mismatch!r}; known: {', '.join(MISMATCHES)}")


def block_rows(vocab: int) -> int:
    """How many contexts of ``vocab`` tokens are worked on at once."""
    return max(1, BLOCK_ENTRIES // max(vocab, 1))
