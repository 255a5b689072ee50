"""``spectui load``: speculation under load, from a request rate or a concurrency.

Per level of load and policy: output throughput, TTFT and TPOT p50/p99 and goodput, each
with its 95 % interval over the replications (engine.serve.load); then the level at which
speculation stops paying (throughput and p99 TPOT apart), the best policy by level, and the
best k by batch size as vLLM, TensorRT-LLM and SGLang settings, shell-quoted. Rows print
as levels finish; Ctrl-C keeps the finished ones. ``--json`` prints everything as one JSON
object, ``--csv FILE`` writes a row per level and policy, ``--records FILE`` streams a row
per finished request.

Numbers are ASCII digits (engine.core.config.ascii_number) and a range error names its flag.
A study is bounded before it starts: its rates by the span its requests must arrive in,
its work by engine.serve.load.WORK_MAX. ``--csv`` is as safe as ``sweep --out``: the file's
lock (``FILE.lock``) refuses a second writer; each level's rows go to ``FILE.partial`` as the
level finishes (a kill -9 keeps them, ``--resume`` reads them); SIGTERM ends the run as
Ctrl-C does (the CSV written whole, no temporary file left, worker processes stopped).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from engine.core.config import ascii_number
from engine.core.fields import SHOWN_MAX, ConfigError
from spectui.cli.flags import (
    add_catalog_flags,
    add_scenario_flags,
    base_config,
    choose_acceptance,
    given_fields,
)
from spectui.errors import UsageError


def _numbers(integer: bool) -> Any:
    """An argparse type: a comma-separated list of numbers in ASCII digits
    (engine.core.config.ascii_number: '١٢', '５' and '1_0' are refused)."""

    def parse(text: str) -> tuple[Any, ...]:
        items = [t.strip() for t in text.split(",") if t.strip()]
        if not items:
            raise argparse.ArgumentTypeError("expected a comma-separated list")
        try:
            return tuple(ascii_number(item, integer=integer) for item in items)
        except ValueError:
            raise argparse.ArgumentTypeError(  # argparse names the flag first
                f"expected {'whole numbers' if integer else 'numbers'} in ASCII digits, "
                f"comma-separated; got {text[:SHOWN_MAX]!r}"
            ) from None

    return parse


def _number(integer: bool) -> Any:
    """An argparse type: one number in ASCII digits (engine.core.config.ascii_number); its
    range is the load setting's check (engine.serve.settings), which names the flag."""

    def parse(text: str) -> Any:
        try:
            return ascii_number(text, integer=integer)
        except ValueError as err:
            raise argparse.ArgumentTypeError(str(err)) from None

    return parse


def _names(text: str) -> tuple[str, ...]:
    return tuple(t.strip() for t in text.split(",") if t.strip())


# How each kind of load setting (engine.serve.settings) reads from the command line.
_TYPES: dict[str, Any] = {
    "int": _number(integer=True),
    "float": _number(integer=False),
    "text": str,
    "texts": _names,
}  # and "ints", "floats": lists, read by _numbers
_METAVARS = {"int": "N", "float": "F", "text": "NAME", "texts": "LIST", "floats": "LIST"}


