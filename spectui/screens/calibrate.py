"""The Calibrate screen: serving-log lines in, a fitted acceptance model and a K out.

A person pastes log lines (the text area) or types a log file's path (enter loads it). A
thread worker parses them (:mod:`engine.calibrate.logs`), fits the acceptance models and
recommends K for the form's scenario (:mod:`engine.calibrate.fit`); the screen shows

* **Windows**: each measurement window parsed (line, source, drafts, K, M, used or why it
  was rejected) and how many lines were skipped;
* **Fit**: the observed conditional per-position rates with their 95 % intervals and the
  chosen model's fitted curve (plotext), every model's fit error and criterion, the notes;
* **Recommend**: the recommended K, its predicted speedup and interval, the tolerance band,
  the change against the log's K, and each serving engine's setting for it.

``f`` (``ctrl+f`` from a text field too) sends the recommendation to the form and closes the
screen: the chosen model's values (rounded, :func:`sendable`), the recommended K, a fixed
K policy and a chain (what K was recommended for), the form's cost model kept; a toast says
what was set. Escape closes it.
Edits to the text are analysed after a pause (:data:`DEBOUNCE_S`);
:meth:`CalibrateScreen.analyse_now` runs a pending analysis at once.

The calibration package is imported by the worker, never at import time: the app starts
(and this screen opens) whether or not it is there.
"""

from __future__ import annotations

import importlib
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, ScrollableContainer, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen
from textual.timer import Timer
from textual.widgets import DataTable, Input, Static, TabbedContent, TabPane, TextArea
from textual.worker import Worker, get_current_worker

from spectui.confined import OutsideFiles, confine
from spectui.plotting.terminal import (
    GLYPHS,
    Drawing,
    LegendEntry,
    legend_lines,
    nice_ticks,
    spaced_ticks,
)
from spectui.widgets.common import ReportsWorkerErrors, failure_reason, fmt
from spectui.widgets.footer import KeysFooter
from spectui.widgets.plot import Plot

if TYPE_CHECKING:
    from engine.core.config import SpecConfig

DEBOUNCE_S = 0.5  # an edit to the pasted text is analysed after this pause
ROWS_MAX = 1000  # windows listed in the table (the fit uses every one)
PASTED = "pasted text"
MARK_ERROR = "✗"
HINT = "paste log lines above, or type a log file's path and press enter"
NO_K = "no K in the log: type it in 'log K' (top right), enter"
OBSERVED_COLOR = "red+"
FIT_COLOR = "blue+"
OBSERVED_GLYPH = "●"
INTERVAL_GLYPH = "│"
# The panes, shown by their number key.
PANES = (("cal-tab-windows", "Windows"), ("cal-tab-fit", "Fit"), ("cal-tab-recommend", "Recommend"))
FIT_SIDE_WIDTH = 40  # columns of the Fit pane's models and notes, beside the plot
# Significant digits tried, fewest first, for the fitted values sent to the form: the first
# whose exact speedup shows as the recommendation's does (sendable).
SEND_DIGITS = range(4, 10)


@dataclass
class Analysis:
    """What one analysis found so far (the worker posts it after each stage).

    ``parsed``: the ParseResult; ``calibration`` and ``recommendation`` once fitted;
    ``curves``: each fitted model's conditional rates at the observed positions;
    ``emitted``: each engine's setting for the recommended K; ``sent``: the configuration
    ``f`` sends (:func:`sendable`); ``adaptive``: whether an
    engine's adaptive setting would beat it (spectui.cli.calibrate.adaptive_note);
    ``error``: why it stopped (one line; ``wants_k``: the K the log was recorded at is
    needed); ``note``: why there is no recommendation (the form is invalid)."""

    generation: int
    source: str
    parsed: Any = None
    calibration: Any = None
    recommendation: Any = None
    curves: dict[str, list[float]] = field(default_factory=dict)
    emitted: dict[str, str] = field(default_factory=dict)
    sent: Any = None  # what ``f`` sends to the form (sendable), with the recommendation
    adaptive: str = ""
    error: str | None = None
    wants_k: bool = False
    note: str | None = None
    done: bool = False


class AnalysisReady(Message):
    """The worker's news: ``analysis`` as far as it got."""

    def __init__(self, analysis: Analysis) -> None:
        super().__init__()
        self.analysis = analysis


def _module(name: str) -> Any:
    """``engine.calibrate.<name>``, imported when first needed (tests may stand in for it)."""
    return importlib.import_module(f"engine.calibrate.{name}")


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
    from engine.simulate.exact import exact_metrics

    base = scenario.replace(policy="fixed", shape="chain", k=rec.k)
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


