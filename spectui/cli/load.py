"""``spectui load``: speculation under load, from a request rate or a concurrency.

Per level of load and policy: output throughput, TTFT and TPOT p50/p99 and goodput, each
with its 95 % interval over the replications (engine.serve.load); then the level at which
speculation stops paying (throughput and p99 TPOT apart), the best policy by level, and the
best k by batch size as vLLM, TensorRT-LLM and SGLang settings, shell-quoted. Rows print
as levels finish; Ctrl-C keeps the finished ones. ``--json`` prints everything as one JSON
object, ``--csv FILE`` writes a row per level and policy, ``--records FILE`` streams a row
per finished request.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import sys
from pathlib import Path
from typing import Any

from spectui.cli.flags import add_scenario_flags, base_config, given_fields
from spectui.errors import UsageError


def _numbers(kind: type, name: str) -> Any:
    def parse(text: str) -> tuple[Any, ...]:
        items = [t.strip() for t in text.split(",") if t.strip()]
        if not items:
            raise argparse.ArgumentTypeError(f"{name}: expected a comma-separated list")
        try:
            return tuple(kind(item) for item in items)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{name}: expected {'whole numbers' if kind is int else 'numbers'}, got {text!r}"
            ) from None

    return parse


def _names(text: str) -> tuple[str, ...]:
    return tuple(t.strip() for t in text.split(",") if t.strip())


# How each kind of load setting (engine.serve.settings) reads from the command line.
_TYPES: dict[str, Any] = {
    "int": int,
    "float": float,
    "text": str,
    "texts": _names,
}
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
    group = load.add_argument_group("load (a preset's [load] table, or these)")
    levels = group.add_mutually_exclusive_group()
    for setting in SETTINGS:
        flag = "--" + setting.key.replace("_", "-")
        where = levels if setting.key in ("rate", "concurrency") else group
        kind = setting.kind
        parse = (
            _numbers(float if kind == "floats" else int, flag)
            if kind in ("floats", "ints")
            else _TYPES[kind]
        )
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
            metavar=_METAVARS.get(kind, "LIST"),
            default=None,
            help=setting.help + extra + shown,
        )
    out = load.add_argument_group("output")
    out.add_argument("--json", action="store_true", help="print the results as one JSON object")
    out.add_argument("--csv", metavar="FILE", type=Path, help="a row per level and policy")
    out.add_argument("--records", metavar="FILE", type=Path, help="a row per finished request")


def plan_of(args: argparse.Namespace) -> tuple[Any, Any, Any]:
    """(scenario, cost model, plan) from the preset and the flags; ConfigError names a bad
    value."""
    from engine.cost.models import build_cost
    from engine.presets import load_preset
    from engine.serve.server import kv_capacity
    from engine.serve.settings import plan_of as settings_plan

    preset = load_preset(args.preset) if args.preset else None
    config = base_config(args).replace(**given_fields(args))
    settings = dict(preset.load) if preset is not None else {}
    given = {
        key.split(".", 1)[1]: value
        for key, value in vars(args).items()
        if key.startswith("load.") and value is not None
    }
    levels = ("rate", "concurrency", "trace")
    if any(key in given for key in levels):  # a level flag replaces the preset's
        for key in levels:
            settings.pop(key, None)
    settings.update(given)
    if not any(key in settings for key in levels):
        raise UsageError(
            "give --rate LIST, --concurrency LIST or --trace FILE (or a preset with [load])"
        )
    plan = settings_plan(settings, config)
    cost = build_cost(config)
    kv_capacity(cost, plan.server)  # weights that do not fit: refused before any run
    return config, cost, plan


COLUMNS = (
    ("throughput_tok_s", "tok/s", "{:.0f}"),
    ("ttft_p50_ms", "TTFT p50", "{:.1f}"),
    ("ttft_p99_ms", "p99", "{:.1f}"),
    ("tpot_p50_ms", "TPOT p50", "{:.2f}"),
    ("tpot_p99_ms", "p99", "{:.2f}"),
    ("goodput_req_s", "goodput", "{:.2f}"),
)


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


def _row_line(plan: Any, cell: Any) -> str:
    level = f"{cell.level:g}"
    cells = [f"{level:>6} {cell.policy:<9}"]
    cells += [
        f"{_cell_text(cell, f, fmt):>{12 if i == 0 else 9}}"
        for i, (f, _, fmt) in enumerate(COLUMNS)
    ]
    return " ".join(cells)


def _header(plan: Any) -> str:
    unit = {"speed": "speed", "concurrency": "conc", "rate": "req/s"}[plan.unit]
    names = [f"{unit:>6} {'policy':<9}", f"{'tok/s':>12}"]
    names += [f"{name:>9}" for _, name, _ in COLUMNS[1:]]
    return " ".join(names)


def _csv_rows(result: Any) -> list[dict[str, Any]]:
    from engine.serve.load import FIGURES

    rows = []
    for (level, policy), cell in result.cells.items():
        row: dict[str, Any] = {"level": level, "policy": policy}
        for figure in FIGURES:
            row[figure] = cell.mean(figure)
            row[f"{figure}_ci95"] = cell.half_width(figure)
        for figure in ("throughput_tok_s", "tpot_p99_ms"):  # paired against off
            diff, half = result.paired(level, policy, figure)
            row[f"{figure}_vs_off"] = diff
            row[f"{figure}_vs_off_ci95"] = half
        rows.append(row)
    return rows


def _write_csv(path: Path, result: Any) -> None:
    from engine.core.writes import atomic_open

    rows = _csv_rows(result)
    with atomic_open(path) as handle:
        out = csv.DictWriter(handle, fieldnames=list(rows[0]))
        out.writeheader()
        out.writerows(rows)


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
    from engine.serve.schedule import best_k_by_batch, sglang_flags, trtllm_yaml, vllm_flag

    plan = result.plan
    unit = plan.unit
    lines = []
    for figure, words in (("throughput_tok_s", "throughput"), ("tpot_p99_ms", "p99 TPOT")):
        level = result.stops_paying(figure)
        if "off" not in plan.policies:
            break
        if level is None:
            lines.append(f"speculation pays in {words} at every level run")
        else:
            lines.append(f"speculation stops paying in {words} at {unit} {level:g}")
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
    context = float(config.prompt_len) + config.tokens_per_seq / 2
    k_max = max(int(config.k), int(config.k_max))
    ranges = best_k_by_batch(config, cost, plan.server.max_num_seqs, context, k_max)
    text = ", ".join(f"{lo}-{hi}: {k}" if lo != hi else f"{lo}: {k}" for lo, hi, k in ranges)
    lines.append(f"best k by batch size (cost model, context {context:g}): {text}")
    lines.append(f"vLLM: {vllm_flag(ranges)}")
    lines.append("TensorRT-LLM (extra_llm_api_options):")
    lines.extend(f"  {line}" for line in trtllm_yaml(ranges).splitlines())
    lines.append(f"SGLang (batch 1): {sglang_flags(ranges[0][2])}")
    return lines


def command(args: argparse.Namespace) -> int:
    from engine.serve.load import run_load
    from spectui.cli.progress import delayed_progress

    config, cost, plan = plan_of(args)
    total = len(plan.levels) * len(plan.policies) * plan.replications * plan.workload.requests
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

    from engine.serve.load import LoadResult

    printed: list[str] = []
    finished = LoadResult(plan)  # what Ctrl-C keeps

    def on_cell(cell: Any) -> None:
        finished.cells[(cell.level, cell.policy)] = cell
        done_before[0] += plan.replications * plan.workload.requests
        if not args.json:
            if not printed:
                printed.append(_header(plan))
                print(printed[-1])
            print(_row_line(plan, cell), flush=True)

    try:
        result = run_load(
            config,
            cost,
            plan,
            on_cell=on_cell,
            check=check,
            on_finish=on_finish,
        )
    except BaseException:
        close()
        if records is not None:  # a cancelled run leaves no records file
            records.__exit__(*sys.exc_info())
        if args.csv and finished.cells:  # the finished cells are kept
            _write_csv(args.csv, finished)
        raise
    close()
    if records is not None:
        records.__exit__(None, None, None)
    if args.csv:
        _write_csv(args.csv, result)
    lines = _summary_lines(config, cost, result)
    if args.json:
        payload = {"config": config.to_dict(), "cells": _csv_rows(result), "summary": lines}
        print(json.dumps(_finite(payload)))
        return 0
    for line in lines:
        print(line)
    return 0
