"""Time the engine against numpy's uniform rate, a lean per-token loop, the reference loop and
the engine before issue #11; print every figure and ratio (not part of the test run).

    .venv/bin/python benchmarks/bench_engine.py [--quick] [--rounds N] [--no-before]

``make bench`` runs it with the defaults (about 1.5 minutes on two cores, up to three when
they are busy); ``--quick`` shrinks every size for a smoke run of about twenty seconds (its
figures are not the issue's). ``--no-before`` times this tree alone.

Every timed piece runs in a fresh subprocess whose only ``engine`` is the one on its
PYTHONPATH: this tree ("after") or the engine at :data:`BEFORE_COMMIT` ("before", the commit
before issue #11, extracted with ``git archive`` into a temporary folder). Before and after
alternate, round by round; a figure is the best of its runs (the median is printed as well),
but a timing longer than :data:`LONG_RUN_S` is not repeated (the engine before took about
40 s for the seed sweep at 20,000 sequences and 7-14 s for K = 1024). Each subprocess reports
its peak resident memory (``ru_maxrss``, imports included).

What is timed (wall time of ``simulate(config)`` / ``run_sweep(configs)``, one process,
``executor=None``, unless said otherwise):

1. numpy's uniform rate: ``Generator.random`` filling 1 Mi doubles at a time, best of
   several, measured in the same subprocess as each timing it is compared with;
2. one configuration (K = 5, p = 0.8, 20,000 sequences x 256 tokens) and the seed-576 sweep at
   20,000 sequences per configuration, as cycles per second (``metrics["cycles"]``, summed
   over the sweep's rows) and as a fraction of the uniform rate (issue #11: at least 0.3).
   Configurations of the sweep that differ only in cost share their draws
   (:func:`engine.sweep.sweep.draw_groups`), so the sweep's rate is also given per cycle actually
   drawn (one member's cycles per group);
3. a lean per-token loop in plain Python (:func:`lean_loop`) and the reference engine
   (:func:`engine.simulate.reference.simulate_reference`) against the fast engine, cycles per second
   on a smaller configuration;
4. K = 4, 64 and 1024 at 50,000 sequences x 256 tokens (p = 0.8), before and after;
5. the exact-only seed sweep, before and after;
6. the seed sweep at 20,000 sequences per configuration on one process and on two
   (:class:`engine.sweep.pool.SweepPool` and :func:`engine.sweep.pool.batch_size`, as ``spectui
   sweep``
   does; the pool started before the clock), before and after;
7. peak resident memory of a 100,000-sequence run (issue #11: under 76 MiB, the figure
   before), each way of keeping records (:data:`MEMORY_MODES`: none, as the app, all in
   memory, streamed) in its own subprocess, and tracemalloc's peaks of the same runs;
8. ``--cycles-out``: the figures of ``benchmarks/cycles_out.py``'s ``measure()``, if present.

The table at the end lists every figure with before, after and after/before.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
# The engine before issue #11 ("the engine at the speed of its random numbers").
BEFORE_COMMIT = "16aa067"
# Issue #11's bar: cycles per second at least this fraction of numpy's uniform rate.
UNIFORM_FRACTION_TARGET = 0.3
# Issue #11: a 100,000-sequence run's peak resident memory before (MiB), not to be exceeded.
RSS_BEFORE_MIB = 76.0
# Cycle records the app keeps of a run (spectui.widgets.run_view.RECORDS_KEPT).
APP_RECORDS_KEPT = 50_000
UNIFORM_CHUNK = 1 << 20
# A timing longer than this is not repeated (the engine before took about 40 s for the seed
# sweep at 20,000 sequences): the whole benchmark stays within about three minutes.
LONG_RUN_S = 5.0


def engine_names(module: str, *names: str) -> Any:
    """``names`` from ``module`` of the engine on this process's path: this tree's, or the
    flat engine of :data:`BEFORE_COMMIT` (``engine.simulate.simulator`` was
    ``engine.simulator`` before issue #24 put the engine in sub-packages)."""
    import engine

    # The sub-package must be this engine's own: an editable install's finder would otherwise
    # hand a flat engine the checkout's sub-package.
    home = Path(engine.__path__[0])
    if not (home / module.split(".")[1]).is_dir():
        module = "engine." + module.rsplit(".", 1)[1]
    found = importlib.import_module(module)
    if not Path(found.__file__ or "").resolve().is_relative_to(home.resolve()):
        raise RuntimeError(f"{module} came from {found.__file__}, not from {home}")
    values = [getattr(found, name) for name in names]
    return values[0] if len(values) == 1 else values


Figures = dict[str, Any]


# --- Timed pieces. Each runs in a subprocess (Engines.run); engine is imported inside. ---


def uniform_rate(repeats: int = 7, chunks: int = 16) -> float:
    """Uniform doubles numpy produces per second: ``Generator.random`` filling a buffer of
    :data:`UNIFORM_CHUNK` doubles ``chunks`` times, best of ``repeats``."""
    import numpy as np

    rng = np.random.default_rng(12345)
    buffer = np.empty(UNIFORM_CHUNK)
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(chunks):
            rng.random(out=buffer)
        best = min(best, time.perf_counter() - start)
    return chunks * UNIFORM_CHUNK / best


def _best_of(repeats: int, func: Callable[[], Any]) -> tuple[list[float], Any]:
    """Wall times of up to ``repeats`` calls of ``func`` (none after a call longer than
    :data:`LONG_RUN_S`) and the last call's result."""
    times: list[float] = []
    result = None
    while len(times) < repeats and not (times and times[-1] > LONG_RUN_S):
        start = time.perf_counter()
        result = func()
        times.append(time.perf_counter() - start)
    return times, result


def task_one_config(k: int, p: float, sequences: int, tokens: int, repeats: int) -> Figures:
    """``simulate`` of one fixed-model configuration (full tail, linear cost), ``repeats`` times."""
    SpecConfig = engine_names("engine.core.config", "SpecConfig")
    simulate = engine_names("engine.simulate.simulator", "simulate")

    config = SpecConfig(k=k, acceptance_rate=p, n_sequences=sequences, tokens_per_seq=tokens)
    simulate(config.replace(n_sequences=min(sequences, 100)))  # first-call costs (imports)
    times, result = _best_of(repeats, lambda: simulate(config))
    return {
        "times": times,
        "cycles": int(result.metrics["cycles"]),
        "speedup": float(result.metrics["speedup"]),
        "max_rss_mib": _max_rss_mib(),  # before the uniform rate's buffer
        "uniform_per_s": uniform_rate(),
    }


def task_sweep(sequences: int, workers: int, repeats: int, exact_only: bool = False) -> Figures:
    """``run_sweep`` of the seed-576 sweep at ``sequences`` per configuration, on this process
    (``workers`` <= 1) or on a :class:`engine.sweep.pool.SweepPool` of ``workers`` processes started
    before the clock (batches sized by :func:`engine.sweep.pool.batch_size`, as ``spectui
    sweep``)."""
    load_preset = engine_names("engine.presets", "load_preset")
    run_sweep = engine_names("engine.sweep.sweep", "run_sweep")

    configs = [c.replace(n_sequences=sequences) for c in load_preset("seed-576").sweep.configs()]
    figures: Figures = {"configurations": len(configs)}
    if workers <= 1:
        times, frame = _best_of(repeats, lambda: run_sweep(configs, exact_only=exact_only))
    else:
        SweepPool, batch_size = engine_names("engine.sweep.pool", "SweepPool", "batch_size")

        with SweepPool(workers, None) as pool:
            executor = pool.executor()
            if executor is None:
                raise RuntimeError(f"no worker processes: {pool.problem}")
            size = batch_size(configs, workers)
            times, frame = _best_of(
                repeats,
                lambda: run_sweep(
                    configs, exact_only=exact_only, executor=executor, batch_size=size
                ),
            )
            pids = list(getattr(executor, "_processes", {}))
            figures["workers_max_rss_mib"] = max(_peak_rss_of(pid) for pid in pids)
    figures["times"] = times
    if exact_only:
        figures["exact_sum"] = float(frame["speedup_exact"].sum())
        return figures
    counted = [int(c) for c in frame.sort_values("config_id")["cycles"]]
    try:
        draw_groups = engine_names("engine.sweep.sweep", "draw_groups")
    except (ImportError, AttributeError):  # the engine before: each configuration drew its own
        drawn = sum(counted)
    else:
        drawn = sum(counted[group[0]] for group in draw_groups(configs, range(len(configs))))
    figures.update(
        cycles=sum(counted),
        cycles_drawn=drawn,
        speedup_sum=float(frame["speedup"].sum()),
        max_rss_mib=_max_rss_mib(),  # before the uniform rate's buffer
        uniform_per_s=uniform_rate(),
    )
    return figures


# How a run keeps its cycle records, for the memory figures: none; as the app (the first
# :data:`APP_RECORDS_KEPT`, counts by position); every record in memory; every record handed
# chunk by chunk to a sink that drops it (as ``--cycles-out`` streams them, without the file).
MEMORY_MODES: dict[str, str] = {
    "plain": "aggregates only",
    "app": f"as the app (records <= {APP_RECORDS_KEPT:,})",
    "records": "all records in memory",
    "stream": "all records streamed",
}


def _memory_options(mode: str) -> dict[str, Any]:
    """``simulate`` keyword arguments of a :data:`MEMORY_MODES` mode."""
    return {
        "plain": {},
        "app": {"records": True, "max_records": APP_RECORDS_KEPT, "position_counts": True},
        "records": {"records": True},
        "stream": {"on_cycles": lambda chunk: None},
    }[mode]


def task_memory_run(sequences: int, mode: str) -> Figures:
    """One run of the default configuration at ``sequences``, records kept as ``mode`` says
    (:data:`MEMORY_MODES`). The point is the process's peak resident memory."""
    SpecConfig = engine_names("engine.core.config", "SpecConfig")
    simulate = engine_names("engine.simulate.simulator", "simulate")

    config = SpecConfig(n_sequences=sequences)
    times, result = _best_of(1, lambda: simulate(config, **_memory_options(mode)))
    return {"times": times, "cycles": int(result.metrics["cycles"])}


def task_traced(sequences: int) -> Figures:
    """The runs of :func:`task_memory_run`, each mode in turn under tracemalloc: the peak of
    memory allocated during each run (MiB), and the bytes a cycle takes in the records frame."""
    import tracemalloc

    SpecConfig = engine_names("engine.core.config", "SpecConfig")
    simulate = engine_names("engine.simulate.simulator", "simulate")

    config = SpecConfig(n_sequences=sequences)
    simulate(config.replace(n_sequences=10))  # first-call allocations (caches, imports)
    figures: Figures = {"times": [], "traced_mib": {}}
    for mode in MEMORY_MODES:
        tracemalloc.start()
        start = time.perf_counter()
        result = simulate(config, **_memory_options(mode))
        figures["times"].append(time.perf_counter() - start)
        figures["traced_mib"][mode] = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
        if mode == "records":
            assert result.cycles is not None
            frame_bytes = int(result.cycles.memory_usage(deep=True).sum())
            figures["frame_bytes_per_cycle"] = frame_bytes / len(result.cycles)
        del result
    return figures


def lean_loop(
    k: int, p: float, sequences: int, tokens: int, cycle_us: float, seed: int = 0
) -> dict[str, float]:
    """The fixed model's run as a lean per-token loop: one ``random.random()`` per drafted
    token until the first rejection, the full tail rule (K drafts, a sequence keeps at most
    the tokens it still needs), a constant cycle time ``cycle_us`` (linear cost, full tail).

    The strongest fair plain-Python loop we know: local names only, no numpy, no records;
    it adds up what the metrics need (cycles, accepted and kept drafts, sequence times).
    Same semantics as :func:`engine.simulate.reference.simulate_reference`, other random numbers.
    """
    rand = random.Random(seed).random
    cycles = accepted_total = accepted_kept = 0
    time_sum = time_squares = 0.0
    for _ in range(sequences):
        remaining = tokens
        sequence_cycles = 0
        while remaining > 0:
            accepted = 0
            while accepted < k and rand() < p:
                accepted += 1
            sequence_cycles += 1
            accepted_total += accepted
            if accepted < remaining:
                accepted_kept += accepted
                remaining -= accepted + 1
            else:  # the cycle emits more than the sequence needs
                accepted_kept += remaining
                remaining = 0
        cycles += sequence_cycles
        elapsed = sequence_cycles * cycle_us
        time_sum += elapsed
        time_squares += elapsed * elapsed
    return {
        "cycles": cycles,
        "accepted": accepted_total,
        "accepted_kept": accepted_kept,
        "time_mean_us": time_sum / sequences,
        "time_var_us2": time_squares / sequences - (time_sum / sequences) ** 2,
    }


def task_loops(k: int, p: float, sequences: int, tokens: int, repeats: int) -> Figures:
    """The fast engine, :func:`lean_loop` and the reference engine on one configuration."""
    SpecConfig = engine_names("engine.core.config", "SpecConfig")
    cycle_costs = engine_names("engine.core.kernel", "cycle_costs")
    simulate_reference = engine_names("engine.simulate.reference", "simulate_reference")
    simulate = engine_names("engine.simulate.simulator", "simulate")

    config = SpecConfig(k=k, acceptance_rate=p, n_sequences=sequences, tokens_per_seq=tokens)
    cycle_us = float(cycle_costs(config).cycle_us[tokens])
    simulate(config.replace(n_sequences=min(sequences, 100)))
    fast_times, fast = _best_of(repeats, lambda: simulate(config))
    lean_times, lean = _best_of(repeats, lambda: lean_loop(k, p, sequences, tokens, cycle_us))
    reference_times, reference = _best_of(max(1, repeats // 2), lambda: simulate_reference(config))
    return {
        "fast_times": fast_times,
        "fast_cycles": int(fast.metrics["cycles"]),
        "lean_times": lean_times,
        "lean_cycles": int(lean["cycles"]),
        "reference_times": reference_times,
        "reference_cycles": int(reference.metrics["cycles"]),
    }


def task_imports() -> Figures:
    """Nothing but the imports a run needs: the floor of every peak RSS figure."""
    engine_names("engine.simulate.simulator", "simulate")
    engine_names("engine.sweep.sweep", "run_sweep")

    return {"times": [0.0]}


TASKS: dict[str, Callable[..., Figures]] = {
    "imports": task_imports,
    "one_config": task_one_config,
    "sweep": task_sweep,
    "memory_run": task_memory_run,
    "traced": task_traced,
    "loops": task_loops,
}


def _max_rss_mib(who: int = resource.RUSAGE_SELF) -> float:
    """Peak resident memory in MiB (``ru_maxrss`` is in KiB on Linux)."""
    return resource.getrusage(who).ru_maxrss / 1024


def _peak_rss_of(pid: int) -> float:
    """Peak resident memory of a live process in MiB (``VmHWM`` of /proc, Linux); NaN if
    unknown."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return math.nan
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return math.nan


def child_main(task: str, arguments: str) -> None:
    """In the subprocess: run ``task`` with JSON ``arguments``, print one JSON line."""
    import engine

    figures = TASKS[task](**json.loads(arguments))
    figures["engine"] = engine.__file__
    figures.setdefault("max_rss_mib", _max_rss_mib())
    print(json.dumps(figures))


# The subprocess loads this file by path: its working directory is a scratch folder and its
# PYTHONPATH the chosen engine's root, so nothing else can shadow that engine. It runs as
# `make run` installs spectui, without the `parquet` extra: pandas loads pyarrow whenever it
# can (about 57 MiB and 70 ms), and the test venv has it.
_CHILD = """
import importlib.util, sys
sys.modules["pyarrow"] = None  # as if not installed
spec = importlib.util.spec_from_file_location("bench_engine", sys.argv[1])
module = sys.modules["bench_engine"] = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
module.child_main(sys.argv[2], sys.argv[3])
"""


# --- The parent: engines, rounds, the table. ---


@dataclass
class Engines:
    """Where each engine's root is ("after": this tree) and a scratch working directory."""

    roots: dict[str, Path]
    scratch: Path

    def run(self, name: str, task: str, **arguments: Any) -> Figures:
        """``task`` in a fresh subprocess on engine ``name``; its figures."""
        root = self.roots[name]
        script = str(Path(__file__).resolve())
        done = subprocess.run(
            [sys.executable, "-c", _CHILD, script, task, json.dumps(arguments)],
            cwd=self.scratch,
            env={**os.environ, "PYTHONPATH": str(root)},
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            raise RuntimeError(f"{task} {arguments} on {name} failed:\n{done.stderr}")
        out = done.stdout
        figures: Figures = json.loads(out.strip().splitlines()[-1])
        where = Path(str(figures["engine"])).resolve()
        if not where.is_relative_to(root.resolve()):
            raise RuntimeError(f"timed the wrong engine: {where} is not under {root}")
        return figures

    def alternate(
        self, rounds: int, task: str, names: Sequence[str] = ("before", "after"), **arguments: Any
    ) -> dict[str, list[Figures]]:
        """``task`` on each engine of ``names`` (those known), ``rounds`` times, the order
        swapped every round so that neither engine always runs on a warmer machine; an engine
        whose run took longer than :data:`LONG_RUN_S` runs no further round."""
        names = [name for name in names if name in self.roots]
        runs: dict[str, list[Figures]] = {name: [] for name in names}
        for index in range(rounds):
            for name in names if index % 2 == 0 else names[::-1]:
                if not any(min(run["times"]) > LONG_RUN_S for run in runs[name]):
                    runs[name].append(self.run(name, task, **arguments))
        return runs


def extract_engine(commit: str, root: Path) -> Path:
    """The ``engine`` package at ``commit``, extracted under ``root``; returns ``root``."""
    root.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "archive", commit, "engine"], cwd=REPO, check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(root)], input=archive, check=True)
    return root


@dataclass
class Row:
    """One line of the final table: a figure before and after (None: not measured)."""

    label: str
    unit: str
    before: float | None = None
    after: float | None = None


@dataclass
class Report:
    """Figures as they come (printed at once) and the table at the end."""

    rows: list[Row] = field(default_factory=list)
    verdicts: list[str] = field(default_factory=list)

    def add(self, row: Row) -> Row:
        self.rows.append(row)
        return row

    def table(self) -> str:
        """Every row (before, after, after/before, unit), then the verdicts."""
        width = max([len("figure"), *(len(row.label) for row in self.rows)])
        lines = [f"{'figure':<{width}} {'before':>10} {'after':>10} {'after/before':>12}  unit"]
        for row in self.rows:
            ratio = ""
            if row.before and row.after is not None:
                ratio = f"{row.after / row.before:11.3g}x"
            lines.append(
                f"{row.label:<{width}} {_number(row.before):>10} {_number(row.after):>10} "
                f"{ratio:>12}  {row.unit}"
            )
        return "\n".join([*lines, *self.verdicts])


def _number(value: float | None) -> str:
    if value is None:
        return "-"
    if value == 0 or 0.01 <= abs(value) < 1e5:
        return f"{value:.3g}" if abs(value) < 100 else f"{value:.0f}"
    return f"{value:.3g}"


def best(runs: list[Figures], key: str = "times") -> float:
    """The best (smallest) time over every run's repeats."""
    return min(min(run[key]) for run in runs)


def peak_rss(runs: list[Figures], key: str = "max_rss_mib") -> float:
    return max(float(run[key]) for run in runs)


def say(text: str) -> None:
    print(text, flush=True)


@dataclass(frozen=True)
class Sizes:
    """Every size the benchmark uses; :meth:`quick` shrinks them for a smoke run."""

    one_sequences: int = 20_000
    one_tokens: int = 256
    sweep_sequences: int = 20_000
    loop_sequences: int = 2_000
    k_sequences: int = 50_000
    k_values: tuple[int, ...] = (4, 64, 1024)
    memory_sequences: int = 100_000
    repeats: int = 5
    sweep_repeats: int = 3

    @classmethod
    def quick(cls) -> Sizes:
        return cls(
            one_sequences=2_000,
            sweep_sequences=200,
            loop_sequences=200,
            k_sequences=2_000,
            memory_sequences=10_000,
            repeats=2,
            sweep_repeats=1,
        )


def _rate_rows(
    report: Report, label: str, runs: dict[str, list[Figures]], key: str, what: str
) -> dict[str, float]:
    """Rows for ``what`` per second (figure ``key`` over the best time, M/s) and as a fraction
    of the uniform rate measured in the same subprocesses; returns the fractions by engine."""
    rates, fractions = {}, {}
    for name, figures in runs.items():
        rates[name] = figures[0][key] / best(figures)
        fractions[name] = rates[name] / max(run["uniform_per_s"] for run in figures)
    report.add(
        Row(f"{label}: {what}/s", "M/s", *(_get(rates, n, 1e-6) for n in ("before", "after")))
    )
    report.add(
        Row(
            f"{label}: {what}/s / uniform rate",
            "fraction",
            *(_get(fractions, n) for n in ("before", "after")),
        )
    )
    return fractions


def _get(values: dict[str, float], name: str, scale: float = 1.0) -> float | None:
    return values[name] * scale if name in values else None


def _verdict(report: Report, what: str, fraction: float) -> None:
    """PASS or FAIL against issue #11's bar on cycles per second."""
    target = UNIFORM_FRACTION_TARGET
    report.verdicts.append(
        f"{'PASS' if fraction >= target else 'FAIL'}  {what}: {fraction:.2f} of the uniform rate "
        f"(target >= {target})"
    )


def bench(sizes: Sizes, rounds: int, with_before: bool) -> Report:
    """Every measurement of the module docstring; figures printed as they come."""
    report = Report()
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp) / "scratch"
        scratch.mkdir()
        roots = {"after": REPO}
        if with_before:
            roots["before"] = extract_engine(BEFORE_COMMIT, Path(tmp) / "before")
        engines = Engines(roots, scratch)
        say(
            f"machine: {os.cpu_count()} cores (shared: figures vary from run to run); engine "
            f"before = {BEFORE_COMMIT if with_before else '(skipped)'}, after = this tree; "
            f"{rounds} rounds alternating, each run a fresh subprocess, best of its repeats"
        )
        _bench_rates(report, engines, sizes, rounds)
        _bench_loops(report, engines, sizes)
        _bench_k(report, engines, sizes, rounds)
        _bench_sweeps(report, engines, sizes, rounds)
        _bench_memory(report, engines, sizes)
    _bench_cycles_out(report, sizes, before=with_before)
    return report


