"""``spectui sweep``: run a preset's grid of configurations to a CSV, in this process, a pool
of worker processes or on Dask; Ctrl-C or a lost cluster keeps the rows done for --resume."""

from __future__ import annotations

import argparse
import contextlib
import logging
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

from engine.core.config import WORKERS_MAX, ConfigError
from engine.presets import load_preset
from spectui.cli.flags import DEFAULT_SWEEP_OUT, ENGINE_HELP, ENGINES, file_path
from spectui.cli.progress import delayed_progress
from spectui.errors import UsageError, bounded_int


def add_parser(sub: Any) -> None:
    sweep = sub.add_parser("sweep", help="run a preset's grid of configurations to a CSV")
    sweep.add_argument("--preset", metavar="NAME|PATH", default="seed-576")
    sweep.add_argument("--out", metavar="FILE", type=file_path, default=DEFAULT_SWEEP_OUT)
    sweep.add_argument(
        "--workers", metavar="N", type=bounded_int("--workers", WORKERS_MAX), default=1
    )
    sweep.add_argument("--engine", choices=ENGINES, default="fast", help=ENGINE_HELP)
    sweep.add_argument("--exact-only", action="store_true", help="exact values only, no sampling")
    sweep.add_argument(
        "--scheduler",
        metavar="ADDRESS|local:N",
        help="run on Dask (pip install 'spectui[dask]'): a running scheduler (tcp://HOST:8786) "
        "or a local cluster of N worker processes (local:N); the rows are the same",
    )
    sweep.add_argument(
        "--resume",
        action="store_true",
        help="continue an interrupted sweep: run only the configurations not yet in "
        "FILE.partial (or FILE); the final file equals an uninterrupted run's",
    )


def command(args: argparse.Namespace) -> int:
    from engine.core.files import sweep_lock

    if args.scheduler is not None and args.workers > 1:
        raise UsageError("--workers and --scheduler: give one (Dask workers run the sweep)")
    if args.scheduler is not None:
        from engine.sweep.cluster import parse_scheduler

        parse_scheduler(args.scheduler)  # a bad address fails before anything starts
    preset = load_preset(args.preset)
    # Before planning (minutes for millions of configurations) and before the partial file
    # is looked at: a second sweep on this --out is refused, not told to --resume.
    with sweep_lock(args.out):
        return _sweep(args, preset)


