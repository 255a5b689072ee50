import functools
import itertools

import numpy as np
import pytest

from engine.core.config import SpecConfig
from engine.shapes.trees import (
    Tree,
    chain,
    depth_distribution,
    eagle_tree,
    expected_tokens,
    kary,
    parse_tree,
    path_probs,
    sample_cycles,
    sequoia_tree,
    sequoia_values,
)
from engine.simulate.exact import accepted_distribution, tokens_per_cycle
from tests.engine.stats import chi2_critical, chi2_statistic

TEN_RANKS = [0.5, 0.2, 0.1, 0.05, 0.03, 0.02, 0.01, 0.01, 0.01, 0.01]
SMALL_TREE = Tree(parents=(0, 0, 1, 1, 2), ranks=(1, 2, 1, 2, 1))


def _last_node_distribution(tree: Tree, rank_probs) -> np.ndarray:
    """P(the last accepted node = v), v = 0..n: accepted, and none of its children is."""
    path = np.concatenate(([1.0], path_probs(tree, rank_probs)))
    stop = path.copy()
    for node, parent in enumerate(tree.parents, start=1):
        stop[parent] -= path[node]  # P(v accepted and its child `node` accepted)
    return stop


# ---- Structure and named shapes -------------------------------------------------------------


def test_tree_properties():
    assert SMALL_TREE.nodes == 5
    assert SMALL_TREE.depths == (1, 1, 2, 2, 2)
    assert SMALL_TREE.depth == 2
    assert SMALL_TREE.level_sizes == (2, 3)
    assert SMALL_TREE.text() == "parents=0,0,1,1,2 ranks=1,2,1,2,1"
    empty = Tree((), ())
    assert (empty.nodes, empty.depth, empty.level_sizes) == (0, 0, ())


@pytest.mark.parametrize(("k", "d"), [(1, 4), (2, 3), (3, 2), (4, 1), (5, 0)])
def test_kary_has_sum_of_powers_nodes(k, d):
    tree = kary(k, d)
    assert tree.nodes == sum(k**i for i in range(1, d + 1))
    assert tree.level_sizes == tuple(k**i for i in range(1, d + 1))
    root_ranks = [r for p, r in zip(tree.parents, tree.ranks, strict=True) if p == 0]
    assert root_ranks == (list(range(1, k + 1)) if d else [])


def test_chain_is_one_child_per_node():
    assert chain(4) == Tree((0, 1, 2, 3), (1, 1, 1, 1))
    assert chain(4).level_sizes == (1, 1, 1, 1)


# ---- Exact values ---------------------------------------------------------------------------


@pytest.mark.parametrize("k", [1, 2, 3, 5, 8, 16])
@pytest.mark.parametrize("p", [0.0, 0.3, 0.62, 0.9, 1.0])
def test_chain_reduces_exactly_to_the_fixed_model(k, p):
    config = SpecConfig(acceptance_rate=p, k=k)
    tree = chain(k)
    assert np.array_equal(depth_distribution(tree, [p]), accepted_distribution(config))
    assert expected_tokens(tree, [p]) == tokens_per_cycle(config)


def test_expected_tokens_by_hand():
    # path probabilities: node 1 .6, 2 .3, 3 .6*.6, 4 .6*.3, 5 .3*.6
    assert expected_tokens(SMALL_TREE, [0.6, 0.3]) == pytest.approx(
        1 + 0.6 + 0.3 + 0.36 + 0.18 + 0.18
    )
    # per depth: depth 1 uses [.6, .3], depth 2 (and deeper) [.5, .1]
    table = [[0.6, 0.3], [0.5, 0.1]]
    assert path_probs(SMALL_TREE, table) == pytest.approx([0.6, 0.3, 0.3, 0.06, 0.15])
    # a rank beyond the list has p = 0, and so has its subtree
    tree = Tree((0, 0, 0, 3), (1, 2, 3, 1))
    assert path_probs(tree, [0.6, 0.3]) == pytest.approx([0.6, 0.3, 0.0, 0.0])


def test_rows_beyond_the_table_repeat_the_last():
    table = [[0.7], [0.4]]
    assert path_probs(chain(4), table) == pytest.approx([0.7, 0.28, 0.112, 0.0448])


TREES = [
    SMALL_TREE,
    kary(3, 3),
    chain(6),
    Tree((0, 0, 0, 1, 1, 3, 4, 4), (2, 1, 3, 1, 4, 2, 1, 2)),
    eagle_tree(TEN_RANKS),
    sequoia_tree(TEN_RANKS, 40, 8),
]


@pytest.mark.parametrize("tree", TREES)
@pytest.mark.parametrize(
    "rank_probs", [TEN_RANKS, [0.55, 0.3, 0.15], [[0.8, 0.1], [0.3, 0.3, 0.2]]]
)
def test_depth_distribution_sums_to_one_with_mean_e_minus_one(tree, rank_probs):
    dist = depth_distribution(tree, rank_probs)
    assert dist.shape == (tree.depth + 1,)
    assert dist.min() >= -1e-15
    assert dist.sum() == pytest.approx(1.0, abs=1e-12)
    mean = float(np.arange(tree.depth + 1) @ dist)
    assert mean == pytest.approx(expected_tokens(tree, rank_probs) - 1.0, abs=1e-12)
    assert _last_node_distribution(tree, rank_probs).sum() == pytest.approx(1.0, abs=1e-12)