def add_parser(sub: Any) -> None:
    """The ``load`` subcommand: every scenario flag and every load setting
    (engine.serve.settings, also a preset's ``[load]`` table)."""
    from engine.serve.policies import POLICIES
    from engine.serve.settings import LENGTHS, SETTINGS

    load = sub.add_parser(
        "load",
        help="speculation under load: throughput, TTFT, TPOT and goodput by request rate",
        description="Serve requests arriving at a rate (or a fixed concurrency) on a "
        "simulated server with continuous batching, a KV cache and chunked prefill, under "
        "each policy, and report throughput, TTFT and TPOT p50/p99 and goodput with their "
        "intervals; then where speculation stops paying and the best k by batch size. A "
        "preset's [load] table gives defaults; flags override it.",
    )
    load.add_argument(
        "--preset", metavar="NAME|PATH", help="start from a preset; flags override it"
    )
    add_scenario_flags(load)
    add_catalog_flags(load)
    group = load.add_argument_group("load (a preset's [load] table, or these)")
    levels = group.add_mutually_exclusive_group()
    for setting in SETTINGS:
        flag = "--" + setting.key.replace("_", "-")
        where = levels if setting.key in ("rate", "concurrency") else group
        kind = setting.kind
        parse = _numbers(kind == "ints") if kind in ("floats", "ints") else _TYPES[kind]
        default = setting.default
        if isinstance(default, tuple):
            default = ",".join(f"{v:g}" if isinstance(v, float) else str(v) for v in default)
        shown = "" if default is None or default == math.inf else f" (default: {default})"
        extra = ""
        if setting.key == "lengths":
            extra = ": fixed (--prompt-len, --tokens-per-seq), uniform (half to 1.5 times them) "
            extra += "or azure-conv (lognormal fit to the Azure LLM inference trace 2023)"
            where.add_argument(
                flag,
                dest=f"load.{setting.key}",
                choices=LENGTHS,
                default=None,
                help=setting.help + extra + shown,
            )
            continue
        if setting.key == "policies":
            extra = f" ({', '.join(POLICIES)})"
        where.add_argument(
            flag,
            dest=f"load.{setting.key}",
            type=parse,
            metavar="FILE" if setting.key == "trace" else _METAVARS.get(kind, "LIST"),
            default=None,
            help=setting.help + extra + shown,
        )
    where = load.add_argument_group("where the runs go")
    where.add_argument(
        "--workers",
        type=_number(integer=True),  # its range: engine.sweep.pool.check_workers
        default=1,
        metavar="N",
        help="worker processes, each running a level and policy at a time (0 or 1: none; "
        "results do not depend on N)",
    )
    where.add_argument(
        "--scheduler", metavar="ADDR", help="run on a Dask cluster: tcp://HOST:PORT or local:N"
    )
    out = load.add_argument_group("output")
    out.add_argument("--json", action="store_true", help="print the results as one JSON object")
    out.add_argument(
        "--resume",
        action="store_true",
        help="with --csv: keep the levels and policies the file holds, run the rest",
    )
    out.add_argument(
        "--csv",
        metavar="FILE",
        type=Path,
        help="a row per level and policy (each level's rows in FILE.partial as it finishes; "
        "FILE.lock refuses a second writer)",
    )
    out.add_argument("--records", metavar="FILE", type=Path, help="a row per finished request")


def plan_of(args: argparse.Namespace) -> tuple[Any, Any, Any]:
    """(scenario, cost model, plan) from the preset and the flags (the acceptance chosen by
    :func:`spectui.cli.flags.choose_acceptance`: ``--method``'s catalog rows, unless an
    acceptance flag is given); ConfigError names a bad value."""
    from engine.cost.models import build_cost
    from engine.serve.server import kv_capacity
    from engine.serve.settings import plan_of as settings_plan

    base = base_config(args)
    acceptance = choose_acceptance(args, base)
    args.acceptance_choice = acceptance  # printed with the results
    config = base.replace(**{**given_fields(args), **acceptance.changes})
    settings = _settings(args)
    if not any(key in settings for key in LEVELS):
        raise UsageError(
            "give --rate LIST, --concurrency LIST or --trace FILE (or a preset with [load])"
        )
    plan = flagged(settings_plan, args)(settings, config)
    cost = build_cost(config)
    kv_capacity(cost, plan.server, config)  # weights that do not fit: refused before any run
    return config, cost, plan


def _cell_text(cell: Any, figure: str, fmt: str) -> str:
    value, half = cell.mean(figure), cell.half_width(figure)
    if not math.isfinite(value):
        return "-"
    text = fmt.format(value)
    return (
        f"{text} ±{fmt.format(half)}"
        if math.isfinite(half) and figure == "throughput_tok_s"
        else text
    )


def _row_line(cell: Any) -> str:
    from engine.serve.load import COLUMNS

    level = f"{cell.level:g}"
    cells = [f"{level:>6} {cell.policy:<9}"]
    cells += [
        f"{_cell_text(cell, f, fmt):>{12 if i == 0 else 9}}"
        for i, (f, _, fmt) in enumerate(COLUMNS)
    ]
    return " ".join(cells)


