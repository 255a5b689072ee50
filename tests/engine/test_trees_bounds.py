"""Sequoia's program bounded (issue #41): refused in one line, with its estimate and the bound,
before it starts; one program for many trees; memory bounded; and its values, in blocks or
not, against an independent oracle for mid-size budgets that brute force cannot reach."""

from __future__ import annotations

import heapq
import tracemalloc

import numpy as np
import pytest

import engine.shapes.trees as trees
from engine.shapes.trees import (
    expected_tokens,
    parse_tree,
    sequoia_refusal,
    sequoia_tree,
    sequoia_trees,
    sequoia_values,
)

FIVE = [0.6, 0.15, 0.06, 0.03, 0.02]  # the scenario's default shape.rank_probs
UNSORTED = [0.15, 0.5, 0.25]  # the best tree skips rank 1 where it is short
BY_DEPTH = [[0.3, 0.6], [0.7, 0.2, 0.05], [0.1, 0.8]]  # the deepest row repeating


def top_path_sums(rank_probs, budget: int, depth: int) -> list[float]:
    """E[n + 1] of the best tree of n = 0..budget nodes and depth <= ``depth``, independently of
    the program: every node of a tree has at most one child per rank and a child's path
    probability (its parent's times p of its depth and rank) is at most its parent's, so the
    best tree of n nodes holds the n largest path probabilities of the tree that has every
    rank under every node (its ancestors among them): taken largest first from a heap."""
    table = [list(row) for row in rank_probs] if _by_depth(rank_probs) else [list(rank_probs)]
    heap = [(-p, 1) for p in table[0]] if depth else []  # (-path probability, its depth)
    heapq.heapify(heap)
    sums = [1.0]
    while len(sums) <= budget:
        if not heap:
            sums.append(sums[-1])
            continue
        negative, at = heapq.heappop(heap)
        sums.append(sums[-1] - negative)
        if at < depth:
            row = table[min(at, len(table) - 1)]
            for p in row:
                heapq.heappush(heap, (negative * p, at + 1))
    return sums


def _by_depth(rank_probs) -> bool:
    return isinstance(rank_probs[0], list)