def _bench_rates(report: Report, engines: Engines, sizes: Sizes, rounds: int) -> None:
    """Issue #11's two rates against numpy's uniform rate: one configuration and the seed
    sweep on one process (its time and memory, before and after, are listed here too)."""
    n, t = sizes.one_sequences, sizes.one_tokens
    one = engines.alternate(
        rounds, "one_config", k=5, p=0.8, sequences=n, tokens=t, repeats=sizes.repeats
    )
    uniform = max(run["uniform_per_s"] for run in one["after"]) / 1e6
    say(f"numpy uniform rate (Generator.random, 1 Mi doubles a call): {uniform:.0f} M/s")
    report.add(Row("numpy uniform rate (in the timing subprocesses)", "M/s", None, uniform))
    label = f"one config K=5 p=0.8 {n:,} x {t}"
    for name, runs in one.items():
        say(f"  {label}, {name}: {_times(runs)}, {runs[0]['cycles']:,} cycles")
    report.add(Row(f"{label}: time", "s", *_pair(one, best)))
    _verdict(
        report, "one configuration", _rate_rows(report, label, one, "cycles", "cycles")["after"]
    )

    n = sizes.sweep_sequences
    sweep = engines.alternate(rounds, "sweep", sequences=n, workers=1, repeats=sizes.sweep_repeats)
    label = f"seed sweep {n:,}/config, 1 process"
    for name, runs in sweep.items():
        say(
            f"  {label}, {name}: {_times(runs)}, peak RSS {peak_rss(runs):.0f} MiB; "
            f"{runs[0]['cycles']:,} cycles counted over {runs[0]['configurations']} "
            f"configurations, {runs[0]['cycles_drawn']:,} drawn"
        )
    report.add(Row(f"{label}: time", "s", *_pair(sweep, best)))
    report.add(Row(f"{label}: peak RSS", "MiB", *_pair(sweep, peak_rss)))
    counted = _rate_rows(report, label, sweep, "cycles", "cycles counted")["after"]
    drawn = _rate_rows(report, label, sweep, "cycles_drawn", "cycles drawn")["after"]
    _verdict(report, "seed sweep, cycles counted per configuration", counted)
    _verdict(report, "seed sweep, cycles drawn (shared draws once; not the issue's bar)", drawn)