def _header(plan: Any) -> str:
    from engine.serve.load import COLUMNS

    unit = {"speed": "speed", "concurrency": "conc", "rate": "req/s"}[plan.unit]
    names = [f"{unit:>6} {'policy':<9}", f"{'tok/s':>12}"]
    names += [f"{name:>9}" for _, name, _ in COLUMNS[1:]]
    return " ".join(names)


_PAIRED = ("throughput_tok_s", "tpot_p99_ms")  # the figures paired against off in the CSV


def _columns(keys: list[str]) -> list[str]:
    """The columns of a load CSV whose scenarios' grid keys are ``keys``, in the order
    :func:`_csv_rows` writes them."""
    from engine.serve.load import FIGURES

    columns = [*keys, "level", "policy"]
    for figure in FIGURES:
        columns += [figure, f"{figure}_ci95"]
    for figure in _PAIRED:
        columns += [f"{figure}_vs_off", f"{figure}_vs_off_ci95"]
    return columns


def _csv_rows(result: Any, scenario: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    from engine.core.writes import csv_cell
    from engine.serve.load import FIGURES

    rows = []
    order = {(lv, p): i for i, (lv, p) in enumerate(
        (lv, p) for lv in result.plan.levels for p in result.plan.policies
    )}  # fmt: skip
    for (level, policy), cell in sorted(result.cells.items(), key=lambda kv: order[kv[0]]):
        row: dict[str, Any] = {k: csv_cell(v) for k, v in (scenario or {}).items()}
        row.update({"level": csv_cell(float(level)), "policy": policy})
        for figure in FIGURES:
            row[figure] = csv_cell(cell.mean(figure))
            row[f"{figure}_ci95"] = csv_cell(cell.half_width(figure))
        for figure in _PAIRED:
            diff, half = result.paired(level, policy, figure)
            row[f"{figure}_vs_off"] = csv_cell(diff)
            row[f"{figure}_vs_off_ci95"] = csv_cell(half)
        rows.append(row)
    return rows


def _write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    """The rows (in order) as a CSV file, written whole."""
    from engine.core.writes import atomic_open

    if not rows:
        return
    with atomic_open(path) as handle:
        out = csv.DictWriter(handle, fieldnames=list(rows[0]))
        out.writeheader()
        out.writerows(rows)


def _partial_of(path: Path) -> Path:
    """Where a load's finished levels stream while it runs (as a sweep's ``.partial``)."""
    return path.with_name(path.name + ".partial")


class _Streamed:
    """A load CSV as it is written: ``<csv>.partial`` holds the kept rows, then each level's
    rows as the level finishes, flushed (a process killed, even with SIGKILL, keeps them:
    ``--resume`` reads that file first); :meth:`finish` writes the CSV whole and removes
    the partial file."""

    def __init__(self, path: Path, columns: list[str], kept: list[dict[str, str]]) -> None:
        from engine.core.writes import atomic_open, writable_target

        self.path = writable_target(path)
        self.partial = writable_target(_partial_of(self.path))
        with atomic_open(self.partial) as handle:  # the kept rows, whole or not at all
            writer = csv.DictWriter(handle, fieldnames=columns)
            writer.writeheader()
            writer.writerows(kept)
        self._handle = self.partial.open("a", encoding="utf-8", newline="")
        self._writer = csv.DictWriter(self._handle, fieldnames=columns)

    def add(self, rows: list[dict[str, Any]]) -> None:
        self._writer.writerows(rows)
        self._handle.flush()

    def finish(self, rows: list[dict[str, Any]]) -> None:
        """``rows`` (every scenario's, in order) to the CSV, atomically; no partial file."""
        self._handle.close()
        _write_csv(self.path, rows)
        self.partial.unlink(missing_ok=True)


LOAD_CSV_MAX_BYTES = 64 << 20  # an earlier run's CSV: 64 rows a scenario, far below this


def _kept_rows(path: Path | None, resume: bool, columns: list[str]) -> list[dict[str, str]]:
    """The rows of an earlier run's CSV to keep (``--resume``): its partial file if a run
    was stopped before it wrote the CSV, else the CSV; read bounded, as text, and checked
    (this run's columns, a number in ``level``). A later row of the same scenario, level
    and policy replaces an earlier one (a level run again). Without ``--resume``, a partial
    file that holds rows is refused, not overwritten."""
    if path is None:
        return []
    from spectui.cli.sweep import _has_rows  # a sweep's partial file is looked at so too

    partial = _partial_of(path)
    if not resume:
        if _has_rows(partial):
            raise UsageError(
                f"--csv: {partial} holds the levels of an interrupted load; add --resume to "
                "go on with it, or remove it to start again"
            )
        return []
    source = partial if partial.exists() else path
    if not source.exists():
        return []
    from engine.core.inputs import read_input_text

    try:
        text = read_input_text(source, LOAD_CSV_MAX_BYTES, "load CSV")
    except UnicodeDecodeError:
        raise UsageError(f"--resume: {source} is not a text file (UTF-8 expected)") from None
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines.pop()  # cut short by a kill: that level runs again
    try:
        header = next(csv.reader(lines[:1]), None)
    except csv.Error:
        header = []
    if header is None:
        return []
    if not {"level", "policy"} <= set(header):
        raise UsageError(f"--resume: {source} is not a spectui load CSV (no level, policy)")
    if header != columns:
        raise UsageError(
            f"--resume: {source} has other columns than this run; use a new --csv, or drop "
            "--resume to start again"
        )
    rows: dict[tuple[str, ...], dict[str, str]] = {}
    for number, line in enumerate(lines[1:], start=2):  # a row is a line: no cell holds one
        try:
            cells = next(csv.reader([line]))
            if len(cells) != len(columns):
                raise ValueError
            ascii_number(cells[columns.index("level")])
        except (ValueError, csv.Error, StopIteration):
            raise UsageError(
                f"--resume: {source} line {number} is not a row of a spectui load CSV"
            ) from None
        rows[tuple(cells[: columns.index("policy") + 1])] = dict(zip(columns, cells, strict=True))
    return list(rows.values())


def _finite(value: Any) -> Any:
    """``value`` with every non-finite number as None (JSON has no NaN)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def _summary_lines(config: Any, cost: Any, result: Any) -> list[str]:
    from engine.serve.schedule import (
        best_k_by_batch,
        best_k_by_batch_and_context,
        sglang_flags,
        trtllm_yaml,
        vllm_flag,
    )

    plan = result.plan
    unit = plan.unit
    lines = [f"speculation {words}" for words in result.verdicts()]
    if "off" in plan.policies and len(plan.policies) > 1:
        lines.append("throughput over speculation off, paired on the same requests (95 %):")
        for level in result.levels_done():
            gains = []
            off = result.cells[(level, "off")].mean("throughput_tok_s")
            for policy in plan.policies:
                if policy == "off":
                    continue
                diff, half = result.paired(level, policy, "throughput_tok_s")
                if math.isfinite(diff) and off > 0:
                    spread = f" ±{100 * half / off:.1f}" if math.isfinite(half) else ""
                    gains.append(f"{policy} {100 * diff / off:+.1f} %{spread}")
            lines.append(f"  {unit} {level:g}: " + ", ".join(gains))
    best = [f"{level:g}: {result.best_policy(level)}" for level in result.levels_done()]
    lines.append("best policy by level: " + ", ".join(best))
    from engine.core.parts import PROPOSER

    proposer = PROPOSER.of(config)
    if proposer.model_free:  # the schedules below price a draft model's passes
        lines.append(
            f"best k by batch size: not given for proposer {proposer.name} (the schedules "
            "price a draft model's passes; a look-up's k is only a cap)"
        )
        return lines
    context = float(config.prompt_len) + config.tokens_per_seq / 2
    k_max = max(int(config.k), int(config.k_max))
    ranges = best_k_by_batch(config, cost, plan.server.max_num_seqs, context, k_max)
    text = ", ".join(f"{lo}-{hi}: {k}" if lo != hi else f"{lo}: {k}" for lo, hi, k in ranges)
    lines.append(f"best k by batch size (cost model, context {context:g}): {text}")
    lines.append(f"vLLM: {vllm_flag(ranges)}")
    longest = plan.workload.longest_context()
    by_context = best_k_by_batch_and_context(config, cost, plan.server.max_num_seqs, longest, k_max)
    lines.append(
        f"vLLM by batch size and context (to {longest:,} tokens; the form proposed in "
        f"vllm-project/vllm PR 48944): {vllm_flag(by_context)}"
    )
    lines.append("TensorRT-LLM (extra_llm_api_options):")
    lines.extend(f"  {line}" for line in trtllm_yaml(ranges).splitlines())
    lines.append(f"SGLang (batch 1): {sglang_flags(ranges[0][2])}")
    return lines


def _scenarios(args: argparse.Namespace, config: Any) -> list[tuple[dict[str, Any], Any]]:
    """The scenarios to serve: the preset's [[grid]] (each with its grid values, the CSV's
    first columns), else the one scenario."""
    if not args.preset:
        return [({}, config)]
    from engine.presets import load_preset

    preset = load_preset(args.preset)
    if not preset.sweep.grids:
        return [({}, config)]
    from engine.sweep.grid import SweepSpec

    given = given_fields(args)
    changes = _acceptance(args).changes
    keys = [k for grid in preset.sweep.grids for k in grid if k not in given]
    keys = list(dict.fromkeys(keys))
    base = preset.config.replace(**given)
    configs = SweepSpec(base, preset.sweep.grids).configs()
    return [({k: c.get(k) for k in keys}, c.replace(**given, **changes)) for c in configs]


def _acceptance(args: argparse.Namespace) -> Any:
    """The acceptance :func:`plan_of` chose (none chosen: no changes, nothing to say)."""
    from spectui.cli.flags import AcceptanceChoice

    return getattr(args, "acceptance_choice", None) or AcceptanceChoice()


def _runner(args: argparse.Namespace) -> tuple[Any, Any]:
    """(submit, close) for the runs: None in this process, a process pool's or a Dask
    client's ``submit``."""
    if args.scheduler:
        from engine.sweep.cluster import DaskRunner, DaskUnavailable

        runner = DaskRunner(args.scheduler)
        try:
            runner.start()
        except DaskUnavailable as err:
            raise UsageError(f"--scheduler: {err}") from None
        return runner.client.submit, runner.close
    from engine.sweep.pool import SweepPool, check_workers

    try:
        check_workers(args.workers, "--workers")
    except ValueError as err:
        raise UsageError(str(err)) from None
    if args.workers <= 1:  # 0 or 1: no processes, as for sweeps
        return None, lambda: None
    pool = SweepPool(args.workers, start_method=None)
    executor = pool.executor()
    if executor is None:
        raise UsageError(f"--workers: cannot start worker processes: {pool.problem}")
    return executor.submit, pool.shutdown


