"""``spectui lab``: the losslessness lab and the temperature curves of the ``distribution``
acceptance model (docs/model.md, "Acceptance models beyond the original").

First, at the scenario's temperature and top-p, each acceptance rule's algorithm run token by
token over the family's contexts at the first draft position (``--tokens`` in all): its
exact acceptance, the acceptance measured, the exact total-variation distance of what it
emits from the target, and Pearson's chi-square test of the tokens sampled against the
target (lossless when it finds no evidence against it at the 0.001 level). ``--broken``
adds rejection and one_hot with the correction drawn from p instead of the residual (the bug
of xLLM PR 2175), which the test catches. Then, for each ``--temperature`` and ``--top-p``,
every rule's acceptance at the first position and exact speedup on the scenario's cost.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from engine.core.config import ConfigError
from spectui.cli.flags import add_scenario_flags, base_config, given_fields, typed_arg
from spectui.errors import UsageError, bounded_int

SWEPT = ("acceptance.temperature", "acceptance.top_p")
TEMPERATURES = (0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5)
TOKENS_MAX = 10_000_000
VALUES_MAX = 64
RANKS_MAX = 32


def _values(field: str, flag: str) -> Any:
    """An argparse type: comma-separated values of ``field``, each checked as the field is."""
    one = typed_arg(field)

    def parse(text: str) -> tuple[float, ...]:
        parts = [part.strip() for part in text.split(",")]
        if not 1 <= len(parts) <= VALUES_MAX or not all(parts):
            raise argparse.ArgumentTypeError(f"expected 1 to {VALUES_MAX} comma-separated values")
        return tuple(float(one(part)) for part in parts)  # type: ignore[arg-type]

    parse.__name__ = flag
    return parse


def add_parser(sub: Any) -> None:
    """The ``lab`` subcommand, with every scenario flag (the temperature and top-p as lists)."""
    lab = sub.add_parser(
        "lab",
        help="the losslessness lab and temperature curves of the distribution model",
        description="Run each acceptance rule token by token on the distribution model's "
        "contexts and test what it emits against the target; then acceptance and exact "
        "speedup by rule against temperature (and top-p).",
    )
    lab.add_argument("--preset", metavar="NAME|PATH", help="start from a preset; flags override")
    lab.add_argument(
        "--temperature",
        type=_values("acceptance.temperature", "--temperature"),
        metavar="T1,T2,...",
        help="temperatures of the curves, in [0, 10] (default: "
        + ",".join(f"{t:g}" for t in TEMPERATURES)
        + "); the lab's test runs at the scenario's",
    )
    lab.add_argument(
        "--top-p",
        type=_values("acceptance.top_p", "--top-p"),
        metavar="P1,P2,...",
        help="top-p values of the curves, in (0, 1] (default: the scenario's)",
    )
    lab.add_argument(
        "--tokens",
        type=bounded_int("--tokens", TOKENS_MAX, low=1000),
        default=200_000,
        metavar="N",
        help="tokens the lab's test emits for each rule, over all contexts (default: 200000)",
    )
    lab.add_argument(
        "--broken",
        action="store_true",
        help="also run rejection and one_hot with the correction drawn from p, not the residual",
    )
    lab.add_argument(
        "--ranks",
        type=bounded_int("--ranks", RANKS_MAX, low=1),
        default=4,
        metavar="N",
        help="candidates at a tree node for the acceptance by rank (1 to 32; default: 4)",
    )
    add_scenario_flags(lab, skip=SWEPT)
    lab.add_argument("--json", action="store_true", help="print everything as JSON")


def _scenario(args: argparse.Namespace) -> Any:
    base = base_config(args)
    changes = given_fields(args)
    model = changes.get("draft_model", "distribution")
    if model != "distribution":
        raise UsageError(
            f"draft_model: the lab needs the distribution model, not {model} "
            "(omit --draft-model, or give --draft-model distribution)"
        )
    changes["draft_model"] = "distribution"
    scenario = base.replace(**changes)
    _check_contexts(scenario)
    return scenario


def _check_contexts(scenario: Any) -> None:
    """The lab runs every rule token by token on each context, one at a time: a file's
    contexts are bounded as the family's are (``--family-size``), before any of it runs."""
    from engine.acceptance.distribution import CONTEXTS_MAX, context_count, family_of

    contexts = context_count(family_of(scenario))
    if scenario.dist_file and contexts > CONTEXTS_MAX:
        raise UsageError(
            f"--dist-file: {scenario.dist_file}: {contexts:,} contexts; the lab runs each rule "
            f"on every context, at most {CONTEXTS_MAX:,} (as --family-size)"
        )


