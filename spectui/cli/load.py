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

from engine.serve.policies import POLICIES
from spectui.cli.flags import add_scenario_flags, base_config, given_fields
from spectui.errors import UsageError

LENGTHS = ("fixed", "uniform", "azure-conv")
# The lognormal fit to the Azure LLM inference trace 2023, conversation (docs/model.md).
AZURE_CONV = {"prompt": (760, 0.9852, 2, 14050), "output": (151, 0.8590, 7, 1000)}


def _numbers(kind: type, name: str) -> Any:
    def parse(text: str) -> tuple[float, ...]:
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


def add_parser(sub: Any) -> None:
    """The ``load`` subcommand: every scenario flag, the load and the server's limits."""
    load = sub.add_parser(
        "load",
        help="speculation under load: throughput, TTFT, TPOT and goodput by request rate",
        description="Serve requests arriving at a rate (or a fixed concurrency) on a "
        "simulated server with continuous batching, a KV cache and chunked prefill, under "
        "each policy, and report throughput, TTFT and TPOT p50/p99 and goodput with their "
        "intervals; then where speculation stops paying and the best k by batch size.",
    )
    load.add_argument(
        "--preset", metavar="NAME|PATH", help="start from a preset; flags override it"
    )
    add_scenario_flags(load)
    levels = load.add_argument_group("load").add_mutually_exclusive_group(required=True)
    levels.add_argument(
        "--rate", metavar="LIST", type=_numbers(float, "--rate"), help="requests/s, open loop"
    )
    levels.add_argument(
        "--concurrency",
        metavar="LIST",
        type=_numbers(int, "--concurrency"),
        help="requests in the system at once, closed loop (vllm bench serve --max-concurrency)",
    )
    group = load.add_argument_group("requests")
    group.add_argument("--requests", type=int, default=300, metavar="N", help="per run (300)")
    group.add_argument(
        "--cv",
        type=float,
        default=1.0,
        metavar="F",
        help="gaps' coefficient of variation (1: Poisson)",
    )
    group.add_argument(
        "--lengths",
        choices=LENGTHS,
        default="fixed",
        help="fixed (--prompt-len, --tokens-per-seq), uniform (half to 1.5 times them) or "
        "azure-conv (lognormal fit to the Azure LLM inference trace 2023, conversation)",
    )
    group.add_argument(
        "--warmup", type=float, default=0.1, metavar="F", help="share left out (0.1)"
    )
    server = load.add_argument_group("server")
    server.add_argument("--max-num-seqs", type=int, default=256, metavar="N")
    server.add_argument("--max-num-batched-tokens", type=int, default=8192, metavar="N")
    server.add_argument("--gpu-memory-utilization", type=float, default=0.9, metavar="F")
    server.add_argument("--verify-budget", type=int, default=64, metavar="N", help="budget policy")
    runs = load.add_argument_group("runs")
    runs.add_argument(
        "--policies",
        metavar="LIST",
        default="off,fixed",
        help=f"comma-separated, of {', '.join(POLICIES)} (default: off,fixed)",
    )
    runs.add_argument("--replications", type=int, default=3, metavar="N", help="per cell (3)")
    runs.add_argument("--slo-ttft-ms", type=float, default=math.inf, metavar="MS")
    runs.add_argument("--slo-tpot-ms", type=float, default=math.inf, metavar="MS")
    runs.add_argument("--usd-per-gpu-hour", type=float, default=2.0, metavar="USD")
    out = load.add_argument_group("output")
    out.add_argument("--json", action="store_true", help="print the results as one JSON object")
    out.add_argument("--csv", metavar="FILE", type=Path, help="a row per level and policy")
    out.add_argument("--records", metavar="FILE", type=Path, help="a row per finished request")


def _lengths(args: argparse.Namespace, config: Any) -> tuple[Any, Any]:
    from engine.serve.workload import Lengths

    prompt, output = int(config.prompt_len), int(config.tokens_per_seq)
    if args.lengths == "fixed":
        return Lengths(median=prompt, low=0, high=max(prompt, 1)), Lengths(median=output)
    if args.lengths == "uniform":
        return (
            Lengths("uniform", median=prompt, low=prompt // 2, high=max(prompt * 3 // 2, 1)),
            Lengths("uniform", median=output, low=max(output // 2, 1), high=output * 3 // 2),
        )
    p, o = AZURE_CONV["prompt"], AZURE_CONV["output"]
    return Lengths("lognormal", *p), Lengths("lognormal", *o)


def plan_of(args: argparse.Namespace) -> tuple[Any, Any, Any]:
    """(scenario, cost model, plan) from the flags; ConfigError names a bad one."""
    from engine.cost.models import build_cost
    from engine.serve.load import Plan
    from engine.serve.server import Server
    from engine.serve.workload import Workload

    config = base_config(args).replace(**given_fields(args))
    prompt, output = _lengths(args, config)
    workload = Workload(
        requests=args.requests,
        rate=1.0,
        cv=args.cv,
        prompt=prompt,
        output=output,
        warmup=args.warmup,
    )
    server = Server(
        max_num_seqs=args.max_num_seqs,
        max_num_batched_tokens=args.max_num_batched_tokens,
        gpu_memory_utilization=args.gpu_memory_utilization,
        verify_budget=args.verify_budget,
    )
    closed = args.concurrency is not None
    plan = Plan(
        workload=workload,
        server=server,
        levels=tuple(args.concurrency if closed else args.rate),
        closed=closed,
        policies=tuple(p.strip() for p in args.policies.split(",") if p.strip()),
        replications=args.replications,
        seed=config.seed,
        slo_ttft_ms=args.slo_ttft_ms,
        slo_tpot_ms=args.slo_tpot_ms,
        usd_per_gpu_hour=args.usd_per_gpu_hour,
    )
    plan.check()
    cost = build_cost(config)
    from engine.serve.server import kv_capacity

    kv_capacity(cost, server)  # weights that do not fit: refused before any run
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
    unit = "conc" if plan.closed else "req/s"
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
    unit = "concurrency" if plan.closed else "rate"
    lines = []
    for figure, words in (("throughput_tok_s", "throughput"), ("tpot_p99_ms", "p99 TPOT")):
        level = result.stops_paying(figure)
        if "off" not in plan.policies:
            break
        if level is None:
            lines.append(f"speculation pays in {words} at every level run")
        else:
            lines.append(f"speculation stops paying in {words} at {unit} {level:g}")
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
    from engine.serve.sim import RECORD_FIELDS
    from spectui.cli.progress import delayed_progress

    for name in ("requests", "replications", "max_num_seqs"):
        if getattr(args, name) < 1:
            raise UsageError(f"--{name.replace('_', '-')}: must be a whole number >= 1")
    config, cost, plan = plan_of(args)
    total = len(plan.levels) * len(plan.policies) * plan.replications * plan.workload.requests
    advance, close = delayed_progress(total, "load: requests")
    done_before = [0]

    def check(done: int) -> None:
        advance(done_before[0] + done)

    records = None
    writer = None
    if args.records is not None:
        from engine.core.writes import atomic_open

        records = atomic_open(args.records)
        handle = records.__enter__()
        writer = csv.writer(handle)
        writer.writerow(("level", "policy", "replication", *RECORD_FIELDS))

    def on_finish(level: float, policy: str, replication: int, rows: Any) -> None:
        assert writer is not None
        for row in rows.tolist():
            writer.writerow(
                (
                    f"{level:g}",
                    policy,
                    replication,
                    int(row[0]),
                    *row[1:4],
                    int(row[4]),
                    int(row[5]),
                )
            )

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
            on_finish=on_finish if writer is not None else None,
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
