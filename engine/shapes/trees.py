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

The structure (:class:`Tree`, chains, k-ary trees) and the exact values per rank live in
:mod:`engine.shapes.tree_structure`, re-exported here; this module samples cycles, builds
the named shapes (EAGLE, Sequoia) and reads a tree's text.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from engine.core.fields import ascii_int
from engine.shapes.tree_structure import (
    FloatArray,
    Forest,
    IntArray,
    RankProbs,
    Tree,
    _base_table,
    _from_forest,
    _node_probs,
    _rank_table,
    chain,
    depth_distribution,
    expected_tokens,
    kary,
    path_probs,
)

__all__ = [
    "CANDIDATES_MAX",
    "DEPTH_MAX_TEXT",
    "EAGLE_DEPTH",
    "EAGLE_TOP_K",
    "EAGLE_TOTAL",
    "NODES_MAX",
    "SEQUOIA_WORK_MAX",
    "CycleSampler",
    "FloatArray",
    "Forest",
    "IntArray",
    "RankProbs",
    "Tree",
    "chain",
    "cycle_sampler",
    "depth_distribution",
    "eagle_tree",
    "expected_tokens",
    "kary",
    "parse_tree",
    "path_probs",
    "sample_cycles",
    "sequoia_refusal",
    "sequoia_tree",
    "sequoia_trees",
    "sequoia_values",
    "sequoia_work",
]

EAGLE_TOTAL = 60  # EAGLE-2's default total_token: draft nodes, the root excluded
EAGLE_DEPTH = 7
EAGLE_TOP_K = 10


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


# Sequoia's program is bounded by its work, estimated before it starts
# (:func:`sequoia_work`): for every depth and rank a step compares the candidate subtree
# sizes s <= n for every n <= budget, budget (budget + 1) / 2 candidates at about 1.5 ns,
# and costs 6 to 12 us of numpy calls besides, counted as _STEP_WORK candidates. The bound
# is about two seconds on one core: Sequoia's own largest tree (budget 128, depth 16) with
# 1,024 ranks is a quarter of it; sequoia:4096,64 (before issue #41: 60 s and 672 MB) is 2.5
# times it. It also bounds the memory: at most 17 million choices (2 bytes each; it keeps
# the budget below 2^16) and 8.5 million values (8 bytes), and _PROGRAM_BLOCK candidates at
# a time.
SEQUOIA_WORK_MAX = 1 << 30
_STEP_WORK = 1 << 13
_PROGRAM_BLOCK = 1 << 20  # candidates compared at once (rows n x sizes s): 8 MB
ChoiceArray = npt.NDArray[np.uint16]


