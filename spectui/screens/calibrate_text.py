"""The Calibrate screen's words and tables (:mod:`spectui.screens.calibrate`), as plain
functions of what the analysis found: a window's row, the recommendation, the engines'
settings, the models' table, and what ``f`` sends to the form (:func:`sendable`)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.table import Table
from rich.text import Text

from spectui.widgets.common import fmt

if TYPE_CHECKING:
    from engine.core.config import SpecConfig

PASTED = "pasted text"
# Significant digits tried, fewest first, for the fitted values sent to the form: the first
# whose exact speedup shows as the recommendation's does (sendable).
SEND_DIGITS = range(4, 10)


def source_label(source: str) -> str:
    """How the status line names an input: "pasted text", or a file's name."""
    return source if source == PASTED else Path(source).name


def _number(value: float | None, digits: int) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if float(value).is_integer():
        return f"{value:.0f}"
    return f"{value:.{digits}f}"


def window_row(window: Any, used: bool) -> tuple[str, ...]:
    """A window's cells: line, source, drafts, K, M, status."""
    status = "used" if used else "rejected: " + "; ".join(window.problems or ("?",))
    return (
        str(window.line),
        window.source,
        _number(window.drafts, 1),
        "—" if window.k is None else str(window.k),
        fmt(window.mean_length, 2) if window.mean_length is not None else "—",
        status,
    )


def _change_text(rec: Any) -> str:
    if rec.log_k is None or rec.log_speedup is None:
        return "the log does not say which K it was recorded at"
    change = rec.change if rec.change is not None else rec.speedup / rec.log_speedup - 1.0
    return (
        f"At the log's K = {rec.log_k}: {fmt(rec.log_speedup, speedup=True)}x; "
        f"K = {rec.k} changes that by {change * 100:+.1f} %"
    )


def scenario_label(fitted: SpecConfig) -> str:
    """What K is recommended for: the fitted acceptance in the form's scenario."""
    from engine.analysis.formatting import acceptance_text, cost_setting_text

    return f"{acceptance_text(fitted)}; {cost_setting_text(fitted)}"


def recommendation_text(rec: Any, counted: bool = True) -> str:
    """The Recommend pane's head: K, speedup and interval (``counted``: the log gives the
    draft count the interval comes from), the band, the change against the log's K."""
    band = ", ".join(str(k) for k in rec.band)
    low, high = fmt(rec.low, speedup=True), fmt(rec.high, speedup=True)
    interval = (
        f"(95 %: {low}-{high}, the fit's uncertainty)"
        if counted
        else "(no interval: no draft count in the log)"
    )
    return "\n".join(
        [
            f"Recommended K = {rec.k}: speedup {fmt(rec.speedup, speedup=True)}x {interval}",
            f"Within 2 % of the best: K = {band}",
            _change_text(rec),
        ]
    )


def _rounded(key: str, value: object, digits: int) -> object:
    """A fitted value to ``digits`` significant digits (each rate of a list of rates)."""
    if isinstance(value, float):
        return float(f"{value:.{digits}g}")
    if key == "acceptance.rates" and isinstance(value, str):
        return ",".join(f"{float(rate):.{digits}g}" for rate in value.split(","))
    return value


def sendable(cal: Any, scenario: SpecConfig, rec: Any) -> SpecConfig:
    """What ``f`` sends: ``scenario`` (its cost model and length kept) with the recommended
    K, a fixed K policy and a chain (what the recommendation is for), and the chosen model's
    values to the fewest :data:`SEND_DIGITS` significant digits whose exact speedup shows as
    the recommendation's (all of them if none does). Runs in the worker: it loads the engine."""
    from engine.core.config import DEFAULTS
    from engine.core.parts import POLICY, SHAPE
    from engine.simulate.exact import exact_metrics

    # The default policy and shape: a fixed K on a chain.
    chain_of_k = {key: DEFAULTS[key] for key in (POLICY.selector, SHAPE.selector)}
    base = scenario.replace(**chain_of_k, k=rec.k)
    shown = fmt(rec.speedup, speedup=True)
    for digits in SEND_DIGITS:
        values = {key: _rounded(key, v, digits) for key, v in cal.chosen.values.items()}
        config = base.replace(**values)
        if fmt(exact_metrics(config)["speedup_exact"], speedup=True) == shown:
            return config
    return cal.config(base)


def sent_text(sent: SpecConfig, cal: Any) -> str:
    """The toast after ``f``: each field set, by the form's labels and as the form shows it."""
    from spectui.widgets.param_form import LABELS

    keys = [*cal.chosen.values, "k", "policy.name", "shape.name"]
    fields = ", ".join(f"{LABELS.get(key, key)} {sent.get(key)}" for key in keys)
    return f"Set in the form: {fields} (cost {sent.cost_model}, as before)"


def details_text(rec: Any, scenario_label: str, adaptive: str) -> str:
    """Under the engines' settings: the speedup at every K, the scenario, and whether an
    adaptive setting would do better (``adaptive``, when known)."""
    lines = []
    if getattr(rec, "curve", None):
        points = "  ".join(f"{k}:{fmt(s, 2, speedup=True)}" for k, s, *_ in rec.curve)
        lines.append(f"Speedup by K: {points}")
    lines.append(f"For the form's scenario: {scenario_label}")
    if adaptive:
        lines.append(f"Adaptive: {adaptive}")
    return "\n".join(lines)


def settings_table(emitted: dict[str, str]) -> Table:
    """Each serving engine's setting for the recommended K: its name, then the setting,
    wrapped within the pane's width (at spaces, a long word folded), none of it cut."""
    table = Table.grid(padding=(0, 2))
    table.add_column(no_wrap=True)
    table.add_column(overflow="fold")
    for name, text in emitted.items():
        table.add_row(name, Text(text))
    return table


def models_table(cal: Any, criterion_name: str) -> Table:
    """One row per model: parameters, fit error (RMS of the conditional rates) and the
    criterion; ``*`` marks the chosen model."""
    table = Table(box=None, padding=(0, 1, 0, 0), show_edge=False, header_style="bold")
    for name in ("model", "par", "rms", criterion_name):
        table.add_column(name, justify="left" if name == "model" else "right")
    for model in cal.models:
        mark = "*" if model.name == cal.chosen.name else " "
        table.add_row(
            f"{mark}{model.name}",
            str(model.parameters),
            _figure(model.rms_error, 3),
            _figure(model.criterion, 1),
        )
    return table


def _figure(value: float, digits: int) -> str:
    return "—" if math.isnan(value) else f"{value:.{digits}f}"


def counts_text(parsed: Any) -> str:
    """The windows used, and rejected if any: "12 used, 3 rejected"."""
    rejected = f", {parsed.rejected_count:,} rejected" if parsed.rejected else ""
    return f"{parsed.used:,} used{rejected}"
