"""Exact expectations, no sampling: closed forms and the finite-length dynamic program.

See docs/model.md, "Exact values". Times are in microseconds, lengths in tokens.

Every value is computed for a batch of configurations at once (:func:`exact_metrics_many`),
with numpy arrays whose last axis is the configuration; the configurations may differ in
every field (K, T, tail rule, acceptance model and its parameters, cost model, batch,
prompt). The functions of one configuration (:func:`exact_metrics`, :func:`speedup_exact`,
...) are the batch of one: there is one dynamic program, :func:`expected_over_sequence`,
whose Python loop runs over ``r`` (the tokens still needed) and never over configurations.

Exact values are the same bits on every machine, so that committed results reproduce
(tests/engine/test_exact_batch.py checks the batch against the plain-float program):

- no BLAS dot product (an AVX-512 kernel and an AVX2 one round differently), and no
  ``np.sum`` over the terms of an expectation (numpy's pairwise summation reorders from 8
  terms, and a reduction of one column may go pairwise): each expectation is added in the
  order j = 0, 1, ..., row after row (``np.add.accumulate`` down the rows, or one ``np.add``
  per row), elementwise IEEE additions, the same on one column as on thousands;
- configurations with different K share one array, padded with zero probabilities beyond
  their own K: a padded term adds ``0.0 * f = +0.0`` (every f is finite and >= 0), which
  leaves a sum bit-identical;
- the long-run tokens per cycle, ``1 + sum_j P(n >= j)``, is numpy's sum of the K survival
  probabilities (the original's value), taken along the rows of a C-contiguous array of
  configurations with the same K: the same pairwise sum as on one configuration's vector.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from engine.acceptance.draft_models import get_model
from engine.core.config import FIELD_SPECS, SpecConfig
from engine.core.kernel import CycleCosts, cycle_costs, draft_count
from engine.core.parts import ACCEPTANCE, POLICY, PROPOSER, SHAPE
from engine.simulate.sequence_dp import ACCUMULATE_COLUMNS, expected_over_sequence

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

# The figures of :func:`exact_metrics_many`, under the names docs/model.md uses.
EXACT_METRIC_NAMES: tuple[str, ...] = (
    "speedup_exact",
    "speedup_limit",
    "tokens_per_cycle_exact",
    "breakeven_cost_ratio",
    "compute_overhead_limit",
)

# A chunk of a batch holds at most this many floats (16 MB) in each table of the program,
# rows r by configurations (the cycle times, their distinct columns, f): a grid of tens of
# thousands of long sequences runs in bounded memory. One configuration always runs, alone
# if it is longer.
_CHUNK_FLOATS = 1 << 21


def _step_ns(width: int, columns: int) -> float:
    """Rough cost of one step r of the program in nanoseconds, for (K + 1) x columns
    arrays, measured on one core of a 2020s x86 CPU: it decides which configurations share
    a chunk (padding a small K to a large one costs elements, every chunk costs steps)."""
    if columns <= ACCUMULATE_COLUMNS:
        return 2500.0 + 6.0 * width * columns
    return 2500.0 + 500.0 * (width - 1) + 1.0 * width * columns


# ---- Acceptance: the distribution of accepted drafts -------------------------------------


def _survival_rows(configs: Sequence[SpecConfig], k: int) -> FloatArray:
    """P(n >= j) for j = 1..k, one row per configuration: a C-contiguous (len(configs), k)
    array of the cumulative products of each model's p_i (sequential, as on one vector)."""
    probs = [get_model(c.draft_model).position_probs(c, k) for c in configs]
    rows = np.array(probs, dtype=np.float64).reshape(len(configs), k)
    return np.asarray(np.cumprod(rows, axis=1), dtype=np.float64)


def survival(config: SpecConfig, k: int | None = None) -> FloatArray:
    """P(n >= j) for j = 1..k (default k = config.k): cumulative products of p_i."""
    return _survival_rows([config], config.k if k is None else k)[0]


def accepted_distribution(config: SpecConfig, k: int | None = None) -> FloatArray:
    """P(n = j) for j = 0..k accepted drafts in one cycle of ``k`` drafts (sums to 1)."""
    surv = np.concatenate(([1.0], survival(config, k), [0.0]))
    return surv[:-1] - surv[1:]  # P(n = k) = P(n >= k) - 0.0, exactly P(n >= k)


