"""A draft tree's structure and its acceptance per rank (the sampler, the named shapes and the
text form are in :mod:`engine.shapes.trees`, which re-exports these names).

A tree of draft tokens is verified in one target pass over its draft nodes plus the root,
the last accepted token. Positional acceptance (Sequoia): a node's children are ranked
``1..m``; given the node was accepted, at most one child is accepted, the rank-``c`` child
with probability ``p_c`` (``sum p_c <= 1``). A chain is the tree with one child per node and
``p_1 = p``. See docs/model.md, "Draft shapes: chains and trees".

``rank_probs`` everywhere is either 1-D (``p_c`` per rank ``c = 1..m``, the same at every
depth) or 2-D (row ``j - 1`` for the nodes at depth ``j``; a tree deeper than the rows uses
the last row). Ranks beyond the list have ``p = 0``.

A tree's *budget* counts its draft nodes, without the root (Sequoia's paper counts the root,
so its budget ``n`` is our ``n - 1``).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
RankProbs = Sequence[float] | Sequence[Sequence[float]] | FloatArray

_SUM_SLACK = 1e-9  # rank probabilities read from logs may sum to 1 + rounding


# ---- The structure --------------------------------------------------------------------------


@dataclass(frozen=True)
class Tree:
    """A draft tree: node ``i`` (1..n) hangs under ``parents[i - 1]`` (0 is the root, the last
    accepted token) as its ``ranks[i - 1]``-th choice (1 = the draft's top choice).

    Nodes are in breadth-first order: parents are non-decreasing and each is an earlier node,
    so siblings are contiguous; siblings have distinct ranks. Invalid input: ValueError.
    """

    parents: tuple[int, ...]
    ranks: tuple[int, ...]

    def __post_init__(self) -> None:
        if len(self.parents) != len(self.ranks):
            raise ValueError(
                f"tree: {len(self.parents)} parents but {len(self.ranks)} ranks (one each per node)"
            )
        previous = 0
        for node, (parent, rank) in enumerate(zip(self.parents, self.ranks, strict=True), start=1):
            if not 0 <= parent < node:
                raise ValueError(f"tree: node {node} has parent {parent}; it must be 0..{node - 1}")
            if parent < previous:
                raise ValueError(
                    f"tree: node {node} has parent {parent} after a node with parent {previous}: "
                    "parents must be non-decreasing (breadth-first order)"
                )
            if rank < 1:
                raise ValueError(f"tree: node {node} has rank {rank}; ranks start at 1")
            previous = parent
        for parent, group in itertools.groupby(
            zip(self.parents, self.ranks, strict=True), lambda pr: pr[0]
        ):
            ranks = [rank for _, rank in group]
            if len(set(ranks)) != len(ranks):
                raise ValueError(f"tree: the children of node {parent} repeat a rank: {ranks}")

    @property
    def nodes(self) -> int:
        """n, the number of draft nodes (the budget; the root is not counted)."""
        return len(self.parents)

    @cached_property
    def depths(self) -> tuple[int, ...]:
        """Depth of each node 1..n (the root has depth 0, its children 1)."""
        depth = [0]
        for parent in self.parents:
            depth.append(depth[parent] + 1)
        return tuple(depth[1:])

    @property
    def depth(self) -> int:
        """The tree's depth: the most drafts that one cycle can accept (0 for no nodes)."""
        return max(self.depths, default=0)

    @property
    def level_sizes(self) -> tuple[int, ...]:
        """Nodes at depth 1..depth: the widths of the ``depth`` draft passes."""
        sizes = [0] * self.depth
        for d in self.depths:
            sizes[d - 1] += 1
        return tuple(sizes)

    def path_texts(self) -> tuple[str, ...]:
        """For each node 0..n, the accepted path that ends on it, as the nodes from the root
        down: ``"1>3>12"`` (node 12, under 3, under 1); ``"-"`` for node 0, the root, a cycle
        that accepted none of the tree."""
        paths = [""]
        for node, parent in enumerate(self.parents, start=1):
            paths.append(f"{paths[parent]}>{node}" if parent else str(node))
        return ("-", *paths[1:])

    def text(self) -> str:
        """The explicit form, e.g. ``"parents=0,0,1,1,2 ranks=1,2,1,2,1"`` (parse_tree reads it)."""
        parents = ",".join(map(str, self.parents))
        ranks = ",".join(map(str, self.ranks))
        return f"parents={parents} ranks={ranks}"


Forest = list[tuple[int, "Forest"]]  # (rank, the child's own children), under one parent


def _from_forest(forest: Forest) -> Tree:
    """A Tree from the nested form of the root's children, numbered breadth-first."""
    parents: list[int] = []
    ranks: list[int] = []
    queue = [(0, forest)]
    for parent, forest in queue:  # breadth-first: the queue grows while it is read
        for rank, sub in forest:
            parents.append(parent)
            ranks.append(rank)
            queue.append((len(parents), sub))
    return Tree(tuple(parents), tuple(ranks))


def chain(k: int) -> Tree:
    """A chain of ``k >= 0`` drafts: each node the top choice of the one before."""
    if k < 0:
        raise ValueError(f"chain: K must be >= 0, got {k}")
    return Tree(tuple(range(k)), (1,) * k)


def kary(k: int, d: int) -> Tree:
    """Medusa-style full k-ary tree of depth d: every node has children of ranks 1..k
    (``k + k^2 + ... + k^d`` nodes)."""
    if k < 1 or d < 0:
        raise ValueError(f"kary: needs k >= 1 and d >= 0, got k={k}, d={d}")
    parents: list[int] = []
    level = [0]
    for _ in range(d):
        next_level = []
        for parent in level:
            for _rank in range(k):
                parents.append(parent)
                next_level.append(len(parents))
        level = next_level
    return Tree(
        tuple(parents), tuple(itertools.islice(itertools.cycle(range(1, k + 1)), len(parents)))
    )


# ---- Acceptance per rank --------------------------------------------------------------------


def _base_table(rank_probs: RankProbs) -> FloatArray:
    """The validated (rows, m) table of p by depth and rank; rows of unequal length are
    padded with zeros (ranks beyond a row's list have p = 0)."""
    items: list[Any] = list(rank_probs)
    if items and all(np.ndim(item) == 1 for item in items):  # by depth; rows may be ragged
        width = max(len(item) for item in items)
        items = [list(item) + [0.0] * (width - len(item)) for item in items]
    table = np.array(items, dtype=np.float64)
    if table.ndim == 1:
        table = table[None, :]
    if table.ndim != 2 or table.shape[0] == 0 or table.shape[1] == 0:
        raise ValueError(
            "rank_probs: needs a non-empty list per rank (or a list of them per depth)"
        )
    if not np.all(np.isfinite(table)) or table.min() < 0.0 or table.max() > 1.0:
        raise ValueError("rank_probs: each probability must be in [0, 1]")
    if table.sum(axis=1).max() > 1.0 + _SUM_SLACK:
        raise ValueError("rank_probs: the probabilities of one node's ranks must sum to <= 1")
    return table


def _rank_table(rank_probs: RankProbs, depth: int) -> FloatArray:
    """A (max(depth, 1), m) table: row j - 1 holds p_1..p_m for the nodes at depth j."""
    table = _base_table(rank_probs)
    rows = np.minimum(np.arange(max(depth, 1)), table.shape[0] - 1)  # deeper: the last row
    return table[rows]


def _node_probs(tree: Tree, rank_probs: RankProbs) -> FloatArray:
    """p of each node 1..n given its parent was accepted (0 for ranks beyond the list)."""
    table = _rank_table(rank_probs, tree.depth)
    padded = np.concatenate((table, np.zeros((table.shape[0], 1))), axis=1)
    ranks = np.minimum(np.array(tree.ranks, dtype=np.int64), table.shape[1] + 1)
    depths = np.array(tree.depths, dtype=np.int64)
    return np.asarray(padded[depths - 1, ranks - 1], dtype=np.float64)


def path_probs(tree: Tree, rank_probs: RankProbs) -> FloatArray:
    """P(node v is accepted) for v = 1..n: the product of p_rank over the path root -> v
    (multiplied from the root down, as a chain's cumulative product)."""
    probs = _node_probs(tree, rank_probs)
    path = np.empty(tree.nodes + 1)
    path[0] = 1.0
    for node, parent in enumerate(tree.parents, start=1):
        path[node] = path[parent] * probs[node - 1]
    return path[1:]


def expected_tokens(tree: Tree, rank_probs: RankProbs) -> float:
    """E[n + 1], tokens emitted per cycle: 1 + the sum of the path probabilities, in
    [1, depth + 1]."""
    return 1.0 + float(path_probs(tree, rank_probs).sum())


def depth_distribution(tree: Tree, rank_probs: RankProbs) -> FloatArray:
    """P(accepted depth = j) for j = 0..depth (sums to 1): the accepted nodes at one depth
    are exclusive, so P(depth >= j) is the sum of that level's path probabilities; a chain
    gives exactly :func:`engine.simulate.exact.accepted_distribution`."""
    path = path_probs(tree, rank_probs)
    surv = np.zeros(tree.depth + 2)  # P(depth >= j), j = 0..depth + 1
    surv[0] = 1.0
    np.add.at(surv, np.array(tree.depths, dtype=np.int64), path)
    return surv[:-1] - surv[1:]