def _bench_loops(report: Report, engines: Engines, sizes: Sizes) -> None:
    """The fast engine against a lean per-token loop and the reference loop."""
    n, t = sizes.loop_sequences, sizes.one_tokens
    loops = engines.run("after", "loops", k=5, p=0.8, sequences=n, tokens=t, repeats=sizes.repeats)
    rates = {
        name: loops[f"{name}_cycles"] / min(loops[f"{name}_times"]) / 1e6
        for name in ("fast", "lean", "reference")
    }
    label = f"K=5 p=0.8 {n:,} x {t}"
    say(
        f"  {label}: fast {rates['fast']:.2f} M cycles/s, lean loop {rates['lean']:.3f}, "
        f"reference {rates['reference']:.3f}; cycles fast {loops['fast_cycles']:,}, lean "
        f"{loops['lean_cycles']:,}, reference {loops['reference_cycles']:,}"
    )
    for name in ("fast", "lean", "reference"):
        report.add(Row(f"{label}: {name} cycles/s", "M/s", None, rates[name]))
    report.add(Row("  fast / lean loop", "x", None, rates["fast"] / rates["lean"]))
    report.add(Row("  fast / reference", "x", None, rates["fast"] / rates["reference"]))
    report.add(Row("  lean loop / reference", "x", None, rates["lean"] / rates["reference"]))
    spread = abs(loops["lean_cycles"] / loops["fast_cycles"] - 1)
    if spread > 0.02:
        say(f"  WARNING: the lean loop's cycles differ from the engine's by {spread:.1%}")


