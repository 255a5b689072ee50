"""Time Sequoia's dynamic program and print seconds, peak memory and PASS/FAIL (not part of the
test run).

    .venv/bin/python benchmarks/bench_trees.py [--repeat N] [--budget B] [--depth D]

Issue #14: the best tree's E[n + 1] for every budget up to 128 draft nodes and every depth up
to 16, with 10 ranks, in under a second (``engine.shapes.trees.sequoia_values``). Also timed: the
same values with acceptance by depth (one row per depth, so one program per depth limit),
the reconstruction of the budget-128, depth-16 tree (``sequoia_tree``), and, as the
baseline, a lean plain-Python program over the same recursion (lists and loops, no numpy),
whose values must agree. A figure is the best of ``--repeat`` runs, after one untimed call
that pays the imports. Peak RSS is the process's (``ru_maxrss``), imports included.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.shapes.trees import expected_tokens, sequoia_tree, sequoia_values

TARGET_S = 1.0
# Positional acceptance of 10 ranks (a draft's top-10 choices; sums to 0.94).
TEN_RANKS = [0.5, 0.2, 0.1, 0.05, 0.03, 0.02, 0.01, 0.01, 0.01, 0.01]


def plain_python_values(probs: list[float], budget: int, depth: int) -> list[list[float]]:
    """E[n + 1] by [budget][depth] from the same recursion in plain Python:
    H(n, d, i) = max(H(n, d, i + 1), max_s p_i (1 + H(s - 1, d - 1, 1)) + H(n - s, d, i + 1))."""
    ranks = len(probs)
    zero = [0.0] * (budget + 1)
    by_depth = [zero]  # H(., d, 1) for d = 0, 1, ...
    for _ in range(depth):
        below = by_depth[-1]
        after = zero  # H(., d, i + 1), from the last rank up
        for i in range(ranks - 1, -1, -1):
            p = probs[i]
            gain = [p * (1.0 + below[s - 1]) for s in range(1, budget + 1)]
            row = [0.0] * (budget + 1)
            for n in range(1, budget + 1):
                best = after[n]
                for s in range(1, n + 1):
                    value = gain[s - 1] + after[n - s]
                    if value > best:
                        best = value
                row[n] = best
            after = row
        by_depth.append(after)
    return [[1.0 + by_depth[d][n] for d in range(depth + 1)] for n in range(budget + 1)]


def best_of(repeat: int, run: Callable[[], object]) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per figure (best)")
    parser.add_argument("--budget", type=int, default=128, help="largest budget (draft nodes)")
    parser.add_argument("--depth", type=int, default=16, help="largest depth")
    args = parser.parse_args()
    budget, depth = args.budget, args.depth
    by_depth = np.array([[p * 0.97**j for p in TEN_RANKS] for j in range(depth)])
    values = sequoia_values(TEN_RANKS, budget, depth)  # untimed: pays the imports

    print(f"Sequoia DP, budgets 0..{budget}, depths 0..{depth}, {len(TEN_RANKS)} ranks")
    numpy_s = best_of(args.repeat, lambda: sequoia_values(TEN_RANKS, budget, depth))
    verdict = "PASS" if numpy_s < TARGET_S else "FAIL"
    print(f"  sequoia_values (p by rank)          {numpy_s:8.4f} s  {verdict}")
    depth_s = best_of(args.repeat, lambda: sequoia_values(by_depth, budget, depth))
    print(f"  sequoia_values (p by depth, rank)   {depth_s:8.4f} s  {depth} programs")
    tree_s = best_of(args.repeat, lambda: sequoia_tree(TEN_RANKS, budget, depth))
    tree = sequoia_tree(TEN_RANKS, budget, depth)
    print(
        f"  sequoia_tree({budget}, {depth})               {tree_s:8.4f} s  "
        f"{tree.nodes} nodes, depth {tree.depth}, levels {tree.level_sizes}"
    )
    start = time.perf_counter()
    plain = plain_python_values(TEN_RANKS, budget, depth)
    plain_s = time.perf_counter() - start
    agree = np.allclose(np.array(plain), values, rtol=0, atol=1e-12)
    print(
        f"  plain Python (baseline, one run)    {plain_s:8.4f} s  "
        f"{plain_s / numpy_s:.0f}x the numpy time; values agree: {agree}"
    )
    print(
        f"  E[n + 1] at budget {budget}, depth {depth}: {values[budget, depth]:.6f} "
        f"(tree {expected_tokens(tree, TEN_RANKS):.6f})"
    )
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    print(f"peak RSS {rss:.1f} MiB (imports included); target {TARGET_S:.0f} s")
    if numpy_s >= TARGET_S or not agree:
        sys.exit(1)


if __name__ == "__main__":
    main()
