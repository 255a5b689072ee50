"""The headless subcommands. Each takes the parsed arguments and returns an exit status."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import math
import secrets
import shlex
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

from engine.config import FIELD_SPECS, SpecConfig
from engine.presets import load_preset
from spectui.arena_command import cmd_arena  # noqa: F401 (main() finds commands here)
from spectui.calibrate_command import cmd_calibrate  # noqa: F401
from spectui.errors import UsageError
from spectui.regime_command import cmd_regime  # noqa: F401
from spectui.tree_command import cmd_tree  # noqa: F401


def _config_from_args(args: argparse.Namespace) -> SpecConfig:
    """The preset's configuration (or the defaults), overridden by the flags given."""
    base = load_preset(args.preset).config if args.preset else SpecConfig()
    changes = {f: getattr(args, f) for f in FIELD_SPECS if getattr(args, f, None) is not None}
    return base.replace(**changes)


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


RUN_PROGRESS_AFTER_S = 1.0  # a run shorter than this shows no progress bar
RUN_PROGRESS_BY_TOKENS = 100  # a run of fewer sequences counts its tokens


def delayed_progress(total: int, description: str) -> tuple[Any, Any]:
    """A bar on a terminal's stderr that shows once the work has taken
    :data:`RUN_PROGRESS_AFTER_S`: a function of the count done, and one that closes it
    (call it in a ``finally``: a bar left open would swallow the "interrupted" line)."""
    started = time.perf_counter()
    bar: list[Any] = []

    def advance(done: int) -> None:
        if not bar:
            if not sys.stderr.isatty() or time.perf_counter() - started < RUN_PROGRESS_AFTER_S:
                return
            from spectui.render import SweepProgressBar

            bar.append(SweepProgressBar(total, description))
            bar[0].__enter__()
        bar[0].advance(done)

    def close() -> None:
        if bar:
            bar[0].__exit__(None, None, None)

    return advance, close


