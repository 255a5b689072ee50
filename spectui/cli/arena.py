"""``spectui arena``: K policies compared on a scenario, on common random numbers.

A leaderboard per scenario (engine.analysis.arena): each policy's speedup (exact where its state can
be enumerated, and the Monte Carlo estimate on the shared draws with its 95 % interval),
its paired gain over the best fixed K, the share of the oracle's gain it captures, the
mean k it drafts, its waste and the k it drafts most. Rows print as policies finish; Ctrl-C
keeps those printed. ``--json`` prints every leaderboard as one JSON object.

Contenders: a policy given by flags (``--policy hf_heuristic --k 5``), else the preset's
``[[arena]]`` tables, else :func:`engine.analysis.arena.default_contenders`; the best fixed K is
always added. A preset's ``[[grid]]`` gives one leaderboard per scenario.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Any

from engine.core.config import ConfigError
from engine.core.parts import POLICY
from engine.presets import ARENA_KEYS
from spectui.cli.flags import (
    AcceptanceChoice,
    add_catalog_flags,
    add_scenario_flags,
    choose_acceptance,
    given_fields,
)
from spectui.errors import UsageError


def add_parser(sub: Any) -> None:
    """The ``arena`` subcommand, with every scenario flag."""
    arena = sub.add_parser(
        "arena",
        help="compare K policies on a scenario (leaderboard)",
        description=f"Run K policies ({', '.join(POLICY)}) "
        "on the same random draws and print a leaderboard: speedup (exact where it exists), "
        "paired gain over the best fixed K, share of the oracle's gain, mean k, waste. The "
        "policy flags (--policy, --k, --policy-k-max, ...) choose one contender; without "
        "them the preset's [[arena]] tables, else a default set.",
    )
    arena.add_argument(
        "--preset", metavar="NAME|PATH", help="start from a preset; flags override it"
    )
    add_scenario_flags(arena)
    add_catalog_flags(arena)
    out = arena.add_argument_group("output")
    out.add_argument("--json", action="store_true", help="print the leaderboards as JSON")


def _scenarios_and_contenders(
    args: argparse.Namespace,
) -> tuple[list[tuple[Any, list[Any]]], AcceptanceChoice]:
    from engine.analysis.arena import default_contenders
    from engine.core.config import SpecConfig
    from engine.presets import contenders_of, load_preset
    from engine.sweep.grid import SweepSpec

    preset = load_preset(args.preset) if args.preset else None
    given = given_fields(args)
    base = preset.config if preset else SpecConfig()
    acceptance = choose_acceptance(args, base)
    given.update(acceptance.changes)
    scenario_changes = {f: v for f, v in given.items() if f not in ARENA_KEYS}
    policy_changes = {f: v for f, v in given.items() if f in ARENA_KEYS}
    # The base keeps its policy fields apart from the scenario: an invalid combination
    # (a threshold policy on a model without confidences) is the contender's error.
    base = base.replace(**{"policy.name": "fixed"}).replace(**scenario_changes)
    grids = preset.sweep.grids if preset else ()
    scenarios = SweepSpec(base, grids).configs()
    out = []
    for scenario in scenarios:
        if policy_changes:
            contenders = [scenario.replace(**policy_changes)]
        elif preset is not None and preset.is_arena:
            contenders = contenders_of(scenario, preset.arena)
        else:
            contenders = default_contenders(scenario)
        out.append((scenario, contenders))
    return out, acceptance


def _table(result: Any) -> Any:
    from rich import box
    from rich.table import Table

    from engine.analysis.arena import LEADERBOARD_COLUMNS, standing_cells

    table = Table(
        box=box.SIMPLE_HEAD,
        show_edge=False,
        header_style="bold",
        pad_edge=False,
        padding=(0, 0),  # the box's own divider parts the columns
    )
    for i, name in enumerate(LEADERBOARD_COLUMNS):
        table.add_column(name, justify="left" if i in (0, 7) else "right", no_wrap=True)
    for standing in result.ranked():
        table.add_row(*standing_cells(standing))
    return table


def _standing_json(standing: Any) -> dict[str, Any]:
    def safe(value: float) -> float | None:
        return value if math.isfinite(value) else None

    return {
        "policy": standing.label,
        "config": {k: standing.config.get(k) for k in ARENA_KEYS},
        "method": standing.method,
        "speedup": safe(standing.speedup),
        "speedup_ci95": safe(standing.ci95),
        "speedup_exact": safe(standing.speedup_exact),
        "gain": safe(standing.gain),
        "gain_ci95": safe(standing.gain_ci95),
        "gain_ci95_unpaired": safe(standing.gain_ci95_unpaired),
        "captured": safe(standing.captured),
        "mean_k": safe(standing.mean_k),
        "waste": safe(standing.waste),
        "k_share": {str(k): float(v) for k, v in enumerate(standing.k_share) if v > 0},
        "best_fixed": standing.is_best_fixed,
    }


def command(args: argparse.Namespace) -> int:
    from rich.text import Text

    from engine.analysis.arena import LEADERBOARD_LEGEND, run_arena, scenario_text, standing_cells
    from spectui.render import console

    try:
        plan, acceptance = _scenarios_and_contenders(args)
    except ConfigError as err:
        raise UsageError(str(err)) from None
    out, err_out = console(), console(stderr=True)
    live = not args.json and sys.stdout.isatty()
    boards = []
    line = acceptance.line()
    if line is not None and not args.json:
        out.print(Text(line))
    for scenario, contenders in plan:
        if not args.json:
            out.print(Text(f"Arena: {scenario_text(scenario)}", style="bold"))

        def on_standing(standing: Any) -> None:
            if live:
                err_out.print(Text("  finished: " + "  ".join(standing_cells(standing)[:4])))

        def on_progress(done: int, total: int, running: str, share: float = 0.0) -> None:
            if sys.stderr.isatty() and running:
                shown = f": {share:.0%}" if share > 0 else ""
                line = f"  {done}/{total} policies · running {running}{shown}…"
                err_out.print(Text(line, style="dim"), end="\r")

        result = run_arena(scenario, contenders, on_standing=on_standing, on_progress=on_progress)
        boards.append(result)
        if args.json:
            continue
        out.print(_table(result))
        for note in result.notes:
            out.print(Text(f"note: {note}"))
        out.print()
    if args.json:
        payload = [
            {
                "scenario": r.scenario.to_dict(),
                "best_fixed_k": r.best_fixed_k,
                "standings": [_standing_json(s) for s in r.ranked()],
                "notes": r.notes,
                "acceptance": acceptance.json(),
            }
            for r in boards
        ]
        print(json.dumps(payload))
    else:
        out.print(Text(LEADERBOARD_LEGEND, style="dim"))
    return 0
