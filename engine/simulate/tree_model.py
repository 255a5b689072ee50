"""The scenario's token tree, what its cycle costs and its exact figures (docs/model.md,
"Draft shapes"); :mod:`engine.simulate.tree_scenario` re-exports these names and runs the
Monte Carlo and the comparisons on them.

A tree (``engine.shapes.trees``) is verified in one target pass over its draft nodes plus the
root (``w = nodes + 1`` tokens per sequence) and drafted in ``depth`` draft passes, each as
wide as its level. Cycles are independent, so a sequence's exact expectations come from the
same finite-length program as a chain's (:func:`engine.simulate.exact.expected_over_sequence`),
with the distribution of the accepted depth in place of the accepted count and the tree's
cycle time at each context.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from engine.core.config import ConfigError, SpecConfig, rates_of
from engine.core.kernel import CycleCosts, context_length, cycle_costs, cycle_times
from engine.core.parts import SHAPE
from engine.cost.models import build_cost

if TYPE_CHECKING:
    from engine.shapes.trees import Tree


def rank_probs_of(config: SpecConfig) -> np.ndarray:
    """The scenario's rank probabilities p_1, p_2, ... (``shape.rank_probs``)."""
    return np.array(rates_of(config.rank_probs), dtype=np.float64)


@lru_cache(maxsize=64)
def _tree(text: str, probs: str, k: int, shape: str) -> Tree:
    from engine.shapes.trees import chain, parse_tree

    if not SHAPE[shape].tree:
        return chain(k)
    try:
        return parse_tree(text, np.array(rates_of(probs)))
    except ValueError as err:
        raise ConfigError("shape.tree", str(err)) from None


def tree_of(config: SpecConfig) -> Tree:
    """The scenario's tree: ``shape.tree`` read with its rank probabilities (a chain of K
    for shape chain). ConfigError naming ``shape.tree`` when the text cannot be built."""
    return _tree(config.tree, config.rank_probs, config.k, config.shape)


def _prices(config: SpecConfig, tree: Tree) -> tuple[np.ndarray, np.ndarray, float]:
    """Tree cycle time and drafting time by r (index 0 unused), and the baseline's time."""
    cost = build_cost(config)
    r = np.arange(config.tokens_per_seq + 1, dtype=np.int64)
    r[0] = 1
    context = context_length(config, r)
    draft, _, cycle = cycle_times(cost, tree.depth, config.batch_size, context, tree=tree)
    step = np.asarray(cost.verify_us(np.ones_like(r), config.batch_size, context), dtype=float)
    return (
        np.broadcast_to(cycle, r.shape).astype(np.float64),
        np.broadcast_to(draft, r.shape).astype(np.float64),
        math.fsum(step[1:].tolist()),
    )


@dataclass(frozen=True)
class TreeCycle:
    """A full tree cycle at the prompt's context, what ``spectui run`` and the app's Exact
    panel show for a tree: its draft nodes and depth, the drafting time (``depth`` passes,
    each as wide as its level), the verify pass over ``nodes + 1`` tokens per sequence and
    what bounds it (``-`` where the cost model does not say), microseconds."""

    nodes: int
    depth: int
    draft_us: float
    verify_us: float
    cycle_us: float
    bound: str


def tree_cycle(config: SpecConfig) -> TreeCycle:
    """:class:`TreeCycle` of the scenario's tree (ConfigError as :func:`tree_of`, or when the
    cost model cannot be built)."""
    tree = tree_of(config)
    cost = build_cost(config)
    draft, verify, cycle = cycle_times(
        cost, tree.depth, config.batch_size, config.prompt_len, tree=tree
    )
    bound_of = getattr(cost, "bound", None)
    bound = (
        "-"
        if bound_of is None
        else str(bound_of(tree.nodes + 1, config.batch_size, config.prompt_len))
    )
    return TreeCycle(tree.nodes, tree.depth, float(draft), float(verify), float(cycle), bound)


def full_cycle(config: SpecConfig) -> tuple[CycleCosts, TreeCycle | None]:
    """The scenario's full cycle at the prompt's context, as ``spectui run`` and the Exact
    panel show it: :func:`engine.core.kernel.cycle_costs` with, for a token tree, the tree's own
    draft, verify and cycle times and bound in its ``limit_*`` and ``bound`` fields, and the
    tree's :class:`TreeCycle` (None for a chain). ConfigError as either raises it."""
    costs = cycle_costs(config)
    if not SHAPE.of(config).tree:
        return costs, None
    tree = tree_cycle(config)
    return (
        replace(
            costs,
            limit_draft_us=tree.draft_us,
            limit_verify_us=tree.verify_us,
            limit_cycle_us=tree.cycle_us,
            bound=tree.bound,
        ),
        tree,
    )


def tree_exact(config: SpecConfig, tree: Tree | None = None) -> dict[str, float]:
    """Exact figures of a tree scenario: ``speedup_exact`` (finite T, the program over r),
    ``tokens_per_cycle_exact`` (E[n + 1]) and ``speedup_limit`` (E[n + 1] decoding steps
    per cycle time, at the prompt's context)."""
    from engine.shapes.trees import depth_distribution, expected_tokens
    from engine.simulate.sequence_dp import expected_over_sequence

    tree = tree_of(config) if tree is None else tree
    probs = rank_probs_of(config)
    dist = depth_distribution(tree, probs)[:, None]
    cycle, _, baseline = _prices(config, tree)
    expected = float(expected_over_sequence(dist, cycle[:, None])[-1, 0])
    tokens = float(expected_tokens(tree, probs))
    cost = build_cost(config)
    _, _, limit_cycle = cycle_times(
        cost, tree.depth, config.batch_size, config.prompt_len, tree=tree
    )
    step = float(cost.verify_us(1, config.batch_size, config.prompt_len))
    return {
        "speedup_exact": baseline / expected,
        "tokens_per_cycle_exact": tokens,
        "speedup_limit": tokens * step / float(limit_cycle),
    }


def depth_acceptance(config: SpecConfig) -> np.ndarray:
    """The model's P(the accepted path reaches depth i | it reached depth i - 1), i = 1 ..
    the tree's depth: a chain's per-position acceptance, for a tree (what a tree run's
    ``position_acceptance`` observes)."""
    from engine.shapes.trees import depth_distribution

    tree = tree_of(config)
    dist = depth_distribution(tree, rank_probs_of(config))
    reached = np.cumsum(dist[::-1])[::-1]  # P(depth >= j), j = 0..depth
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(reached[1:] / reached[:-1], dtype=np.float64)
