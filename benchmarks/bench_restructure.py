"""Issue #24's check that the restructure changed no speed: the engine, a sweep and the app's
start-up, timed on this tree and on the tree before the restructure, alternately, in one run.

    .venv/bin/python benchmarks/bench_restructure.py [--rounds N] [--before COMMIT] [--fixed-malloc]

The tree before is :data:`BEFORE_COMMIT` (the commit before issue #24's first change, with the
flat ``engine/`` and ``spectui/*_command.py``), extracted with ``git archive`` into a temporary
folder. Every figure is one fresh interpreter whose only ``engine`` and ``spectui`` are the
chosen tree's (``PYTHONPATH``, checked), the two trees alternating round by round (the order
swapped every round). A figure is the best of its rounds; the median is printed beside it,
and peak resident memory (``ru_maxrss``, imports included) of the last round. Timed:

1. ``simulate`` of the default preset at 500,000 sequences (the chain Monte Carlo);
2. ``simulate`` of bursty-code-chat under the goodput policy at 2,000 sequences (stepwise);
3. ``exact_metrics_many`` of the seed-576 sweep's configurations, 20 times;
4. ``run_sweep`` of the seed-576 sweep at 1,000 sequences per configuration (one process);
5. the stepwise run and ``exact_metrics_many`` (once) again, the best of 8 and of 30 calls
   after a first one in the same interpreter: the code's own speed, without a first call's
   lazy imports, cold caches and page faults;
6. the app's start-up: interpreter, imports, ``create_app("default")`` and its first frame
   (Textual's ``run_test``), the whole process's wall time.

Same bytes are another matter (``make results``, the tests): this times only.
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
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# The commit before issue #24's restructure (flat engine/, spectui/*_command.py).
BEFORE_COMMIT = "11915f6"

# Run in a fresh interpreter with PYTHONPATH the tree's root; prints one JSON line.
CHILD = r"""
import json, resource, sys, time
started = time.perf_counter()
task = sys.argv[1]

seconds = None
if task == "app":
    import asyncio
    from spectui.app import create_app

    async def first_frame():
        app = create_app("default")
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause()

    asyncio.run(first_frame())
    seconds = time.perf_counter() - started
else:
    # This tree's engine, or the flat one before #24 (bench_engine's lookup).
    sys.path.insert(0, sys.argv[2])
    from bench_engine import engine_names

    load_preset = engine_names("engine.presets", "load_preset")
    simulate = engine_names("engine.simulate.simulator", "simulate")
    exact_many = engine_names("engine.simulate.exact", "exact_metrics_many")
    run_sweep = engine_names("engine.sweep.sweep", "run_sweep")
    if task.endswith("_warm"):  # best of several calls, after one: no first-call effects
        if task == "stepwise_warm":
            config = load_preset("bursty-code-chat").config.replace(
                policy="goodput", n_sequences=2000
            )
            call, repeats = (lambda: simulate(config)), 8
        else:
            configs = [c.replace(n_sequences=1000) for c in load_preset("seed-576").sweep.configs()]
            call, repeats = (lambda: exact_many(configs)), 30
        call()
        times = []
        for _ in range(repeats):
            clock = time.perf_counter(); call(); times.append(time.perf_counter() - clock)
        seconds = min(times)
    elif task == "chain":
        config = load_preset("default").config.replace(n_sequences=500000)
        clock = time.perf_counter(); simulate(config); seconds = time.perf_counter() - clock
    elif task == "stepwise":
        config = load_preset("bursty-code-chat").config.replace(policy="goodput", n_sequences=2000)
        clock = time.perf_counter(); simulate(config); seconds = time.perf_counter() - clock
    else:
        configs = [c.replace(n_sequences=1000) for c in load_preset("seed-576").sweep.configs()]
        clock = time.perf_counter()
        if task == "exact":
            for _ in range(20):
                exact_many(configs)
        else:
            run_sweep(configs)
        seconds = time.perf_counter() - clock
