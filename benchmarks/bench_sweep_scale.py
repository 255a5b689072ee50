"""Sweeps a hundred times the original: throughput, the regime study and memory, new vs base.

    .venv/bin/python benchmarks/bench_sweep_scale.py [--base DIR] [--quick] [--workers N]

Issue #15's figures, measured in one run, each sweep by ``spectui sweep`` in a fresh
process, timed in phases from the CLI's own lines on stderr (see :class:`Run`): setup
(interpreter, imports, planning), start (worker processes or the Dask cluster), rows (first
progress line to the last row), finish (final file, workers stopped); wall is all of it.

1. **Throughput** of the ``seed-576`` sweep at 20,000 sequences a configuration (and at
   200,000, where start-up weighs less), in configurations x sequences x tokens per second
   (the sum over configurations of n_sequences x tokens_per_seq, over the wall time and over
   the rows phase): the base engine on ``--workers N``, this one on ``--workers N``, on
   ``--scheduler local:N`` (a Dask LocalCluster of N workers, whose start-up is the start
   phase; and again without the MALLOC_TRIM_THRESHOLD_ Dask sets for its workers, which
   costs the sampler dearly) and, for reference, on ``--workers 1``. Beside them, the CPU
   time of each run (user and system, of the process and the workers it waited for): with
   other work on the machine, a steadier figure than the wall time.
2. The **46,080-configuration regime study** (``presets/regime-study.toml``),
   exact only: configurations per second, the same five runs.
3. **Memory**: the peak resident memory of one ``spectui sweep --exact-only --workers 1``
   process (``ru_maxrss`` from ``os.wait4``) on generated grids of 10,000, 30,000 and 100,000
   configurations (k x acceptance_rate x draft_cost_us x verify_cost_us, only the last axis
   grows), for both engines. For a run with workers, the peak RSS is the largest of its
   processes.

Every set of runs of one sweep must write byte-identical CSV files: the script says so.

The base engine is the one before issue #15, in a worktree of its own (read-only)::

    git worktree add --detach ../base d5d3a11
    .venv/bin/python benchmarks/bench_sweep_scale.py --base ../base

Each run puts its root first on ``PYTHONPATH`` and runs from an empty directory, and says
which ``engine`` it imported (a run that imported another engine stops the benchmark).
Without ``--base`` the base columns are left out. ``--quick`` runs tiny sizes in seconds
(the test suite runs it): seed-576 at 4 sequences, its Dask runs on a LocalCluster of one
worker (each worker is a nanny and a process to start), a part of the regime study without
its two Dask runs (the Dask runs of section 1 cover them), memory at 100 and 300
configurations; its figures mean nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from engine.presets import SHIPPED_DIR, load_preset  # noqa: E402

SEED_PRESET = SHIPPED_DIR / "seed-576.toml"
REGIME_PRESET = SHIPPED_DIR / "regime-study.toml"
ENGINE_LINE = "bench-engine-file: "
# Runs ``spectui`` as ``python -m spectui`` would, after naming the engine it imported.
LAUNCHER = (
    "import runpy, sys, engine\n"
    f"print({ENGINE_LINE!r} + engine.__file__, file=sys.stderr, flush=True)\n"
    "sys.argv[0] = 'spectui'\n"
    "runpy.run_module('spectui', run_name='__main__', alter_sys=True)\n"
)
# The CLI's lines on stderr when it is not a terminal (spectui.render.SweepProgressBar).
PROGRESS_HEADER = re.compile(r"^sweep .*: \d+ configurations$")
PROGRESS_LINE = re.compile(r"^(\d+)/(\d+)$")
CLI_DONE = re.compile(r"(\d+) configurations in ([0-9.]+) s written")
# Dask's nanny starts its workers with MALLOC_TRIM_THRESHOLD_=65536 (its
# distributed.nanny.pre-spawn-environ), which fixes glibc's mmap threshold at 128 KiB: each
# large numpy array is then mapped and unmapped afresh. spectui's local:N leaves it out
# (engine.sweep.cluster); run before the CLI, this puts it back in the workers' environment, to
# show what it costs (remote workers started by `dask worker` have it unless told not to).
DASK_WITH_TRIM = "import os\nos.environ['MALLOC_TRIM_THRESHOLD_'] = '65536'\n"
WITH_TRIM = " (Dask's malloc trim)"


@dataclass(frozen=True)
class Sizes:
    """What one benchmark run measures."""

    seed_sequences: tuple[int, ...]  # n_sequences of the seed-576 copies
    regime_grid: dict[str, list[Any]] | None  # axes replaced in the regime study (None: all)
    memory_configs: tuple[int, ...]  # configurations of the generated grids, multiples of 100
    base_memory_max: int  # the base engine's memory runs stop at this size
    memory_tokens: int  # tokens_per_seq of the generated grids
    regime_dask: bool  # the regime study on the LocalCluster too (its two Dask runs)
    dask_workers: int | None  # the LocalCluster's workers (None: as many as --workers)


FULL = Sizes(
    seed_sequences=(20_000, 200_000),
    regime_grid=None,
    memory_configs=(10_000, 30_000, 100_000),
    base_memory_max=100_000,
    memory_tokens=16,
    regime_dask=True,
    dask_workers=None,
)
# Seconds a run, nearly all of them the interpreter's start (imports) and a LocalCluster's:
# as few runs as show every kind of run, every section and the memory growth line.
QUICK = Sizes(
    seed_sequences=(4,),  # one size: each costs four processes, two of them Dask clusters
    regime_grid={"workload.batch_size": [1], "workload.prompt_len": [128], "cost.gpu": ["h100"]},
    memory_configs=(100, 300),  # two sizes: the growth line
    base_memory_max=300,
    memory_tokens=8,
    regime_dask=False,  # a LocalCluster's start is most of a quick run's time
    dask_workers=1,  # the same code, one worker fewer to start (about 1.3 s of CPU a run)
)


@dataclass
class Run:
    """One ``spectui sweep`` process: what it ran, its phases, its peak memory, its file.

    The phases come from the CLI's own lines on stderr, timed as they arrive: ``setup`` from
    the launch to the CLI's sweep clock (interpreter, imports, preset, planning), ``start``
    from there to its progress header (worker processes or the Dask cluster started),
    ``rows`` from there to its last progress line (every row written), ``finish`` from there
    to its "N configurations in X s" line (the final file sorted, workers or cluster
    stopped). That line's time is to 0.1 s, so setup and start are known to 0.05 s. A
    phase is None when its lines did not come (the run was killed).
    """

    label: str
    wall_s: float
    max_rss_mib: float  # the largest of the process and the processes it waited for
    cpu_s: float  # user + system time of the process and the processes it waited for
    csv: Path
    finished: bool
    setup_s: float | None = None
    start_s: float | None = None
    rows_s: float | None = None
    finish_s: float | None = None
    note: str = ""


@dataclass
class Engine:
    """A source tree (``engine`` and ``spectui``) whose ``spectui sweep`` the benchmark runs."""

    name: str
    root: Path
    scratch: Path
    timeout_s: float
    runs: int = field(default=0)

    def describe(self) -> str:
        """The tree's commit (``+changes`` when its work tree differs from it)."""
        git = ["git", "-C", str(self.root)]
        head = subprocess.run(
            [*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
        ).stdout.strip()
        dirty = subprocess.run(
            [*git, "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
        return f"{self.root} at {head or '?'}{' +changes' if dirty else ''}"

    def sweep(self, label: str, preset: Path, out_name: str, *flags: str, prelude: str = "") -> Run:
        """Run ``spectui sweep --preset PRESET --out OUT FLAGS...`` and measure it;
        ``prelude``: Python code run first, in the same process."""
        self.runs += 1
        workdir = self.scratch / f"{self.name}-{self.runs}"
        workdir.mkdir(parents=True)  # empty: nothing in it shadows the root's packages
        csv = workdir / out_name
        command = [sys.executable, "-c", prelude + LAUNCHER, "sweep", "--preset", str(preset)]
        command += ["--out", str(csv), *flags]
        env = dict(os.environ, PYTHONPATH=str(self.root))
        lines: list[tuple[float, str]] = []
        start = time.perf_counter()
        process = subprocess.Popen(
            command,
            cwd=workdir,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,  # on a timeout, its workers go with it
        )
        reader = threading.Thread(target=_timed_lines, args=(process, start, lines), daemon=True)
        reader.start()
        status, usage, finished = _wait(process, self.timeout_s)
        wall = time.perf_counter() - start
        reader.join(timeout=30.0)
        text = "\n".join(line for _, line in lines)
        (workdir / "stderr.txt").write_text(text + "\n")
        imported = _imported_engine(text)
        if imported is None or not imported.is_relative_to(self.root.resolve()):
            raise RuntimeError(
                f"{label}: timed the wrong engine: {imported} is not under {self.root}"
            )
        if finished and status != 0:
            raise RuntimeError(f"{label}: spectui sweep failed ({status}):\n{text[-2000:]}")
        run = Run(
            label=label,
            wall_s=wall,
            max_rss_mib=usage.ru_maxrss / 1024,  # Linux: KiB
            cpu_s=usage.ru_utime + usage.ru_stime,
            csv=csv,
            finished=finished,
            note="" if finished else f"killed after {self.timeout_s:.0f} s",
        )
        _phases(run, lines)
        return run


def _timed_lines(
    process: subprocess.Popen[bytes], start: float, lines: list[tuple[float, str]]
) -> None:
    """Read a child's stderr, each line with its time since ``start``."""
    assert process.stderr is not None
    for raw in process.stderr:
        lines.append((time.perf_counter() - start, raw.decode(errors="replace").rstrip()))


def _phases(run: Run, lines: list[tuple[float, str]]) -> None:
    """Fill a run's phases from the CLI's lines (see :class:`Run`)."""
    header = next((t for t, line in lines if PROGRESS_HEADER.match(line)), None)
    last = next((t for t, line in lines if _is_last_progress(line)), None)
    done = next(((t, m) for t, line in lines if (m := CLI_DONE.search(line))), None)
    if header is None or last is None or done is None:
        return
    # The CLI's "in X s" counts from here; it is printed to 0.1 s, so the setup and start
    # phases are known to 0.05 s (and start is taken as 0 when the rounding makes it < 0).
    clock_started = min(done[0] - float(done[1].group(2)), header)
    run.setup_s = clock_started
    run.start_s = header - clock_started
    run.rows_s = last - header
    run.finish_s = done[0] - last


def _is_last_progress(line: str) -> bool:
    match = PROGRESS_LINE.match(line)
    return match is not None and match.group(1) == match.group(2)


def _wait(process: subprocess.Popen[bytes], timeout_s: float) -> tuple[int, Any, bool]:
    """Wait for a child with ``os.wait4`` (its resource usage); kill its process group
    after ``timeout_s``. Returns (exit status, usage, finished in time)."""
    deadline = time.perf_counter() + timeout_s
    while True:
        pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        if pid == process.pid:
            process.returncode = os.waitstatus_to_exitcode(status)
            return process.returncode, usage, True
        if time.perf_counter() > deadline:
            os.killpg(process.pid, signal.SIGKILL)
            _, status, usage = os.wait4(process.pid, 0)
            process.returncode = os.waitstatus_to_exitcode(status)
            return process.returncode, usage, False
        time.sleep(0.01)


def _imported_engine(stderr: str) -> Path | None:
    """The root whose ``engine`` a run imported (from the launcher's line)."""
    for line in stderr.splitlines():
        if line.startswith(ENGINE_LINE):
            return Path(line[len(ENGINE_LINE) :]).resolve().parent.parent
    return None


def toml_text(document: dict[str, Any]) -> str:
    """A preset's TOML: top-level keys, then tables, then arrays of tables (flat values)."""

    def assign(key: str, value: Any) -> str:
        return f"{json.dumps(key)} = {json.dumps(value)}"

    lines = [assign(k, v) for k, v in document.items() if not isinstance(v, dict | list)]
    for name, table in document.items():
        if isinstance(table, dict):
            lines += ["", f"[{name}]", *(assign(k, v) for k, v in table.items())]
    for name, tables in document.items():
        if isinstance(tables, list) and all(isinstance(t, dict) for t in tables):
            for table in tables:
                lines += ["", f"[[{name}]]", *(assign(k, v) for k, v in table.items())]
    return "\n".join(lines) + "\n"


def seed_copy(path: Path, sequences: int) -> Path:
    """seed-576 with ``n_sequences`` replaced."""
    document = tomllib.loads(SEED_PRESET.read_text())
    document["config"]["n_sequences"] = sequences
    document["description"] = f"seed-576 at {sequences} sequences a configuration"
    path.write_text(toml_text(document))
    return path


def regime_copy(path: Path, axes: dict[str, list[Any]] | None) -> Path:
    """The regime study, or a part of it (some axes replaced)."""
    if axes is None:
        return REGIME_PRESET
    document = tomllib.loads(REGIME_PRESET.read_text())
    document["grid"][0].update(axes)
    document["description"] = "part of the regime study"
    path.write_text(toml_text(document))
    return path


def memory_grid(path: Path, configurations: int, tokens: int) -> Path:
    """A grid of ``configurations`` (a multiple of 100): 10 K x 10 acceptance rates x
    draft costs x verify costs, the last axis as long as it takes."""
    draft_costs = [5.0 * (i + 1) for i in range(min(10, configurations // 100))]
    verify_count = configurations // (100 * len(draft_costs))
    if 100 * len(draft_costs) * verify_count != configurations:
        raise ValueError(f"{configurations} configurations: not 100 x 10 x N")
    document = {
        "description": f"memory benchmark: {configurations} configurations",
        "config": {"n_sequences": 1, "tokens_per_seq": tokens, "seed": 7},
        "grid": [
            {
                "k": list(range(1, 11)),
                "acceptance_rate": [round(0.5 + 0.05 * i, 2) for i in range(10)],
                "draft_cost_us": draft_costs,
                "verify_cost_us": [100.0 + 2.0 * i for i in range(verify_count)],
            }
        ],
    }
    path.write_text(toml_text(document))
    return path


def sweep_work(preset: Path) -> tuple[int, int]:
    """(configurations, sum of n_sequences x tokens_per_seq) of a preset's sweep."""
    count = work = 0
    for config in load_preset(str(preset)).sweep.lazy():
        count += 1
        work += config.n_sequences * config.tokens_per_seq
    return count, work


def identical(runs: Sequence[Run]) -> str:
    """Whether the runs' CSV files are byte-identical, in words."""
    finished = [run for run in runs if run.finished]
    if len(finished) < 2:
        return "not checked (fewer than two runs finished)"
    reference = finished[0].csv.read_bytes()
    different = [run.label for run in finished[1:] if run.csv.read_bytes() != reference]
    names = ", ".join(run.label for run in finished)
    if different:
        return f"DIFFERENT: {', '.join(different)} differ from {finished[0].label}"
    rows = reference.count(b"\n") - 1  # the header's line is not a row
    return f"identical ({names}; {len(reference):,} bytes, {rows:,} rows)"


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Columns right-aligned but the first."""
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]

    def line(row: Sequence[str]) -> str:
        cells = [row[0].ljust(widths[0])] + [
            c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)
        ]
        return "  ".join(cells)

    return "\n".join([line(header), *(line(row) for row in rows)])


def fmt(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def ratio(value: float | None, reference: float | None) -> str:
    if value is None or reference is None or reference == 0:
        return "-"
    return f"{value / reference:.2f}x"


def rate(amount: float, seconds: float | None) -> float | None:
    return None if seconds is None or seconds <= 0 else amount / seconds


def speed_section(title: str, runs: Sequence[Run], amount: float, unit: str, scale: float) -> str:
    """A table of each run's phases (see :class:`Run`), its rates (``amount / scale`` a
    second, over the wall time and over the rows phase) and their ratios to the first run
    (the base engine's when there is one)."""
    reference = runs[0]

    def rates(run: Run) -> tuple[float | None, float | None]:
        if not run.finished:
            return None, None
        return rate(amount / scale, run.wall_s), rate(amount / scale, run.rows_s)

    reference_wall, reference_rows = rates(reference)
    rows = []
    for run in runs:
        wall_rate, rows_rate = rates(run)
        rows.append(
            [
                run.label,
                fmt(run.wall_s) + ("" if run.finished else "+"),
                fmt(run.setup_s),
                fmt(run.start_s),
                fmt(run.rows_s),
                fmt(run.finish_s),
                fmt(wall_rate),
                fmt(rows_rate),
                ratio(wall_rate, reference_wall),
                ratio(rows_rate, reference_rows),
                fmt(run.cpu_s),
                fmt(run.max_rss_mib, 0),
            ]
        )
    header = ["run", "wall s", "setup s", "start s", "rows s", "finish s"]
    header += [f"{unit} (wall)", f"{unit} (rows)", "wall ratio", "rows ratio", "cpu s"]
    header += ["peak RSS MiB"]
    lines = [title, table(header, rows)]
    lines += [f"  {run.label}: {run.note}" for run in runs if run.note]
    lines.append("CSV byte-identical: " + identical(runs))
    return "\n".join(lines)


def memory_section(results: dict[int, dict[str, Run]], names: Sequence[str]) -> str:
    """Peak RSS and wall time of each engine at each grid size, and the growth."""
    header = ["configurations"]
    for name in names:
        header += [f"{name} peak RSS MiB", f"{name} wall s", f"{name} cpu s", f"{name} configs/s"]
    rows = []
    for count, runs in results.items():
        row = [f"{count:,}"]
        for name in names:
            run = runs.get(name)
            if run is None:
                row += ["-", "-", "-", "-"]
                continue
            finished_rate = rate(count, run.wall_s) if run.finished else None
            row += [fmt(run.max_rss_mib, 0), fmt(run.wall_s) + ("" if run.finished else "+")]
            row += [fmt(run.cpu_s), fmt(finished_rate, 0)]
        rows.append(row)
    lines = [
        "3. Memory: peak RSS of one `spectui sweep --exact-only --workers 1` process",
        table(header, rows),
    ]
    sizes = list(results)
    for name in names:
        measured = [(n, results[n][name]) for n in sizes if name in results[n]]
        if len(measured) >= 2:
            (small, first), (large, last) = measured[0], measured[-1]
            lines.append(
                f"{name}: {small:,} -> {large:,} configurations ({large / small:.0f}x):"
                f" peak RSS {first.max_rss_mib:,.0f} -> {last.max_rss_mib:,.0f} MiB"
                f" ({last.max_rss_mib / first.max_rss_mib:.2f}x,"
                f" {last.max_rss_mib - first.max_rss_mib:+,.0f} MiB:"
                f" {(last.max_rss_mib - first.max_rss_mib) * 1024 / (large - small):.2f} KiB"
                " a configuration)"
            )
    for count, runs in results.items():
        if len(runs) >= 2:
            lines.append(f"CSV byte-identical at {count:,}: " + identical(list(runs.values())))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--base", type=Path, help="the engine before issue #15 (a worktree of d5d3a11)"
    )
    parser.add_argument("--quick", action="store_true", help="tiny sizes: seconds, no figures")
    parser.add_argument("--workers", type=int, default=2, help="processes, and Dask workers")
    parser.add_argument(
        "--timeout", type=float, default=1200.0, help="seconds a sweep may take before it is killed"
    )
    parser.add_argument("--keep", type=Path, help="keep the CSV files here (default: deleted)")
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else FULL
    workers = args.workers
    with tempfile.TemporaryDirectory(prefix="bench-sweep-scale-") as temp:
        scratch = args.keep.resolve() if args.keep else Path(temp)
        scratch.mkdir(parents=True, exist_ok=True)
        new = Engine("new", REPO, scratch, args.timeout)
        base = Engine("base", args.base.resolve(), scratch, args.timeout) if args.base else None
        engines = [e for e in (base, new) if e is not None]
        print(f"bench_sweep_scale{' --quick (figures mean nothing)' if args.quick else ''}")
        for engine in engines:
            print(f"{engine.name} engine: {engine.describe()}")
        if base is None:
            print("base engine: not given (--base DIR): base columns left out")
        print(f"usable cores: {len(os.sched_getaffinity(0))}; {_load()} at start")
        print(
            "phases: setup (interpreter, imports, planning), start (workers or cluster),"
            " rows (first to last row), finish (final file, workers stopped); wall: all"
        )
        print(
            f"{WITH_TRIM.strip()}: the workers run with Dask's default MALLOC_TRIM_THRESHOLD_=65536"
            " (distributed.nanny.pre-spawn-environ), which spectui's local:N leaves out"
        )
        print()

        def speed_runs(preset: Path, out_name: str, *flags: str, dask: bool = True) -> list[Run]:
            """Both engines on N processes, then this one on a LocalCluster of N workers (as
            spectui starts them, and with Dask's default malloc setting; unless not ``dask``)
            and in one process."""
            pool = ("--workers", str(workers))
            runs = [
                e.sweep(f"{e.name} --workers {workers}", preset, out_name, *flags, *pool)
                for e in engines
            ]
            if dask:
                dask_workers = sizes.dask_workers or workers
                cluster = ("--scheduler", f"local:{dask_workers}")
                label = f"new --scheduler local:{dask_workers}"
                runs.append(new.sweep(label, preset, out_name, *flags, *cluster))
                runs.append(
                    new.sweep(
                        label + WITH_TRIM,
                        preset,
                        out_name,
                        *flags,
                        *cluster,
                        prelude=DASK_WITH_TRIM,
                    )
                )
            runs.append(new.sweep("new --workers 1", preset, out_name, *flags, "--workers", "1"))
            return runs

        # 1. Throughput of seed-576 at many sequences a configuration.
        for number, sequences in enumerate(sizes.seed_sequences):
            seed = seed_copy(scratch / f"seed-576-{sequences}.toml", sequences)
            count, work = sweep_work(seed)
            title = (
                f"1{'abcdef'[number]}. seed-576 at {sequences:,} sequences a configuration:"
                f" {count:,} configurations, {work / 1e9:,.2f} G configurations x sequences x"
                " tokens (M/s: millions of them a second)"
            )
            runs = speed_runs(seed, "seed.csv")
            print(speed_section(title, runs, work, "M/s", 1e6))
            print()

        # 2. The regime study, exact only.
        regime = regime_copy(scratch / "regime-part.toml", sizes.regime_grid)
        count, _ = sweep_work(regime)
        part = "" if sizes.regime_grid is None else f" (part: {sizes.regime_grid})"
        title = f"2. regime study{part}, exact only: {count:,} configurations"
        title += "" if sizes.regime_dask else " (no Dask runs: --quick)"
        runs = speed_runs(regime, "regime.csv", "--exact-only", dask=sizes.regime_dask)
        print(speed_section(title, runs, count, "configs/s", 1.0))
        print()

        # 3. Memory against the number of configurations, one process.
        results: dict[int, dict[str, Run]] = {}
        for configurations in sizes.memory_configs:
            grid = memory_grid(
                scratch / f"grid-{configurations}.toml", configurations, sizes.memory_tokens
            )
            results[configurations] = {}
            for engine in engines:
                if engine is base and configurations > sizes.base_memory_max:
                    continue
                results[configurations][engine.name] = engine.sweep(
                    engine.name, grid, "grid.csv", "--exact-only", "--workers", "1"
                )
        print(memory_section(results, [e.name for e in engines]))
        print()
        print(f"{_load()} at the end")
    return 0


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f}"


if __name__ == "__main__":
    sys.exit(main())