def command(args: argparse.Namespace) -> int:
    from engine.serve.settings import plan_of as settings_plan

    config, cost, plan = plan_of(args)
    scenarios = _scenarios(args, config)
    settings = _settings(args)  # each scenario's plan: the same settings, its own fields
    plans = [
        plan if not values else flagged(settings_plan, args)(settings, scenario)
        for values, scenario in scenarios
    ]
    if args.resume and args.csv is None:
        raise UsageError("--resume: needs --csv FILE (the file to resume)")
    if args.records is not None and (args.workers != 1 or args.scheduler):
        raise UsageError("--records: streams from one process; leave out --workers/--scheduler")
    with _csv_lock(args.csv), _sigterm_as_exit():
        return _serve(args, config, cost, scenarios, plans)


def _serve(
    args: argparse.Namespace,
    config: Any,
    cost: Any,
    scenarios: list[tuple[dict[str, Any], Any]],
    plans: list[Any],
) -> int:
    """:func:`command` once it holds the lock of ``--csv``."""
    from engine.cost.models import build_cost
    from engine.serve.load import LoadResult, check_work, run_load
    from spectui.cli.progress import delayed_progress

    columns = _columns(list(scenarios[0][0]))
    kept = _kept_rows(args.csv, args.resume, columns)
    keys = [{k: str(v) for k, v in values.items()} for values, _ in scenarios]
    todos = []
    for key, scenario_plan in zip(keys, plans, strict=True):
        done_here = {(float(r["level"]), r["policy"]) for r in kept if _matches(r, key)}
        todos.append(remaining_levels(scenario_plan, done_here))
    # Refused before anything runs: the estimate over every scenario's levels still to run.
    flagged(check_work, args)(sum(todo.work() for todo in todos if todo is not None))
    total = sum(
        len(t.levels) * len(t.policies) * t.replications * t.workload.requests
        for t in todos
        if t is not None
    )
    advance, close = delayed_progress(total, "load: requests")
    done_before = [0]

    def check(done: int) -> None:
        advance(done_before[0] + done)

    records = None
    on_finish = None
    if args.records is not None:
        from engine.serve.records import records_writer
        from engine.simulate.cycles_file import PARQUET_INSTALL, is_parquet, parquet_available

        if is_parquet(args.records) and not parquet_available():
            raise UsageError(f"--records: writing Parquet needs pyarrow: {PARQUET_INSTALL}")
        records = records_writer(args.records)
        on_finish = records.__enter__()
    results = [LoadResult(scenario_plan) for scenario_plan in plans]
    streamed = _Streamed(args.csv, columns, kept) if args.csv else None

    def all_rows() -> list[dict[str, Any]]:
        """Every scenario's rows, in order: this run's, else the kept ones."""
        rows: list[dict[str, Any]] = []
        for (values, _), key, result in zip(scenarios, keys, results, strict=True):
            rows.extend(_merged(result, values, kept, key))
        return rows

    try:
        submit, close_runner = _runner(args)
    except BaseException:
        close()
        if streamed is not None:
            streamed.finish(all_rows())
        raise
    said = _acceptance(args)
    if said.line() is not None and not said.default and not args.json:  # before the results
        print(said.line())
    try:
        for (values, scenario), todo, finished in zip(scenarios, todos, results, strict=True):
            if values and not args.json:
                print("scenario: " + ", ".join(f"{k} {v}" for k, v in values.items()))
            printed: list[str] = []

            def on_cell(
                cell: Any,
                finished: Any = finished,
                printed: list[str] = printed,
                values: dict[str, Any] = values,
            ) -> None:
                finished.cells[(cell.level, cell.policy)] = cell
                plan = finished.plan
                done_before[0] += plan.replications * plan.workload.requests
                if not args.json:
                    if not printed:
                        printed.append(_header(plan))
                        print(printed[-1])
                    print(_row_line(cell), flush=True)
                if streamed is not None and all(
                    (cell.level, p) in finished.cells for p in plan.policies
                ):  # the level is done: its rows go to the file now
                    level = _csv_level(cell.level)
                    streamed.add([r for r in _csv_rows(finished, values) if r["level"] == level])

            scenario_cost = cost if not values else build_cost(scenario)
            if todo is not None:
                run_load(
                    scenario,
                    scenario_cost,
                    todo,
                    on_cell=on_cell,
                    check=check,
                    on_finish=on_finish,
                    submit=submit,
                )
    except BaseException:
        close()
        close_runner()
        if records is not None:  # a cancelled run leaves no records file
            records.__exit__(*sys.exc_info())
        if streamed is not None:  # the finished cells are kept
            streamed.finish(all_rows())
        raise
    close()
    close_runner()
    if records is not None:
        records.__exit__(None, None, None)
    rows = all_rows()
    if streamed is not None:
        streamed.finish(rows)
    lines: list[str] = []
    for (_, scenario), result in zip(scenarios, results, strict=True):
        if result.levels_done():
            scenario_cost = cost if scenario is config else build_cost(scenario)
            lines += _summary_lines(scenario, scenario_cost, result)
    if kept:
        lines.append(f"kept {len(kept)} rows of {args.csv}; ran the rest")
    acceptance = _acceptance(args)
    if args.json:
        payload = {
            "config": config.to_dict(),
            "cells": rows,
            "summary": lines,
            "acceptance": acceptance.json(),
        }
        print(json.dumps(_finite(payload)))
        return 0
    for line in lines:
        print(line)
    if acceptance.default and acceptance.line() is not None:  # the default: said after them
        print(acceptance.line())
    return 0


