"""``spectui regime``: the optimal K and its speedup over batch size x context length.

A table like the optimal-K heatmap (rows: batch size, columns: context length), each cell
K* and its exact speedup (engine.analysis.regime), cells where no K pays marked; then a legend with
the scenario and where speculation should turn off. ``--json`` prints the whole map,
``--csv FILE`` writes one row per cell.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.core.config import DEFAULTS, FIELD_SPECS, ConfigError, ascii_int, check_value
from engine.core.parts import COST
from spectui.cli.flags import (
    ASSUMED_HINT,
    AcceptanceChoice,
    add_catalog_flags,
    add_scenario_flags,
    base_config,
    choose_acceptance,
    given_fields,
)
from spectui.errors import UsageError

if TYPE_CHECKING:
    from engine.analysis.regime import RegimeMap

# The fields the map varies: their single-value flags make no sense here.
AXIS_FLAGS = {
    "workload.batch_size": "--batch-sizes",
    "workload.prompt_len": "--contexts",
    "k": "--ks or --k-max",
}


def default_cost() -> str:
    """The cost model a command that needs batch dependence (regime, tree) takes when the
    scenario's has none: the batch-default one (roofline; engine.cost.part.CostPart)."""
    return COST.where(lambda model: model.batch_default)[0]


def flat_note(name: str) -> str:
    """The note under a map whose cost model ``name`` depends on neither batch nor
    context (linear), naming the models that do."""
    *rest, last = COST.where(lambda model: model.batch_dependent or model.context_dependent)
    choices = f"{', '.join(rest)} or {last}" if rest else last
    return (
        f"note: the {name} cost model has no batch or context dependence: every cell is the "
        f"same (choose --cost {choices})"
    )


def _list_of(field: str, parse_one: Callable[[str], int]) -> Callable[[str], tuple[int, ...]]:
    """An argparse type: comma-separated values of ``field``, each checked by the field
    table; one line naming the field and its range when one is bad."""

    def parse(text: str) -> tuple[int, ...]:
        items = [t for t in text.split(",") if t.strip()]
        if not items:
            raise argparse.ArgumentTypeError(f"{field}: expected a comma-separated list")
        values = []
        for item in items:
            try:
                value = parse_one(item)
            except ValueError:
                value = None
            try:
                if value is None:
                    raise ConfigError(
                        field,
                        f"{item.strip()!r} is not an integer; expected "
                        f"{FIELD_SPECS[field].allowed()}",
                    )
                values.append(int(check_value(field, value)))
            except ConfigError as err:
                raise argparse.ArgumentTypeError(str(err)) from None
        return tuple(values)

    parse.__name__ = field
    return parse


def _context(text: str) -> int:
    from engine.analysis.regime import parse_context

    return parse_context(text)


def add_parser(sub: Any) -> None:
    """The ``regime`` subcommand, with every scenario flag and the map's axes."""
    regime = sub.add_parser(
        "regime",
        help="optimal K and its speedup over batch size x context length",
        description="The regime map: for each batch size and context length, the K that "
        "maximises the exact speedup and that speedup; cells where no K pays are marked. "
        f"The cost model defaults to {default_cost()} (hardware, target and draft from "
        "--gpu --target --draft).",
    )
    add_scenario_flags(regime)
    add_catalog_flags(regime)
    for action in regime._actions:
        if action.dest == "cost.model" and action.help:
            action.help = action.help.replace(
                f"(default: {DEFAULTS['cost.model']})", f"(default: {default_cost()})"
            )
    regime.add_argument(
        "--preset", metavar="NAME|PATH", help="start from a preset; flags override it"
    )
    axes = regime.add_argument_group("map axes")
    axes.add_argument(
        "--batch-sizes",
        metavar="LIST",
        type=_list_of("workload.batch_size", ascii_int),
        help="batch sizes, comma-separated (default: 1,2,4,...,512)",
    )
    axes.add_argument(
        "--contexts",
        metavar="LIST",
        type=_list_of("workload.prompt_len", _context),
        help="context lengths (prompt tokens), comma-separated; 4k = 4096 "
        "(default: 1k,2k,4k,...,128k)",
    )
    ks = axes.add_mutually_exclusive_group()
    ks.add_argument("--ks", metavar="LIST", type=_list_of("k", ascii_int), help="K values")
    ks.add_argument(
        "--k-max",
        metavar="N",
        type=_list_of("k", ascii_int),
        help="K from 1 to N (default: 16)",
    )
    out = regime.add_argument_group("output")
    out.add_argument("--json", action="store_true", help="print the map as one JSON object")
    out.add_argument("--csv", metavar="FILE", type=Path, help="also write one CSV row per cell")


