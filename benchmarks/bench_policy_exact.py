"""Time the exact values of K policies and print seconds, peak memory and PASS/FAIL (not part
of the test run).

    .venv/bin/python benchmarks/bench_policy_exact.py [--repeat N] [--tokens T] [--k-max K]

Issue #12: exact values for ``hf_heuristic`` and ``oracle`` at T = 4,096, K_max = 32 in under
a second each, with i.i.d. acceptance (G = 1, p = 0.8) and with a markov easy/hard chain
(G = 2: p_easy 0.9, p_hard 0.3, stay 0.95, easy_frac 0.5). Cycle prices are the linear cost
with a per-token verify cost (draft 20 us, verify 200 us + 5 us per extra token), built in
numpy. ``fixed`` (K = 4) is timed too, for scale. A figure is the best of ``--repeat`` runs,
after one untimed call that pays the imports. Peak RSS is the process's (``ru_maxrss``),
imports included.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.simulate.policy_exact import Regimes, policy_exact

TARGET_S = 1.0
DRAFT_US, VERIFY_US, VERIFY_TOKEN_US = 20.0, 200.0, 5.0


def linear_prices(tokens: int, k_max: int) -> np.ndarray:
    """cycle_us[r, k] of the linear cost: k drafts, one pass verifying k + 1 tokens."""
    k = np.arange(k_max + 1, dtype=np.float64)
    row = DRAFT_US * k + VERIFY_US + VERIFY_TOKEN_US * k
    return np.repeat(row[None, :], tokens + 1, axis=0)


def scenarios(k_max: int) -> dict[str, Regimes]:
    j = np.arange(k_max + 1, dtype=np.float64)
    return {
        "G=1 iid p=0.8": Regimes((0.8**j)[None, :]),
        "G=2 markov 0.9/0.3 stay 0.95": Regimes(
            np.stack([0.9**j, 0.3**j]), stay=0.95, mix=np.array([0.5, 0.5])
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per figure (best)")
    parser.add_argument("--tokens", type=int, default=4096, help="tokens per sequence (T)")
    parser.add_argument("--k-max", type=int, default=32, help="largest K a policy may draft")
    args = parser.parse_args()
    prices = linear_prices(args.tokens, args.k_max)
    cases = scenarios(args.k_max)
    policy_exact(cases["G=1 iid p=0.8"], prices, args.tokens, policy="oracle", k_max=args.k_max)
    print(f"exact values of K policies, T = {args.tokens}, K_max = {args.k_max}")
    failed = False
    for name, regimes in cases.items():
        for policy, k in (("hf_heuristic", 4), ("oracle", 1), ("fixed", 4)):
            times = []
            for _ in range(args.repeat):
                start = time.perf_counter()
                result = policy_exact(
                    regimes, prices, args.tokens, policy=policy, k=k, k_max=args.k_max
                )
                times.append(time.perf_counter() - start)
            best = min(times)
            judged = policy != "fixed"
            verdict = ("PASS" if best < TARGET_S else "FAIL") if judged else "    "
            failed |= judged and best >= TARGET_S
            baseline = args.tokens * VERIFY_US
            print(
                f"  {name:30s} {policy:13s} {best:7.3f} s  {verdict}  "
                f"speedup {baseline / result.time_us:.4f}  cycles {result.cycles:.1f}"
            )
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    print(f"peak RSS {rss:.1f} MiB (imports included); target {TARGET_S:.0f} s per value")
    print("FAIL" if failed else "PASS")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
