"""Exact expectations, no sampling: closed forms and the finite-length dynamic program.

See docs/model.md, "Exact values". Times are in microseconds, lengths in tokens.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from .config import SpecConfig
from .draft_models import get_model
from .kernel import cycle_costs, draft_count


def survival(config: SpecConfig, k: int | None = None) -> np.ndarray:
    """P(n >= j) for j = 1..k (default k = config.k): cumulative products of p_i."""
    k = config.k if k is None else k
    return np.cumprod(get_model(config.draft_model).position_probs(config, k))


def accepted_distribution(config: SpecConfig, k: int | None = None) -> np.ndarray:
    """P(n = j) for j = 0..k accepted drafts in one cycle of ``k`` drafts (sums to 1)."""
    surv = np.concatenate(([1.0], survival(config, k)))
    dist = surv.copy()
    dist[:-1] -= surv[1:]
    return dist


def tokens_per_cycle(config: SpecConfig) -> float:
    """E[n + 1], tokens emitted per cycle of K drafts, in [1, K + 1]."""
    return float(1.0 + survival(config).sum())


def speedup_limit(config: SpecConfig) -> float:
    """Speedup as tokens_per_seq goes to infinity at the prompt's context: tokens per cycle
    times a decoding step's time over a full cycle's (Leviathan et al. 2023, Thm 3.8, for
    the fixed model under the linear cost). For a context-free cost model (linear, table)
    this is the limit of :func:`speedup_exact`; under a roofline the context grows with
    the sequence, and this is the steady state at ``prompt_len``."""
    costs = cycle_costs(config)
    return tokens_per_cycle(config) * costs.limit_step_us / costs.limit_cycle_us


def breakeven_cost_ratio(config: SpecConfig) -> float:
    """The cost ratio draft/verify at which speedup_limit is exactly 1 for this K and model."""
    return (tokens_per_cycle(config) - 1.0) / config.k


def compute_overhead_limit(config: SpecConfig) -> float:
    """Target positions plus cost_ratio x drafts, per emitted token, minus 1 (Thm 3.11)."""
    k = config.k
    return (k + 1 + cycle_costs(config).cost_ratio * k) / tokens_per_cycle(config) - 1.0


def _expectation(probabilities: Sequence[float], values: Sequence[float]) -> float:
    """sum_j probabilities[j] * values[j], added in the order j = 0, 1, ... in floats.

    Not a dot product: a BLAS dot rounds differently on different CPUs (an AVX-512 kernel
    and an AVX2 one disagree in the last bit), and exact values must be the same bits on
    every machine so that committed results reproduce. Plain floats are also faster than
    numpy on vectors this short (K + 1 <= 1025 terms, usually under 20).
    """
    total = 0.0
    for p, v in zip(probabilities, values, strict=True):
        total += p * v
    return total


def expected_over_sequence(
    config: SpecConfig, per_cycle: Callable[[int, int, list[float]], Any] | Sequence[Any]
) -> list[Any]:
    """E[sum over the cycles of one sequence of per_cycle(r, k, P(n = .))], for every length.

    ``per_cycle`` is a function of (r, k_r, P_r), or a sequence indexed by r when the value
    depends on r only (a cycle's time: :func:`engine.kernel.cycle_costs`), which spares a
    call per r in this O(T * K) loop.

    Dynamic program over r, the tokens still needed: f(0) = 0,
    f(r) = per_cycle(r, k_r, P_r) + sum_j P_r(n = j) f(max(r - j - 1, 0)), where k_r is the
    tail rule's draft count with r tokens to go (engine.kernel.draft_count) and P_r the
    distribution of accepted drafts among them. Returns f(0..tokens_per_seq). O(T * K).
    """
    big_k, total = config.k, config.tokens_per_seq
    # Distributions for every k the tail rule can use (0..K), from one survival vector.
    surv = [1.0, *survival(config, big_k).tolist()]
    full_dist = accepted_distribution(config, big_k).tolist()
    by_r = None if callable(per_cycle) else per_cycle
    f: list[Any] = [0.0] * (total + 1)  # f(r) for r <= 0 is f(0) = 0
    for r in range(1, total + 1):
        if r > big_k + 1:
            # Both rules draft K here, and every outcome leaves r - j - 1 >= 0 tokens.
            value = by_r[r] if by_r is not None else per_cycle(r, big_k, full_dist)  # type: ignore[operator]
            f[r] = value + _expectation(full_dist, f[r - 1 : r - 2 - big_k : -1])
            continue
        k = draft_count(config, r)
        dist = [surv[j] - surv[j + 1] for j in range(k)] + [surv[k]]
        # n = j leaves max(r - j - 1, 0) tokens to produce.
        remaining = [f[max(r - 1 - j, 0)] for j in range(k + 1)]
        value = by_r[r] if by_r is not None else per_cycle(r, k, dist)  # type: ignore[operator]
        f[r] = value + _expectation(dist, remaining)
    return f


def expected_sequence_time_us(config: SpecConfig) -> float:
    """Expected speculative time of one sequence of tokens_per_seq tokens, in microseconds,
    each cycle priced by the cost model at its own context (engine.kernel.cycle_costs)."""
    return float(expected_over_sequence(config, cycle_costs(config).cycle_us.tolist())[-1])


def tokens_per_cycle_at_length(config: SpecConfig) -> float:
    """E[tokens emitted] / E[cycles] of one sequence of tokens_per_seq tokens, under the
    config's tail rule: the value the Monte Carlo tokens_per_cycle (emitted / cycles)
    estimates. Equals :func:`tokens_per_cycle` under "full", where every cycle drafts K;
    under "clamp" the short last cycles lower it.
    """
    cycles = expected_over_sequence(config, lambda r, k, dist: 1.0)[-1]
    emitted = expected_over_sequence(config, lambda r, k, dist: _expectation(dist, range(1, k + 2)))
    return emitted[-1] / cycles


def speedup_exact(config: SpecConfig) -> float:
    """Expected speedup at the finite length tokens_per_seq, for the config's tail rule."""
    return cycle_costs(config).baseline_us / expected_sequence_time_us(config)


def exact_metrics(config: SpecConfig) -> dict[str, float]:
    """Every exact figure of one configuration, under the names docs/model.md uses."""
    return {
        "speedup_exact": speedup_exact(config),
        "speedup_limit": speedup_limit(config),
        "tokens_per_cycle_exact": tokens_per_cycle(config),
        "breakeven_cost_ratio": breakeven_cost_ratio(config),
        "compute_overhead_limit": compute_overhead_limit(config),
    }


def speedup_curve(config: SpecConfig, ks: Iterable[int]) -> dict[str, np.ndarray]:
    """speedup_exact and speedup_limit of ``config`` for each K in ``ks`` (for charts)."""
    ks_arr = np.array(list(ks), dtype=int)
    exact = [speedup_exact(config.replace(k=int(k))) for k in ks_arr]
    limit = [speedup_limit(config.replace(k=int(k))) for k in ks_arr]
    return {"k": ks_arr, "speedup_exact": np.array(exact), "speedup_limit": np.array(limit)}
