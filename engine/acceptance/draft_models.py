"""The acceptance models by name, and what analyses ask of them.

Each model is a registered part in its own file of this package
(:mod:`engine.acceptance.base`); :data:`DRAFT_MODELS` is their registry. A model says which
configuration parameters it reads (:attr:`AcceptanceModel.reads`); the others are inert
for it.
"""

from __future__ import annotations

from collections.abc import Mapping

from engine.acceptance.base import AcceptanceModel
from engine.acceptance.sampler import SAMPLER, PrefixSampler
from engine.core.parts import ACCEPTANCE

DraftModel = AcceptanceModel  # the name the engines used before the registry
DRAFT_MODELS = ACCEPTANCE

__all__ = [
    "DRAFT_MODELS",
    "SAMPLER",
    "DraftModel",
    "PrefixSampler",
    "get_model",
    "inert_parameters",
    "model_parameters",
    "original_models",
    "quality_parameter",
]


def get_model(name: str) -> AcceptanceModel:
    """The draft model registered under ``name`` (KeyError lists the known names)."""
    return ACCEPTANCE[name]


def model_parameters() -> frozenset[str]:
    """The parameters that only some draft model reads (every registered model's fields)."""
    return frozenset(key for model in ACCEPTANCE.values() for key in model.reads)


def original_models() -> tuple[str, ...]:
    """The original simulator's models, in their order."""
    return ACCEPTANCE.where(lambda model: model.original)


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
    return tuple(sorted(model_parameters() - used))
