"""The acceptance models: where the per-position acceptance probability p_i comes from.

The original's three (fixed, position_decay, entropy_aware), then those beyond it:
per_position (a list of rates, what calibration from logs gives), beta_round (a rate drawn
per cycle), markov (a hidden easy/hard regime kept across cycles) and confidence (a
confidence q per token that the draft sees). Each model is a small class in
:data:`DRAFT_MODELS`. A model says which configuration parameters it reads
(:attr:`DraftModel.reads`); the others are inert for it.

Every model gives the marginal ``P(n >= j)`` of one cycle (:meth:`DraftModel.position_probs`,
whose cumulative products are that survival), from which the exact long-run figures follow.
Cycles are independent for every model but markov, whose regime ties one cycle to the
next (:attr:`DraftModel.cycles_independent`); :meth:`DraftModel.regimes` gives its
per-regime survival, and the K-policy engine (``engine.simulate.policies``) draws its chain.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from functools import lru_cache
from typing import ClassVar

import numpy as np

from engine.core.config import MODEL_PARAMETERS, MODEL_READS, SpecConfig, rates_of

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


class DraftModel:
    """Base class. Positions are 1-based in the docs, 0-based in arrays."""

    name: ClassVar[str]
    reads: ClassVar[tuple[str, ...]]
    description: ClassVar[str]

    def position_probs(self, config: SpecConfig, k: int) -> np.ndarray:
        """Marginal P(accept) of draft positions 1..k, as a float array of length k in [0, 1]."""
        raise NotImplementedError

    def prefix_sampler(self, config: SpecConfig) -> PrefixSampler:
        """The Monte Carlo sampler of the accepted prefix of a cycle of K drafts (one uniform
        per cycle, :class:`PrefixSampler`), from the survival of :meth:`position_probs`.
        Configurations with the same survival share one (cached)."""
        survival = np.cumprod(self.position_probs(config, config.k))
        return _prefix_sampler(survival.astype(np.float64).tobytes())

    def accept_token(self, config: SpecConfig, rng: np.random.Generator, position: int) -> bool:
        """One accept test for the draft token at 1-based ``position`` (reference engine)."""
        return bool(rng.random() < self.position_probs(config, position)[position - 1])

    # Whether a cycle's accepted count is independent of every other cycle's (all models
    # but markov): then one uniform per cycle through the marginal survival is exact.
    cycles_independent: ClassVar[bool] = True
    # Whether each draft token carries a confidence q that the draft sees (threshold policies).
    confidences: ClassVar[bool] = False

    def regimes(self, config: SpecConfig, k: int) -> tuple[np.ndarray, float, np.ndarray]:
        """(survival, stay, mix) of the hidden regime chain: ``survival[g, j] = P(n >= j |
        regime g)`` for j = 0..k, a (G, k + 1) array; the regime is kept from one cycle to
        the next with probability ``stay``, else redrawn from ``mix`` (G,). One regime for
        every model but markov."""
        surv = np.concatenate(([1.0], np.cumprod(self.position_probs(config, k))))
        return surv[None, :], 1.0, np.ones(1)


class FixedAccuracy(DraftModel):
    name = "fixed"
    reads = MODEL_READS["fixed"]
    description = "constant P(accept) = acceptance_rate at every position"

    def position_probs(self, config: SpecConfig, k: int) -> np.ndarray:
        return np.full(k, config.acceptance_rate)


class PositionDecay(DraftModel):
    name = "position_decay"
    reads = MODEL_READS["position_decay"]
    description = "P(accept) at position i = decay_base * decay_factor^(i-1)"

    def position_probs(self, config: SpecConfig, k: int) -> np.ndarray:
        return config.decay_base * config.decay_factor ** np.arange(k, dtype=float)


class EntropyAware(DraftModel):
    name = "entropy_aware"
    reads = MODEL_READS["entropy_aware"]
    description = (
        "each token is hard with P = entropy_frac (accepted with entropy_low), "
        "else easy (accepted with entropy_high)"
    )

    def position_probs(self, config: SpecConfig, k: int) -> np.ndarray:
        p = (
            config.entropy_frac * config.entropy_low
            + (1 - config.entropy_frac) * config.entropy_high
        )
        return np.full(k, p)

    # Classes are drawn independently per token and never seen, so the accepted prefix
    # follows the marginal p above: the Monte Carlo draws it with one uniform per cycle like
    # the fixed model's. The reference loop draws each token's class, then its test.
    def accept_token(self, config: SpecConfig, rng: np.random.Generator, position: int) -> bool:
        hard = rng.random() < config.entropy_frac
        p = config.entropy_low if hard else config.entropy_high
        return bool(rng.random() < p)


class PerPosition(DraftModel):
    name = "per_position"
    reads = MODEL_READS["per_position"]
    description = "conditional P(accept) p_1..p_m from a list (position i > m uses p_m)"

    def position_probs(self, config: SpecConfig, k: int) -> np.ndarray:
        rates = rates_of(config.rates)
        out = np.full(k, rates[-1])
        head = min(k, len(rates))
        out[:head] = rates[:head]
        return out


class BetaRound(DraftModel):
    name = "beta_round"
    reads = MODEL_READS["beta_round"]
    description = "each cycle draws its rate theta ~ Beta(a, b), each draft accepted with theta"

    # P(n >= j) = E[theta^j] = prod_{i<j} (a + i) / (a + b + i): the conditional rate of
    # position i + 1 is (a + i) / (a + b + i), rising with depth. Cycles are independent,
    # so one uniform per cycle through this survival draws them exactly (theta unseen).
    def position_probs(self, config: SpecConfig, k: int) -> np.ndarray:
        i = np.arange(k, dtype=float)
        return (config.beta_a + i) / (config.beta_a + config.beta_b + i)


class MarkovRegime(DraftModel):
    name = "markov"
    reads = MODEL_READS["markov"]
    description = (
        "a hidden easy/hard regime (p_easy, p_hard), kept from cycle to cycle with P = stay, "
        "else redrawn (easy with P = easy_frac)"
    )
    cycles_independent = False

    def regimes(self, config: SpecConfig, k: int) -> tuple[np.ndarray, float, np.ndarray]:
        j = np.arange(k + 1, dtype=float)
        survival = np.stack((config.p_easy**j, config.p_hard**j))
        return survival, config.stay, np.array([config.easy_frac, 1.0 - config.easy_frac])

    # The stationary cycle's marginal: P(n >= j) = f p_easy^j + (1 - f) p_hard^j, given as
    # conditional rates (its long-run figures; finite-length values need the regime chain).
    def position_probs(self, config: SpecConfig, k: int) -> np.ndarray:
        survival, _, mix = self.regimes(config, k)
        marginal = mix @ survival
        with np.errstate(invalid="ignore", divide="ignore"):
            cond = marginal[1:] / marginal[:-1]
        return np.where(marginal[:-1] > 0, cond, 0.0)

    def accept_token(self, config: SpecConfig, rng: np.random.Generator, position: int) -> bool:
        raise NotImplementedError("markov cycles are drawn by the K-policy engine")


class Confidence(DraftModel):
    name = "confidence"
    reads = MODEL_READS["confidence"]
    description = (
        "each draft token has a confidence q ~ Beta(a, b), seen by the draft, accepted with q"
    )
    confidences = True

    # Unseen by a fixed K, the q's are independent per token: the accepted prefix follows
    # the marginal P(accept) = a / (a + b).
    def position_probs(self, config: SpecConfig, k: int) -> np.ndarray:
        return np.full(k, config.beta_a / (config.beta_a + config.beta_b))


DRAFT_MODELS: dict[str, DraftModel] = {
    m.name: m
    for m in (
        FixedAccuracy(),
        PositionDecay(),
        EntropyAware(),
        PerPosition(),
        BetaRound(),
        MarkovRegime(),
        Confidence(),
    )
}


def get_model(name: str) -> DraftModel:
    """The draft model registered under ``name`` (KeyError lists the known names)."""
    try:
        return DRAFT_MODELS[name]
    except KeyError:
        raise KeyError(f"unknown draft model {name!r}; known: {', '.join(DRAFT_MODELS)}") from None


def quality_parameter(model_name: str, distinct: Mapping[str, int] | None = None) -> str:
    """The parameter that labels a model's rows in an optimal-K grid.

    Of the parameters the model reads, the one with the most distinct values in the data
    (``distinct`` maps a parameter to that count); the first it reads without data or on a
    tie. The seed sweep varies no parameter of position_decay, so that is decay_base; the
    model-quality preset varies entropy_frac for entropy_aware.
    """
    read = get_model(model_name).reads
    if not distinct:
        return read[0]
    return max(read, key=lambda p: (distinct.get(p, 0), -read.index(p)))


def inert_parameters(model_name: str) -> tuple[str, ...]:
    """Model parameters that ``model_name`` ignores (inert axes in a sweep)."""
    used = set(get_model(model_name).reads)
    return tuple(sorted(MODEL_PARAMETERS - used))