# ---- Monte Carlo ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tree", "rank_probs"),
    [
        (SMALL_TREE, [0.6, 0.3]),
        (sequoia_tree(TEN_RANKS, 40, 8), TEN_RANKS),
        (eagle_tree([[0.8, 0.1], [0.5, 0.3, 0.1]], 20, 5, 3), [[0.8, 0.1], [0.5, 0.3, 0.1]]),
        (chain(5), [0.7]),
    ],
)
def test_sample_cycles_agrees_with_the_exact_distributions(tree, rank_probs):
    depth, last = sample_cycles(tree, rank_probs, np.random.default_rng(20261201), 100_000)
    assert np.array_equal(depth, np.array((0, *tree.depths))[last])  # consistent pair
    dist = depth_distribution(tree, rank_probs)
    stat, dof = chi2_statistic(np.bincount(depth, minlength=dist.size), dist)
    assert stat < chi2_critical(dof)
    stop = _last_node_distribution(tree, rank_probs)
    stat, dof = chi2_statistic(np.bincount(last, minlength=stop.size), stop)
    assert stat < chi2_critical(dof)


def test_sample_cycles_is_seeded():
    first = sample_cycles(SMALL_TREE, [0.6, 0.3], np.random.default_rng(7), 1000)
    again = sample_cycles(SMALL_TREE, [0.6, 0.3], np.random.default_rng(7), 1000)
    assert all(np.array_equal(a, b) for a, b in zip(first, again, strict=True))


# ---- Sequoia --------------------------------------------------------------------------------


@functools.cache
def _all_trees(max_nodes: int, ranks: int) -> tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]:
    """Every tree of 0..max_nodes nodes whose children carry distinct ranks in 1..ranks, as
    (parents, ranks): every breadth-first parent sequence, with every injective rank
    labelling of each sibling group (the same tree may come more than once: harmless for a
    maximum). Enumerated once for the module."""
    out = []
    for n in range(max_nodes + 1):
        for parents in itertools.product(*(range(i) for i in range(1, n + 1))):
            if any(a > b for a, b in itertools.pairwise(parents)):
                continue
            groups = [len(list(g)) for _, g in itertools.groupby(parents)]
            labellings = [itertools.permutations(range(1, ranks + 1), g) for g in groups]
            for labels in itertools.product(*labellings):
                out.append((tuple(parents), tuple(itertools.chain.from_iterable(labels))))
    return tuple(out)


def _brute_tokens(parents, ranks, rank_probs) -> tuple[int, float]:
    """(depth, 1 + the sum of every node's path probability), written out here from the
    model (p of a rank at a depth; the deepest row repeats; a rank past its row's list has
    p = 0), not with engine.shapes.trees."""
    rows = rank_probs if isinstance(rank_probs[0], list) else [rank_probs]
    depth, path = [0], [1.0]
    for parent, rank in zip(parents, ranks, strict=True):
        d = depth[parent] + 1
        row = rows[min(d, len(rows)) - 1]
        depth.append(d)
        path.append(path[parent] * (row[rank - 1] if rank <= len(row) else 0.0))
    return max(depth), sum(path)


@pytest.mark.parametrize(
    "rank_probs",
    [
        [0.6, 0.25, 0.1],  # decreasing by rank
        [0.15, 0.5, 0.25],  # not decreasing: the best tree skips rank 1 where it is short
        [[0.3, 0.6], [0.7, 0.2, 0.05], [0.1, 0.8]],  # by depth, the deepest row repeating
    ],
)
def test_sequoia_matches_brute_force(rank_probs):
    budget_max, depth_max = 6, 6
    best = np.ones((budget_max + 1, depth_max + 1))
    for parents, ranks in _all_trees(budget_max, 3):
        depth, value = _brute_tokens(parents, ranks, rank_probs)
        nodes = len(parents)
        best[nodes:, depth:] = np.maximum(best[nodes:, depth:], value)
    values = sequoia_values(rank_probs, budget_max, depth_max)
    np.testing.assert_allclose(values, best, rtol=0, atol=1e-12)
    for budget in range(budget_max + 1):
        for depth in range(depth_max + 1):
            tree = sequoia_tree(rank_probs, budget, depth)
            assert tree.nodes <= budget and tree.depth <= depth
            assert expected_tokens(tree, rank_probs) == pytest.approx(
                best[budget, depth], abs=1e-12
            )