def flagged(function: Any, args: argparse.Namespace) -> Any:
    """``function`` whose ConfigError on a load setting given as a flag names the flag
    ("--slo-tpot-ms: must be ..."; a preset's [load] value keeps its key)."""
    given = {key.split(".", 1)[1] for key, value in vars(args).items()
             if key.startswith("load.") and value is not None}  # fmt: skip

    def call(*arguments: Any) -> Any:
        try:
            return function(*arguments)
        except ConfigError as err:
            field = err.field
            if field == "levels":  # how many levels: the flag that gave them
                field = next((k for k in ("rate", "concurrency", "speeds") if k in given), field)
            if field not in given:
                raise
            raise ConfigError("--" + field.replace("_", "-"), err.message) from None

    return call


def _csv_level(level: float) -> str:
    from engine.core.writes import csv_cell

    return csv_cell(float(level))


def _matches(row: dict[str, str], key: dict[str, str]) -> bool:
    """Whether a CSV row is of the scenario whose grid values are ``key``."""
    return all(row.get(k) == v for k, v in key.items())


@contextmanager
def _csv_lock(path: Path | None) -> Iterator[None]:
    """Hold ``<csv>.lock`` for the block (engine.core.files.sweep_lock, as ``sweep --out``
    does): a second load writing the same file is refused in one line naming the lock."""
    if path is None:
        yield
        return
    from engine.core.files import sweep_lock

    try:
        lock = sweep_lock(path, field="--csv")
        lock.__enter__()
    except ConfigError:
        raise ConfigError(
            "--csv",
            f"{path} is being written by another spectui load (it holds "
            f"{path.with_name(path.name + '.lock')}); wait for it to end, or use another --csv",
        ) from None
    try:
        yield
    except BaseException:
        lock.__exit__(*sys.exc_info())
        raise
    lock.__exit__(None, None, None)


