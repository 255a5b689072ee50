"""Token trees as a draft shape: structure, named shapes, exact values and sampling.

A tree of draft tokens (Medusa, EAGLE, SpecInfer, Sequoia) is verified in one target pass
over its draft nodes plus the root, the last accepted token. Positional acceptance
(Sequoia): a node's children are ranked ``1..m``; given the node was accepted, at most one
child is accepted, the rank-``c`` child with probability ``p_c`` (``sum p_c <= 1``). A chain
is the tree with one child per node and ``p_1 = p``. See docs/model.md, "Draft shapes: chains
and trees".

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

EAGLE_TOTAL = 60  # EAGLE-2's default total_token: draft nodes, the root excluded
EAGLE_DEPTH = 7
EAGLE_TOP_K = 10
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


# Cells (sequences x children) compared at once when sampling cycles: bounds the memory of a
# step of many sequences through a wide tree (10^7 sequences x 64 children would be 5 GB).
_SAMPLE_CELLS = 1 << 22


@dataclass(frozen=True)
class CycleSampler:
    """:func:`sample_cycles` of one tree and acceptance, its tables built once (a run
    samples every step from the same tree). Only nodes with children have a row (row 0:
    none), so the tables are at most nodes x widest fan-out."""

    depth: int
    row: IntArray  # the table row of each node 0..n (0 for a leaf)
    children: IntArray  # (rows, width): the children of a row's node, in order
    upper: FloatArray  # (rows, width): cumulative p of those children; inf beyond them
    count: IntArray  # children of a row's node

    def __call__(self, rng: np.random.Generator, size: int) -> tuple[IntArray, IntArray]:
        last = np.zeros(size, dtype=np.int64)
        depth = np.zeros(size, dtype=np.int64)
        active = np.arange(size)
        step = max(1, _SAMPLE_CELLS // self.upper.shape[1])
        for _ in range(self.depth):
            if active.size == 0:
                break
            uniform = rng.random(active.size)
            rows = self.row[last[active]]
            pick = np.empty(active.size, dtype=np.int64)
            for i in range(0, active.size, step):  # first child whose bound exceeds u
                part = slice(i, i + step)
                pick[part] = (uniform[part, None] >= self.upper[rows[part]]).sum(axis=1)
            hit = pick < self.count[rows]
            active = active[hit]
            last[active] = self.children[rows[hit], pick[hit]]
            depth[active] += 1
        return depth, last


def cycle_sampler(tree: Tree, rank_probs: RankProbs) -> CycleSampler:
    """The :class:`CycleSampler` of ``tree`` under ``rank_probs``."""
    probs = _node_probs(tree, rank_probs)
    width = max((sum(1 for _ in g) for _, g in itertools.groupby(tree.parents)), default=0)
    inner = sorted(set(tree.parents))
    row = np.zeros(tree.nodes + 1, dtype=np.int64)
    row[inner] = np.arange(1, len(inner) + 1)
    children = np.zeros((len(inner) + 1, max(width, 1)), dtype=np.int64)
    upper = np.full((len(inner) + 1, max(width, 1)), np.inf)  # cumulative p; inf: no child
    count = np.zeros(len(inner) + 1, dtype=np.int64)
    cum = np.zeros(tree.nodes + 1)
    for node, parent in enumerate(tree.parents, start=1):
        cum[parent] += probs[node - 1]
        at = row[parent]
        children[at, count[at]] = node
        upper[at, count[at]] = cum[parent]
        count[at] += 1
    return CycleSampler(tree.depth, row, children, upper, count)


def sample_cycles(
    tree: Tree, rank_probs: RankProbs, rng: np.random.Generator, size: int
) -> tuple[IntArray, IntArray]:
    """The accepted depth (0..depth) and the last accepted node (0 = the root) of ``size``
    independent cycles: from the root down, one uniform per accepted node picks which child,
    if any, is accepted (child c with probability p_rank(c)). Sampling many times from one
    tree: :func:`cycle_sampler` builds its tables once."""
    return cycle_sampler(tree, rank_probs)(rng, size)


# ---- Named shapes built from the acceptance -------------------------------------------------


def eagle_tree(
    rank_probs: RankProbs,
    total: int = EAGLE_TOTAL,
    depth: int = EAGLE_DEPTH,
    top_k: int = EAGLE_TOP_K,
) -> Tree:
    """EAGLE-2's dynamic tree from positional acceptance: the root gets its ``top_k``
    children; then, level by level down to ``depth``, the ``top_k`` nodes of the level with
    the largest path probability each get ``top_k`` children; of all these candidates the
    ``total`` with the largest path probability are kept (ties: the earlier node). A child's
    path probability never exceeds its parent's, so a kept node's ancestors are kept.

    ``depth`` here is the tree's depth limit (EAGLE's code counts expansion steps after the
    first level, so its trees reach one level deeper)."""
    if total < 0 or depth < 1 or top_k < 1:
        raise ValueError(
            f"eagle: needs total >= 0, depth >= 1, top_k >= 1; got {total},{depth},{top_k}"
        )
    table = _rank_table(rank_probs, depth)
    padded = np.concatenate((table, np.zeros((depth, max(top_k - table.shape[1], 0)))), axis=1)
    parents: list[int] = []
    ranks: list[int] = []
    path: list[float] = []
    level = [0]
    level_path = [1.0]
    for d in range(depth):
        if d > 0:  # expand only the level's top_k (stable: earlier nodes first on ties)
            order = sorted(range(len(level)), key=lambda j: -level_path[j])[:top_k]
            chosen = sorted(order)
            level = [level[j] for j in chosen]
            level_path = [level_path[j] for j in chosen]
        next_level, next_path = [], []
        for parent, parent_path in zip(level, level_path, strict=True):
            for rank in range(1, top_k + 1):
                parents.append(parent)
                ranks.append(rank)
                path.append(parent_path * float(padded[d, rank - 1]))
                next_level.append(len(parents))
                next_path.append(path[-1])
        level, level_path = next_level, next_path
    if total > len(parents):
        raise ValueError(f"eagle: total {total} exceeds the {len(parents)} candidate nodes")
    keep = sorted(sorted(range(len(parents)), key=lambda j: -path[j])[:total])
    new_id = {0: 0}
    for index, j in enumerate(keep, start=1):
        new_id[j + 1] = index
    return Tree(tuple(new_id[parents[j]] for j in keep), tuple(ranks[j] for j in keep))


def _sequoia_program(table: FloatArray, budget: int) -> tuple[FloatArray, IntArray]:
    """Sequoia's DP for a depth limit D = len(table) (row D - d gives the children's p when
    d levels remain). H[d, i, n]: the best value (sum of path probabilities) of a forest of
    n nodes under one parent, as its children of rank >= i, depth <= d:
    ``H(n, d, i) = max(H(n, d, i + 1), max over s in 1..n of p_i (1 + H(s - 1, d - 1, 1))
    + H(n - s, d, i + 1))``, the first term skipping rank i (which only pays when the p_i
    are not in decreasing order). choice[d, i, n] = s, or 0 for the skip."""
    limit, ranks = table.shape
    values = np.zeros((limit + 1, ranks + 2, budget + 1))
    choice = np.zeros((limit + 1, ranks + 2, budget + 1), dtype=np.int64)
    n_idx = np.arange(budget + 1)[:, None]
    s_idx = np.arange(1, budget + 1)[None, :]
    rest = n_idx - s_idx  # n - s for s = 1..budget; negative: s > n, not allowed
    allowed = rest >= 0
    rest = np.where(allowed, rest, 0)
    for d in range(1, limit + 1):
        below = 1.0 + values[d - 1, 1, :budget]  # 1 + H(s - 1, d - 1, 1) for s = 1..budget
        for i in range(ranks, 0, -1):
            after = values[d, i + 1]
            candidates = np.where(
                allowed, table[limit - d, i - 1] * below[None, :] + after[rest], -1.0
            )
            best = candidates.argmax(axis=1) if budget else np.zeros(1, dtype=np.int64)
            use = candidates[n_idx[:, 0], best] if budget else np.full(1, -1.0)
            take = use >= after  # ties: use the rank (n = 0 has no candidate and skips)
            values[d, i] = np.where(take, use, after)
            choice[d, i] = np.where(take, best + 1, 0)
    return values, choice


def sequoia_values(rank_probs: RankProbs, budget_max: int = 128, depth_max: int = 16) -> FloatArray:
    """E[n + 1] of the best tree for every budget 0..budget_max (draft nodes) and depth limit
    0..depth_max: a (budget_max + 1, depth_max + 1) array indexed [budget, depth]."""
    if budget_max < 0 or depth_max < 0:
        raise ValueError(f"sequoia: needs budget >= 0 and depth >= 0, got {budget_max},{depth_max}")
    out = np.ones((budget_max + 1, depth_max + 1))
    if depth_max == 0:
        return out
    base = _base_table(rank_probs)
    if base.shape[0] == 1:  # the same p at every depth: one program serves every depth limit
        values, _ = _sequoia_program(np.repeat(base, depth_max, axis=0), budget_max)
        out[:, 1:] += values[1:, 1, :].T
        return out
    for limit in range(1, depth_max + 1):  # p by depth: each depth limit its own program
        values, _ = _sequoia_program(_rank_table(rank_probs, limit), budget_max)
        out[:, limit] += values[limit, 1]
    return out


def sequoia_tree(rank_probs: RankProbs, budget: int, depth: int) -> Tree:
    """The tree of at most ``budget`` draft nodes and depth at most ``depth`` with the largest
    E[n + 1] (Sequoia's DP, reconstructed; fewer nodes only when more would add nothing)."""
    if budget < 0 or depth < 0:
        raise ValueError(f"sequoia: needs budget >= 0 and depth >= 0, got {budget},{depth}")
    if depth == 0 or budget == 0:
        return Tree((), ())
    table = _rank_table(rank_probs, depth)
    _, choice = _sequoia_program(table, budget)
    ranks = table.shape[1]

    def forest(n: int, d: int) -> Forest:
        out: Forest = []
        i = 1
        while n > 0 and d > 0 and i <= ranks:
            s = int(choice[d, i, n])
            if s:
                out.append((i, forest(s - 1, d - 1)))
                n -= s
            i += 1
        return out

    return _from_forest(forest(budget, depth))


# ---- Text -----------------------------------------------------------------------------------


def _ints(text: str, what: str, count: int | None = None) -> list[int]:
    items = [item.strip() for item in text.split(",")] if text.strip() else []
    try:
        values = [int(item) for item in items]
    except ValueError:
        raise ValueError(
            f"tree: {what} must be whole numbers separated by commas, got {text!r}"
        ) from None
    if count is not None and len(values) != count:
        raise ValueError(f"tree: {what} needs {count} numbers, got {text!r}")
    return values


# The largest tree a text may ask for (Sequoia's own largest budget is 128; a verify pass
# of thousands of tokens per sequence is beyond any serving engine), and its deepest.
NODES_MAX = 4096
DEPTH_MAX_TEXT = 256
CANDIDATES_MAX = 10**6  # nodes EAGLE-2's rule ranks before keeping `total`


def _kary_nodes(k: int, d: int) -> int:
    """k + k^2 + ... + k^d, stopping once it passes NODES_MAX."""
    total, level = 0, 1
    for _ in range(d):
        level *= k
        total += level
        if total > NODES_MAX:
            break
    return total


def _check_size(spec: str, nodes: int, depth: int) -> None:
    """A one-line ValueError for a tree too large to build, before anything is built."""
    if nodes > NODES_MAX:
        raise ValueError(f"tree {spec!r}: more than {NODES_MAX} nodes")
    if depth > DEPTH_MAX_TEXT:
        raise ValueError(f"tree {spec!r}: depth {depth} is above {DEPTH_MAX_TEXT}")


def parse_tree(text: str, rank_probs: RankProbs | None = None) -> Tree:
    """A tree from text: ``chain:K``, ``kary:k,d`` (Medusa-style), ``eagle`` or
    ``eagle:total,depth,top_k`` (EAGLE-2's rule; needs rank_probs), ``sequoia:budget,depth``
    (needs rank_probs), or the explicit ``parents=0,0,1[ ranks=1,2,1]`` (ranks default to the
    order among siblings). Bad input: ValueError with a one-line message."""
    spec = text.strip()
    name, _, args = spec.partition(":")
    name = name.strip().lower()
    if name == "chain":
        (k,) = _ints(args, "chain:K", 1)
        _check_size(spec, k, DEPTH_MAX_TEXT)
        return chain(k)
    if name == "kary":
        k, d = _ints(args, "kary:k,d", 2)
        _check_size(spec, _kary_nodes(k, min(d, DEPTH_MAX_TEXT)), d)
        return kary(k, d)
    if name in ("eagle", "sequoia"):
        if rank_probs is None:
            raise ValueError(
                f"tree {spec!r}: a {name} tree is built from rank probabilities; none given"
            )
        if name == "eagle":
            total, depth, top_k = (
                _ints(args, "eagle:total,depth,top_k", 3)
                if args
                else (EAGLE_TOTAL, EAGLE_DEPTH, EAGLE_TOP_K)
            )
            _check_size(spec, total, depth)
            if top_k + max(depth - 1, 0) * top_k**2 > CANDIDATES_MAX:
                raise ValueError(
                    f"tree {spec!r}: depth x top_k^2 candidates above {CANDIDATES_MAX:,}"
                )
            return eagle_tree(rank_probs, total, depth, top_k)
        budget, depth = _ints(args, "sequoia:budget,depth", 2)
        _check_size(spec, budget, depth)
        return sequoia_tree(rank_probs, budget, depth)
    if spec.startswith("parents="):
        parts = spec.split()
        if len(parts) > 2 or (len(parts) == 2 and not parts[1].startswith("ranks=")):
            raise ValueError(
                f"tree {spec!r}: expected 'parents=...' optionally followed by ' ranks=...'"
            )
        parents = _ints(parts[0].removeprefix("parents="), "parents")
        _check_size(spec, len(parents), 0)
        if len(parts) == 2:
            ranks = _ints(parts[1].removeprefix("ranks="), "ranks", len(parents))
        else:
            seen: dict[int, int] = {}
            ranks = []
            for parent in parents:
                seen[parent] = seen.get(parent, 0) + 1
                ranks.append(seen[parent])
        return Tree(tuple(parents), tuple(ranks))
    raise ValueError(
        f"tree {spec!r}: expected chain:K, kary:k,d, eagle[:total,depth,top_k], "
        "sequoia:budget,depth or parents=...[ ranks=...]"
    )
