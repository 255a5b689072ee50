"""Time the stepwise Monte Carlo of K policies and print seconds and peak memory (not part
of the test run).

    .venv/bin/python benchmarks/bench_stepwise.py [--sequences N] [--tokens T] [--cost C]

The arena's load of issue #12: 6 policies (fixed 4, hf_heuristic, goodput, oracle, fixed 8,
fixed 2) x 2,000 sequences x 256 tokens on a markov scenario (p_easy 0.9, p_hard 0.3,
stay 0.95, easy_frac 0.5, K_max 32), all on the same random stream; target: under 10 s in
total. The oracle's table is a stand-in (k = 4 in the easy regime, 1 in the hard one): its
cost is that of any table. A threshold policy on the per-token confidence model
(q ~ Beta(4, 1)) is timed beside it, outside the total. Peak RSS is the process's
(``ru_maxrss``), imports included. Each policy's speedup is printed as a sanity check.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.core.config import SpecConfig
from engine.cost.models import build_cost
from engine.simulate.stepwise import Acceptance, Policy, price_tables, simulate_policy

K_MAX = 32
TARGET_S = 10.0
COSTS = {
    "linear": dict(
        cost_model="linear", draft_cost_us=20.0, verify_cost_us=200.0, verify_token_us=10.0
    ),
    "roofline": dict(
        cost_model="roofline",
        gpu="h100",
        target="llama-3.1-8b",
        draft="llama-3.2-1b",
        prompt_len=1024,
    ),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sequences", type=int, default=2000)
    parser.add_argument("--tokens", type=int, default=256)
    parser.add_argument("--cost", choices=list(COSTS), default="linear")
    args = parser.parse_args()
    tokens = args.tokens
    config = SpecConfig(tokens_per_seq=tokens, **COSTS[args.cost])
    draft, cycle = price_tables(
        build_cost(config), tokens, K_MAX, config.batch_size, config.prompt_len
    )
    baseline = float(cycle[1:, 0].sum())  # one plain step per token
    positions = np.arange(K_MAX + 1)
    markov = Acceptance(
        survival=np.array([0.9**positions, 0.3**positions]), stay=0.95, mix=np.array([0.5, 0.5])
    )
    oracle_k = np.tile(np.array([[4, 1]]), (tokens + 1, 1))
    policies = [
        ("fixed 4", Policy("fixed", k=4)),
        ("hf_heuristic", Policy("hf_heuristic", k=5)),
        ("goodput", Policy("goodput", k=4)),
        ("oracle (table)", Policy("oracle", oracle_k=oracle_k)),
        ("fixed 8", Policy("fixed", k=8)),
        ("fixed 2", Policy("fixed", k=2)),
    ]
    common = dict(
        tokens=tokens, n_sequences=args.sequences, draft_us=draft, cycle_us=cycle, entropy=[12]
    )
    print(
        f"{len(policies)} policies x {args.sequences} sequences x {tokens} tokens, "
        f"markov, {args.cost} cost"
    )
    total = 0.0
    for label, policy in policies:
        start = time.perf_counter()
        result = simulate_policy(markov, policy, **common)
        seconds = time.perf_counter() - start
        total += seconds
        speedup = baseline * args.sequences / float(result.sequence_time_us.sum())
        mean_k = result.drafted / result.cycles
        print(f"  {label:<16} {seconds:7.3f} s   speedup {speedup:5.3f}   mean k {mean_k:5.2f}")
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    verdict = "PASS" if total < TARGET_S else "FAIL"
    print(f"total {total:.3f} s (target < {TARGET_S:.0f} s): {verdict}; peak RSS {peak_mb:.0f} MB")
    beta = Acceptance(beta=(4.0, 1.0))
    for rule in ("p_min", "h"):
        start = time.perf_counter()
        result = simulate_policy(beta, Policy("threshold", rule=rule, p_min=0.7, h=0.5), **common)
        seconds = time.perf_counter() - start
        speedup = baseline * args.sequences / float(result.sequence_time_us.sum())
        print(
            f"  threshold {rule:<6} {seconds:7.3f} s   speedup {speedup:5.3f} "
            "(beta(4, 1) confidences)"
        )


if __name__ == "__main__":
    main()