@contextmanager
def _sigterm_as_exit() -> Iterator[None]:
    """SIGTERM ends the command as Ctrl-C does: the finished levels are written, no
    temporary file is left and the worker processes are stopped (its default action ends
    the process at once, mid-write). A second SIGTERM ends it at once."""
    import os
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    ours = os.getpid()

    def on_term(signum: int, frame: Any) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        if os.getpid() != ours:  # a worker forked meanwhile: SIGTERM ends it, as by default
            os.kill(os.getpid(), signal.SIGTERM)
            return
        print("terminated", file=sys.stderr)
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


LEVELS = ("rate", "concurrency", "trace")  # the settings that give the levels of load


def _settings(args: argparse.Namespace) -> dict[str, Any]:
    """The load settings: the preset's ``[load]`` table, then the flags given (a level
    flag replaces the preset's levels, whichever kind they are)."""
    from engine.presets import load_preset

    settings = dict(load_preset(args.preset).load) if args.preset else {}
    given = {
        key.split(".", 1)[1]: value
        for key, value in vars(args).items()
        if key.startswith("load.") and value is not None
    }
    if any(key in given for key in LEVELS):
        for key in LEVELS:
            settings.pop(key, None)
    settings.update(given)
    return settings


def remaining_levels(plan: Any, done: set[tuple[float, str]]) -> Any:
    """``plan`` without the (level, policy) cells already ``done`` (whole levels whose
    policies are all done are left out; a level with some left runs them all, so that its
    paired figures compare runs of this session); None if nothing is left."""
    from dataclasses import replace

    levels = tuple(lv for lv in plan.levels if any((lv, p) not in done for p in plan.policies))
    return replace(plan, levels=levels) if levels else None


def _merged(
    finished: Any, values: dict[str, Any], kept: list[dict[str, str]], key: dict[str, str]
) -> list[dict[str, Any]]:
    """A scenario's CSV rows in the plan's order: this run's, else the kept file's."""
    new = {(r["level"], r["policy"]): r for r in _csv_rows(finished, values)}
    old = {(r["level"], r["policy"]): r for r in kept if all(r.get(k) == v for k, v in key.items())}
    from engine.core.writes import csv_cell

    out = []
    for level in finished.plan.levels:
        for policy in finished.plan.policies:
            cell = (csv_cell(float(level)), policy)
            row = new.get(cell) or old.get(cell)
            if row is not None:
                out.append(row)
    return out
