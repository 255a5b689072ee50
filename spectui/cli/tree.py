"""``spectui tree``: chains against token trees (k-ary, EAGLE's shape, Sequoia-optimal) on a
scenario, and the best tree size as the batch grows.

For the scenario's rank probabilities (``--rank-probs``) and cost model (roofline by
default: a linear cost has no batch dependence), one row per shape: nodes, depth, expected
tokens per cycle E[n + 1], verify width, cycle time and exact speedup; then, for batch
sizes 1..256, the Sequoia-optimal budget and its speedup beside the best chain K and its
speedup, so that a person sees where trees stop paying before chains do.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from engine.core.config import DEFAULTS, ConfigError, ascii_int
from engine.core.parts import COST, SHAPE
from spectui.cli.flags import (
    ASSUMED_HINT,
    AcceptanceChoice,
    add_catalog_flags,
    add_scenario_flags,
    base_config,
    choose_acceptance,
    given_fields,
)
from spectui.cli.regime import default_cost
from spectui.errors import UsageError


def _pair(text: str) -> tuple[int, int]:
    try:
        k, d = (ascii_int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError("expected K,DEPTH (two integers)") from None
    if not (1 <= k <= 16 and 1 <= d <= 8 and k**d <= 4096):
        raise argparse.ArgumentTypeError("K in [1, 16], DEPTH in [1, 8], K^DEPTH <= 4096")
    return k, d


def add_parser(sub: Any) -> None:
    """The ``tree`` subcommand, with every scenario flag."""
    tree = sub.add_parser(
        "tree",
        help="chains against token trees (k-ary, EAGLE, Sequoia) and the best tree by batch",
        description="Compare a chain, a k-ary tree, EAGLE's default tree and the "
        "Sequoia-optimal tree on the scenario's rank probabilities (--rank-probs) and cost "
        f"(default {default_cost()}), then the best tree size as the batch grows.",
    )
    tree.add_argument("--preset", metavar="NAME|PATH", help="start from a preset; flags override")
    tree.add_argument("--kary", type=_pair, default=(2, 3), metavar="K,DEPTH", help="k-ary tree")
    add_scenario_flags(tree)
    add_catalog_flags(tree)
    for action in tree._actions:
        if action.dest == "cost.model" and action.help:
            action.help = action.help.replace(
                f"(default: {DEFAULTS['cost.model']})", f"(default: {default_cost()})"
            )
    tree.add_argument("--json", action="store_true", help="print everything as JSON")


RANK_PROBS = "shape.rank_probs"


def _scenario(args: argparse.Namespace) -> tuple[Any, AcceptanceChoice]:
    """The scenario and where its rank probabilities come from: ``--rank-probs`` or the
    preset's; else ``--method``'s catalog fit (:func:`rank_probs_from_fit`); else the
    default ones, said to be assumed."""
    base = base_config(args)
    changes = given_fields(args)
    if "cost.model" not in changes and not COST.of(base).batch_dependent:
        changes["cost.model"] = default_cost()
    changes.setdefault("shape.name", SHAPE.where(lambda shape: shape.tree)[0])
    scenario = base.replace(**changes)
    if RANK_PROBS in changes or (args.preset and getattr(args, "method", None) is None):
        if getattr(args, "method", None) is None:
            return scenario, AcceptanceChoice()
        choose_acceptance(args, base, take_proposer=False)  # an unknown method: one line, exit 2
        return scenario, AcceptanceChoice(
            text=f"rank probabilities {scenario.rank_probs}, as given (--rank-probs); the "
            "catalog was not used (--method)"
        )
    acceptance = choose_acceptance(args, base, take_proposer=False)  # a tree drafts from a model
    if not acceptance.changes:
        if acceptance.text is None:  # an acceptance flag: the tree reads rank probabilities
            return scenario, AcceptanceChoice(
                text=f"rank probabilities {scenario.rank_probs}, the default (assumed; the "
                f"tree reads --rank-probs, not the chain's acceptance flags)",
                assumed=True,
            )
        if acceptance.default:
            return scenario, AcceptanceChoice(
                text=f"rank probabilities {scenario.rank_probs}, the default (assumed; "
                f"{ASSUMED_HINT.replace('--acceptance-rate', '--rank-probs')})",
                assumed=True,
            )
        return scenario, acceptance
    fitted = scenario.replace(**acceptance.changes)
    probs, rate = rank_probs_from_fit(fitted)
    scenario = scenario.replace(**{RANK_PROBS: probs})
    text = (
        f"rank probabilities {probs}: rank 1 {rate:.4g}, the per-token rate of the same "
        f"mean accepted length at K={fitted.k} as {acceptance.text}; ranks 2.. the scenario's "
        "scaled to the rest (assumed: the catalog gives a chain's acceptance)"
    )
    return scenario, AcceptanceChoice(
        changes={RANK_PROBS: probs}, text=text, rows=acceptance.rows, level=acceptance.level
    )


def rank_probs_from_fit(fitted: Any) -> tuple[str, float]:
    """Rank probabilities for a scenario whose acceptance model is a catalog fit: rank 1 the
    constant per-token rate ``a`` whose chain of K drafts has the fit's mean accepted length
    at the scenario's K (1 + a + ... + a^K = 1 + sum_j P(n >= j)), ranks 2.. the scenario's
    own scaled by (1 - a) / (1 - its rank 1), so that they share what rank 1 leaves as they
    did. Returns the text of the field and ``a``."""
    from engine.acceptance.catalog import mean_length_at_constant_rate
    from engine.core.config import rates_of
    from engine.core.parts import ACCEPTANCE

    k = int(fitted.k)
    survival, product = 0.0, 1.0
    for p in ACCEPTANCE.of(fitted).position_probs(fitted, k):
        product *= float(p)
        survival += product
    target, low, high = 1.0 + survival, 0.0, 1.0
    for _ in range(60):  # M(a) rises with a: bisection to 1e-18
        middle = (low + high) / 2
        low, high = (
            (middle, high) if mean_length_at_constant_rate(middle, k) < target else (low, middle)
        )
    rate = round(low, 6)
    own = list(rates_of(fitted.rank_probs))
    scale = (1.0 - rate) / (1.0 - own[0]) if own[0] < 1.0 else 0.0
    rest = [min(1.0, p * scale) for p in own[1:]]
    return ",".join(f"{p:.6g}" for p in [rate, *rest]), rate


def command(args: argparse.Namespace) -> int:
    from engine.cost.models import build_cost
    from engine.simulate.tree_scenario import (
        budget_by_batch,
        budget_by_batch_programs,
        compare_shapes,
        compare_shapes_programs,
    )
    from spectui.cli.progress import delayed_progress

    # Each part a bar on a terminal once it takes a second (at 10^6 tokens, minutes); Ctrl-C
    # stops it between two programs (main() prints one line, exits with 130).
    try:
        scenario, acceptance = _scenario(args)
        # The tree asked for, too: built (or refused, in one line: a Sequoia tree above
        # engine.shapes.trees.SEQUOIA_WORK_MAX) before the comparison starts.
        given = None
        if getattr(args, "shape.tree", None) is not None:
            from engine.simulate.tree_scenario import tree_of

            given = tree_of(scenario)
        advance, close = delayed_progress(compare_shapes_programs(), "tree: shapes")
        try:
            rows = compare_shapes(
                scenario, kary=args.kary, on_progress=lambda done, _: advance(done)
            )
        finally:
            close()
        if given is not None:
            from engine.simulate.tree_scenario import shape_row

            rows.append(shape_row(f"given {scenario.tree}", scenario, given))
        advance, close = delayed_progress(budget_by_batch_programs(), "tree: budgets by batch")
        try:
            grid = budget_by_batch(scenario, on_progress=lambda done, _: advance(done))
        finally:
            close()
        warnings = list(getattr(build_cost(scenario), "warnings", ()))
    except ConfigError as err:
        raise UsageError(str(err)) from None
    if args.json:
        print(
            json.dumps(
                {
                    "scenario": scenario.to_dict(),
                    "acceptance": acceptance.json(),
                    "shapes": [
                        {
                            "name": r.name,
                            "tree": r.tree.text(),
                            "nodes": r.nodes,
                            "depth": r.depth,
                            "expected_tokens": r.expected_tokens,
                            "verify_width": r.verify_width,
                            "cycle_us": r.cycle_us,
                            "speedup": r.speedup,
                        }
                        for r in rows
                    ],
                    "by_batch": [
                        {
                            "batch": b,
                            "best_budget": int(grid.best_budget[i]),
                            "tree_speedup": float(grid.best_speedup[i]),
                            "chain_k": int(grid.chain_k[i]),
                            "chain_speedup": float(grid.chain_speedup[i]),
                        }
                        for i, b in enumerate(grid.batch_sizes)
                    ],
                }
            )
        )
        return 0
    _print(scenario, rows, grid, acceptance)
    import sys

    for warning in dict.fromkeys(warnings):
        print(f"warning: {warning}", file=sys.stderr)
    return 0


def _print(scenario: Any, rows: list[Any], grid: Any, acceptance: AcceptanceChoice) -> None:
    from rich.text import Text

    from engine.analysis.formatting import cost_setting_text, speedup_text
    from spectui.render import console, plain_table

    out = console()
    line = acceptance.line()
    if line is not None:
        out.print(Text(line))
    out.print(
        Text(
            f"Token trees: rank probabilities {scenario.rank_probs}; "
            f"{cost_setting_text(scenario)}; T={scenario.tokens_per_seq}",
            style="bold",
        )
    )
    columns = ("shape", "nodes", "depth", "E[n+1]", "verify w", "cycle us", "speedup")
    table = plain_table(columns, left=("shape",))
    for r in rows:
        table.add_row(
            r.name,
            str(r.nodes),
            str(r.depth),
            f"{r.expected_tokens:.3f}",
            str(r.verify_width),
            f"{r.cycle_us:,.1f}",
            speedup_text(r.speedup),
        )
    out.print(table)
    out.print(Text("Sequoia-optimal budget by batch size, against the best chain:"))
    by_batch = plain_table(("batch", "best budget", "tree", "chain K*", "chain", "tree/chain"))
    for i, batch in enumerate(grid.batch_sizes):
        tree, chain = float(grid.best_speedup[i]), float(grid.chain_speedup[i])
        by_batch.add_row(
            str(batch),
            str(int(grid.best_budget[i])),
            speedup_text(tree),
            str(int(grid.chain_k[i])),
            speedup_text(chain),
            f"{tree / chain:.3f}",
        )
    out.print(by_batch)
    if not COST.of(scenario).batch_dependent:
        out.print(
            Text(
                f"note: a {scenario.cost_model} cost has no batch dependence: every row is the same"
            )
        )