def _config(args: argparse.Namespace) -> tuple[Any, list[str], AcceptanceChoice]:
    """The base scenario, notes to print and where its acceptance comes from: the preset
    and flags (or --method's catalog rows), roofline by default."""
    for field, flag in AXIS_FLAGS.items():
        if getattr(args, field, None) is not None:
            given = FIELD_SPECS[field].cli_flag
            raise UsageError(f"{given}: the map varies this; use {flag}")
    base = base_config(args)
    acceptance = choose_acceptance(args, base)
    changes = {**given_fields(args), **acceptance.changes}
    if "cost.model" not in changes and not COST.of(base).batch_dependent:
        changes["cost.model"] = default_cost()
    config = base.replace(**changes)
    cost = COST.of(config)
    flat = not (cost.batch_dependent or cost.context_dependent)
    notes = [flat_note(config.cost_model)] if flat else []
    return config, notes, acceptance


def _axes(args: argparse.Namespace) -> dict[str, tuple[int, ...]]:
    from engine.analysis.regime import BATCH_SIZES, CONTEXTS, KS

    ks = args.ks or KS
    if args.k_max is not None:
        if len(args.k_max) != 1:
            raise UsageError("--k-max: expected one integer")
        ks = tuple(range(1, args.k_max[0] + 1))
    return {
        "batch_sizes": args.batch_sizes or BATCH_SIZES,
        "contexts": args.contexts or CONTEXTS,
        "ks": ks,
    }


def regime_table(regime: RegimeMap, no_color: bool = False) -> Any:
    """The map as a rich table: a row per batch size, a column per context, each cell
    :meth:`engine.analysis.regime.RegimeMap.cell_text` on the speedup scale of spectui.colours."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    from engine.analysis.regime import context_label
    from spectui.colours import heat_style

    table = Table(box=box.SIMPLE_HEAD, padding=(0, 0), show_edge=False, header_style="bold")
    table.add_column("batch", justify="right")
    for context in regime.contexts:
        table.add_column(context_label(context), justify="right")
    for i, batch in enumerate(regime.batch_sizes):
        cells: list[Any] = [f"{batch} "]
        for j in range(len(regime.contexts)):
            style = heat_style(float(regime.speedup_opt[i, j]), no_color)
            cells.append(Text(f" {regime.cell_text(i, j)} ", style=style))
        table.add_row(*cells)
    return table


def summary_lines(regime: RegimeMap) -> list[str]:
    """The legend and where speculation turns off (one line each)."""
    from engine.analysis.regime import LEGEND

    return [LEGEND, regime.off_text()]


def _json_payload(regime: RegimeMap, acceptance: AcceptanceChoice) -> dict[str, Any]:
    return {
        "acceptance": acceptance.json(),
        "config": regime.config.to_dict(),
        "batch_sizes": list(regime.batch_sizes),
        "contexts": list(regime.contexts),
        "ks": list(regime.ks),
        "k_opt": regime.k_opt.tolist(),
        "speedup_opt": regime.speedup_opt.tolist(),
        "pays": regime.pays.tolist(),
        "tie": regime.tie.tolist(),
        "verify_ratio": regime.verify_ratio.tolist(),
        "speedup": regime.speedup.tolist(),
        "off_from_batch": regime.off_from_batch(),
        "warnings": list(regime.warnings),
    }


def command(args: argparse.Namespace) -> int:
    from engine.analysis.regime import regime_map
    from spectui.cli.progress import delayed_progress

    config, notes, choice = _config(args)
    axes = _axes(args)
    # A bar on a terminal once the map takes a second, by step (the cells' baselines, then
    # each K); Ctrl-C stops it (main() prints one line, exits with 130).
    advance, close = delayed_progress(1 + len(set(axes["ks"])), "regime: steps")
    try:
        regime = regime_map(config, **axes, on_progress=lambda done, _: advance(done))
    finally:
        close()
    if args.csv:
        import csv

        from engine.core.files import atomic_open

        rows = regime.cell_rows()
        with atomic_open(args.csv) as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    if args.json:
        print(json.dumps(_json_payload(regime, choice)))
        return 0
    from rich.text import Text

    from spectui.render import console

    out = console()
    no_color = bool(os.environ.get("NO_COLOR"))
    ks = f"K {regime.ks[0]}..{regime.ks[-1]}" if len(regime.ks) > 1 else f"K {regime.ks[0]}"
    length, acceptance, cost = regime.legend_lines()
    acceptance_choice = choice
    out.print(Text(f"Regime map, {ks}, {length}", style="bold"))
    where = acceptance_choice.text
    if where is not None and not acceptance_choice.default:
        out.print(Text(f"acceptance: {where}\ncost: {cost}"))
    else:
        assumed = f", the default (assumed; {ASSUMED_HINT})" if acceptance_choice.default else ""
        out.print(Text(f"acceptance: {acceptance}{assumed}\ncost: {cost}"))
    out.print(regime_table(regime, no_color))
    warnings = [f"warning: {w}" for w in regime.warnings]
    for line in [*summary_lines(regime), *notes, *warnings]:
        out.print(Text(line))
    return 0
