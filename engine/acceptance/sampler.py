"""The Monte Carlo sampler of a cycle's accepted prefix: one uniform per cycle through the
survival of an acceptance model (docs/model.md, "The sampler")."""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

# Which sampler makes the Monte Carlo draws, as the sweep CSV and ``run --json`` name it.
# "prefix/2": one uniform per cycle gives the accepted prefix (:class:`PrefixSampler`). The
# original's engine ("token/1") drew one accept test per drafted token.
SAMPLER = "prefix/2"

_BUCKET_BITS = 16  # every cycle draws 16 bits: its bucket of the table
_REFINE_BITS = 32  # and 32 more when a threshold falls inside its bucket
_BITS = _BUCKET_BITS + _REFINE_BITS


class PrefixSampler:
    """The accepted prefix of a cycle of K drafts from one uniform draw per cycle.

    With survival S_i = p_1 ... p_i (the probability that drafts 1..i are all accepted), a
    uniform U gives the accepted count n = #{i <= K : S_i > U}: P(n >= i) = P(U < S_i) = S_i,
    which is the distribution of the leading accepts of K independent tests (docs/model.md,
    "The sampler").

    U has 48 bits (S_i is resolved to t_i = floor(S_i * 2**48); n = #{i : u < t_i}, exact
    integer comparisons, the same on every machine), drawn lazily: every cycle draws the top
    16 bits, which index a table of 65,536 buckets holding the count shared by every U in
    the bucket. Where a threshold t_i falls inside a bucket (at most K of 65,536), the cycle
    draws its 32 low bits and the count is searched exactly. A cycle therefore costs the
    same at K = 1 and K = 1,024. :meth:`emitted` gives n + 1, the tokens a cycle emits.

    A model whose probabilities are drawn per round (a hidden state) would draw that state
    first and then one uniform per cycle through the survival of the state it drew.
    """

    def __init__(self, survival: np.ndarray) -> None:
        surv = np.asarray(survival, dtype=np.float64)
        self.k = int(surv.size)
        thresholds = np.floor(surv * 2.0**_BITS).astype(np.int64)  # non-increasing
        self._neg_thresholds = -thresholds  # non-decreasing, for searchsorted
        buckets, low_bits = 1 << _BUCKET_BITS, _REFINE_BITS
        # Per bucket b: the count at its lowest U, #{t_i > b << 32}, and at its highest,
        # #{t_i >= (b + 1) << 32}; they differ where a threshold falls inside.
        above = thresholds[thresholds >= 1]
        low = np.bincount((above - 1) >> low_bits, minlength=buckets)[::-1].cumsum()[::-1]
        whole = thresholds[thresholds >= 1 << low_bits]
        high = np.bincount((whole >> low_bits) - 1, minlength=buckets)[::-1].cumsum()[::-1]
        self.dtype = np.uint8 if self.k < 255 else np.uint16
        table = (low + 1).astype(self.dtype)
        table[low != high] = 0  # a threshold inside: draw the low bits, search exactly
        self._table = table
        # Mean and variance of the tokens a cycle emits (they size a run's blocks, so they
        # are summed exactly: the same on every machine). E[n + 1] = 1 + sum S_i and
        # E[(n + 1)^2] = 1 + sum (2i + 1) S_i.
        terms = surv.tolist()
        self.mean_emitted = 1.0 + math.fsum(terms)
        second = 1.0 + math.fsum((2 * i + 3) * s for i, s in enumerate(terms))
        self.var_emitted = max(0.0, second - self.mean_emitted**2)

    def accepted(self, u: np.ndarray) -> np.ndarray:
        """n = #{i : u < t_i} for 48-bit draws ``u`` (int64), by the exact search (the
        definition)."""
        return np.searchsorted(self._neg_thresholds, -u, side="left")

    def emitted(self, rng: np.random.Generator, size: int) -> np.ndarray:
        """Tokens emitted (n + 1) by ``size`` cycles of K drafts, one uniform each (uint8 or
        uint16 array).

        The generator's raw 64-bit outputs give four cycles' top 16 bits each (read little
        end first on every machine); then one raw output per cycle that needs its low bits.
        """
        raw = rng.bit_generator.random_raw((size + 3) // 4).astype("<u8", copy=False)
        top = raw.view("<u2")[:size]
        out = np.take(self._table, top)
        if out.min() == 0:  # some cycle fell in a bucket a threshold splits
            inside = np.flatnonzero(out == 0)
            low = rng.bit_generator.random_raw(inside.size) >> np.uint64(64 - _REFINE_BITS)
            u = (top[inside].astype(np.int64) << _REFINE_BITS) | low.astype(np.int64)
            out[inside] = self.accepted(u) + 1
        return out


@lru_cache(maxsize=64)
def _prefix_sampler(survival: bytes) -> PrefixSampler:
    return PrefixSampler(np.frombuffer(survival, dtype=np.float64))