def _sweep(args: argparse.Namespace, preset: Any) -> int:
    """:func:`command` once it holds the lock of ``args.out``."""
    from engine.core.files import SweepWriter
    from engine.sweep.pool import SweepPool, batch_size_for
    from engine.sweep.sweep import plan_sweep, sampler_name, sweep_rows

    configs = preset.sweep.lazy()  # built as their batches go: 100,000 need not fit
    # Planning reads every configuration once (10 million: minutes): a bar on a terminal
    # once it takes a second; Ctrl-C here ends with "interrupted" (nothing written yet).
    advance, close = delayed_progress(preset.sweep.size_bound(), f"{preset.name}: planning")
    try:
        plan = plan_sweep(configs, args.engine, args.exact_only, on_planned=advance)
    except ConfigError as err:  # values of the grid that cannot run together (tp 3 of 32 heads)
        raise UsageError(f"{preset.path}: a configuration of its grid: {err}") from None
    finally:
        close()
    partial = args.out.with_name(args.out.name + ".partial")
    if not args.resume and _has_rows(partial):
        raise UsageError(
            f"--out: {partial} holds the rows of an interrupted sweep; add --resume to go "
            "on with it, or remove it to start again"
        )
    writer = SweepWriter(
        args.out,
        plan.columns,
        resume=configs if args.resume else None,
        # Rows of another engine, or exact-only rows, are not this sweep's.
        expect=lambda config: {"sampler": sampler_name(args.engine, args.exact_only, config)},
    )
    done_before = len(writer.done)
    if done_before:
        plan = plan.without(writer.done)
        print(
            f"resuming: {done_before} of {plan.total} configurations in {writer.resumed_from}; "
            f"running the other {plan.remaining}",
            file=sys.stderr,
        )
    stop = threading.Event()
    previous = signal.signal(signal.SIGINT, lambda *_: stop.set())
    runner: Any = None
    pool = SweepPool(0)
    from spectui.render import SweepProgressBar

    started = time.perf_counter()
    finished = done_before
    try:
        if args.scheduler is not None and plan.remaining:
            from engine.sweep.cluster import task_size

            runner = _dask_runner(args.scheduler, stop)  # None: Ctrl-C came first
            executor: Any = runner
            workers = runner.workers if runner is not None else 1
            batch = task_size(plan, args.exact_only, workers, args.engine)
        else:
            # --workers 1: this process alone; more: the engine's pool (Ctrl-C stays with
            # us), started by the platform's default method: no thread of ours runs yet.
            pool = SweepPool(min(args.workers, plan.remaining) if args.workers > 1 else 0, None)
            executor = pool.executor()
            if executor is None and pool.problem:
                print(
                    f"running in one process (no worker processes: {pool.problem})",
                    file=sys.stderr,
                )
            batch = batch_size_for(plan, pool.workers, args.exact_only) if executor else 1
        with SweepProgressBar(plan.total, f"{preset.name} → {args.out}") as progress:
            progress.advance(finished)
            for row in sweep_rows(  # stopped already (Ctrl-C while connecting): no row
                configs,
                engine=args.engine,
                exact_only=args.exact_only,
                executor=executor,
                should_stop=stop.is_set,
                batch_size=batch,
                plan=plan,
            ):
                writer.write(row)
                finished += 1
                progress.advance(finished)
    except BaseException as err:
        writer.close()  # the partial file keeps every row finished: --resume goes on
        if finished == done_before and not done_before:
            writer.partial.unlink(missing_ok=True)  # nothing done: nothing to resume
        if runner is None or not _lost_cluster(err):
            raise
        reason = str(err).strip().splitlines()[0] if str(err).strip() else ""
        print(
            f"the Dask cluster failed ({type(err).__name__}: {reason}); {finished} of "
            f"{plan.total} configurations kept in {writer.partial}: --resume goes on",
            file=sys.stderr,
        )
        return 1
    finally:
        signal.signal(signal.SIGINT, previous)
        pool.shutdown()
        if runner is not None:
            runner.close()
    writer.finish()
    elapsed = time.perf_counter() - started
    if stop.is_set() and finished < plan.total:
        print(
            f"stopped: {finished} of {plan.total} configurations finished and written to "
            f"{args.out}; --resume runs the other {plan.total - finished}",
            file=sys.stderr,
        )
        return 130
    line = f"{finished} configurations in {elapsed:.1f} s written to {args.out}"
    if done_before:
        ran = finished - done_before
        line = (
            f"{ran} configuration{'s' if ran != 1 else ''} in {elapsed:.1f} s; all {finished} "
            f"written to {args.out}"
        )
    print(line, file=sys.stderr)
    return 0


def _dask_runner(scheduler: str, stop: threading.Event) -> Any:
    """The started runner, or None if Ctrl-C came first."""
    from engine.sweep.cluster import DaskRunner, DaskUnavailable

    # Dask logs its own account of a lost connection; the CLI says it in one line. (Its
    # import sets the levels: set them after it.)
    with contextlib.suppress(ImportError):
        import distributed  # noqa: F401
    for name in ("distributed", "distributed.client", "distributed.scheduler"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    runner = DaskRunner(scheduler)
    try:
        if not runner.start(stop.is_set):
            return None
    except DaskUnavailable as err:
        raise UsageError(f"--scheduler: {err}") from None
    count = runner.workers
    where = f"{count} Dask worker{'s' if count != 1 else ''}" if count else "no Dask worker yet"
    line = f"{scheduler}: {where}"
    if runner.dashboard:
        line += f"; dashboard {runner.dashboard}"
    print(line, file=sys.stderr)
    return runner


def _has_rows(path: Path) -> bool:
    """Whether a sweep's partial file holds a row (more than its header line)."""
    from engine.core.files import open_input

    try:
        with open_input(path) as handle:  # a FIFO there is not waited on
            handle.readline()
            return bool(handle.readline())
    except OSError:
        return False


def _lost_cluster(err: BaseException) -> bool:
    """An error of the cluster (a lost scheduler, workers killed too often), not of a
    configuration."""
    kinds = {"CommClosedError", "KilledWorker", "CancelledError", "FutureCancelledError"}
    return type(err).__name__ in kinds