def test_sequoia_values_grow_with_budget_and_depth():
    values = sequoia_values(TEN_RANKS, 128, 16)
    assert values.shape == (129, 17)
    assert np.all(np.diff(values, axis=0) >= -1e-12)
    assert np.all(np.diff(values, axis=1) >= -1e-12)
    assert values[0].tolist() == [1.0] * 17 and values[:, 0].tolist() == [1.0] * 129
    # with one rank, the best tree of K nodes and depth K is the chain of K
    assert sequoia_values([0.8], 5, 5)[5, 5] == pytest.approx(expected_tokens(chain(5), [0.8]))
    tree = sequoia_tree(TEN_RANKS, 128, 16)
    assert expected_tokens(tree, TEN_RANKS) == pytest.approx(values[128, 16], abs=1e-12)
    # 2-D with one row is the 1-D program
    np.testing.assert_allclose(
        sequoia_values([TEN_RANKS, TEN_RANKS], 30, 6),
        sequoia_values(TEN_RANKS, 30, 6),
        rtol=0,
        atol=1e-12,
    )


# ---- EAGLE ----------------------------------------------------------------------------------


def test_eagle_default_shape():
    tree = eagle_tree(TEN_RANKS)
    assert tree.nodes == 60
    assert tree.depth <= 7
    assert parse_tree("eagle", TEN_RANKS) == tree


@pytest.mark.parametrize(
    ("total", "depth", "top_k"), [(60, 7, 10), (10, 3, 4), (20, 6, 2), (1, 1, 1)]
)
@pytest.mark.parametrize("rank_probs", [TEN_RANKS, [0.2, 0.6], [[0.8, 0.1], [0.4, 0.4]]])
def test_eagle_tree_keeps_total_nodes_and_their_ancestors(total, depth, top_k, rank_probs):
    tree = eagle_tree(rank_probs, total, depth, top_k)
    assert tree.nodes == total
    assert tree.depth <= depth
    assert max(tree.ranks) <= top_k
    path = path_probs(tree, rank_probs)
    for node, parent in enumerate(tree.parents, start=1):  # a parent is an earlier kept node
        assert parent < node
        if parent:
            assert path[node - 1] <= path[parent - 1]


def test_eagle_tree_by_hand():
    # level 1: .6 (rank 1), .3 (rank 2); level 2 under both: .36, .18, .18, .09; keep the top 4
    tree = eagle_tree([0.6, 0.3, 0.1], total=4, depth=2, top_k=2)
    assert tree == Tree((0, 0, 1, 1), (1, 2, 1, 2))
    # expansion takes only the top_k of a level: top_k = 1 is a chain
    assert eagle_tree([0.6, 0.3, 0.1], total=3, depth=3, top_k=1) == chain(3)
    # level 2: 3 (.36) and 4 (.18) under 1, 5 (.18) and 6 (.09) under 2; level 3 grows under
    # the level's top_k = 2 only: 3 and 4 (before 5 on the tie)
    tree = eagle_tree([0.6, 0.3], total=10, depth=3, top_k=2)
    assert tree.parents == (0, 0, 1, 1, 2, 2, 3, 3, 4, 4)


# ---- Text -----------------------------------------------------------------------------------


@pytest.mark.parametrize("tree", [*TREES, Tree((), ()), chain(1)])
def test_text_round_trips(tree):
    assert parse_tree(tree.text()) == tree


def test_named_shapes_parse():
    assert parse_tree("chain:4") == chain(4)
    assert parse_tree(" kary:2,3 ") == kary(2, 3)
    assert parse_tree("eagle:20,4,3", TEN_RANKS) == eagle_tree(TEN_RANKS, 20, 4, 3)
    assert parse_tree("sequoia:30,5", TEN_RANKS) == sequoia_tree(TEN_RANKS, 30, 5)
    assert parse_tree("parents=0,0,1,1,2") == SMALL_TREE  # ranks: order among siblings


@pytest.mark.parametrize(
    ("text", "rank_probs", "needle"),
    [
        ("chain:x", None, "whole numbers"),
        ("chain:1,2", None, "needs 1"),
        ("chain:-1", None, ">= 0"),
        ("kary:2", None, "needs 2"),
        ("kary:0,3", None, "k >= 1"),
        ("eagle", None, "rank probabilities"),
        ("sequoia:10,4", None, "rank probabilities"),
        ("sequoia:10", TEN_RANKS, "needs 2"),
        ("eagle:1000,2,2", TEN_RANKS, "exceeds"),
        ("sequoia:10,4", [0.7, 0.5], "sum to <= 1"),
        ("sequoia:10,4", [1.5], "in [0, 1]"),
        ("sequoia:10,4", [], "non-empty"),
        ("parents=0,2", None, "must be 0..1"),
        ("parents=0,1,0", None, "non-decreasing"),
        ("parents=0,0 ranks=1,1", None, "repeat a rank"),
        ("parents=0 ranks=0", None, "ranks start at 1"),
        ("parents=0,0 ranks=1", None, "needs 2"),
        ("parents=0 foo=1", None, "ranks="),
        ("parents=a", None, "whole numbers"),
        ("medusa", None, "expected chain:K"),
        ("", None, "expected chain:K"),
    ],
)
def test_bad_text_gives_a_one_line_value_error(text, rank_probs, needle):
    with pytest.raises(ValueError) as error:
        parse_tree(text, rank_probs)
    message = str(error.value)
    assert "\n" not in message
    assert needle in message
