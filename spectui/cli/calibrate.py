"""``spectui calibrate LOGFILE``: from serving logs to a K you can trust.

Parses the speculative-decoding metrics in a log (vLLM v0 and v1 lines, a Prometheus
scrape, ``vllm bench serve`` and the offline example's summary, SGLang's ``accept len``,
llama.cpp; engine.calibrate.logs), pools the windows by their counts, fits the acceptance
models and chooses one (engine.calibrate.fit), then, under the scenario's cost model (the
flags, or a linear cost fitted from a K sweep with ``--cost-points``), prints the
recommended K, its speedup with an interval that carries the fit's uncertainty, every K
within 2 % of the best, the change against the K the log was recorded at, and the
recommendation as each serving engine's configuration.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

from engine.calibrate import VLLM_METHODS
from engine.core.config import K_MAX, ConfigError
from spectui.cli.flags import add_scenario_flags, config_from_args
from spectui.errors import UsageError, bounded_int

REJECTED_SHOWN = 20  # rejected windows listed in the text output (--json: all it kept)


def add_parser(sub: Any) -> None:
    """The ``calibrate`` subcommand, with every scenario flag."""
    cal = sub.add_parser(
        "calibrate",
        help="fit acceptance from serving logs; recommend K and emit engine configs",
        description="Read speculative-decoding metrics from a serving log (vLLM, SGLang, "
        "llama.cpp), fit the acceptance, and recommend K under a cost model (the scenario "
        "flags, or --cost-points from a K sweep), with the configuration for each engine.",
    )
    cal.add_argument("logfile", type=Path, help="the log, or - for standard input")
    cal.add_argument("--preset", metavar="NAME|PATH", help="the scenario's preset; flags override")
    cal.add_argument(
        "--cost-points",
        metavar="CSV",
        type=Path,
        help="a K sweep: rows k,mean_length,tpot (tpot in any unit; a row with k = 0 is the "
        "plain-decoding baseline); fits the linear cost's fixed and per-token terms",
    )
    cal.add_argument(
        "--calibrate-k-max",
        type=bounded_int("--calibrate-k-max", 64),
        default=16,
        metavar="N",
        help="largest K to consider",
    )
    cal.add_argument(
        "--log-k",
        type=bounded_int("--log-k", K_MAX),
        metavar="N",
        help="the K the log was recorded at, where its lines do not say (SGLang accept len, "
        "old llama.cpp)",
    )
    cal.add_argument(
        "--method",
        default="draft_model",
        choices=VLLM_METHODS,
        metavar="METHOD",
        help=f"the speculative method to emit (vLLM's name: {', '.join(VLLM_METHODS)}; "
        "default draft_model)",
    )
    cal.add_argument(
        "--family",
        action="store_true",
        help="also fit the distribution model's family to the per-position rates: which "
        "acceptance rule and temperature are consistent with them (about 2 s)",
    )
    add_scenario_flags(cal)
    cal.add_argument("--json", action="store_true", help="print everything as one JSON object")


def read_cost_points(path: Path) -> tuple[list[tuple[int, float, float]], float]:
    """The (K, mean acceptance length, TPOT) rows of a K sweep and the baseline TPOT (the
    row with K = 0), read by :func:`engine.calibrate.cost_points.read_cost_points`;
    UsageError naming the flag, the file, the row and the column when one is malformed."""
    from engine.calibrate.cost_points import CostPointsError
    from engine.calibrate.cost_points import read_cost_points as read

    try:
        return read(path)
    except CostPointsError as err:
        raise UsageError(f"--cost-points: {err}") from None


def command(args: argparse.Namespace) -> int:
    import sys

    from engine.calibrate.cost_points import STEP_US
    from engine.calibrate.fit import (
        CalibrationError,
        calibrate,
        emit,
        fit_linear_cost,
        linear_cost_values,
        recommend,
    )
    from engine.calibrate.logs import LogError, parse_log_file, parse_log_lines
    from engine.core.files import input_lines

    try:  # streamed, a line at a time: a log of any size
        if str(args.logfile) == "-":
            stream = getattr(sys.stdin, "buffer", None)  # none: a text stream put there
            lines = (
                input_lines(stream)
                if stream is not None
                else (part for line in sys.stdin for part in line.splitlines())
            )
            parsed = parse_log_lines(lines, "<stdin>")
        else:
            parsed = parse_log_file(args.logfile)
    except LogError as err:
        raise UsageError(str(err)) from None
    try:
        scenario = config_from_args(args)
    except ConfigError as err:
        raise UsageError(str(err)) from None
    cost_note = ""
    if args.cost_points is not None:
        points, baseline = read_cost_points(args.cost_points)
        fixed, per_token = fit_linear_cost(points, baseline)
        try:
            scenario = scenario.replace(**linear_cost_values((fixed, per_token), STEP_US))
        except ConfigError as err:  # a line through far-apart K extrapolated to K = 0
            raise UsageError(
                f"--cost-points: {args.cost_points}: the fitted cost, {fixed:.4g} + "
                f"{per_token:.4g} x K target steps, is outside the linear cost's range ({err})"
            ) from None
        cost_note = (
            f"linear cost fitted from {len(points)} K points of {args.cost_points}: a cycle "
            f"costs {fixed:.3f} + {per_token:.3f} x K target steps"
        )
        if fixed < 1.0 or per_token < 0.0:
            cost_note += (
                "; priced as 1 + ... steps with no negative term (a speculative cycle cannot "
                "cost less than the plain step it contains): check the points"
            )
    try:
        cal = calibrate(parsed.windows, k=args.log_k)
    except CalibrationError as err:
        hint = "" if args.log_k is not None else " (--log-k N)"
        raise UsageError(f"{args.logfile}: {err}{hint}") from None
    rec = recommend(cal, scenario, k_max=args.calibrate_k_max)
    configs = emit(rec, cal, args.method)
    adaptive = adaptive_note(cal, scenario, rec)
    family = _family_fits(cal) if args.family else None
    if args.json:
        payload = _payload(parsed, cal, rec, configs, cost_note)
        payload["adaptive"] = adaptive
        if family is not None:
            payload["family"] = [
                {**{k: _safe(v) for k, v in f.__dict__.items()}, "consistent": f.consistent}
                for f in family
            ]
        print(json.dumps(payload, default=_plain))
        return 0
    _print(parsed, cal, rec, configs, cost_note, scenario)
    from rich.text import Text

    from spectui.render import console

    console().print(Text(f"adaptive: {adaptive}"))
    if family is not None:
        _print_family(family)
    return 0


def _family_fits(cal: Any) -> list[Any]:
    """The distribution family's fits to the per-position counts (engine.calibrate.family_fit);
    UsageError when the log gives none."""
    if not cal.positions:
        raise UsageError(
            "--family: the log gives no per-position counts (only a mean acceptance length)"
        )
    from engine.calibrate.family_fit import fit_rules

    return fit_rules([p.accepted for p in cal.positions], [p.reached for p in cal.positions])


def _print_family(fits: list[Any]) -> None:
    from rich.text import Text

    from engine.calibrate.family_fit import verdict
    from spectui.render import console, plain_table

    out = console()
    out.print(
        Text(
            "the distribution family (its defaults, a temperature mismatch c growing by g a "
            "position), by rule:"
        ),
        soft_wrap=True,
    )
    table = plain_table(("rule", "T", "T 95 %", "c", "g", "G^2 p", "fits"), left=("rule", "fits"))
    for f in fits:
        table.add_row(
            f.rule,
            f"{f.temperature:g}",
            f"{f.low:g}-{f.high:g}",
            f"{f.size:.3g}" if math.isfinite(f.size) else "-",
            f"{f.growth:g}" if math.isfinite(f.growth) else "-",
            f"{f.p_value:.3g}",
            "yes" if f.consistent else "no",
        )
    out.print(table)
    out.print(Text(verdict(fits), style="bold"), soft_wrap=True)


def adaptive_note(cal: Any, scenario: Any, rec: Any) -> str:
    """Whether an engine's adaptive setting would beat the recommended fixed K on the
    calibrated scenario: Hugging Face's heuristic (Transformers'
    ``num_assistant_tokens_schedule="heuristic"``) by its exact value. Every model a log
    can calibrate is i.i.d. across cycles, where the arena finds the best fixed K within
    noise of the oracle, so this says why no adaptive setting is emitted (or emits it)."""
    from engine.analysis.formatting import speedup_text
    from engine.simulate.policies import exact_speedup

    config = cal.config(scenario.replace(**{"shape.name": "chain"})).replace(
        **{"policy.name": "hf_heuristic", "k": min(rec.k, scenario.k_max)}
    )
    hf = exact_speedup(config)
    if hf > rec.speedup:
        return (
            f"Hugging Face's heuristic ({speedup_text(hf)}) beats fixed K = {rec.k} "
            f"({speedup_text(rec.speedup)}): Transformers num_assistant_tokens_schedule="
            f"'heuristic', num_assistant_tokens={rec.k}"
        )
    return (
        f"none emitted: the fitted acceptance is i.i.d. across cycles, and Hugging Face's "
        f"heuristic gives {speedup_text(hf)} against {speedup_text(rec.speedup)} for fixed "
        f"K = {rec.k} (spectui arena compares every policy)"
    )


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'s' * (n != 1)}"


def _short(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    if isinstance(value, str) and "," in value:  # a list of rates
        return ",".join(f"{float(v):.3g}" for v in value.split(","))
    return str(value)


def _plain(value: Any) -> Any:
    if hasattr(value, "tolist"):
        return value.tolist()
    return str(value)


def _safe(value: Any) -> Any:
    return None if isinstance(value, float) and not math.isfinite(value) else value


def _payload(parsed: Any, cal: Any, rec: Any, configs: dict[str, str], note: str) -> dict[str, Any]:
    return {
        "windows": parsed.used,
        "rejected": [
            {"line": w.line, "source": w.source, "problems": list(w.problems)}
            for w in parsed.rejected
        ],
        "rejected_not_listed": parsed.rejected_unlisted,
        "skipped_lines": parsed.skipped,
        "drafts": cal.drafts,
        "k": cal.k,
        "positions": [
            {
                "position": p.position,
                "reached": p.reached,
                "accepted": p.accepted,
                "rate": p.rate,
                "low": p.low,
                "high": p.high,
            }
            for p in cal.positions
        ],
        "models": [
            {
                "name": m.name,
                "values": m.values,
                "criterion": _safe(m.criterion),
                "rms_error": _safe(m.rms_error),
                "chosen": m is cal.chosen,
            }
            for m in cal.models
        ],
        "notes": list(cal.notes),
        "recommendation": {
            "k": rec.k,
            "speedup": rec.speedup,
            "low": rec.low,
            "high": rec.high,
            "band": list(rec.band),
            "log_k": rec.log_k,
            "log_speedup": _safe(rec.log_speedup),
            "change": _safe(rec.change),
            "curve": [{"k": k, "speedup": s, "low": lo, "high": hi} for k, s, lo, hi in rec.curve],
        },
        "cost": note,
        "configs": configs,
    }


def _print(
    parsed: Any, cal: Any, rec: Any, configs: dict[str, str], note: str, scenario: Any
) -> None:
    from rich.text import Text

    from engine.analysis.formatting import cost_setting_text, speedup_text
    from spectui.render import console, plain_table

    out = console()
    sources = ", ".join(cal.sources)
    k_text = f", K = {cal.k}" if cal.k else ""
    drafts = f"{cal.drafts:,.0f} drafts" if cal.drafts else "drafts unknown"
    out.print(
        Text(
            f"Calibration: {_count(parsed.used, 'window')} ({sources}), {drafts}"
            f"{k_text}; {parsed.rejected_count:,} rejected, {_count(parsed.skipped, 'line')} "
            "skipped",
            style="bold",
        )
    )
    for window in parsed.rejected[:REJECTED_SHOWN]:
        out.print(Text(f"  rejected line {window.line}: {'; '.join(window.problems)}"))
    if parsed.rejected_count > REJECTED_SHOWN:
        more = parsed.rejected_count - REJECTED_SHOWN
        from engine.calibrate.logs import POOL_AFTER

        listed = f"the first {POOL_AFTER:,}" if parsed.rejected_unlisted else "them"
        out.print(Text(f"  and {more:,} more rejected windows (--json lists {listed})"))
    if cal.positions:
        table = plain_table(("position", "reached", "accepted", "rate", "95 %"))
        for p in cal.positions:
            table.add_row(
                str(p.position),
                f"{p.reached:,.0f}",
                f"{p.accepted:,.0f}",
                f"{p.rate:.3f}",
                f"{p.low:.3f}-{p.high:.3f}",
            )
        out.print(Text("conditional acceptance by position:"))
        out.print(table)
    words = ("model", "parameters", "")
    models = plain_table(("model", "parameters", "criterion", "fit error", ""), left=words)
    for m in cal.models:
        params = ", ".join(
            f"{k.rsplit('.', 1)[-1]}={_short(v)}" for k, v in m.values.items() if k != "draft_model"
        )
        models.add_row(
            m.name,
            params,
            f"{m.criterion:.1f}" if math.isfinite(m.criterion) else "—",
            f"{m.rms_error:.3f}" if math.isfinite(m.rms_error) else "—",
            "chosen" if m is cal.chosen else "",
        )
    out.print(models)
    for line in cal.notes:
        out.print(Text(f"note: {line}"), soft_wrap=True)
    if note:
        out.print(Text(note), soft_wrap=True)
    observed = len(cal.positions)
    if observed and rec.k > observed:
        out.print(
            Text(
                f"note: K = {rec.k} drafts beyond the {observed} positions the log observed: "
                f"the fitted {cal.chosen.name} model extrapolates there"
            ),
            soft_wrap=True,
        )
    out.print(Text(f"cost: {cost_setting_text(scenario)}"))
    band = rec.band
    band_text = f"K {band[0]}-{band[-1]}" if len(band) > 1 else f"K {band[0]}"
    interval = (
        f"95 %: {speedup_text(rec.low)}-{speedup_text(rec.high)}"
        if cal.positions or cal.chosen.interval
        else "interval unknown: the log gives no draft count"
    )
    out.print(
        Text(
            f"recommended K = {rec.k}: speedup {speedup_text(rec.speedup)} ({interval}); "
            f"within 2 % of the best: {band_text}",
            style="bold",
        )
    )
    if rec.log_k is not None and rec.log_speedup is not None and rec.change is not None:
        out.print(
            Text(
                f"at the log's K = {rec.log_k}: {speedup_text(rec.log_speedup)}; K = {rec.k} "
                f"changes it by {rec.change:+.1%}"
            )
        )
    out.print(Text("configuration:"))
    for engine, text in configs.items():  # one line each, to copy
        out.print(Text(f"  {engine}: {text}"), soft_wrap=True)
