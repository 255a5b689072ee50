"""Issue #12's performance goals, end to end through the public API, each against a lean
plain-Python loop measured in the same run (not part of the test run).

    .venv/bin/python benchmarks/bench_arena.py [--quick]

1. The arena: 6 policies (the best fixed K, found exactly, the oracle, hf_heuristic,
   goodput, fixed 2, fixed 8) x 2,000 sequences x 256 tokens on the ``bursty-code-chat``
   markov scenario, by :func:`engine.analysis.arena.run_arena` (everything: the exact search for
   the best fixed K, the oracle's program, six Monte Carlo runs on common random numbers).
   Target: under 10 s. Baseline: the same hf_heuristic run by a lean scalar loop (one
   ``random.random()`` per regime step and per cycle, no numpy), cycles per second.
2. Exact values of hf_heuristic and oracle at T = 4,096, K_max = 32 on that markov
   scenario (two regimes) by :func:`engine.simulate.policies.exact_policy` (pricing included).
   Target: under 1 s each. Baseline: the plain-Python program over (r, K, regime) for
   hf_heuristic at T = 512 (the vectorised one timed at T = 512 too, for the ratio).

Peak RSS is the process's (``ru_maxrss``), imports included. Prints PASS/FAIL lines.
"""

from __future__ import annotations

import argparse
import random
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.analysis.arena import run_arena
from engine.core.config import SpecConfig
from engine.presets import load_preset
from engine.simulate.policies import exact_policy, price_table

ARENA_TARGET_S = 10.0
EXACT_TARGET_S = 1.0


def lean_hf_loop(config: SpecConfig, cycle_us: list[float]) -> tuple[int, float]:
    """hf_heuristic on markov acceptance, one sequence and one cycle at a time in plain
    Python: (cycles, total time). ``cycle_us[k]``: a cycle's price (linear costs)."""
    rng = random.Random(1)
    p = (config.p_easy, config.p_hard)
    stay, easy, k_max, total = config.stay, config.easy_frac, config.k_max, config.tokens_per_seq
    cycles, elapsed = 0, 0.0
    for _ in range(config.n_sequences):
        regime = 0 if rng.random() < easy else 1
        k_now, r, first = config.k, total, True
        while r > 0:
            if not first:
                x = rng.random()
                if x >= stay:
                    regime = 0 if (x - stay) / (1 - stay) < easy else 1
            first = False
            u, survive, n = rng.random(), 1.0, 0
            while n < k_now:
                survive *= p[regime]
                if survive <= u:
                    break
                n += 1
            r -= min(n + 1, r)
            elapsed += cycle_us[k_now]
            cycles += 1
            k_now = min(k_now + 2, k_max) if n == k_now else max(1, k_now - 1)
    return cycles, elapsed


def lean_hf_exact(config: SpecConfig, cycle_us: list[float], tokens: int) -> float:
    """Expected time of hf_heuristic by the plain-Python program over (r, K, regime)."""
    p = (config.p_easy, config.p_hard)
    mix = (config.easy_frac, 1 - config.easy_frac)
    stay, k_max = config.stay, config.k_max
    move = [[stay * (a == b) + (1 - stay) * mix[b] for b in (0, 1)] for a in (0, 1)]
    # value[r][K][g]: expected remaining time with r tokens to go, K, regime g
    value = [[[0.0, 0.0] for _ in range(k_max + 1)] for _ in range(tokens + 1)]
    for r in range(1, tokens + 1):
        for k_now in range(1, k_max + 1):
            for g in (0, 1):
                total = cycle_us[k_now]
                for n in range(k_now + 1):
                    prob = p[g] ** n * ((1 - p[g]) if n < k_now else 1.0)
                    rest = max(r - n - 1, 0)
                    nxt = min(k_now + 2, k_max) if n == k_now else max(1, k_now - 1)
                    total += prob * sum(move[g][h] * value[rest][nxt][h] for h in (0, 1))
                value[r][k_now][g] = total
    return sum(mix[g] * value[tokens][config.k][g] for g in (0, 1))


def timed(fn, *args):  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - start, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller lean baselines")
    args = parser.parse_args()
    preset = load_preset("bursty-code-chat")
    scenario = preset.config
    contenders = preset.contenders(scenario)
    policy = "policy.name"
    arena_s, result = timed(run_arena, scenario, contenders)
    cycles = sum(s.cycles for s in result.standings)
    print(
        f"arena: {len(result.standings)} policies x {scenario.n_sequences} x "
        f"{scenario.tokens_per_seq} (markov): {arena_s:.2f} s, {cycles:,} cycles, "
        f"{cycles / arena_s / 1e6:.2f} M cycles/s"
    )
    for s in result.ranked():
        print(f"  {s.label:<22} {s.best_speedup:.3f}x  mean k {s.mean_k:.2f}")
    print(("PASS" if arena_s < ARENA_TARGET_S else "FAIL") + f" arena < {ARENA_TARGET_S:g} s")
    hf = scenario.replace(**{policy: "hf_heuristic"})
    lean_config = hf.replace(n_sequences=200 if args.quick else 2000)
    _, cycle = price_table(hf, hf.k_max)
    prices = cycle[1].tolist()
    lean_s, (lean_cycles, _) = timed(lean_hf_loop, lean_config, prices)
    hf_row = next(s for s in result.standings if s.policy == "hf_heuristic")
    from engine.simulate.policies import simulate_policy_config

    vec_s, vec = timed(simulate_policy_config, hf)
    print(
        f"hf_heuristic Monte Carlo: vectorised {vec.cycles / vec_s / 1e6:.2f} M cycles/s "
        f"({vec_s:.3f} s), lean loop {lean_cycles / lean_s / 1e6:.2f} M cycles/s "
        f"({lean_s:.2f} s for {lean_config.n_sequences} sequences): "
        f"{(vec.cycles / vec_s) / (lean_cycles / lean_s):.1f}x (arena row: {hf_row.cycles:,} "
        "cycles)"
    )
    long = scenario.replace(tokens_per_seq=4096)
    for name in ("hf_heuristic", "oracle"):
        config = long.replace(**{policy: name})
        exact_policy.cache_clear()
        seconds, found = timed(exact_policy, config)
        assert found is not None
        verdict = "PASS" if seconds < EXACT_TARGET_S else "FAIL"
        print(f"{verdict} exact {name} T=4096 K_max={config.k_max}: {seconds:.3f} s (< 1 s)")
    short = scenario.replace(tokens_per_seq=256 if args.quick else 512, **{policy: "hf_heuristic"})
    exact_policy.cache_clear()
    vec_s, found = timed(exact_policy, short)
    _, cycle = price_table(short, short.k_max)
    lean_s, lean_time = timed(lean_hf_exact, short, cycle[1].tolist(), short.tokens_per_seq)
    assert found is not None and abs(found.time_us / lean_time - 1) < 1e-9
    print(
        f"exact hf_heuristic T={short.tokens_per_seq}: vectorised {vec_s:.3f} s, plain-Python "
        f"program {lean_s:.2f} s: {lean_s / vec_s:.0f}x (same value to 1e-9)"
    )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS: {peak:.1f} MiB")


if __name__ == "__main__":
    main()