class RatesPlot(Plot):
    """Observed conditional rates with their 95 % intervals, and the chosen model's curve;
    the legend goes to the ``#cal-legend`` line under it."""

    data: tuple[list[Any], list[float], str] | None = None

    def show(self, positions: list[Any], fitted: list[float], label: str) -> None:
        """Draw ``positions`` (observed) and ``fitted`` (named ``label``), and the legend."""
        self.data = (positions, fitted, label)
        drawing = self.draw(positions, fitted, label)
        width = max(10, self.screen.size.width - FIT_SIDE_WIDTH - 2)
        lines = legend_lines(drawing, width, color=not self.app.no_color)
        self.screen.query_one("#cal-legend", Static).update(Text.from_ansi("\n".join(lines)))

    def on_resize(self) -> None:
        # The y ticks depend on the height (and the pane is sized only once shown).
        if self.data is not None:
            self.show(*self.data)

    def draw(self, positions: list[Any], fitted: list[float], label: str) -> Drawing:
        color = not self.app.no_color
        drawing = Drawing()
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        plt.xlabel("draft position i")
        plt.ylabel("P(accept i | i-1 accepted)")
        xs = [p.position for p in positions]
        lows, highs = [p.low for p in positions], [p.high for p in positions]
        if fitted:  # first: the observed marks are drawn over it
            plt.plot(xs[: len(fitted)], fitted, marker="hd", color=FIT_COLOR)
        for x, low, high in zip(xs, lows, highs, strict=True):
            plt.plot([x, x], [low, high], marker=INTERVAL_GLYPH, color=OBSERVED_COLOR)
        plt.scatter(xs, [p.rate for p in positions], marker=OBSERVED_GLYPH, color=OBSERVED_COLOR)
        drawing.legend.append(
            LegendEntry("observed, 95 % interval", OBSERVED_GLYPH, OBSERVED_COLOR)
        )
        if fitted:
            drawing.legend.append(LegendEntry(label, GLYPHS["hd"], FIT_COLOR))
        low = max(0.0, min([*lows, *fitted]) - 0.02)
        high = min(1.0, max([*highs, *fitted]) + 0.02)
        plt.ylim(low, high)
        ticks = nice_ticks(low, high, max(2, self.size.height - 4))
        plt.yticks(ticks, [f"{t:g}" for t in ticks])
        plt.xlim(0.5, max(xs) + 0.5)
        plt.xticks(*spaced_ticks(xs, [str(x) for x in xs], max(10, self.size.width - 8)))
        if not color:
            drawing.legend = [LegendEntry(e.label, e.glyph) for e in drawing.legend]
        self.refresh()
        return drawing