def _bench_k(report: Report, engines: Engines, sizes: Sizes, rounds: int) -> None:
    """K = 4, 64, 1024 at 50,000 x 256, before and after."""
    n, t = sizes.k_sequences, sizes.one_tokens
    for k in sizes.k_values:
        runs = engines.alternate(rounds, "one_config", k=k, p=0.8, sequences=n, tokens=t, repeats=2)
        label = f"K={k} p=0.8 {n:,} x {t}"
        for name, figures in runs.items():
            say(f"  {label}, {name}: {_times(figures)}, peak RSS {peak_rss(figures):.0f} MiB")
        _same(runs, "cycles", label)
        report.add(Row(f"{label}: time", "s", *_pair(runs, best)))
        report.add(Row(f"{label}: peak RSS", "MiB", *_pair(runs, peak_rss)))


def _bench_sweeps(report: Report, engines: Engines, sizes: Sizes, rounds: int) -> None:
    """The exact-only seed sweep, and the seed sweep at 20,000 on two processes."""
    exact = engines.alternate(
        rounds, "sweep", sequences=500, workers=1, repeats=sizes.repeats, exact_only=True
    )
    for name, figures in exact.items():
        say(f"  exact-only seed sweep, {name}: {_times(figures)}")
    _same(exact, "exact_sum", "exact-only sweep")
    report.add(Row("exact-only seed sweep (576 configurations): time", "s", *_pair(exact, best)))

    n = sizes.sweep_sequences
    label = f"seed sweep {n:,}/config, 2 processes"
    runs = engines.alternate(rounds, "sweep", sequences=n, workers=2, repeats=sizes.sweep_repeats)
    for name, figures in runs.items():
        say(
            f"  {label}, {name}: {_times(figures)}, peak RSS {peak_rss(figures):.0f} MiB, "
            f"workers' peak RSS {peak_rss(figures, 'workers_max_rss_mib'):.0f} MiB"
        )
    report.add(Row(f"{label}: time", "s", *_pair(runs, best)))
    report.add(Row(f"{label}: peak RSS", "MiB", *_pair(runs, peak_rss)))
    report.add(
        Row(
            f"{label}: workers' peak RSS",
            "MiB",
            *_pair(runs, lambda r: peak_rss(r, "workers_max_rss_mib")),
        )
    )


