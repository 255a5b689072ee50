"""Time the engine and print figures and ratios (not part of the test run).

    .venv/bin/python benchmarks/bench_engine.py [--workers N] [--skip-reference]
    .venv/bin/python benchmarks/bench_engine.py --compare-before [--rounds N]


1. the 576-configuration seed sweep with the fast and the reference engine (serial) and
   their ratio (target: fast >= 20x);
2. the same sweep at 20,000 sequences per configuration, fast engine, N worker processes
   (target: well under a minute on 2 cores);
3. the exact-only sweep;
4. peak memory of one run with per-cycle records at 100,000 sequences, held in memory
   and streamed to a CSV file (target: bounded, compact columns, no Python object per cycle).

``--compare-before`` runs only a same-run comparison with the engine as it was before the
scenario restructuring (commit 1e5df99, issue #10), extracted with ``git archive`` into a
temporary folder: the seed sweep (fast engine, one process) and the exact-only sweep, each
engine in its own fresh subprocess, alternating old and new for ``--rounds`` rounds. It
prints every time, the best and median of each, the new/old ratio, and each subprocess's
peak RSS (``ru_maxrss``, imports included).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
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


REPO = Path(__file__).resolve().parent.parent
# The engine before issue #10's restructuring: one flat configuration, three cycle loops.
BEFORE_COMMIT = "1e5df99"

# Run in a fresh interpreter whose only ``engine`` is the one on PYTHONPATH (the working
# directory is a scratch folder, so the repository's engine cannot shadow it).
_TIMING_SCRIPT = """
import json, resource, time
import engine
from engine.presets import load_preset
from engine.sweep import run_sweep
configs = load_preset("seed-576").sweep.configs()
start = time.perf_counter()
fast = run_sweep(configs)
fast_s = time.perf_counter() - start
start = time.perf_counter()
exact = run_sweep(configs, exact_only=True)
exact_s = time.perf_counter() - start
print(json.dumps({
    "engine": engine.__file__,
    "fast_s": fast_s,
    "exact_s": exact_s,
    "rows": len(fast),
    "speedup_sum": float(fast["speedup"].sum()),
    "exact_sum": float(exact["speedup_exact"].sum()),
    "max_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
}))
"""


def _time_engine(engine_root: Path, scratch: Path) -> dict[str, float | str]:
    env = {**os.environ, "PYTHONPATH": str(engine_root)}
    out = subprocess.run(
        [sys.executable, "-c", _TIMING_SCRIPT],
        cwd=scratch,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    result: dict[str, float | str] = json.loads(out.strip().splitlines()[-1])
    where = Path(str(result["engine"])).resolve()
    if not where.is_relative_to(engine_root.resolve()):
        raise RuntimeError(f"timed the wrong engine: {where} is not under {engine_root}")
    return result


def compare_before(rounds: int) -> None:
    """The seed sweep and the exact-only sweep, old engine against new, alternating."""
    with tempfile.TemporaryDirectory() as tmp:
        old_root, scratch = Path(tmp) / "before", Path(tmp) / "scratch"
        old_root.mkdir()
        scratch.mkdir()
        archive = subprocess.run(
            ["git", "archive", BEFORE_COMMIT, "engine"], cwd=REPO, check=True, capture_output=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(old_root)], input=archive, check=True)
        print(
            f"machine: {os.cpu_count()} cores; seed sweep (576 configurations, 500 x 128 "
            f"tokens), one process; engine at {BEFORE_COMMIT} (old) vs this tree (new), "
            f"{rounds} rounds alternating, each run a fresh subprocess"
        )
        runs: dict[str, list[dict[str, float | str]]] = {"old": [], "new": []}
        for index in range(rounds):
            order = ("old", "new") if index % 2 == 0 else ("new", "old")
            for name in order:
                result = _time_engine(old_root if name == "old" else REPO, scratch)
                runs[name].append(result)
                print(
                    f"  round {index + 1} {name}: sweep {result['fast_s']:6.2f} s, exact-only "
                    f"{result['exact_s']:6.2f} s, peak RSS {result['max_rss_mib']:6.1f} MiB",
                    flush=True,
                )
        for name in ("fast_s", "exact_s", "speedup_sum", "exact_sum"):
            values = {r[name] for results in runs.values() for r in results}
            if name.endswith("_sum") and len(values) != 1:
                print(f"  WARNING: {name} differs between the engines: {sorted(values)}")
        print(
            f"{'':<28} {'old best':>9} {'new best':>9} {'old med':>8} {'new med':>8} {'new/old':>8}"
        )
        for label, key in (("seed sweep, fast, serial", "fast_s"), ("exact-only sweep", "exact_s")):
            old = [float(r[key]) for r in runs["old"]]
            new = [float(r[key]) for r in runs["new"]]
            print(
                f"{label:<28} {min(old):8.2f}s {min(new):8.2f}s {statistics.median(old):7.2f}s "
                f"{statistics.median(new):7.2f}s {min(new) / min(old):7.2f}x"
            )
        old_rss = max(float(r["max_rss_mib"]) for r in runs["old"])
        new_rss = max(float(r["max_rss_mib"]) for r in runs["new"])
        print(f"{'peak RSS (max over runs)':<28} {old_rss:8.1f}M {new_rss:8.1f}M")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--skip-reference", action="store_true")
    parser.add_argument(
        "--compare-before",
        action="store_true",
        help=f"only compare with the engine at {BEFORE_COMMIT} (before issue #10)",
    )
    parser.add_argument("--rounds", type=int, default=3, help="rounds of --compare-before")
    args = parser.parse_args()
    if args.compare_before:
        compare_before(args.rounds)
        return
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