def _acceptance(configs: Sequence[SpecConfig]) -> tuple[FloatArray, FloatArray]:
    """(P(n = j) by j = 0..Kmax and configuration, zero beyond each configuration's K; the
    long-run tokens per cycle E[n + 1] of each), for a cycle of each configuration's K."""
    ks = np.array([c.k for c in configs], dtype=np.int64)
    k_max = int(ks.max())
    surv = np.zeros((k_max + 2, len(configs)))  # P(n >= j), j = 0..Kmax + 1
    surv[0] = 1.0
    per_cycle = np.empty(len(configs))
    for k in np.unique(ks).tolist():  # a loop over the distinct K, not the configurations
        index = np.flatnonzero(ks == k)
        rows = _survival_rows([configs[i] for i in index.tolist()], k)
        per_cycle[index] = 1.0 + rows.sum(axis=1)
        surv[1 : k + 1, index] = rows.T
    return surv[:-1] - surv[1:], per_cycle


def tokens_per_cycle(config: SpecConfig) -> float:
    """E[n + 1], tokens emitted per cycle of K drafts, in [1, K + 1]."""
    return float(_acceptance([config])[1][0])


def _chunks(ks: IntArray, lengths: IntArray) -> list[IntArray]:
    """Indices of the configurations that run the program together, every configuration in
    one chunk: runs of equal (K, T), in that order, merged while a merged run is cheaper
    than two (:func:`_step_ns`) and fits :data:`_CHUNK_FLOATS`."""
    order = np.lexsort((lengths, ks))
    k_sorted, t_sorted = ks[order], lengths[order]
    starts = np.flatnonzero(
        np.concatenate(([True], (np.diff(k_sorted) != 0) | (np.diff(t_sorted) != 0)))
    )
    ends = np.append(starts[1:], order.size)

    def cost(k: int, total: int, count: int) -> float:
        return total * _step_ns(k + 1, count)

    def fits(k: int, total: int, count: int) -> bool:
        return (total + k + 1) * count <= _CHUNK_FLOATS

    chunks: list[IntArray] = []
    start, k, total = 0, 0, 0
    for group_start, group_end in zip(starts.tolist(), ends.tolist(), strict=True):
        group_k, group_total = int(k_sorted[group_start]), int(t_sorted[group_start])
        count, group_count = group_start - start, group_end - group_start
        merged_k, merged_total = max(k, group_k), max(total, group_total)
        if count and (
            not fits(merged_k, merged_total, count + group_count)
            or cost(merged_k, merged_total, count + group_count)
            > cost(k, total, count) + cost(group_k, group_total, group_count)
        ):
            chunks.append(order[start:group_start])
            start, merged_k, merged_total = group_start, group_k, group_total
        k, total = merged_k, merged_total
    chunks.append(order[start:])
    # A run too large for memory on its own is cut into pieces that fit.
    pieces: list[IntArray] = []
    for chunk in chunks:
        size = max(1, _CHUNK_FLOATS // (int(lengths[chunk].max()) + int(ks[chunk].max()) + 1))
        pieces.extend(chunk[i : i + size] for i in range(0, chunk.size, size))
    return pieces


def _by_length(tables: Sequence[FloatArray], total: int) -> FloatArray:
    """Tables by r (1-D, each of its configuration's T + 1 rows) as columns of a (total + 1,
    len(tables)) array, zero below a shorter table's end; tables that are the same object
    (configurations of one cost setting, engine.core.kernel.cycle_costs's cache) copied once."""
    unique: dict[int, tuple[int, FloatArray]] = {}
    columns = [unique.setdefault(id(t), (len(unique), t))[0] for t in tables]
    distinct = np.zeros((total + 1, len(unique)))
    for column, table in unique.values():
        distinct[: table.size, column] = table
    return np.take(distinct, columns, axis=1)


def _limit_figures(
    per_cycle_tokens: FloatArray, ks: IntArray, costs: Sequence[CycleCosts]
) -> dict[str, FloatArray]:
    """The T -> infinity figures of configurations (docs/model.md, "Exact values") from
    their tokens per cycle E[n + 1], their K and their cycle costs, one formula each."""
    limit_step = np.array([c.limit_step_us for c in costs])
    limit_cycle = np.array([c.limit_cycle_us for c in costs])
    cost_ratio = np.array([c.cost_ratio for c in costs])
    return {
        "speedup_limit": per_cycle_tokens * limit_step / limit_cycle,
        "tokens_per_cycle_exact": per_cycle_tokens,
        "breakeven_cost_ratio": (per_cycle_tokens - 1.0) / ks,
        "compute_overhead_limit": (ks + 1 + cost_ratio * ks) / per_cycle_tokens - 1.0,
    }


def _metrics_of_chunk(configs: Sequence[SpecConfig]) -> dict[str, FloatArray]:
    """:func:`exact_metrics_many` of configurations that run the program together."""
    dist, per_cycle_tokens = _acceptance(configs)
    costs = [cycle_costs(c) for c in configs]
    lengths = np.array([c.tokens_per_seq for c in configs], dtype=np.int64)
    ks = np.array([c.k for c in configs], dtype=np.int64)
    cycle_us = _by_length([c.cycle_us for c in costs], int(lengths.max()))
    f = expected_over_sequence(dist, cycle_us)
    sequence_us = f[lengths, np.arange(len(configs))]
    baseline = np.array([c.baseline_us for c in costs])
    return {
        "speedup_exact": baseline / sequence_us,
        **_limit_figures(per_cycle_tokens, ks, costs),
    }


def exact_metrics_many(configs: Iterable[SpecConfig]) -> dict[str, FloatArray]:
    """Every exact figure of every configuration: a dict from each name of
    :data:`EXACT_METRIC_NAMES` to a float64 array with one value per configuration, in the
    order given (empty arrays for no configuration). Element i is bit for bit
    ``exact_metrics(configs[i])[name]``.

    - ``speedup_exact``: expected speedup at the finite length T, the config's tail rule;
    - ``speedup_limit``: T -> infinity at the prompt's context (:func:`speedup_limit`);
    - ``tokens_per_cycle_exact``: E[n + 1] for a cycle of K drafts;
    - ``breakeven_cost_ratio``, ``compute_overhead_limit``: see their functions.

    Configurations may differ in every field. Time O(sum of T x K) plus a few numpy calls
    per r of each chunk (configurations with close K and T share one); memory bounded by
    :data:`_CHUNK_FLOATS` per table, whatever the number of configurations. Raises
    :class:`engine.core.config.ConfigError` when a cost model cannot be built.
    """
    configs = list(configs)
    out = {name: np.empty(len(configs)) for name in EXACT_METRIC_NAMES}
    if not configs:
        return out
    ks = np.array([c.k for c in configs], dtype=np.int64)
    lengths = np.array([c.tokens_per_seq for c in configs], dtype=np.int64)
    for index in _chunks(ks, lengths):
        metrics = _metrics_of_chunk([configs[i] for i in index.tolist()])
        for name, values in metrics.items():
            out[name][index] = values
    _policy_figures(configs, out)
    return out


def _policy_figures(configs: Sequence[SpecConfig], out: dict[str, FloatArray]) -> None:
    """Replace the figures of K policies and markov acceptance (engine.simulate.policies):
    speedup_exact from the program over (r, policy state, regime), NaN where a policy has
    none; a policy other than fixed has no long-run fixed-K figures (NaN). Under markov a
    fixed K keeps them: in the long run its cycles follow the stationary mix."""
    from engine.simulate.policies import exact_speedup, needs_stepwise

    # What each choice of parts needs, once per choice (a grid holds few, of many configs).
    needs: dict[tuple[Any, ...], tuple[bool, bool, bool, bool]] = {}
    shape, policy, model, proposer = (
        FIELD_SPECS[r.selector].attr for r in (SHAPE, POLICY, ACCEPTANCE, PROPOSER)
    )
    for i, config in enumerate(configs):
        chosen = (
            getattr(config, shape),
            getattr(config, policy),
            getattr(config, model),
            getattr(config, proposer),
        )
        need = needs.get(chosen)
        if need is None:
            need = needs[chosen] = (
                SHAPE.of(config).tree,
                needs_stepwise(config),
                POLICY.of(config).stepwise,
                PROPOSER.of(config).model_free,
            )
        tree, stepwise, chooses_k, model_free = need
        if model_free:  # no draft pass; a match per step (engine.simulate.model_free_exact)
            from engine.simulate.model_free_exact import model_free_exact

            figures = model_free_exact(config)
            for name in EXACT_METRIC_NAMES:
                out[name][i] = figures[name]
            continue
        if tree:  # the accepted depth's distribution, the tree's costs
            from engine.simulate.tree_scenario import tree_exact

            found = tree_exact(config)
            for name in EXACT_METRIC_NAMES:
                out[name][i] = found.get(name, np.nan)
            continue
        if not stepwise:
            continue
        out["speedup_exact"][i] = exact_speedup(config)
        if chooses_k:  # k chosen cycle by cycle: no fixed-K limit
            for name in EXACT_METRIC_NAMES[1:]:
                out[name][i] = np.nan


def exact_metrics(config: SpecConfig) -> dict[str, float]:
    """Every exact figure of one configuration, under the names docs/model.md uses
    (:func:`exact_metrics_many` of one)."""
    return {name: float(values[0]) for name, values in exact_metrics_many([config]).items()}


def _limit_figures_of(config: SpecConfig) -> dict[str, FloatArray]:
    """:func:`_limit_figures` of one configuration (arrays of one)."""
    per_cycle_tokens = _acceptance([config])[1]
    ks = np.array([config.k], dtype=np.int64)
    return _limit_figures(per_cycle_tokens, ks, [cycle_costs(config)])


def speedup_limit(config: SpecConfig) -> float:
    """Speedup as tokens_per_seq goes to infinity at the prompt's context: tokens per cycle
    times a decoding step's time over a full cycle's (Leviathan et al. 2023, Thm 3.8, for
    the fixed model under the linear cost). For a context-free cost model (linear, table)
    this is the limit of :func:`speedup_exact`; under a roofline the context grows with
    the sequence, and this is the steady state at ``prompt_len``."""
    return float(_limit_figures_of(config)["speedup_limit"][0])


def breakeven_cost_ratio(config: SpecConfig) -> float:
    """The cost ratio draft/verify at which speedup_limit is exactly 1 for this K and model."""
    return float(_limit_figures_of(config)["breakeven_cost_ratio"][0])


def compute_overhead_limit(config: SpecConfig) -> float:
    """Target positions plus cost_ratio x drafts, per emitted token, minus 1 (Thm 3.11)."""
    return float(_limit_figures_of(config)["compute_overhead_limit"][0])


def expected_sequence_time_us(config: SpecConfig) -> float:
    """Expected speculative time of one sequence of tokens_per_seq tokens, in microseconds,
    each cycle priced by the cost model at its own context (engine.core.kernel.cycle_costs)."""
    from engine.simulate.policies import exact_policy, needs_stepwise

    if PROPOSER.of(config).model_free:
        from engine.simulate.model_free_exact import model_free_exact

        return model_free_exact(config)["time_us"]
    if SHAPE.of(config).tree:
        from engine.simulate.tree_scenario import tree_exact

        return float(cycle_costs(config).baseline_us / tree_exact(config)["speedup_exact"])
    if needs_stepwise(config):  # NaN for a policy with no exact value
        found = exact_policy(config)
        return np.nan if found is None else found.time_us
    dist = _acceptance([config])[0]
    return float(expected_over_sequence(dist, cycle_costs(config).cycle_us[:, None])[-1, 0])


def speedup_exact(config: SpecConfig) -> float:
    """Expected speedup at the finite length tokens_per_seq, for the config's tail rule."""
    return float(exact_metrics_many([config])["speedup_exact"][0])


def tokens_per_cycle_at_length(config: SpecConfig) -> float:
    """E[tokens emitted] / E[cycles] of one sequence of tokens_per_seq tokens, under the
    config's tail rule: the value the Monte Carlo tokens_per_cycle (emitted / cycles)
    estimates. Equals :func:`tokens_per_cycle` under "full", where every cycle drafts K;
    under "clamp" the short last cycles lower it.
    """
    from engine.simulate.policies import exact_policy, needs_stepwise

    if PROPOSER.of(config).model_free:  # steps without a match emit one token
        from engine.simulate.model_free_exact import model_free_exact

        return model_free_exact(config)["tokens_per_cycle_at_length"]
    if SHAPE.of(config).tree:  # every cycle drafts the whole tree (full tail)
        from engine.simulate.tree_scenario import tree_exact

        return tree_exact(config)["tokens_per_cycle_exact"]
    if needs_stepwise(config):
        found = exact_policy(config)
        return np.nan if found is None else (found.accepted + found.cycles) / found.cycles
    big_k, total = config.k, config.tokens_per_seq
    dist = accepted_distribution(config)[:, None]
    surv = np.concatenate(([1.0], survival(config)))
    # emitted[k]: E[n + 1] for a cycle of k drafts, k = 0..K, added j = 0, 1, ...: P(n = j)
    # for j < k, P(n >= k) at j = k, zero beyond.
    j = np.arange(big_k + 1)
    drafts = j[:, None]
    by_k = np.where(j < drafts, dist[:, 0], np.where(j == drafts, surv, 0.0))
    emitted = np.add.accumulate(by_k * (j + 1.0), axis=1)[:, -1]
    r = np.arange(total + 1, dtype=np.int64)
    r[0] = 1  # unused, as in engine.core.kernel.cycle_costs
    per_cycle = np.stack([np.ones(total + 1), emitted[draft_count(config, r)]], axis=1)
    cycles, emitted_total = expected_over_sequence(dist, per_cycle)[-1]
    return float(emitted_total / cycles)


def speedup_curve(config: SpecConfig, ks: Iterable[int]) -> dict[str, np.ndarray]:
    """speedup_exact and speedup_limit of ``config`` for each K in ``ks`` (for charts), from
    one :func:`exact_metrics_many` over the K."""
    ks_arr = np.array(list(ks), dtype=int)
    metrics = exact_metrics_many([config.replace(k=int(k)) for k in ks_arr])
    return {
        "k": ks_arr,
        "speedup_exact": metrics["speedup_exact"],
        "speedup_limit": metrics["speedup_limit"],
    }
