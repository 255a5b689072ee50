"""Analysis of the finished or partial sweep, from engine.analysis.analysis."""

from __future__ import annotations

import math
from typing import Any

from rich import box
from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

from spectui.widgets.common import ReportsWorkerErrors

PARETO_ROWS = 12
# The analysis runs on the UI thread: while a sweep runs, it is redrawn at most this often
# (a newer snapshot waits for its turn, and is then drawn: see RunsMixin._draw_analysis).
ANALYSIS_EVERY_S = 5.0
NO_SWEEP = "No sweep yet: run one in the Sweep view (F6)."
NO_ROWS_YET = (
    "The sweep is running; no rows are done yet. The analysis of the rows done so far "
    f"comes with the first of them, and follows the sweep (at most every {ANALYSIS_EVERY_S:g} s)."
)


def _f(value: Any, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _s(value: Any, digits: int = 3) -> str:
    """A speedup (engine.analysis.formatting.speedup_text: a loss never reads 1.000)."""
    from engine.analysis.formatting import speedup_text

    return speedup_text(float(value), digits, unit="", missing="—")


def _table(title: str, columns: list[str]) -> Table:
    table = Table(
        title=title, title_justify="left", title_style="bold", box=box.SIMPLE_HEAD, pad_edge=False
    )
    for column in columns:
        table.add_column(column, justify="right" if column != "model" else "left")
    return table


def render_analysis(frame: Any, partial: bool) -> Group:
    """Every analysis block of a sweep frame as rich renderables."""
    from engine.analysis import analysis
    from engine.analysis.report import chain_rows, config_text

    parts: list[Any] = []
    note = " (partial sweep)" if partial else ""
    frame, trees = chain_rows(frame)
    if trees:
        parts.append(
            Text(
                f"{trees} rows of token trees left out: this analysis is about a chain's K "
                "(the Tree view compares trees)\n"
            )
        )
        if frame.empty:
            return Group(*parts)
    col = analysis.speedup_column(frame)
    best = analysis.best_configuration(frame)
    # The configuration in the CLI's words: a newer model's or cost model's parameters
    # left at their defaults have no column of the frame.
    parts.append(
        Text.assemble(
            (f"Best configuration{note}", "bold"),
            f": {config_text(best)}: speedup {_s(best[col])}"
            f" ±{_f(float(best['speedup_ci95']))}, exact {_s(best['speedup_exact'])}\n",
        )
    )
    losing = analysis.losing_configurations(frame)
    lines = [
        f"[b]Losing configurations[/b] (speedup < 1): {losing['count']} of {losing['total']} rows"
        f" ({losing['distinct']} of {losing['distinct_total']} once rows differing only in a"
        " parameter their model ignores are merged)"
    ]
    if losing["count"]:
        lines.append(f"  cheapest draft among losers: cost ratio {losing['min_cost_ratio']:.3f}")
        for model, (param, value) in losing["max_quality"].items():
            lines.append(f"  {model}: losers have {param} up to {value:g}")
    parts.append(Text.from_markup("\n".join(lines) + "\n"))
    models = list(dict.fromkeys(frame["draft_model"]))
    for model in models:
        table = analysis.breakeven_by_cost_ratio(frame, model)
        if table.empty:
            continue
        out = _table(
            f"Break-even by cost ratio · {model}",
            ["c", "mean", "exact", "min", "max", "lose", "n"],
        )
        for r in table.itertuples():
            out.add_row(
                _f(r.cost_ratio, 2),
                _s(r.mean_speedup, 2),
                _s(r.mean_speedup_exact, 2),
                _s(r.min_speedup, 2),
                _s(r.max_speedup, 2),
                str(r.losing),
                str(r.configs),
            )
        parts.append(out)
    optimal = analysis.optimal_k(frame)
    for model in models:
        ranges = analysis.k_star_ranges(optimal, model)
        if ranges.empty:
            continue
        param = analysis.quality_parameter(model, optimal)
        out = _table(f"K* range per {param} · {model}", [param[:10], "K* min", "K* max"])
        for r in ranges.itertuples(index=False):
            out.add_row(f"{r[0]:g}", str(int(r[1])), str(int(r[2])))
        parts.append(out)
    front = analysis.pareto_front(frame)
    overhead = "compute_overhead" if col == "speedup" else "compute_overhead_limit"
    shown = f"first {PARETO_ROWS} of {len(front)}" if len(front) > PARETO_ROWS else len(front)
    out = _table(
        f"Pareto front: speedup vs compute overhead ({shown} configurations)",
        ["model", "K", "quality", "us", "speedup", "ovhd"],
    )
    for _, r in front.head(PARETO_ROWS).iterrows():
        param = analysis.quality_parameter(str(r["draft_model"]), frame)
        out.add_row(
            str(r["draft_model"])[:8],
            str(int(r["k"])),
            f"{param[:5]} {r[param]:g}",
            f"{r['draft_cost_us']:g}",
            _s(float(r[col])),
            _f(float(r[overhead]), 2),
        )
    parts.append(out)
    return Group(*parts)


class AnalysisView(ReportsWorkerErrors, VerticalScroll):
    """Re-renders when shown after the sweep frame changed. While a sweep runs, the rows
    done so far, and how many of how many they are."""

    can_focus = True

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.frame: Any = None
        self.partial = False
        self.total: int | None = None  # the sweep's rows in all, when known
        self.running = False  # rows of a sweep still running (else finished or cancelled)
        self.dirty = False

    def compose(self):
        yield Static(self._empty_text(), id="analysis-body")

    def on_mount(self) -> None:
        # Mounted when first shown: show the sweep (finished or partial) that came before.
        frame = getattr(self.app, "sweep_frame", None)
        if frame is not None and self.frame is None:
            self.set_frame(
                frame,
                partial=getattr(self.app, "sweep_partial", False),
                total=getattr(self.app, "sweep_total", None),
                running=getattr(self.app, "sweep_live", False),
            )
            self.render_now()

    def _empty_text(self) -> str:
        running = getattr(self.app, "_sweep_running", None)
        return NO_ROWS_YET if running is not None and running() else NO_SWEEP

    def set_frame(
        self, frame: Any, partial: bool, total: int | None = None, running: bool = False
    ) -> None:
        """The rows to analyse: all the sweep's (``partial`` False) or those done so far of
        ``total``, the sweep still ``running`` or cancelled."""
        self.frame, self.partial, self.total, self.running = frame, partial, total, running
        self.dirty = True

    def _progress(self) -> Text | None:
        """The line above a partial sweep's analysis: how many rows of how many."""
        if not self.partial:
            return None
        state = "running" if self.running else "cancelled"
        of = f" of {self.total:,}" if self.total else ""
        again = f"; redrawn as rows come, at most every {ANALYSIS_EVERY_S:g} s" * (
            state == "running"
        )
        return Text(f"Sweep {state}: {len(self.frame):,}{of} rows done, analysed here{again}\n")

    def render_now(self) -> None:
        body = self.query_one("#analysis-body", Static)
        if self.frame is None or not len(self.frame):
            body.update(self._empty_text())
            return
        if not self.dirty:
            return
        self.dirty = False
        try:
            found = render_analysis(self.frame, self.partial)
        except Exception as err:  # analysis of odd partial frames must not kill the app
            body.update(f"analysis failed: {type(err).__name__}: {err}")
            self.notify(f"Analysis failed: {err}", severity="error")
            return
        progress = self._progress()
        body.update(found if progress is None else Group(progress, found))