@pytest.mark.parametrize("rank_probs", [FIVE, UNSORTED, BY_DEPTH])
@pytest.mark.parametrize("block", [trees._PROGRAM_BLOCK, 1000])
def test_sequoia_values_of_mid_size_budgets_are_the_largest_path_probabilities(
    rank_probs, block, monkeypatch
):
    """Budgets 0..300 at depths 0..9, with the program comparing its candidates in one block
    a step, and in blocks of 3 rows (as a budget above 1,024 does)."""
    monkeypatch.setattr(trees, "_PROGRAM_BLOCK", block)
    budget, depth = 300, 9
    values = sequoia_values(rank_probs, budget, depth)
    expected = np.array([top_path_sums(rank_probs, budget, d) for d in range(depth + 1)]).T
    np.testing.assert_allclose(values, expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("rank_probs", [FIVE, UNSORTED, BY_DEPTH])
def test_trees_of_one_program_are_each_the_best_of_their_budget_and_depth(rank_probs, monkeypatch):
    """Many (budget, depth), depths above the budget among them: each tree within its budget
    and depth, of the largest E[n + 1]; from one program when p is the same at every depth,
    one per depth limit when it is by depth."""
    programs = []
    real = trees._sequoia_program

    def counted(table, budget):
        programs.append((table.shape[0], budget))
        return real(table, budget)

    monkeypatch.setattr(trees, "_sequoia_program", counted)
    shapes = [(b, d) for b in (0, 1, 7, 40, 130) for d in (0, 1, 3, 16, 200)]
    found = sequoia_trees(rank_probs, shapes)
    for (budget, depth), tree in zip(shapes, found, strict=True):
        assert tree.nodes <= budget and tree.depth <= depth
        best = top_path_sums(rank_probs, budget, depth)[budget]
        assert expected_tokens(tree, rank_probs) == pytest.approx(best, abs=1e-12)
    if not _by_depth(rank_probs):  # the deepest limit asked, at most the largest budget
        assert programs == [(130, 130)]
    else:  # a program per depth limit, of the largest budget asked with it
        assert sorted(programs) == [(1, 130), (3, 130), (16, 130), (200, 130)]


def test_a_program_too_large_is_refused_in_one_line_before_it_starts(monkeypatch):
    """sequoia:4096,64 (issue #41: 672 MB and no answer after 60 s): its work, 64 depths x 5
    ranks x (4096 x 4097 / 2 candidates + 8,192 for a step's numpy calls), is above the bound."""

    def never(*_):
        raise AssertionError("the program started")

    monkeypatch.setattr(trees, "_sequoia_program", never)
    assert 64 * 5 * (4096 * 4097 // 2 + 8192) == 2_687_631_360
    expected = (
        "Sequoia's program would compare about 2,687,631,360 candidates (64 depths x 5 ranks "
        "x 8,398,848 a step), above the bound of 1,073,741,824: ask for a smaller budget or "
        "depth"
    )
    assert sequoia_refusal(FIVE, 4096, 64) == expected
    with pytest.raises(ValueError) as raised:
        parse_tree("sequoia:4096,64", FIVE)
    assert str(raised.value) == f"tree 'sequoia:4096,64': {expected}"
    with pytest.raises(ValueError) as raised:
        sequoia_tree(FIVE, 4096, 64)
    assert str(raised.value) == f"sequoia: {expected}"
    # p by depth: one program per depth limit, 1 + 2 + ... + 16 = 136 levels in all
    with pytest.raises(ValueError) as raised:
        sequoia_values(BY_DEPTH, 4096, 16)
    assert str(raised.value) == (
        "sequoia: Sequoia's program would compare about 3,426,729,984 candidates (136 depths "
        "x 3 ranks x 8,398,848 a step), above the bound of 1,073,741,824: ask for a smaller "
        "budget or depth"
    )


def test_the_largest_budgets_and_ranks_sequoia_and_the_cli_use_are_within_the_bound():
    """1,024 ranks (the most shape.rank_probs holds) at Sequoia's budget 128 and depth 16,
    `spectui tree`'s largest; 4,096 nodes (the most a tree text holds) at depth 25; and a
    depth above the budget is the budget's: 1,024 ranks at sequoia:32,256."""
    many = [0.9 / 1024] * 1024
    assert sequoia_refusal(many, 128, 16) == ""
    assert sequoia_refusal(FIVE, 4096, 25) == ""
    assert sequoia_refusal(FIVE, 4096, 26).startswith("Sequoia's program would compare about")
    assert sequoia_refusal(many, 32, 256) == ""


def test_a_budget_of_4096_holds_a_block_of_candidates_at_a_time():
    """Before issue #41 each step held (budget + 1) x budget candidates, and more than one
    array of them: 134 MB each at a budget of 4,096."""
    tracemalloc.start()
    try:
        tree = sequoia_tree(FIVE, 4096, 2)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 32 * 2**20
    assert tree.nodes == 5 + 5 * 5  # every rank under every node of depth 1: all of value


@pytest.mark.parametrize("text", ["sequoia:１６,4", "sequoia:1_6,4", "chain:٣"])
def test_tree_texts_take_ascii_digits_only(text):
    with pytest.raises(ValueError) as raised:
        parse_tree(text, FIVE)
    assert "must be whole numbers (ASCII digits) separated by commas" in str(raised.value)


def test_ties_are_broken_as_before():
    """The program's ties, worked by hand. p = (0.5, 0.5), budget 3, depth 2: a leaf of rank 1
    and rank 2 with a child (1 + 0.5 + 0.5 + 0.25) ties rank 1 with a child and a leaf of
    rank 2; the smallest subtree first. p = (0.5, 0): the rank-2 child adds nothing and is
    drafted all the same (a rank is used when it ties its skip)."""
    assert sequoia_tree([0.5, 0.5], 3, 2).text() == "parents=0,0,2 ranks=1,2,1"
    assert sequoia_tree([0.5, 0.0], 2, 1).text() == "parents=0,0 ranks=1,2"