class CalibrateScreen(ReportsWorkerErrors, ModalScreen["SpecConfig | None"]):
    """Calibrate from serving logs; dismisses with the form's scenario carrying the fitted
    model (``f``), or None (escape)."""

    DEFAULT_CSS = """
    CalibrateScreen {
        background: $background;
    }
    CalibrateScreen #cal-title {
        height: 1;
        padding: 0 1;
        text-style: bold;
    }
    CalibrateScreen #cal-source {
        height: 1;
    }
    CalibrateScreen #cal-path {
        width: 1fr;
    }
    CalibrateScreen #cal-k {
        width: 12;
    }
    /* The log K is needed: shown in reverse video (seen without colours too). */
    CalibrateScreen #cal-k.-wanted {
        text-style: reverse bold;
    }
    CalibrateScreen #cal-text {
        height: 4;
        border: none;
        padding: 0 1;
    }
    CalibrateScreen #cal-status {
        height: auto;
        max-height: 2;
        padding: 0 1;
        color: $text-muted;
    }
    CalibrateScreen #cal-status.-error {
        color: $text-error;
        text-style: bold;
        border-left: outer $error;
        padding: 0;
    }
    CalibrateScreen #cal-tabs {
        height: 1fr;
    }
    CalibrateScreen TabPane {
        padding: 0;
        height: 1fr;
    }
    CalibrateScreen #cal-windows {
        height: 1fr;
    }
    CalibrateScreen #cal-fit-left {
        display: none;
    }
    CalibrateScreen #cal-skipped, CalibrateScreen #cal-legend {
        height: auto;
        padding: 0 1;
        color: $text-muted;
    }
    CalibrateScreen #cal-fit-right {
        height: 1fr;
    }
    CalibrateScreen #cal-plot {
        height: 1fr;
    }
    CalibrateScreen #cal-models, CalibrateScreen #cal-recommend, CalibrateScreen #cal-details {
        height: auto;
        padding: 0 1;
    }
    /* Wrapped within the pane: at 80 columns the settings are wider than it. */
    CalibrateScreen #cal-settings {
        width: 1fr;
        height: auto;
        padding: 0 1;
    }
    """

    BINDINGS = [
        Binding("escape", "close", "Close"),
        # f outside the text fields; ctrl+f in them too (no field takes it).
        Binding("f,ctrl+f", "send", "Send to form", tooltip="Load the fitted model into the form"),
        # The app's copy key (a modal screen hides the app's bindings): the engine flags.
        Binding("f4", "app.copy", "Copy flags", tooltip="Copy the engine flags", show=False),
        *(
            Binding(str(i), f"pane('{pane}')", title, show=False)
            for i, (pane, title) in enumerate(PANES, 1)
        ),
    ]

    def __init__(self, scenario: SpecConfig | None) -> None:
        super().__init__()
        self.scenario = scenario  # the form's configuration: None when it is invalid
        self.analysis: Analysis | None = None
        self._generation = 0
        self._timer: Timer | None = None
        self._rows: list[tuple[Any, bool]] = []  # the table's windows, and whether used
        self._windows_note = ""
        self._last: tuple[str, str, str | None] | None = None  # what was analysed last

    def compose(self) -> ComposeResult:
        yield Static("Calibrate from serving logs (vLLM, SGLang, llama.cpp)", id="cal-title")
        with Horizontal(id="cal-source"):
            yield Input(placeholder="log file path (enter loads it)", id="cal-path", compact=True)
            yield Input(
                placeholder="log K",
                id="cal-k",
                compact=True,
                type="integer",
                tooltip="The K the log was recorded at, where it does not say (SGLang)",
            )
        yield TextArea(id="cal-text", placeholder="…or paste log lines here", soft_wrap=False)
        yield Static(HINT, id="cal-status")
        with TabbedContent(id="cal-tabs"):
            with TabPane("1 Windows", id="cal-tab-windows"):
                yield DataTable(id="cal-windows", cursor_type="row", zebra_stripes=True)
                yield Static("", id="cal-skipped")
            with TabPane("2 Fit", id="cal-tab-fit"), Horizontal():
                with Vertical(id="cal-fit-left"):
                    yield RatesPlot(id="cal-plot")
                    yield Static("", id="cal-legend")
                with VerticalScroll(id="cal-fit-right"):
                    yield Static("", id="cal-models")
            with TabPane("3 Recommend", id="cal-tab-recommend"), ScrollableContainer():
                yield Static("", id="cal-recommend")
                yield Static("", id="cal-settings")
                yield Static("", id="cal-details")
        yield KeysFooter()

    def on_mount(self) -> None:
        table = self.query_one("#cal-windows", DataTable)
        for name, width in (("line", 5), ("source", 15), ("drafts", 8), ("K", 3), ("M", 5)):
            table.add_column(name, width=width, key=name)
        table.add_column("status", key="status")
        self.query_one("#cal-text", TextArea).focus()

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        event.stop()  # the app's handler is for its own views' tabs

    # --- input ------------------------------------------------------------------------------
    @property
    def pending(self) -> bool:
        """An edit waits for its analysis (the debounce timer runs)."""
        return self._timer is not None

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        event.stop()
        if self._timer is not None:
            self._timer.stop()
        self._timer = self.set_timer(DEBOUNCE_S, self.analyse_now)

    def analyse_now(self) -> None:
        """Analyse the pasted text now (a pending timer is dropped)."""
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        text = self.query_one("#cal-text", TextArea).text
        if not text.strip():
            self._generation += 1  # whatever is under way is stale
            self._status(HINT)
            return
        single = text.strip()
        if "\n" not in single and Path(single).expanduser().is_file():
            self.load_file(single)  # a path typed (or pasted) where the log goes
            return
        self._start(PASTED, text=text)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Enter in the path loads the file (or, empty, analyses the text); enter in the
        log K analyses the last input again with it."""
        event.stop()
        if event.input.id == "cal-k" and self._last is not None:
            source, text, path = self._last
            self._start(source, text=text, path=path)
            return
        path = self.query_one("#cal-path", Input).value.strip()
        if path:
            self.load_file(path)
        else:
            self.analyse_now()

    def load_file(self, path: str) -> None:
        """Parse and fit the log file at ``path`` (``~`` expanded)."""
        self.query_one("#cal-path", Input).value = path
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        try:
            confine(path)  # a served app opens its own folders only
        except OutsideFiles as err:
            self._status(str(err), error=True)
            return
        self._start(path, path=str(Path(path).expanduser()))

    def _log_k(self) -> int | None:
        text = self.query_one("#cal-k", Input).value.strip()
        return int(text) if text.isdigit() and int(text) > 0 else None

    def _start(self, source: str, *, text: str = "", path: str | None = None) -> None:
        self._last = (source, text, path)
        self._generation += 1
        self._status(f"{source_label(source)}: parsing…")
        self._analyse(self._generation, source, text, path, self._log_k(), self.scenario)

    # --- the worker -------------------------------------------------------------------------
    @work(thread=True, exclusive=True, group="calibrate", exit_on_error=False)
    def _analyse(
        self,
        generation: int,
        source: str,
        text: str,
        path: str | None,
        log_k: int | None,
        scenario: SpecConfig | None,
    ) -> None:
        """Parse, then fit, then recommend; post what is known after each stage. Errors a
        person can act on (no usable line, an unreadable file, nothing to fit) end it with
        a one-line reason; anything else fails the worker (a notification)."""
        worker = get_current_worker()
        found = Analysis(generation, source)
        label = source_label(source)

        def post(**changes: Any) -> None:
            for name, value in changes.items():
                setattr(found, name, value)
            self.post_message(AnalysisReady(Analysis(**vars(found))))

        try:
            logs, fit = _module("logs"), _module("fit")
        except ImportError as err:
            post(error=f"the calibration engine is not available ({err})", done=True)
            return
        try:
            parsed = logs.parse_log_file(path) if path else logs.parse_log(text, source)
        except ValueError as err:  # LogError: one line, naming the input
            post(error=str(err), done=True)
            return
        post(parsed=parsed)
        if worker.is_cancelled:
            return
        try:
            cal = fit.calibrate(parsed.windows, k=log_k) if log_k else fit.calibrate(parsed.windows)
        except ValueError as err:  # CalibrationError: nothing to fit
            if log_k is None and all(w.k is None for w in parsed.windows):
                post(error=f"{label}: {NO_K}", wants_k=True, done=True)
            else:
                post(error=f"{label}: cannot fit: {err}", done=True)
            return
        positions = len(cal.positions)
        curves: dict[str, list[float]] = {}
        if positions:  # each model's rates where the log has observed ones
            curves = {
                m.name: list(fit.model_rates(m.name, m.values, positions)) for m in cal.models
            }
        post(calibration=cal, curves=curves)
        if scenario is None:
            post(note="form invalid: no K recommended", done=True)
            return
        if worker.is_cancelled:
            return
        rec = fit.recommend(cal, scenario)
        post(
            recommendation=rec, emitted=dict(fit.emit(rec, cal)), sent=sendable(cal, scenario, rec)
        )
        if worker.is_cancelled:
            return
        from spectui.cli.calibrate import adaptive_note

        post(adaptive=adaptive_note(cal, scenario, rec), done=True)

    def on_analysis_ready(self, message: AnalysisReady) -> None:
        message.stop()
        found = message.analysis
        if found.generation != self._generation:
            return  # an older text's analysis
        self.analysis = found
        label = source_label(found.source)
        self.query_one("#cal-k", Input).set_class(found.wants_k, "-wanted")
        if found.error is not None:
            self._status(f"{MARK_ERROR} {found.error}", error=True)
        elif found.done or found.recommendation is not None:
            self._status(self._summary(found))
        elif found.calibration is not None:
            self._status(f"{label}: {self._counts(found.parsed)} · recommending K…")
        else:
            self._status(f"{label}: {self._counts(found.parsed)} · fitting…")
        if found.parsed is not None:
            self._show_windows(found.parsed)
        self._show_fit(found.calibration, found.curves)
        self._show_recommendation(found)

    def worker_failed(self, worker: Worker[Any]) -> None:
        """The analysis raised something unexpected: say so (the app notifies the reason)."""
        self._status(f"{MARK_ERROR} calibration failed: {failure_reason(worker)}", error=True)

    # --- showing ----------------------------------------------------------------------------
    def _status(self, text: str, error: bool = False) -> None:
        status = self.query_one("#cal-status", Static)
        status.update(Text(text))
        status.set_class(error, "-error")

    @staticmethod
    def _counts(parsed: Any) -> str:
        rejected = f", {parsed.rejected_count:,} rejected" if parsed.rejected else ""
        return f"{parsed.used:,} used{rejected}"

    def _summary(self, found: Analysis) -> str:
        parts = [f"{source_label(found.source)}: {self._counts(found.parsed)}"]
        cal, rec = found.calibration, found.recommendation
        parts.append(cal.chosen.name)
        if rec is not None:
            parts.append(f"K = {rec.k} ({fmt(rec.speedup, speedup=True)}x)")
        elif found.note:
            parts.append(found.note.split(":")[0])  # the Recommend pane has all of it
        return " · ".join(parts)

    def _show_windows(self, parsed: Any) -> None:
        table = self.query_one("#cal-windows", DataTable)
        table.clear()
        rows = [(w, True) for w in parsed.windows] + [(w, False) for w in parsed.rejected]
        rows.sort(key=lambda row: row[0].line)
        self._rows = rows[:ROWS_MAX]
        for window, used in self._rows:
            table.add_row(*window_row(window, used))
        shown = "" if len(rows) <= ROWS_MAX else f" · the first {ROWS_MAX} of {len(rows)} shown"
        self._windows_note = (
            f"windows: {self._counts(parsed)} · {parsed.skipped} of {parsed.lines} lines "
            f"skipped (no metrics){shown}"
        )
        self.query_one("#cal-skipped", Static).update(self._windows_note)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        """Under the table: the highlighted window's whole status (a rejection's reasons
        are often wider than the table's column), then the counts."""
        event.stop()
        if not 0 <= event.cursor_row < len(self._rows):
            return
        window, used = self._rows[event.cursor_row]
        status = window_row(window, used)[-1]
        self.query_one("#cal-skipped", Static).update(
            Text(f"line {window.line}: {status}\n{self._windows_note}")
        )

    def _show_fit(self, cal: Any, curves: dict[str, list[float]]) -> None:
        """The plot and its legend (left; hidden without per-position rates), the models
        and the fit's notes (right, or the whole width without a plot)."""
        left = self.query_one("#cal-fit-left")
        right = self.query_one("#cal-fit-right")
        models = self.query_one("#cal-models", Static)
        if cal is None:
            left.display = False
            models.update("")
            return
        criterion = str(getattr(_module("fit"), "CRITERION", "criterion")).split(" ")[0]
        lines = [f"* chosen: {cal.chosen.name}, smallest {criterion}"]
        if len(cal.models) == 1:
            lines = [f"* {cal.chosen.name}: the only model these windows allow"]
        left.display = bool(cal.positions)
        right.styles.width = FIT_SIDE_WIDTH if cal.positions else "1fr"
        if cal.positions:
            label = f"fitted {cal.chosen.name}"
            self.query_one(RatesPlot).show(cal.positions, curves.get(cal.chosen.name, []), label)
        else:
            lines.insert(0, "No per-position rates in this log: nothing to plot.")
        models.update(Group(models_table(cal, criterion), Text("\n".join([*lines, *cal.notes]))))

    def _show_recommendation(self, found: Analysis) -> None:
        """The recommendation's head, each engine's setting, then the details."""
        head = self.query_one("#cal-recommend", Static)
        settings = self.query_one("#cal-settings", Static)
        details = self.query_one("#cal-details", Static)
        settings.update(settings_table(found.emitted))
        settings.display = bool(found.emitted)
        rec = found.recommendation
        if rec is None:
            head.update(found.note or ("recommending K…" if found.calibration else ""))
            details.update("")
            return
        assert self.scenario is not None
        cal = found.calibration
        head.update(Text(recommendation_text(rec, counted=bool(cal.drafts))))
        label = scenario_label(cal.config(self.scenario))
        details.update(Text(details_text(rec, label, found.adaptive)))

    # --- actions ----------------------------------------------------------------------------
    def action_send(self) -> None:
        """Close with the recommendation for the form (:func:`sendable`), and say what it sets."""
        found = self.analysis
        cal = found.calibration if found else None
        if found is None or cal is None:
            self.notify("Nothing fitted yet: paste log lines or load a file.", severity="warning")
            return
        if self.scenario is None:
            self.notify("The form is invalid: fix it first.", severity="error")
            return
        if found.sent is None:
            self.notify("Still recommending K: press f again in a moment.", severity="warning")
            return
        self.app.notify(sent_text(found.sent, cal))
        self.dismiss(found.sent)

    def action_close(self) -> None:
        self.dismiss(None)

    def action_pane(self, pane: str) -> None:
        """Show one of the panes (1 Windows, 2 Fit, 3 Recommend)."""
        self.query_one("#cal-tabs", TabbedContent).active = pane
