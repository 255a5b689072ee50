"""Token trees in a scenario: what a tree cycle costs, its exact speedup, its Monte Carlo,
and the comparisons ``spectui tree`` and the Tree view print (docs/model.md, "Draft shapes").

A tree (``engine.shapes.trees``) is verified in one target pass over its draft nodes plus the root
(``w = nodes + 1`` tokens per sequence) and drafted in ``depth`` draft passes, each as wide
as its level. A cycle emits the accepted depth plus one token. Cycles are independent, so a
sequence's exact expectations come from the same finite-length program as a chain's
(:func:`engine.simulate.exact.expected_over_sequence`), with the distribution of the accepted depth
in place of the accepted count and the tree's cycle time at each context. The Monte Carlo
samples the accepted path (one uniform per accepted node picks which child, if any, is
accepted: :func:`engine.shapes.trees.sample_cycles`). A chain of K with rank probabilities [p] is
the fixed model's chain exactly.

The scenario's tree, its cycle's prices and its exact figures live in
:mod:`engine.simulate.tree_model`, re-exported here.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from engine.core.config import SpecConfig
from engine.core.kernel import Totals, cycle_times
from engine.core.runs import RECORD_DTYPES, KeptRecords
from engine.cost.models import build_cost
from engine.simulate.tree_model import TreeCycle as TreeCycle
from engine.simulate.tree_model import _prices, rank_probs_of, tree_exact, tree_of
from engine.simulate.tree_model import depth_acceptance as depth_acceptance
from engine.simulate.tree_model import full_cycle as full_cycle
from engine.simulate.tree_model import tree_cycle as tree_cycle

if TYPE_CHECKING:
    from engine.core.runs import RunResult
    from engine.shapes.trees import Tree

# Budgets and batch sizes of the budget x batch grid (the Tree view's heatmap, `spectui tree`).
BATCH_SIZES = (1, 2, 4, 8, 16, 32, 64, 128, 256)
BUDGETS = (1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128)
DEPTH_MAX = 16

# The per-cycle records of a tree run: the chain's columns (``k``: the tree's draft nodes,
# ``accepted``: the accepted depth) and ``node``, the last accepted node (0: the root, none
# accepted; nodes numbered as in ``Tree.text``, breadth-first from 1).
TREE_RECORD_DTYPES: dict[str, str] = {**RECORD_DTYPES, "node": "int32"}
# Records a tree run holds at once when streaming them (about 40 bytes each): its
# sequences run in lockstep, so a sequence's records are complete only near the run's end;
# more sequences than fit are streamed by running again, same draws, for each next group.
TREE_RECORDS_PER_PASS = 1 << 21


def simulate_tree(
    config: SpecConfig,
    *,
    records: bool = False,
    on_cycles: Callable[[pd.DataFrame], None] | None = None,
    max_records: int | None = None,
    position_counts: bool = False,
    should_stop: Callable[[], bool] | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> RunResult:
    """Monte Carlo of a tree scenario: every running sequence samples its cycle's accepted
    path (:func:`engine.shapes.trees.sample_cycles`), in lockstep; metrics as for a chain
    (drafted = the tree's nodes per cycle, accepted = the accepted depth).

    ``records``, ``on_cycles``, ``max_records`` as for :func:`engine.simulate.simulator.simulate`,
    with the columns of :data:`TREE_RECORD_DTYPES`, ordered by sequence then cycle; they do
    not change the draws. ``position_counts``: cycles counted by accepted depth, a cycle
    that stopped above the tree's depth counted as stopped there (so position i is
    P(the path reaches depth i | it reached depth i - 1), as :func:`depth_acceptance`)."""
    from engine.core.kernel import metrics_from_totals
    from engine.core.runs import RunResult
    from engine.shapes.trees import expected_tokens

    tree = tree_of(config)
    totals = Totals()
    if position_counts:
        totals.count_positions_up_to(tree.depth)
    n = config.n_sequences
    per_sequence = (
        math.ceil(config.tokens_per_seq / float(expected_tokens(tree, rank_probs_of(config)))) + 1
    )
    if on_cycles is not None:  # every record, in groups of sequences that fit a pass
        group = max(1, TREE_RECORDS_PER_PASS // per_sequence)
    elif records and max_records is not None:  # the first sequences, enough for
        fewest = math.ceil(config.tokens_per_seq / (tree.depth + 1))  # max_records at the
        group = min(n, math.ceil(max_records / fewest))  # fewest cycles a sequence can take
        group = min(group, max(1, TREE_RECORDS_PER_PASS // per_sequence))  # (and a pass's)
    elif records:
        group = n
    else:
        group = 0
    kept = KeptRecords(records, max_records, on_cycles)
    chunk = _lockstep(config, tree, totals, (0, group), should_stop, on_progress)
    if chunk is not None:
        kept.take(chunk)
    if on_cycles is not None:  # the other groups: the same run again, same draws
        for first in range(group, n, group):
            rerun = _lockstep(config, tree, Totals(), (first, first + group), should_stop, None)
            assert rerun is not None
            kept.take(rerun)
    metrics = metrics_from_totals(config, totals, _exact_metrics(config, tree))
    cycles = None
    if records:
        cycles = kept.frame(_tree_frame([], tree.nodes))
    return RunResult(config, metrics, cycles, totals)


def _lockstep(
    config: SpecConfig,
    tree: Tree,
    totals: Totals,
    recorded: tuple[int, int],
    should_stop: Callable[[], bool] | None,
    on_progress: Callable[[int, int], None] | None,
) -> pd.DataFrame | None:
    """One run of every sequence in lockstep, its totals added to ``totals``; the records
    of sequences ``recorded[0]`` up to ``recorded[1]`` (excluded), ordered by sequence then
    cycle (None if that range is empty)."""
    from engine.core.runs import RunStopped, config_rng
    from engine.shapes.trees import cycle_sampler

    sample_cycles = cycle_sampler(tree, rank_probs_of(config))  # its tables, built once
    cycle, draft, _ = _prices(config, tree)
    rng = config_rng(config)
    total, n = config.tokens_per_seq, config.n_sequences
    remaining = np.full(n, total, dtype=np.int64)
    times = np.zeros(n)
    low, high = recorded[0], min(recorded[1], n)
    parts: list[tuple[np.ndarray, ...]] = []
    steps = 0
    while (active := np.flatnonzero(remaining > 0)).size:
        depth, last = sample_cycles(rng, active.size)
        r = remaining[active]
        kept = np.minimum(depth + 1, r)
        times[active] += cycle[r]
        totals.add_cycles(
            int(active.size),
            int(active.size) * tree.nodes,
            int(depth.sum()),
            int(np.minimum(depth, kept).sum()),
            float(draft[r].sum()),
        )
        totals.count_positions(depth, depth < tree.depth)
        if low < high:
            rows = slice(*np.searchsorted(active, (low, high)))
            i32 = np.int32  # the record's dtype at once: half the bytes held until the end
            seq = active[rows]
            parts.append(
                (
                    seq.astype(i32),
                    np.full(seq.size, steps, dtype=i32),
                    depth[rows].astype(i32),
                    kept[rows].astype(i32),
                    cycle[r[rows]],
                    (total - r + kept)[rows].astype(i32),
                    times[seq],
                    last[rows].astype(i32),
                )
            )
        remaining[active] = r - kept
        steps += 1
        # Every step (of every running sequence: a step of 10^7 takes seconds), so that
        # a cancelled run stops after the step it is in.
        if should_stop is not None and should_stop():
            raise RunStopped
        if on_progress is not None:
            done = int((remaining == 0).sum())
            on_progress(done, int(total * n - remaining.sum()))
    totals.add_sequences(times)
    return _tree_frame(parts, tree.nodes) if low < high else None


def _tree_frame(parts: list[tuple[np.ndarray, ...]], nodes: int) -> pd.DataFrame:
    """Records of :data:`TREE_RECORD_DTYPES` from the lockstep's parts (one per cycle step,
    each in sequence order), ordered by sequence then cycle."""
    names = (
        "sequence",
        "cycle",
        "accepted",
        "kept",
        "cycle_time_us",
        "cum_tokens",
        "cum_time_us",
        "node",
    )
    sequence = np.concatenate([p[0] for p in parts]) if parts else np.zeros(0, np.int32)
    order = np.argsort(sequence, kind="stable")  # each step is in sequence order
    columns = {"sequence": sequence[order], "k": np.full(sequence.size, nodes, dtype=np.int32)}
    for i, name in enumerate(names[1:], start=1):
        column = np.concatenate([p[i] for p in parts]) if parts else np.zeros(0)
        columns[name] = column[order]
    return pd.DataFrame(
        {
            name: columns[name].astype(dtype, copy=False)
            for name, dtype in TREE_RECORD_DTYPES.items()
        },
        copy=False,
    )


def _exact_metrics(config: SpecConfig, tree: Tree) -> dict[str, float]:
    found = tree_exact(config, tree)
    return {
        "speedup_exact": found["speedup_exact"],
        "speedup_limit": found["speedup_limit"],
        "tokens_per_cycle_exact": found["tokens_per_cycle_exact"],
        "breakeven_cost_ratio": math.nan,
        "compute_overhead_limit": math.nan,
    }


@dataclass(frozen=True)
class ShapeRow:
    """One draft shape on a scenario: what `spectui tree` prints."""

    name: str
    tree: Tree
    nodes: int
    depth: int
    expected_tokens: float
    verify_width: int
    cycle_us: float
    speedup: float  # exact, at the scenario's length


def shape_row(name: str, config: SpecConfig, tree: Tree) -> ShapeRow:
    """One tree's row on the scenario (see :class:`ShapeRow`)."""
    return _row(name, config.replace(**{"shape.name": "tree"}), tree)


