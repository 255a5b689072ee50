"""Time the engine and print figures and ratios (not part of the test run).

    .venv/bin/python benchmarks/bench_engine.py [--workers N] [--skip-reference]

1. the 576-configuration seed sweep with the fast and the reference engine (serial) and
   their ratio (target: fast >= 20x);
2. the same sweep at 20,000 sequences per configuration, fast engine, N worker processes
   (target: well under a minute on 2 cores);
3. the exact-only sweep;
4. peak memory of one run with per-cycle records at 100,000 sequences, held in memory
   and streamed to a CSV file (target: bounded, compact columns, no Python object per cycle).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import tracemalloc
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.config import SpecConfig
from engine.presets import load_preset
from engine.simulator import simulate
from engine.sweep import run_sweep


def timed(label: str, func):
    start = time.perf_counter()
    result = func()
    elapsed = time.perf_counter() - start
    print(f"{label:<52} {elapsed:8.2f} s", flush=True)
    return elapsed, result


def peak_mib(func):
    tracemalloc.start()
    result = func()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 2**20, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--skip-reference", action="store_true")
    args = parser.parse_args()
    configs = load_preset("seed-576").sweep.configs()
    print(f"machine: {os.cpu_count()} cores; {len(configs)} configurations of 500 x 128 tokens")

    fast, _ = timed("seed sweep, fast engine, serial", lambda: run_sweep(configs))
    if not args.skip_reference:
        ref, _ = timed(
            "seed sweep, reference engine, serial",
            lambda: run_sweep(configs, engine="reference"),
        )
        print(f"{'  ratio reference / fast':<52} {ref / fast:8.1f} x   (target >= 20 x)")

    big = [c.replace(n_sequences=20_000) for c in configs]
    with ProcessPoolExecutor(args.workers) as pool:
        big_time, _ = timed(
            f"seed sweep at 20,000 sequences, fast, {args.workers} workers",
            lambda: run_sweep(big, executor=pool),
        )
    print(f"{'  per configuration':<52} {big_time / len(big) * 1e3:8.1f} ms")
    timed("seed sweep, exact only, serial", lambda: run_sweep(configs, exact_only=True))

    config = SpecConfig(n_sequences=100_000)
    in_memory, result = peak_mib(lambda: simulate(config, records=True))
    cycles = int(result.metrics["cycles"])
    frame_mib = result.cycles.memory_usage(deep=True).sum() / 2**20
    print(
        f"{'one run, 100,000 sequences, records in memory':<52} {in_memory:8.1f} MiB peak "
        f"({cycles:,} cycles; frame {frame_mib:.1f} MiB = "
        f"{frame_mib * 2**20 / cycles:.0f} bytes/cycle)"
    )
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cycles.csv"
        with path.open("w") as handle:
            first = [True]

            def sink(chunk):
                chunk.to_csv(handle, header=first[0], index=False)
                first[0] = False

            streamed, _ = peak_mib(lambda: simulate(config, on_cycles=sink))
        print(
            f"{'one run, 100,000 sequences, records streamed to CSV':<52} {streamed:8.1f} MiB peak "
            f"(file {path.stat().st_size / 2**20:.0f} MiB)"
        )
    no_records, _ = peak_mib(lambda: simulate(config))
    print(f"{'one run, 100,000 sequences, aggregates only':<52} {no_records:8.1f} MiB peak")


if __name__ == "__main__":
    main()