def _run_progress(config: SpecConfig) -> tuple[Any, Any]:
    """For a fast-engine run: an ``on_progress`` that shows a bar on a terminal once the run
    has taken :data:`RUN_PROGRESS_AFTER_S`, and a function that closes it."""
    # Few long sequences (one of 10^6 tokens through a deep tree: a minute) count tokens.
    by_tokens = config.n_sequences < RUN_PROGRESS_BY_TOKENS
    total = config.n_sequences * config.tokens_per_seq if by_tokens else config.n_sequences
    advance, close = delayed_progress(total, "run: tokens" if by_tokens else "run: sequences")

    def on_progress(sequences: int, tokens: int) -> None:
        # Whole sequences' worth of tokens, or the tokens themselves.
        advance(tokens if by_tokens else tokens // config.tokens_per_seq)

    return on_progress, close


# Summary columns newer than some summary files: rows appended to those go on without them.
SUMMARY_OPTIONAL = ("sampler",)


def cmd_run(args: argparse.Namespace) -> int:
    from engine.cycles_file import PARQUET_INSTALL, cycles_writer, is_parquet, parquet_available
    from engine.files import append_csv_row, check_appendable
    from engine.kernel import METRIC_NAMES
    from engine.reference import simulate_reference
    from engine.simulator import simulate
    from engine.sweep import sampler_name

    config = _config_from_args(args)
    sampler = sampler_name(args.engine, config=config)
    # Before the run, so that a run's work is never thrown away on a bad output file.
    if args.cycles_out is not None and is_parquet(args.cycles_out) and not parquet_available():
        raise UsageError(f"--cycles-out: writing Parquet needs pyarrow: {PARQUET_INSTALL}")
    if args.summary_out is not None:
        names = [*config.to_dict(), *METRIC_NAMES, "sampler"]
        check_appendable(args.summary_out, names, SUMMARY_OPTIONAL, "--summary-out")
    progress, close_progress = _run_progress(config)
    try:
        if args.engine == "reference":
            result = simulate_reference(config, records=args.cycles_out is not None)
            if args.cycles_out is not None:
                assert result.cycles is not None
                with cycles_writer(args.cycles_out, config) as write:
                    write(result.cycles)
        elif args.cycles_out is not None:
            with cycles_writer(args.cycles_out, config) as write:
                result = simulate(config, on_cycles=write, on_progress=progress)
        else:
            result = simulate(config, on_progress=progress)
    finally:
        close_progress()  # also on Ctrl-C: main() then prints one line, exits with 130

    if args.summary_out is not None:
        row = {**result.to_dict(), "sampler": sampler}
        append_csv_row(args.summary_out, row, SUMMARY_OPTIONAL, "--summary-out")
    if args.json:
        payload = {
            "config": config.to_dict(),
            "engine": args.engine,
            "sampler": sampler,
            "metrics": {k: _json_safe(v) for k, v in result.metrics.items()},
            "cost": _cost_figures(config),
        }
        print(json.dumps(payload))
    else:
        from spectui.render import console, run_summary

        console().print(run_summary(result))
    return 0


def _cost_figures(config: SpecConfig) -> dict[str, Any]:
    """The cycle's times at the prompt's context (a full cycle of K drafts, or the whole
    tree with its ``tree_nodes`` and ``tree_depth``), microseconds."""
    from engine.tree_scenario import full_cycle

    costs, tree = full_cycle(config)
    figures: dict[str, Any] = {
        "draft_us": costs.limit_draft_us,
        "verify_us": costs.limit_verify_us,
        "cycle_us": costs.limit_cycle_us,
        "decode_step_us": costs.limit_step_us,
        "verify_bound": None if costs.bound == "-" else costs.bound,
        "warnings": list(costs.warnings),
    }
    if tree is not None:
        figures.update(tree_nodes=tree.nodes, tree_depth=tree.depth)
    return figures


def cmd_sweep(args: argparse.Namespace) -> int:
    from engine.files import sweep_lock

    if args.scheduler is not None and args.workers > 1:
        raise UsageError("--workers and --scheduler: give one (Dask workers run the sweep)")
    if args.scheduler is not None:
        from engine.cluster import parse_scheduler

        parse_scheduler(args.scheduler)  # a bad address fails before anything starts
    preset = load_preset(args.preset)
    # Before planning (minutes for millions of configurations) and before the partial file
    # is looked at: a second sweep on this --out is refused, not told to --resume.
    with sweep_lock(args.out):
        return _sweep(args, preset)


def _sweep(args: argparse.Namespace, preset: Any) -> int:
    """:func:`cmd_sweep` once it holds the lock of ``args.out``."""
    from engine.files import SweepWriter
    from engine.pool import SweepPool, batch_size_for
    from engine.sweep import plan_sweep, sampler_name, sweep_rows

    configs = preset.sweep.lazy()  # built as their batches go: 100,000 need not fit
    # Planning reads every configuration once (10 million: minutes): a bar on a terminal
    # once it takes a second; Ctrl-C here ends with "interrupted" (nothing written yet).
    advance, close = delayed_progress(preset.sweep.size_bound(), f"{preset.name}: planning")
    try:
        plan = plan_sweep(configs, args.engine, args.exact_only, on_planned=advance)
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
            from engine.cluster import task_size

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
    from engine.cluster import DaskRunner, DaskUnavailable

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
    from engine.files import open_input

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


def cmd_analyze(args: argparse.Namespace) -> int:
    from engine.analysis import read_sweep_csv
    from engine.report import findings_markdown
    from spectui.render import analysis_renderables, console

    frame = read_sweep_csv(args.file)
    out = console()
    for renderable in analysis_renderables(frame):
        out.print(renderable)
    if args.markdown is not None:
        from engine.files import atomic_write_text

        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(args.markdown, findings_markdown(frame, source=str(args.file)))
        print(f"report written to {args.markdown}", file=sys.stderr)
    return 0


def cmd_plot(args: argparse.Namespace) -> int:
    if args.out is None and not args.terminal:
        raise UsageError("give --out DIR (PNG files), --terminal, or both")
    from spectui.plotting import plot_command

    written = plot_command(args.file, args.out, args.terminal)
    for path in written:
        print(f"wrote {path}", file=sys.stderr)
    return 0


def cmd_presets(args: argparse.Namespace) -> int:
    from engine.presets import list_presets
    from spectui.render import console, presets_table

    console().print(presets_table(list_presets()))
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    try:
        import textual_serve.server  # noqa: F401
    except ImportError:
        raise UsageError("textual-serve is not installed: pip install 'spectui[serve]'") from None
    from spectui.served import is_loopback, serve

    where = "every interface" if args.host in ("", "0.0.0.0", "::") else repr(args.host)
    remote = not is_loopback(args.host)
    if remote and not args.allow_remote:
        raise UsageError(
            f"--host {args.host!r} serves the app, and through it this machine's files, to "
            "other machines: add --allow-remote to mean it (or leave --host out: loopback)"
        )
    command = [sys.executable, "-m", "spectui"]
    if args.preset:
        load_preset(args.preset)  # fail here, with one line, rather than in the browser
        command += ["--preset", str(Path(args.preset))]
    if remote:
        print(
            f"spectui serve: warning: listening on {where}, port {args.port}: anyone who "
            "reaches it with the URL below uses the app and this machine's files as you",
            file=sys.stderr,
        )
    from spectui import confined

    # What a browser's app may open: its own folders, the working directory, --files; set
    # for the app's shell command only (this process's environment stays as it was).
    folders = f"{confined.ENV}={shlex.quote(confined.environment(args.files or ()))}"
    token = secrets.token_urlsafe(32)
    line = f"{folders} {shlex.join(command)}"
    serve(line, host=args.host, port=args.port, title="spectui", token=token)
    return 0