def _row(name: str, config: SpecConfig, tree: Tree, speedup: float | None = None) -> ShapeRow:
    from engine.shapes.trees import expected_tokens

    cost = build_cost(config)
    _, _, cycle = cycle_times(cost, tree.depth, config.batch_size, config.prompt_len, tree=tree)
    return ShapeRow(
        name,
        tree,
        tree.nodes,
        tree.depth,
        float(expected_tokens(tree, rank_probs_of(config))),
        tree.nodes + 1,
        float(cycle),
        tree_exact(config, tree)["speedup_exact"] if speedup is None else speedup,
    )


# Prices ((T + 1) x trees) of the programs :func:`tree_speedups` runs together: 128 MB.
PROGRAM_FLOATS = 1 << 24


def tree_speedups(
    config: SpecConfig,
    trees: Sequence[Tree],
    on_done: Callable[[int], None] | None = None,
) -> list[float]:
    """``tree_exact(config, tree)["speedup_exact"]`` of each tree, their programs run as the
    columns of one :func:`engine.simulate.exact.expected_over_sequence` (the same terms added in the
    same order: the same bits), in groups of at most :data:`PROGRAM_FLOATS` prices.
    ``on_done(count)`` after each group, with the trees done so far."""
    from engine.shapes.trees import depth_distribution
    from engine.simulate.sequence_dp import expected_over_sequence

    probs = rank_probs_of(config)
    rows = config.tokens_per_seq + 1
    size = max(1, PROGRAM_FLOATS // rows)
    found: list[float] = []
    for start in range(0, len(trees), size):
        group = trees[start : start + size]
        dist = np.zeros((max(tree.depth for tree in group) + 1, len(group)))
        prices = np.empty((rows, len(group)))
        baseline = 0.0
        for column, tree in enumerate(group):
            depths = depth_distribution(tree, probs)
            dist[: depths.size, column] = depths
            prices[:, column], _, baseline = _prices(config, tree)  # one baseline for all
        expected = expected_over_sequence(dist, prices)[-1]
        found.extend(baseline / float(value) for value in expected)
        if on_done is not None:
            on_done(len(found))
    return found


# Progress of a long comparison: called with (programs done, programs in all), where a
# program is one tree's exact speedup over the scenario's length (O(T x depth)).
Progress = Callable[[int, int], None]
CHAINS = range(1, 17)  # the chain K a comparison tries


def compare_shapes_programs(budgets: Sequence[int] = BUDGETS) -> int:
    """How many programs :func:`compare_shapes` runs."""
    return len(CHAINS) + 2 + sum(len(_depths(b)) for b in budgets)


def compare_shapes(
    config: SpecConfig,
    *,
    kary: tuple[int, int] = (2, 3),
    budgets: Sequence[int] = BUDGETS,
    on_progress: Progress | None = None,
) -> list[ShapeRow]:
    """The best chain (K in 1..16, by exact speedup), a k-ary tree, EAGLE's default shape,
    and the Sequoia-optimal tree (the budget of ``budgets`` and depth up to 16 with the
    best exact speedup), on the scenario's rank probabilities and cost."""
    from engine.shapes.trees import chain, eagle_tree
    from engine.shapes.trees import kary as kary_tree

    total = compare_shapes_programs(budgets)
    probs = rank_probs_of(config)
    tree_config = config.replace(**{"shape.name": "tree", "tail": "full", "policy.name": "fixed"})
    k, d = kary
    named = [(f"chain K={c}", chain(c)) for c in CHAINS]
    named += [(f"{k}-ary depth {d}", kary_tree(k, d)), ("EAGLE (60, 7, 10)", eagle_tree(probs))]
    named += _sequoias(probs, budgets)
    speedups = tree_speedups(
        tree_config,
        [tree for _, tree in named],
        None if on_progress is None else lambda done: on_progress(done, total),
    )
    found = [
        _row(name, tree_config, tree, speedup)
        for (name, tree), speedup in zip(named, speedups, strict=True)
    ]
    chains, others, sequoias = (
        found[: len(CHAINS)],
        found[len(CHAINS) : len(CHAINS) + 2],
        found[len(CHAINS) + 2 :],
    )
    best_chain = max(chains, key=lambda row: row.speedup)
    return [best_chain, *others, _first_fastest(sequoias)]


def _sequoias(probs: np.ndarray, budgets: Sequence[int]) -> list[tuple[str, Tree]]:
    """The Sequoia trees of ``budgets`` and depths 1..16, named, budget by budget."""
    return [
        (f"Sequoia {budget}/{depth}", tree)
        for (budget, depth), tree in _sequoia_family(tuple(map(float, probs)), tuple(budgets))
    ]


@lru_cache(maxsize=8)
def _sequoia_family(
    probs: tuple[float, ...], budgets: tuple[int, ...]
) -> tuple[tuple[tuple[int, int], Tree], ...]:
    """((budget, depth), the Sequoia tree) for ``budgets`` and depths 1..16, budget by budget,
    from one program (:func:`engine.shapes.trees.sequoia_trees`); kept, so that a scenario's
    comparison and its grid by batch share them (with 1,024 ranks the program takes a
    second)."""
    from engine.shapes.trees import sequoia_trees

    keys = [(budget, depth) for budget in budgets for depth in _depths(budget)]
    return tuple(zip(keys, sequoia_trees(probs, keys), strict=True))


def _first_fastest(rows: Sequence[ShapeRow]) -> ShapeRow:
    """The row of the best speedup, the first of those that tie."""
    best = rows[0]
    for row in rows[1:]:
        if row.speedup > best.speedup:
            best = row
    return best


def best_sequoia(config: SpecConfig, budgets: Sequence[int] = BUDGETS) -> ShapeRow:
    """The Sequoia-optimal tree over ``budgets`` and depths 1..16 with the best exact
    speedup under the scenario's cost."""
    named = _sequoias(rank_probs_of(config), budgets)
    speedups = tree_speedups(config, [tree for _, tree in named])
    return _first_fastest(
        [_row(name, config, tree, s) for (name, tree), s in zip(named, speedups, strict=True)]
    )


def _depths(budget: int) -> range:
    return range(1, min(budget, DEPTH_MAX) + 1)


@dataclass(frozen=True)
class BudgetGrid:
    """The best tree size by batch size: ``speedup[b, j]`` of the best Sequoia tree of
    ``budgets[j]`` nodes (any depth up to 16) at ``batch_sizes[b]``; the best budget per
    batch and its speedup; and the best chain K per batch and its speedup."""

    batch_sizes: tuple[int, ...]
    budgets: tuple[int, ...]
    speedup: np.ndarray
    best_budget: np.ndarray
    best_speedup: np.ndarray
    chain_k: np.ndarray
    chain_speedup: np.ndarray


def _offset(on_progress: Progress, before: int, total: int) -> Callable[[int], None]:
    """``on_progress`` of the programs done so far in a part that starts after ``before``."""
    return lambda done: on_progress(before + done, total)


def budget_by_batch_programs(
    batch_sizes: Sequence[int] = BATCH_SIZES, budgets: Sequence[int] = BUDGETS
) -> int:
    """How many programs :func:`budget_by_batch` runs."""
    return len(batch_sizes) * (len(CHAINS) + sum(len(_depths(b)) for b in budgets))


def budget_by_batch(
    config: SpecConfig,
    batch_sizes: Sequence[int] = BATCH_SIZES,
    budgets: Sequence[int] = BUDGETS,
    should_stop: Callable[[], bool] | None = None,
    on_progress: Progress | None = None,
) -> BudgetGrid:
    """:class:`BudgetGrid` of the scenario (its cost model; a linear cost has no batch
    dependence, so every row is the same). ``on_progress`` after each batch size."""
    from engine.shapes.trees import chain

    probs = rank_probs_of(config)
    tree_config = config.replace(**{"shape.name": "tree", "tail": "full", "policy.name": "fixed"})
    trees = dict(_sequoia_family(tuple(map(float, probs)), tuple(budgets)))
    speedup = np.empty((len(batch_sizes), len(budgets)))
    chain_k = np.empty(len(batch_sizes), dtype=np.int64)
    chain_speedup = np.empty(len(batch_sizes))
    for i, batch in enumerate(batch_sizes):
        if should_stop is not None and should_stop():
            from engine.core.runs import RunStopped

            raise RunStopped
        at = tree_config.replace(**{"workload.batch_size": batch})
        keys = list(trees)
        total = budget_by_batch_programs(batch_sizes, budgets)
        before = i * total // len(batch_sizes)
        found = tree_speedups(
            at,
            [trees[key] for key in keys] + [chain(k) for k in CHAINS],
            None if on_progress is None else _offset(on_progress, before, total),
        )
        by_key = dict(zip(keys, found, strict=False))
        for j, budget in enumerate(budgets):
            speedup[i, j] = max(by_key[(budget, d)] for d in _depths(budget))
        chains = found[len(keys) :]
        chain_k[i] = int(np.argmax(chains)) + 1
        chain_speedup[i] = max(chains)
    best = np.argmax(speedup, axis=1)
    return BudgetGrid(
        tuple(batch_sizes),
        tuple(budgets),
        speedup,
        np.array([budgets[j] for j in best]),
        speedup[np.arange(len(batch_sizes)), best],
        chain_k,
        chain_speedup,
    )
