"""A mixture-of-experts model's pass: the experts its tokens load (docs/model.md, "Cost
models": mixture of experts).

An MoE layer routes each token to ``k`` of its ``E`` experts. A pass over ``N`` tokens
loads every expert at least one token picked; with uniform routing, the expected count is
``E (1 - (1 - k/E)^N)``: ``k`` at one token, all ``E`` as ``N`` grows. With skew ``s > 0``
the experts' popularity falls as ``rank^-s`` (Zipf): a token picks expert ``e`` with
``p_e = min(1, c e^-s)``, ``c`` such that ``sum_e p_e = k`` (it picks ``k`` distinct experts),
and the count is ``sum_e 1 - (1 - p_e)^N``: ``k`` at one token, fewer than uniform routing
loads at more (``s = 0`` is uniform).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from engine.cost.specs import ModelSpec

FloatArray = npt.NDArray[np.float64]

BLOCK = 64  # experts summed at once by a skewed routing


def dense_params(model: ModelSpec) -> float:
    """An MoE model's parameters outside its routed experts (attention, router, shared
    experts, dense layers, embeddings): ``params - experts * expert_params * moe_layers``."""
    return model.params - (model.experts or 0) * model.expert_layer_params


def active_params(model: ModelSpec) -> float:
    """Parameters one token multiplies by: the dense part and ``k`` experts per MoE layer
    (``params`` for a dense model)."""
    if model.experts is None:
        return model.params
    return dense_params(model) + (model.experts_active or 0) * model.expert_layer_params


def experts_touched(model: ModelSpec, tokens: npt.ArrayLike, skew: float = 0.0) -> FloatArray:
    """Distinct experts a pass over ``tokens`` tokens loads in each MoE layer (module
    docstring): ``E (1 - (1 - k/E)^tokens)`` with uniform routing (``skew = 0``)."""
    e, k = float(model.experts or 0), float(model.experts_active or 0)
    n = np.asarray(tokens, dtype=np.float64)
    if skew == 0.0:
        return e * (1.0 - (1.0 - k / e) ** n)
    weights = np.arange(1, int(e) + 1, dtype=np.float64) ** -skew  # most popular first
    capped = 0  # the most popular experts, picked by every token
    while True:
        scale = (k - capped) / weights[capped:].sum()
        if scale * weights[capped] <= 1.0:
            break
        capped += 1
    picked = np.minimum(1.0, scale * weights)
    picked[:capped] = 1.0
    # Summed over the experts a block at a time: memory stays BLOCK times the tokens' array
    # however many experts a user's model has (at most EXPERTS_MAX).
    missed = np.zeros(n.shape)
    for start in range(0, picked.size, BLOCK):
        missed += ((1.0 - picked[start : start + BLOCK]) ** n[..., None]).sum(axis=-1)
    return np.asarray(e - missed, dtype=np.float64)