def command(args: argparse.Namespace) -> int:
    from engine.acceptance.distribution import RULES, rank_rates
    from engine.acceptance.lab import lab_rows
    from engine.core.parts import ACCEPTANCE
    from engine.simulate.exact import speedup_exact
    from spectui.cli.progress import delayed_progress

    try:
        scenario = _scenario(args)
        temperatures = args.temperature or TEMPERATURES
        top_ps = args.top_p or (float(scenario.top_p),)
        advance, close = delayed_progress(1 + len(temperatures) * len(top_ps), "lab")
        try:
            rows = lab_rows(scenario, args.tokens, seed=int(scenario.seed), broken=args.broken)
            by_rank = rank_rates(scenario, args.ranks)
            curves = []
            for i, (t, top_p) in enumerate((t, p) for t in temperatures for p in top_ps):
                advance(1 + i)
                for rule in RULES:
                    here = scenario.replace(
                        **{
                            "acceptance.accept_rule": rule,
                            "acceptance.temperature": t,
                            "acceptance.top_p": top_p,
                        }
                    )
                    rate = float(ACCEPTANCE.of(here).position_probs(here, 1)[0])
                    curves.append((t, top_p, rule, rate, speedup_exact(here)))
        finally:
            close()
    except ConfigError as err:
        raise UsageError(str(err)) from None
    if args.json:
        print(json.dumps(_json(scenario, rows, curves, by_rank)))
        return 0
    _print(scenario, rows, curves, args.tokens)
    _print_ranks(scenario, by_rank)
    return 0


def _json(
    scenario: Any, rows: list[Any], curves: list[tuple[Any, ...]], by_rank: dict[str, Any]
) -> dict[str, Any]:
    return {
        "by_rank": {rule: [float(v) for v in values] for rule, values in by_rank.items()},
        "scenario": scenario.to_dict(),
        "lab": [
            {
                "rule": r.rule,
                "broken": r.broken,
                "acceptance": r.expected,
                "measured": r.measured,
                "tv_from_p": r.tv,
                "chi_square": r.test.statistic,
                "dof": r.test.dof,
                "p_value": r.test.p_value,
                "lossless": r.lossless,
            }
            for r in rows
        ],
        "curves": [
            {"temperature": t, "top_p": p, "rule": rule, "acceptance": a, "speedup": s}
            for t, p, rule, a, s in curves
        ],
    }


def _print(scenario: Any, rows: list[Any], curves: list[tuple[Any, ...]], tokens: int) -> None:
    from rich.text import Text

    from engine.acceptance.distribution import RULES
    from engine.analysis.formatting import speedup_text
    from engine.core.parts import ACCEPTANCE
    from spectui.render import console, plain_table

    out = console()
    out.print(
        Text(
            f"Lab: {ACCEPTANCE.of(scenario).label(scenario)}; temperature "
            f"{scenario.temperature:g}, top-p {scenario.top_p:g}; {tokens:,} tokens a rule",
            style="bold",
        )
    )
    columns = ("rule", "accepted", "measured", "TV from p", "chi2 p", "emits p?")
    table = plain_table(columns, left=("rule", "emits p?"))
    for r in rows:
        table.add_row(
            r.rule + (" (broken)" if r.broken else ""),
            f"{r.expected:.4f}",
            f"{r.measured:.4f}",
            f"{r.tv:.4f}",
            f"{r.test.p_value:.3g}",
            "yes" if r.lossless else "no",
        )
    out.print(table)
    out.print(
        Text(
            "accepted and TV are exact over the contexts at the first position; measured and "
            "the chi-square test come from the tokens sampled"
        )
    )
    for title, column in (("acceptance (position 1)", 3), ("exact speedup", 4)):
        out.print(Text(f"{title} by rule:", style="bold"))
        curve = plain_table(("T", "top-p", *RULES))
        points = sorted({(c[0], c[1]) for c in curves})
        for t, top_p in points:
            values = {c[2]: c[column] for c in curves if (c[0], c[1]) == (t, top_p)}
            cells = [
                speedup_text(values[rule]) if column == 4 else f"{values[rule]:.3f}"
                for rule in RULES
            ]
            curve.add_row(f"{t:g}", f"{top_p:g}", *cells)
        out.print(curve)


def _print_ranks(scenario: Any, by_rank: dict[str, Any]) -> None:
    """Acceptance by rank at a tree node, and the flag that gives a tree scenario the
    scenario's rule's (shell-quoted)."""
    import shlex

    from rich.text import Text

    from engine.acceptance.distribution import rank_probs_text
    from spectui.render import console, plain_table

    out = console()
    ranks = len(next(iter(by_rank.values())))
    out.print(Text(f"acceptance by rank at a tree node of {ranks} candidates:", style="bold"))
    table = plain_table(("rule", *(f"p{c + 1}" for c in range(ranks)), "sum"), left=("rule",))
    for rule, values in by_rank.items():
        table.add_row(rule, *(f"{v:.3f}" for v in values), f"{sum(values):.3f}")
    out.print(table)
    flag = shlex.quote(rank_probs_text(by_rank[scenario.accept_rule]))
    out.print(Text(f"a tree with the {scenario.accept_rule} rule: --rank-probs {flag}"))
