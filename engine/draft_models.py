"""The three draft models: where the per-position acceptance probability p_i comes from.

Each model is a small class in :data:`DRAFT_MODELS`. A model says which configuration
parameters it reads (:attr:`DraftModel.reads`); the others are inert for it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

import numpy as np

from .config import MODEL_PARAMETERS, MODEL_READS, SpecConfig

_SCALE = 2.0**32


def _uniform_bits(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    # Raw 32-bit draws are about 3x cheaper than floats; see bernoulli().
    return rng.integers(0, 2**32, size=shape, dtype=np.uint32)


def _threshold(p: float | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``t`` such that P(u <= t) = p for a uniform 32-bit u (p resolved to 2**-32), and
    ``never``, true where p < 2**-32 and no draw may pass."""
    count = np.floor(np.asarray(p, dtype=np.float64) * _SCALE)
    return (np.maximum(count, 1) - 1).astype(np.uint32), count < 1


def bernoulli(
    rng: np.random.Generator, shape: tuple[int, int], p: float | np.ndarray
) -> np.ndarray:
    """Independent accept tests with probability ``p`` (a scalar, or one per column).

    p = 1 always passes and p = 0 never does, exactly.
    """
    threshold, never = _threshold(p)
    passed = _uniform_bits(rng, shape) <= threshold
    if never.any():
        passed &= ~never
    return passed


class DraftModel:
    """Base class. Positions are 1-based in the docs, 0-based in arrays."""

    name: ClassVar[str]
    reads: ClassVar[tuple[str, ...]]
    description: ClassVar[str]

    def position_probs(self, config: SpecConfig, k: int) -> np.ndarray:
        """Marginal P(accept) of draft positions 1..k, as a float array of length k in [0, 1]."""
        raise NotImplementedError

    def sample_accepts(
        self, config: SpecConfig, rng: np.random.Generator, rows: int, k: int
    ) -> np.ndarray:
        """Token-level accept tests for ``rows`` cycles of ``k`` drafts: bool array (rows, k)."""
        # float32 draws are twice as cheap; p is resolved to 2**-24, far below sampling error.
        return rng.random((rows, k), dtype=np.float32) < self.position_probs(config, k).astype(
            np.float32
        )

    def accept_token(self, config: SpecConfig, rng: np.random.Generator, position: int) -> bool:
        """One accept test for the draft token at 1-based ``position`` (reference engine)."""
        return bool(rng.random() < self.position_probs(config, position)[position - 1])


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

    def sample_accepts(
        self, config: SpecConfig, rng: np.random.Generator, rows: int, k: int
    ) -> np.ndarray:
        # The token's class is drawn first, then its accept test, as docs/model.md specifies.
        hard = bernoulli(rng, (rows, k), config.entropy_frac)
        low, never_low = _threshold(config.entropy_low)
        high, never_high = _threshold(config.entropy_high)
        accepts = _uniform_bits(rng, (rows, k)) <= np.where(hard, low, high)
        if never_low:
            accepts &= ~hard
        if never_high:
            accepts &= hard
        return accepts

    def accept_token(self, config: SpecConfig, rng: np.random.Generator, position: int) -> bool:
        hard = rng.random() < config.entropy_frac
        p = config.entropy_low if hard else config.entropy_high
        return bool(rng.random() < p)


DRAFT_MODELS: dict[str, DraftModel] = {
    m.name: m for m in (FixedAccuracy(), PositionDecay(), EntropyAware())
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
