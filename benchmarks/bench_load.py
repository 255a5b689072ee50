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
one chunk), the same prices (the cost model's affine lines from the simulator's Pricer,
evaluated in plain floats) and the same per-request draws. Both run the same trace in turns
in one process, and end at the same time to the last bit.

The simulator runs a uniform policy (off, fixed, schedule, goodput with one regime) in its
compiled loop (engine/serve/stepper.py), and the others (budget; goodput with hidden
regimes) in numpy, a step or a segment of steps at a time: both are timed.
"""

from __future__ import annotations

import argparse
import math
import resource
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

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
    lines: dict[tuple[str, float, int], tuple[float, float]] = {}

    def line(kind: str, width: float, batch: int) -> tuple[float, float]:
        found = lines.get((kind, width, batch))
        if found is None:
            found = pricer._line(kind, width, batch)
            assert found is not None  # the additive roofline is affine in the context
            lines[(kind, width, batch)] = found
        return found

    k = int(config.k)
    surv = np.cumprod([config.acceptance_rate] * k).tolist()
    key = int(_mix(np.array([1 * 1_000_003 + 0], dtype=np.uint64))[0])
    arrival = requests.arrival_s.tolist()
    prompt = requests.prompt.tolist()
    output = requests.output.tolist()
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
        a, s = line("verify", tokens / batch, batch)
        verify = a + s * (sum(r[2] for r in running) / batch)
        draft = 0.0
        if decoders:
            a, s = line("draft", k, len(decoders))
            draft = a + s * (sum(r[2] for r in decoders) / len(decoders))
        t += (draft + verify) * 1e-6
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


def best_of(runs: int, work: Callable[[], Any]) -> tuple[float, Any]:
    """The shortest of ``runs`` timings of ``work()``, and its result."""
    best, result = math.inf, None
    for _ in range(runs):
        start = time.perf_counter()
        result = work()
        best = min(best, time.perf_counter() - start)
    return best, result


def main() -> None:
    _check_draws()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=36_000)
    parser.add_argument("--lean-requests", type=int, default=36_000)
    args = parser.parse_args()
    config = scenario()
    cost = build_cost(config)
    simulate_load(config, cost, trace(200)[1], "fixed", Server())  # compiled, untimed

    # 1. The simulator against the lean loop, on the same trace, in turns.
    for rate in (RATE, 60.0):
        requests = trace(args.lean_requests, rate=rate)[1]
        fast, outcome = best_of(
            3, lambda r=requests: simulate_load(config, cost, r, "fixed", Server(), seed=1)
        )
        lean, (end, steps) = best_of(1, lambda r=requests: lean_loop(config, cost, r))
        batch = outcome.summary.figures(1, 2.0)["mean_batch"]
        print(
            f"{args.lean_requests:,} requests at {rate:g}/s (mean batch {batch:.0f}), fixed "
            f"K 4: simulator {fast:.3f} s, lean loop {lean:.2f} s, ratio {lean / fast:.0f}x"
        )
        print(
            f"  both end at {outcome.end_s:.6f} s and {end:.6f} s of traffic, "
            f"{outcome.summary.steps:,} and {steps:,} steps"
        )
        assert outcome.end_s == end

    # 2. An hour of traffic, under each policy.
    requests = trace(args.requests)[1]
    goodput = config.replace(**{"policy.k_max": 6})
    for policy in ("fixed", "off", "goodput", "budget"):
        scenario_ = goodput if policy in ("goodput", "budget") else config
        elapsed, outcome = best_of(
            1,
            lambda c=scenario_, p=policy: simulate_load(c, cost, requests, p, Server(), seed=1),
        )
        figures = outcome.summary.figures(1, 2.0)
        print(
            f"{args.requests:,} requests ({outcome.end_s / 3600:.2f} h of traffic), "
            f"{policy}: {elapsed:.2f} s, {outcome.summary.steps:,} steps, mean batch "
            f"{figures['mean_batch']:.1f}, TPOT p50 {figures['tpot_p50_ms']:.2f} ms "
            "(goal for a fixed K: under 5 s)"
        )

    # 2a. The same hour with lognormal lengths (the Azure conversation fit): each new
    # prefill width asks the cost model for a verify line.
    from engine.serve.settings import AZURE_CONV

    azure = Workload(
        requests=args.requests, rate=RATE, prompt=AZURE_CONV["prompt"], output=AZURE_CONV["output"]
    )
    elapsed, outcome = best_of(
        1, lambda: simulate_load(config, cost, azure.draw(1, 0), "fixed", Server(), seed=1)
    )
    print(
        f"{args.requests:,} requests, fixed, azure-conv lengths: {elapsed:.2f} s, "
        f"{outcome.summary.steps:,} steps"
    )

    # 2b. The numpy steps (the path of a policy that reads hidden regimes), for scale.
    elapsed, outcome = best_of(
        1,
        lambda: simulate_load(config, cost, requests, "fixed", Server(), seed=1, compiled=False),
    )
    print(
        f"{args.requests:,} requests, fixed, in numpy (compiled=False): {elapsed:.2f} s, "
        f"{outcome.summary.steps:,} steps"
    )

    # 3. Memory against the number of requests: the run draws them a block at a time.
    # Fixed lengths, and lognormal ones (the Azure conversation fit: a new prefill length
    # makes a new verify line, which the loop's bounded caches hold).
    lengths = {
        "fixed lengths": (Lengths(median=512), Lengths(median=300)),
        "azure-conv lengths": (AZURE_CONV["prompt"], AZURE_CONV["output"]),
    }
    for name, (prompt, output) in lengths.items():
        for n in (args.requests // 10, args.requests, args.requests * 10):
            workload = Workload(requests=n, rate=RATE, prompt=prompt, output=output)
            requests = workload.draw(1, 0)
            tracemalloc.start()
            simulate_load(config, cost, requests, "fixed", Server(), seed=1)
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            print(
                f"heap peak of a run of {n:,} requests, {name}: {peak / 2**20:.2f} MiB "
                "(tracemalloc, the requests' drawing included)"
            )
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS {rss:.0f} MiB (process)")


if __name__ == "__main__":
    main()
