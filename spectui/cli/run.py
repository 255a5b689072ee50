"""``spectui run``: simulate one configuration and print its metrics."""

from __future__ import annotations

import argparse
import json
import math
from typing import Any

from engine.core.config import SpecConfig
from spectui.cli.flags import (
    ENGINE_HELP,
    ENGINES,
    add_catalog_flags,
    add_scenario_flags,
    base_config,
    choose_acceptance,
    file_path,
    given_fields,
)
from spectui.cli.progress import delayed_progress
from spectui.cli.run_proposer import print_proposer, proposer_json
from spectui.errors import UsageError

RUN_PROGRESS_BY_TOKENS = 100  # a run of fewer sequences counts its tokens
# Summary columns newer than some summary files: rows appended to those go on without them.
SUMMARY_OPTIONAL = ("sampler",)


def add_parser(sub: Any) -> None:
    run = sub.add_parser("run", help="simulate one configuration and print its metrics")
    add_scenario_flags(run)
    add_catalog_flags(run)
    run.add_argument("--preset", metavar="NAME|PATH", help="start from a preset; flags override it")
    run.add_argument(
        "--summary-out", metavar="FILE", type=file_path, help="append a summary CSV row"
    )
    run.add_argument(
        "--cycles-out",
        metavar="FILE",
        type=file_path,
        help="write per-cycle records: CSV, or Parquet if FILE ends in .parquet "
        "(needs pyarrow: pip install 'spectui[parquet]')",
    )
    run.add_argument("--json", action="store_true", help="print one JSON object, nothing else")
    run.add_argument("--engine", choices=ENGINES, default="fast", help=ENGINE_HELP)


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _run_progress(config: SpecConfig) -> tuple[Any, Any]:
    """For a fast-engine run: an ``on_progress`` that shows a bar on a terminal once the run
    has taken :data:`spectui.cli.progress.RUN_PROGRESS_AFTER_S`, and a function that closes
    it."""
    # Few long sequences (one of 10^6 tokens through a deep tree: a minute) count tokens.
    by_tokens = config.n_sequences < RUN_PROGRESS_BY_TOKENS
    total = config.n_sequences * config.tokens_per_seq if by_tokens else config.n_sequences
    advance, close = delayed_progress(total, "run: tokens" if by_tokens else "run: sequences")

    def on_progress(sequences: int, tokens: int) -> None:
        # Whole sequences' worth of tokens, or the tokens themselves.
        advance(tokens if by_tokens else tokens // config.tokens_per_seq)

    return on_progress, close


def command(args: argparse.Namespace) -> int:
    from engine.core.files import append_csv_row, check_appendable
    from engine.core.kernel import METRIC_NAMES
    from engine.simulate.cycles_file import (
        PARQUET_INSTALL,
        cycles_writer,
        is_parquet,
        parquet_available,
    )
    from engine.simulate.reference import simulate_reference
    from engine.simulate.simulator import simulate
    from engine.sweep.sweep import sampler_name

    base = base_config(args)
    acceptance = choose_acceptance(args, base)
    config = base.replace(**{**given_fields(args), **acceptance.changes})
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
            "acceptance": acceptance.json(),
        }
        payload.update(proposer_json(result))
        print(json.dumps(payload))
    else:
        from rich.text import Text

        from spectui.render import console, run_summary

        out = console()
        line = acceptance.line()
        if line is not None and not acceptance.default:  # the title says "assumed" then
            out.print(Text(line))
        out.print(run_summary(result, assumed=acceptance.assumed))
        print_proposer(out, result)
    return 0


def _cost_figures(config: SpecConfig) -> dict[str, Any]:
    """The cycle's times at the prompt's context (a full cycle of K drafts, or the whole
    tree with its ``tree_nodes`` and ``tree_depth``), microseconds."""
    from engine.simulate.tree_scenario import full_cycle

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
