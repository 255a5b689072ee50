"""Exact figures of a model-free proposer (n-gram / prompt lookup, suffix decoding;
docs/model.md, "Proposers"), by the same dynamic program as a draft model's
(:func:`engine.simulate.sequence_dp.expected_over_sequence`).

A step with r tokens still needed finds a match with probability h (the proposer's hit
rate). With a match it drafts ``min(L, k_r)`` tokens (n-gram: ``L = K``; suffix decoding: a
length L of the proposer's distribution) and accepts n of them by the acceptance model's
``P(n >= j)``, emitting n + 1, at the price of the look-up plus a target pass over the
drafted tokens plus one; without a match it emits one token at the look-up plus the
baseline's decoding step. So, with ``S_j`` the acceptance model's survival and ``s_j =
P(L >= j)``, one step emits more than j tokens with probability ``h S_j s_j`` (j >= 1), and

    f(0) = 0,  f(r) = h hit_us(r) + (1 - h) miss_us(r) + sum_j P(n = j) f(max(r - j - 1, 0)),

``hit_us(r)`` the expected price of a step with a match (over its lengths), ``miss_us(r)``
the look-up plus the decoding step (:func:`engine.core.kernel.proposer_hit_steps`,
:class:`engine.core.kernel.CycleCosts`). Under the clamp tail rule a step drafts at most
``r - 1``; every outcome that would emit more leaves nothing to produce, so the distribution
is the same for every r (as for a draft model).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from engine.acceptance.draft_models import get_model
from engine.core.config import SpecConfig
from engine.core.cost_model import CostModel
from engine.core.kernel import cycle_costs, cycle_times, proposer_hit_steps
from engine.core.parts import COST, PROPOSER
from engine.simulate.sequence_dp import expected_over_sequence

FloatArray = npt.NDArray[np.float64]

__all__ = ["hit_survival", "model_free_exact", "step_distribution"]


def hit_survival(config: SpecConfig) -> FloatArray:
    """P(n >= j | the step found a match), j = 1..K: the acceptance model's survival times
    the proposer's P(L >= j) (a draft cut short at L is not a rejection)."""
    probs = np.asarray(get_model(config.draft_model).position_probs(config, config.k), float)
    lengths = np.asarray(PROPOSER.of(config).length_survival(config, config.k), float)
    return np.asarray(np.cumprod(probs) * lengths, dtype=np.float64)


def step_distribution(config: SpecConfig) -> FloatArray:
    """P(a step accepts j drafts), j = 0..K, hits and misses together (sums to 1)."""
    h = PROPOSER.of(config).hit_rate(config)
    survival = np.concatenate(([1.0], h * hit_survival(config), [0.0]))
    return np.asarray(survival[:-1] - survival[1:], dtype=np.float64)


def _per_step_us(config: SpecConfig) -> FloatArray:
    """E[price of a step] by r: h hit_us(r) + (1 - h) miss_us(r)."""
    costs = cycle_costs(config)
    assert costs.miss_us is not None
    h = PROPOSER.of(config).hit_rate(config)
    hit_us, _ = proposer_hit_steps(config)
    return np.asarray(h * hit_us + (1.0 - h) * costs.miss_us, dtype=np.float64)


def _limit_hit(config: SpecConfig, cost: CostModel) -> tuple[float, float]:
    """(expected price, expected drafted tokens) of a step with a match that may draft K,
    at the prompt's context: the long-run step."""
    proposer = PROPOSER.of(config)
    survival = np.append(np.asarray(proposer.length_survival(config, config.k), float), 0.0)
    probs = survival[:-1] - survival[1:]  # P(min(L, K) = k), k = 1..K
    lengths = np.arange(1, config.k + 1, dtype=np.int64)
    lookup = proposer.lookup_us(config)
    steps = np.asarray(
        cycle_times(cost, lengths, config.batch_size, config.prompt_len, lookup_us=lookup)[2],
        dtype=np.float64,
    )
    price = drafted = 0.0
    for p, step, k in zip(probs.tolist(), steps.tolist(), lengths.tolist(), strict=True):
        price += p * step
        drafted += p * k
    return price, drafted


def model_free_exact(config: SpecConfig) -> dict[str, float]:
    """The exact figures of :data:`engine.simulate.exact.EXACT_METRIC_NAMES` for a
    model-free proposer's configuration, plus ``time_us`` (the expected time of one
    sequence) and ``tokens_per_cycle_at_length`` (E[emitted] / E[steps] at this length).

    ``speedup_limit`` is the long-run step at the prompt's context (E[emitted] times a
    decoding step over E[price of a step]); ``breakeven_cost_ratio`` is NaN (there is no
    draft pass whose cost could break even); ``compute_overhead_limit`` counts the target
    positions a step evaluates (its drafts plus one) per emitted token, minus 1."""
    costs = cycle_costs(config)
    assert costs.miss_us is not None and costs.lookup_us is not None
    h = PROPOSER.of(config).hit_rate(config)
    dist = step_distribution(config)[:, None]
    per_step = _per_step_us(config)
    f = expected_over_sequence(dist, per_step[:, None])
    time_us = float(f[-1, 0])
    # Tokens per step at this length: E[emitted] / E[steps], emitted before the tail cuts.
    surv = hit_survival(config)
    cumulative = np.concatenate(([0.0], np.add.accumulate(surv)))
    emitted_by_r = 1.0 + h * cumulative[costs.k]
    counts = expected_over_sequence(dist, np.stack([np.ones_like(per_step), emitted_by_r], 1))
    steps, emitted = counts[-1]
    # The long run, at the prompt's context.
    cost = COST.of(config).build(config)
    hit_price, hit_drafted = _limit_hit(config, cost)
    miss_price = float(
        cycle_times(cost, 0, config.batch_size, config.prompt_len, lookup_us=costs.lookup_us)[2]
    )
    per_step_tokens = 1.0 + h * float(surv.sum())
    return {
        "speedup_exact": costs.baseline_us / time_us,
        "speedup_limit": per_step_tokens
        * costs.limit_step_us
        / (h * hit_price + (1.0 - h) * miss_price),
        "tokens_per_cycle_exact": per_step_tokens,
        "breakeven_cost_ratio": math.nan,
        "compute_overhead_limit": (1.0 + h * hit_drafted) / per_step_tokens - 1.0,
        "time_us": time_us,
        "tokens_per_cycle_at_length": float(emitted / steps),
    }