import engine
print(json.dumps({
    "seconds": seconds,
    "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    "engine": engine.__file__,
}))
"""

TASKS = {
    "chain": "simulate, default preset, 500,000 sequences",
    "stepwise": "simulate, goodput policy (stepwise), 2,000 sequences",
    "exact": "exact_metrics_many of seed-576's 576 configurations, x20",
    "sweep": "run_sweep, seed-576 at 1,000 sequences, one process",
    "stepwise_warm": "  the stepwise run again, best of 8 after one",
    "exact_warm": "  exact_metrics_many x1, best of 30 after one",
    "app": "app start-up to its first frame (whole process)",
}


def extract(commit: str, root: Path) -> Path:
    """The ``engine`` and ``spectui`` packages at ``commit`` under ``root``; returns ``root``."""
    root.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "archive", commit, "engine", "spectui"], cwd=REPO, check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(root)], input=archive, check=True)
    return root


# glibc's allocator moves its mmap threshold as blocks are freed, so a first call's page
# faults depend on what the interpreter freed before it (imports included): the goodput run
# took ~30 % more minor faults on one tree than the other with the same code. --fixed-malloc
# pins both thresholds (the same for both trees) to time the code without that.
FIXED_MALLOC = {
    "MALLOC_MMAP_THRESHOLD_": str(32 * 2**20),
    "MALLOC_TRIM_THRESHOLD_": str(64 * 2**20),
}


def run(root: Path, task: str, fixed_malloc: bool = False) -> dict[str, float]:
    """One figure of ``task`` on the tree at ``root``, in a fresh interpreter."""
    env = {**os.environ, "PYTHONPATH": str(root), "SPECTUI_SWEEP_WORKERS": "0", "NO_COLOR": "1"}
    if fixed_malloc:
        env.update(FIXED_MALLOC)
    done = subprocess.run(
        [sys.executable, "-c", CHILD, task, str(Path(__file__).resolve().parent)],
        cwd=tempfile.gettempdir(),
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{task} on {root} failed:\n{done.stderr[-2000:]}")
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    if not Path(figures["engine"]).resolve().is_relative_to(root.resolve()):
        raise RuntimeError(f"timed the wrong engine: {figures['engine']} is not under {root}")
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds (default 5)")
    parser.add_argument("--before", default=BEFORE_COMMIT, help="the tree before (a commit)")
    parser.add_argument(
        "--fixed-malloc", action="store_true", help="pin glibc's mmap and trim thresholds"
    )
    args = parser.parse_args(argv)
    began = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        roots = {"before": extract(args.before, Path(tmp) / "before"), "after": REPO}
        allocator = "fixed malloc thresholds" if args.fixed_malloc else "default allocator"
        print(
            f"before = {args.before}, after = this tree; {args.rounds} rounds, alternating; "
            f"{allocator}"
        )
        head = f"{'what':54} {'before s':>9} {'after s':>9} {'after/before':>12}"
        print(f"{head} {'RSS MiB b/a':>12}")
        for task, label in TASKS.items():
            runs: dict[str, list[dict[str, float]]] = {"before": [], "after": []}
            for index in range(args.rounds):
                order = ["before", "after"] if index % 2 == 0 else ["after", "before"]
                for name in order:
                    runs[name].append(run(roots[name], task, args.fixed_malloc))
            best = {name: min(r["seconds"] for r in runs[name]) for name in runs}
            median = {name: statistics.median(r["seconds"] for r in runs[name]) for name in runs}
            rss = {name: runs[name][-1]["rss_mib"] for name in runs}
            print(
                f"{label:54} {best['before']:9.3f} {best['after']:9.3f} "
                f"{best['after'] / best['before']:12.2f} "
                f"{rss['before']:5.0f}/{rss['after']:<5.0f}"
            )
            print(
                f"{'  (medians)':54} {median['before']:9.3f} {median['after']:9.3f} "
                f"{median['after'] / median['before']:12.2f}"
            )
    print(f"(benchmark took {time.perf_counter() - began:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