def sequoia_work(ranks: int, budget: int, depth: int) -> int:
    """The work of Sequoia's program for trees of up to ``budget`` draft nodes and depth limit
    ``depth`` under ``ranks`` rank probabilities, in candidates compared: ``depth x ranks``
    steps of ``budget (budget + 1) / 2`` candidates each, plus a step's fixed cost."""
    return depth * ranks * (budget * (budget + 1) // 2 + _STEP_WORK)


def _program_refusal(ranks: int, budget: int, depth: int) -> str:
    """Why the program of this size is not run, in one line with the estimate and the bound;
    "" when it may run."""
    work = sequoia_work(ranks, budget, depth)
    if work <= SEQUOIA_WORK_MAX:
        return ""
    each = work // (depth * ranks)
    return (
        f"Sequoia's program would compare about {work:,} candidates ({depth} depths x "
        f"{ranks} ranks x {each:,} a step), above the bound of {SEQUOIA_WORK_MAX:,}: ask for a "
        "smaller budget or depth"
    )


def _sequoia_program(table: FloatArray, budget: int) -> tuple[FloatArray, ChoiceArray]:
    """Sequoia's DP for a depth limit D = len(table) (row D - d gives the children's p when
    d levels remain). H[d, i, n]: the best value (sum of path probabilities) of a forest of
    n nodes under one parent, as its children of rank >= i, depth <= d:
    ``H(n, d, i) = max(H(n, d, i + 1), max over s in 1..n of p_i (1 + H(s - 1, d - 1, 1))
    + H(n - s, d, i + 1))``, the first term skipping rank i (which only pays when the p_i
    are not in decreasing order). Returns H[d, 1, n] by (d, n) and choice[d, i, n] = s, or 0
    for the skip. Its callers check its size first (:func:`_program_refusal`)."""
    limit, ranks = table.shape
    top = np.zeros((limit + 1, budget + 1))
    choice = np.zeros((limit + 1, ranks + 1, budget + 1), dtype=np.uint16)
    if budget == 0:
        return top, choice
    blocks = _blocks(budget)
    for d in range(1, limit + 1):
        below = 1.0 + top[d - 1, :budget]  # 1 + H(s - 1, d - 1, 1) for s = 1..budget
        after = np.zeros(budget + 1)  # H(., d, i + 1), from the last rank up
        for i in range(ranks, 0, -1):
            after = _rank_step(table[limit - d, i - 1] * below, after, choice[d, i], blocks)
        top[d] = after
    return top, choice


@dataclass(frozen=True)
class _Blocks:
    """Where a program step compares its candidates, a block of rows n at a time, each
    block only up to the largest s its rows allow (s <= n): ``padded`` holds H(., d, i + 1)
    reversed, then -inf, so that a block's window is after[n - s] for its rows n and sizes
    s (-inf where s > n, below every allowed candidate, which is >= 0); its candidates are
    written into one buffer that every step reuses. ``parts``: per block, its first and
    last + 1 row, window, candidates and row indices."""

    padded: FloatArray
    parts: tuple[tuple[int, int, FloatArray, FloatArray, IntArray], ...]


def _blocks(budget: int) -> _Blocks:
    rows = max(1, _PROGRAM_BLOCK // budget)
    work = np.empty(min(rows, budget + 1) * budget)
    padded = np.full(2 * budget + 1, -np.inf)
    windows_of = np.lib.stride_tricks.sliding_window_view
    parts = []
    for low in range(0, budget + 1, rows):
        high = min(low + rows, budget + 1)
        sizes = max(1, high - 1)  # s in 1..sizes
        # row n's window starts at padded[budget - n + 1]: after[n - 1], after[n - 2], ...
        window = windows_of(padded, sizes)[budget - high + 2 : budget - low + 2][::-1]
        candidates = work[: (high - low) * sizes].reshape(high - low, sizes)
        parts.append((low, high, window, candidates, np.arange(high - low)))
    return _Blocks(padded, tuple(parts))


def _rank_step(
    gain: FloatArray, after: FloatArray, choice: ChoiceArray, blocks: _Blocks
) -> FloatArray:
    """One rank i of the program, for every n: H(n, d, i) from ``gain[s - 1] = p_i (1 +
    H(s - 1, d - 1, 1))`` and ``after = H(., d, i + 1)``: the best candidate gain[s - 1] +
    after[n - s] if it is at least after[n] (ties: use the rank; n = 0 has no candidate),
    its s (0: skip) into ``choice``."""
    budget = gain.size
    blocks.padded[: budget + 1] = after[::-1]
    out = np.empty_like(after)
    for low, high, window, candidates, rows in blocks.parts:
        np.add(gain[: candidates.shape[1]], window, out=candidates)
        best = candidates.argmax(axis=1)  # the first of equal ones: the smallest subtree
        use = candidates[rows, best]
        take = use >= after[low:high]
        out[low:high] = np.where(take, use, after[low:high])
        choice[low:high] = np.where(take, best + 1, 0)
    return out


def sequoia_values(rank_probs: RankProbs, budget_max: int = 128, depth_max: int = 16) -> FloatArray:
    """E[n + 1] of the best tree for every budget 0..budget_max (draft nodes) and depth limit
    0..depth_max: a (budget_max + 1, depth_max + 1) array indexed [budget, depth]. Work
    above :data:`SEQUOIA_WORK_MAX`: a one-line ValueError, before any starts."""
    if budget_max < 0 or depth_max < 0:
        raise ValueError(f"sequoia: needs budget >= 0 and depth >= 0, got {budget_max},{depth_max}")
    out = np.ones((budget_max + 1, depth_max + 1))
    if depth_max == 0:
        return out
    base = _base_table(rank_probs)
    one = base.shape[0] == 1  # the same p at every depth: one program serves every limit
    levels = depth_max if one else depth_max * (depth_max + 1) // 2  # else one per limit
    if reason := _program_refusal(base.shape[1], budget_max, levels):
        raise ValueError(f"sequoia: {reason}")
    if one:
        top, _ = _sequoia_program(np.repeat(base, depth_max, axis=0), budget_max)
        out[:, 1:] += top[1:].T
        return out
    for limit in range(1, depth_max + 1):
        top, _ = _sequoia_program(_rank_table(rank_probs, limit), budget_max)
        out[:, limit] += top[limit]
    return out


def sequoia_tree(rank_probs: RankProbs, budget: int, depth: int) -> Tree:
    """The tree of at most ``budget`` draft nodes and depth at most ``depth`` with the largest
    E[n + 1] (Sequoia's DP, reconstructed; fewer nodes only when more would add nothing).
    Work above :data:`SEQUOIA_WORK_MAX`: a one-line ValueError, before it starts."""
    return sequoia_trees(rank_probs, [(budget, depth)])[0]


def sequoia_trees(rank_probs: RankProbs, shapes: Sequence[tuple[int, int]]) -> list[Tree]:
    """:func:`sequoia_tree` of each (budget, depth) of ``shapes``: the same trees, from as few
    programs as give them (each checked before the first starts). The choices of a program
    of budget B hold those of every budget b <= B (its rows n <= b are the same arithmetic).
    When p is the same at every depth, those of a program of depth limit D hold those of
    every limit up to D (all its rows are that p), and a limit above the budget is the
    budget (rows n <= d are the same for every limit >= d): so one program serves every
    shape, unless it would be above the bound. Otherwise, and when p is by depth, one program
    per depth limit, of its largest budget."""
    for budget, depth in shapes:
        if budget < 0 or depth < 0:
            raise ValueError(f"sequoia: needs budget >= 0 and depth >= 0, got {budget},{depth}")
    if all(budget == 0 or depth == 0 for budget, depth in shapes):
        return [Tree((), ()) for _ in shapes]
    base = _base_table(rank_probs)
    ranks, one = base.shape[1], base.shape[0] == 1
    limits = [_limit(base, budget, depth) for budget, depth in shapes]
    wanted = [(b, limit) for (b, _), limit in zip(shapes, limits, strict=True) if b and limit]
    plan: dict[int, int] = {}  # depth limit -> the budget of its program
    largest, deepest = max(b for b, _ in wanted), max(limit for _, limit in wanted)
    if one and not _program_refusal(ranks, largest, deepest):
        plan[deepest] = largest
    else:
        for budget, limit in wanted:
            plan[limit] = max(plan.get(limit, 0), budget)
    for limit, budget in plan.items():
        if reason := _program_refusal(ranks, budget, limit):
            raise ValueError(f"sequoia: {reason}")
    choices = {
        limit: _sequoia_program(_rank_table(rank_probs, limit), budget)[1]
        for limit, budget in plan.items()
    }
    trees = []
    for (budget, _), limit in zip(shapes, limits, strict=True):
        choice = choices.get(limit, choices.get(deepest))  # one program: the deepest's
        forest = _forest(choice, ranks, budget, limit) if choice is not None else []
        trees.append(_from_forest(forest))
    return trees


def _limit(base: FloatArray, budget: int, depth: int) -> int:
    """The depth limit of the program that gives the tree of ``budget`` and ``depth``: the
    budget, when the depth is above it and p is the same at every depth (:func:`sequoia_trees`)."""
    return min(depth, budget) if base.shape[0] == 1 else depth


def sequoia_refusal(rank_probs: RankProbs, budget: int, depth: int) -> str:
    """Why :func:`sequoia_tree` would refuse this tree as too much work, in one line with the
    estimate and the bound; "" if it would build it."""
    if budget <= 0 or depth <= 0:
        return ""
    base = _base_table(rank_probs)
    return _program_refusal(base.shape[1], budget, _limit(base, budget, depth))


def _forest(choice: ChoiceArray, ranks: int, n: int, d: int) -> Forest:
    """The best forest of ``n`` nodes and depth ``d`` under one parent, from the program's
    choices (rank by rank: a subtree of s nodes, or none)."""
    out: Forest = []
    i = 1
    while n > 0 and d > 0 and i <= ranks:
        s = int(choice[d, i, n])
        if s:
            out.append((i, _forest(choice, ranks, s - 1, d - 1)))
            n -= s
        i += 1
    return out


# ---- Text -----------------------------------------------------------------------------------


def _ints(text: str, what: str, count: int | None = None) -> list[int]:
    items = [item.strip() for item in text.split(",")] if text.strip() else []
    try:
        values = [ascii_int(item) for item in items]  # ASCII digits only, as every number
    except ValueError:
        raise ValueError(
            f"tree: {what} must be whole numbers (ASCII digits) separated by commas, got {text!r}"
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
        if reason := sequoia_refusal(rank_probs, budget, depth):
            raise ValueError(f"tree {spec!r}: {reason}")
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