def _bench_memory(report: Report, engines: Engines, sizes: Sizes) -> None:
    """Peak RSS of a 100,000-sequence run, each way of keeping records in its own subprocess;
    tracemalloc's peaks of the same runs."""
    n = sizes.memory_sequences
    floor = engines.alternate(1, "imports")
    label = "imports only (engine.simulate.simulator, engine.sweep.sweep): peak RSS"
    report.add(Row(label, "MiB", *_pair(floor, peak_rss)))
    for mode, what in MEMORY_MODES.items():
        label = f"one run {n:,} x 128, {what}"
        runs = engines.alternate(1, "memory_run", sequences=n, mode=mode)
        for name, figures in runs.items():
            say(f"  {label}, {name}: {_times(figures)}, peak RSS {peak_rss(figures):.1f} MiB")
        row = report.add(Row(f"{label}: peak RSS", "MiB", *_pair(runs, peak_rss)))
        if mode == "plain" and row.after is not None:
            # The figure: a plain run of 100,000 sequences.
            verdict = "PASS" if row.after <= RSS_BEFORE_MIB else "FAIL"
            before = "" if row.before is None else f"; before, this run: {row.before:.1f} MiB"
            report.verdicts.append(
                f"{verdict}  one run of {n:,} sequences, {what}: peak RSS {row.after:.1f} MiB "
                f"(issue #11: under {RSS_BEFORE_MIB:.0f} MiB, the figure before{before})"
            )
        elif mode == "app" and row.after is not None and row.before is not None:
            # The app keeps 50,000 records (2 MB) and counts positions: no more than before.
            verdict = "PASS" if row.after <= row.before * 1.02 else "FAIL"
            report.verdicts.append(
                f"{verdict}  one run of {n:,} sequences, {what}: peak RSS {row.after:.1f} MiB "
                f"(before, this run: {row.before:.1f} MiB; target: no more, within 2 %)"
            )
    traced = engines.alternate(1, "traced", sequences=n)
    for mode, what in MEMORY_MODES.items():
        report.add(
            Row(
                f"one run {n:,} x 128, {what}: tracemalloc peak",
                "MiB",
                *_pair(traced, lambda runs, mode=mode: runs[0]["traced_mib"][mode]),
            )
        )
    report.add(
        Row(
            "  records frame",
            "bytes/cycle",
            *_pair(traced, lambda runs: runs[0]["frame_bytes_per_cycle"]),
        )
    )


