"""Time the serving simulator and print seconds, ratios and peak memory (not part of the
test run).

    .venv/bin/python benchmarks/bench_load.py [--requests N] [--lean-requests N]

Issue #27's goal: one hour of traffic at 10 requests/s (36,000 requests, 300 output tokens
each, 512-token prompts) under a fixed K, Llama-3.1-8B with its EAGLE head on an H100, in
under 5 s on one core, at least 20x a lean plain-Python event loop on the same trace, with
peak memory independent of the number of requests.

The lean loop (:func:`lean_loop`) is the strongest plain-Python version of the same
simulation written here: lists instead of arrays, one request at a time per step, the same
scheduler rules for this workload (no KV limit reached, no preemption, chunked prefill in
one chunk), the same prices (the simulator's own tabulated lines, so pricing costs both the
same) and the same per-request draws. Both run the same trace in turns in one process.
"""

from __future__ import annotations

import argparse
import math
import resource
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np

from engine.core.config import SpecConfig
from engine.cost.models import build_cost
from engine.serve.draws import mix as _mix
from engine.serve.draws import uniforms
from engine.serve.pricing import Pricer
from engine.serve.server import Server
from engine.serve.sim import simulate_load
from engine.serve.workload import Lengths, Workload

RATE = 10.0


def scenario() -> SpecConfig:
    return SpecConfig().replace(
        **{
            "cost.model": "roofline",
            "cost.draft": "eagle-llama-3.1-8b",
            "acceptance_rate": 0.8,
            "k": 4,
            "tail": "full",
        }
    )


def trace(requests: int, rate: float = RATE) -> tuple[Workload, object]:
    workload = Workload(
        requests=requests, rate=rate, prompt=Lengths(median=512), output=Lengths(median=300)
    )
    return workload, workload.draw(1, 0)


MASK = (1 << 64) - 1


def _mix_int(x: int) -> int:
    """SplitMix64's finaliser on a Python int (the simulator's, bit for bit)."""
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


def uniform_int(key: int, rid: int, counter: int, stream: int) -> float:
    """:func:`engine.serve.sim.uniforms` for one request, in plain Python."""
    x = key ^ ((rid * 0x9E3779B97F4A7C15) & MASK)
    x = _mix_int(x ^ ((counter * 0xD1B54A32D192ED03 + stream) & MASK))
    return (_mix_int(x) >> 11) * 2.0**-53


def lean_loop(config: SpecConfig, cost: object, requests: object) -> tuple[float, int]:
    """The same run in plain Python: (end time in seconds, steps)."""
    pricer = Pricer(cost)
    k = int(config.k)
    surv = np.cumprod([config.acceptance_rate] * k).tolist()
    key = int(_mix(np.array([1 * 1_000_003 + 0], dtype=np.uint64))[0])
    arrival = requests.arrival_s.tolist()  # type: ignore[attr-defined]
    prompt = requests.prompt.tolist()  # type: ignore[attr-defined]
    output = requests.output.tolist()  # type: ignore[attr-defined]
    n = len(arrival)
    running: list[list[int]] = []  # [rid, prefill left, ctx, done, counter]
    waiting: list[int] = []
    t, nxt, finished, steps = 0.0, 0, 0, 0
    budget = 8192
    while finished < n:
        while nxt < n and arrival[nxt] <= t:
            waiting.append(nxt)
            nxt += 1
        if not running and not waiting:
            t = arrival[nxt]
            continue
        left = budget - sum(k + 1 for r in running if r[1] == 0)
        tokens = budget - left
        for r in running:
            if r[1] > 0:
                take = min(r[1], left)
                r.append(take)
                left -= take
                tokens += take
        while waiting and len(running) < 256 and left > 0:
            rid = waiting.pop(0)
            take = min(prompt[rid], left)
            running.append([rid, prompt[rid], 0, 0, 0, take])
            left -= take
            tokens += take
        decoders = [r for r in running if r[1] == 0]
        batch = len(running)
        mean = sum(r[2] for r in running) / batch
        micros = float(pricer.verify(tokens, batch, np.array([mean]))[0])
        if decoders:
            dmean = sum(r[2] for r in decoders) / len(decoders)
            micros += float(pricer.price("draft", k, len(decoders), np.array([dmean]))[0])
        t += micros * 1e-6
        steps += 1
        for r in running:
            if r[1] == 0:
                u = uniform_int(key, r[0], r[4], 1)
                accepted = 0
                while accepted < k and u < surv[accepted]:
                    accepted += 1
                gained = min(accepted + 1, output[r[0]] - r[3])
                r[2] += gained
                r[3] += gained
                r[4] += 1
            else:
                take = r.pop()
                r[1] -= take
                r[2] += take
                if r[1] == 0:
                    r[3] += 1
        still = [r for r in running if r[3] < output[r[0]]]
        finished += len(running) - len(still)
        running = still
    return t, steps