CYCLES_OUT = Path(__file__).resolve().parent / "cycles_out.py"


def cycles_out_figures(path: Path, sequences: int) -> Figures | None:
    """``measure(sequences=...)`` of the module at ``path`` (benchmarks/cycles_out.py, which
    times ``spectui run --cycles-out``), or None when there is no such file."""
    if not path.exists():
        return None
    spec = importlib.util.spec_from_file_location("cycles_out", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    spec.loader.exec_module(module)
    figures: Figures = module.measure(sequences=sequences)
    return figures


def _bench_cycles_out(report: Report, sizes: Sizes, before: bool) -> None:
    """The figures of benchmarks/cycles_out.py, if that file exists (this tree), and the same
    whole CLI processes of the tree at :data:`BEFORE_COMMIT` (its ``engine`` and ``spectui``
    extracted, run from there), once each: the run alone and the run writing a CSV file."""
    figures = cycles_out_figures(CYCLES_OUT, sizes.memory_sequences)
    if figures is None:
        say("cycles-out: benchmarks/cycles_out.py not present")
        return
    say(f"cycles-out ({sizes.memory_sequences:,} sequences, this tree):")
    for name, value in figures.items():
        say(f"  {name}: {value}")
    old: dict[str, float] = {}
    if before:
        old = _cli_cycles_out_before(sizes.memory_sequences)
        say(f"cycles-out, {BEFORE_COMMIT} CLI: {old}")
    n = f"{sizes.memory_sequences:,}"
    for label, key in (
        (f"cycles-out, CLI, {n} sequences: run alone", "cli_run_s"),
        (f"cycles-out, CLI, {n} sequences: run + CSV file", "cli_csv_s"),
        (f"cycles-out, CLI, {n} sequences: run + Parquet file", "cli_parquet_s"),
        (f"cycles-out, CLI, {n} sequences: CSV / run alone", "cli_csv_ratio"),
        (f"cycles-out, CLI, {n} sequences: Parquet / run alone", "cli_parquet_ratio"),
        (f"cycles-out, in process, {n} sequences: simulate alone", "run_s"),
        (f"cycles-out, in process, {n} sequences: simulate + CSV file", "csv_s"),
        (f"cycles-out, in process, {n} sequences: CSV / simulate alone", "csv_ratio"),
    ):
        value = figures.get(key)
        unit = "x" if key.endswith("ratio") else "s"
        after = None if value is None else float(value)
        report.add(Row(label, unit, old.get(key), after))
    ratio = figures.get("cli_csv_ratio")
    if ratio is not None:
        verdict = "PASS" if float(ratio) <= 3.0 else "FAIL"
        report.verdicts.append(
            f"{verdict}  --cycles-out for {n} sequences: {float(ratio):.1f}x the run alone, "
            "whole CLI processes (target: within 3x)"
        )


def _cli_cycles_out_before(sequences: int) -> dict[str, float]:
    """``spectui run --n-sequences N`` alone and with ``--cycles-out X.csv`` as whole
    processes of the tree at :data:`BEFORE_COMMIT`, once each (its CSV took ~10 s)."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        archive = subprocess.run(
            ["git", "archive", BEFORE_COMMIT, "engine", "spectui"],
            cwd=REPO,
            check=True,
            capture_output=True,
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(root)], input=archive, check=True)
        run = [sys.executable, "-m", "spectui", "run", "--n-sequences", str(sequences)]
        env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(root)}
        where = subprocess.run(
            [sys.executable, "-c", "import spectui; print(spectui.__file__)"],
            cwd=root,
            env=env,
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        if not Path(where).resolve().is_relative_to(root.resolve()):
            raise RuntimeError(f"timed the wrong spectui: {where}")
        times = {}
        for key, extra in (("cli_run_s", []), ("cli_csv_s", ["--cycles-out", "c.csv"])):
            start = time.perf_counter()
            subprocess.run(run + extra, cwd=root, env=env, check=True, stdout=subprocess.DEVNULL)
            times[key] = time.perf_counter() - start
        times["cli_csv_ratio"] = times["cli_csv_s"] / times["cli_run_s"]
        return times


def _times(runs: list[Figures]) -> str:
    every = [t for run in runs for t in run["times"]]
    return f"best {min(every):.3f} s, median {statistics.median(every):.3f} s of {len(every)}"


def _pair(
    runs: dict[str, list[Figures]], figure: Callable[[list[Figures]], float]
) -> tuple[float | None, float | None]:
    """``figure`` of the runs before and after (None for an engine not run)."""
    before, after = (figure(runs[name]) if name in runs else None for name in ("before", "after"))
    return before, after


def _same(runs: dict[str, list[Figures]], key: str, label: str) -> None:
    """Warn when the engines disagree on a figure beyond sampling noise (they draw other
    random numbers since issue #11, so only a gross difference means a broken benchmark)."""
    values = [run[key] for figures in runs.values() for run in figures]
    if max(values) > 1.02 * min(values):
        say(f"  WARNING: {label}: {key} differs between runs: {sorted(set(values))}")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes: a ~20 s smoke run")
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds (default 2)")
    parser.add_argument(
        "--no-before", action="store_true", help=f"skip the engine at {BEFORE_COMMIT}"
    )
    args = parser.parse_args(argv)
    sizes = Sizes.quick() if args.quick else Sizes()
    started = time.perf_counter()
    report = bench(sizes, 1 if args.quick else args.rounds, not args.no_before)
    say("")
    if args.quick:
        say("--quick: smoke sizes, not the issue's figures (run without --quick for those)")
    say(report.table())
    say(f"(benchmark took {time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