def _check_draws() -> None:
    """The plain-Python draws are the simulator's."""
    ids, counters = np.arange(50), np.arange(50) * 7
    ours = uniforms(12345, ids, counters, 1)
    assert [uniform_int(12345, int(i), int(c), 1) for i, c in zip(ids, counters, strict=True)] == (
        ours.tolist()
    )


def main() -> None:
    _check_draws()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=36_000)
    parser.add_argument("--lean-requests", type=int, default=3_600)
    args = parser.parse_args()
    config = scenario()
    cost = build_cost(config)
    simulate_load(config, cost, trace(200)[1], "fixed", Server())  # imports, untimed

    # 1. The simulator against the lean loop, on the same trace, in turns.
    requests = trace(args.lean_requests)[1]
    times: dict[str, list[float]] = {"simulator": [], "lean loop": []}
    ends = {}
    for _ in range(2):
        start = time.perf_counter()
        outcome = simulate_load(config, cost, requests, "fixed", Server(), seed=1)
        times["simulator"].append(time.perf_counter() - start)
        ends["simulator"] = (outcome.end_s, outcome.summary.steps)
        start = time.perf_counter()
        ends["lean loop"] = lean_loop(config, cost, requests)
        times["lean loop"].append(time.perf_counter() - start)
    best = {name: min(values) for name, values in times.items()}
    print(
        f"{args.lean_requests:,} requests at {RATE:g}/s, fixed K 4: simulator "
        f"{best['simulator']:.2f} s, lean loop {best['lean loop']:.2f} s, ratio "
        f"{best['lean loop'] / best['simulator']:.1f}x (best of 2, in turns)"
    )
    print(
        f"  both end at {ends['simulator'][0]:.3f} s and {ends['lean loop'][0]:.3f} s of "
        f"traffic, {ends['simulator'][1]:,} and {ends['lean loop'][1]:,} steps"
    )

    # 1b. At a load that keeps about 100 requests running.
    requests = trace(args.lean_requests, rate=60.0)[1]
    start = time.perf_counter()
    outcome = simulate_load(config, cost, requests, "fixed", Server(), seed=1)
    fast = time.perf_counter() - start
    start = time.perf_counter()
    lean_loop(config, cost, requests)
    lean = time.perf_counter() - start
    batch = outcome.summary.figures(1, 2.0)["mean_batch"]
    print(
        f"{args.lean_requests:,} requests at 60/s (mean batch {batch:.0f}): simulator "
        f"{fast:.2f} s, lean loop {lean:.2f} s, ratio {lean / fast:.1f}x"
    )

    # 2. An hour of traffic.
    requests = trace(args.requests)[1]
    start = time.perf_counter()
    outcome = simulate_load(config, cost, requests, "fixed", Server(), seed=1)
    elapsed = time.perf_counter() - start
    figures = outcome.summary.figures(1, 2.0)
    print(
        f"{args.requests:,} requests ({outcome.end_s / 3600:.2f} h of traffic): {elapsed:.2f} s, "
        f"{outcome.summary.steps:,} steps, mean batch {figures['mean_batch']:.1f}, "
        f"TPOT p50 {figures['tpot_p50_ms']:.2f} ms (goal: under 5 s)"
    )

    # 3. Memory against the number of requests (the simulation, not the drawn requests).
    for n in (args.lean_requests, args.requests):
        requests = trace(n)[1]
        tracemalloc.start()
        simulate_load(config, cost, requests, "fixed", Server(), seed=1)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        print(f"heap peak of a run of {n:,} requests: {peak / 2**20:.1f} MiB (tracemalloc)")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS {rss:.0f} MiB (process)")
    assert math.isfinite(elapsed)


if __name__ == "__main__":
    main()
