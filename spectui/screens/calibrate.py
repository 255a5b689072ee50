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

The screen is made of: :mod:`~spectui.screens.calibrate_input` (the input and the worker),
:mod:`~spectui.screens.calibrate_analysis` (what the worker finds),
:mod:`~spectui.screens.calibrate_panes` (showing it), :mod:`~spectui.screens.calibrate_text`
(its words and tables) and :mod:`~spectui.screens.calibrate_plot` (the Fit plot).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, ScrollableContainer, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.timer import Timer
from textual.widgets import DataTable, Input, Static, TabbedContent, TabPane, TextArea
from textual.worker import Worker

from spectui.screens.calibrate_analysis import NO_K, Analysis, AnalysisReady
from spectui.screens.calibrate_input import HINT, LOG_K_LABEL, CalibrateInput
from spectui.screens.calibrate_panes import MARK_ERROR, ROWS_MAX, CalibratePanes
from spectui.screens.calibrate_plot import (
    FIT_COLOR,
    FIT_SIDE_WIDTH,
    INTERVAL_GLYPH,
    OBSERVED_COLOR,
    OBSERVED_GLYPH,
    RatesPlot,
)
from spectui.screens.calibrate_text import (
    PASTED,
    SEND_DIGITS,
    details_text,
    models_table,
    recommendation_text,
    scenario_label,
    sendable,
    sent_text,
    settings_table,
    source_label,
    window_row,
)
from spectui.widgets.common import ReportsWorkerErrors, failure_reason
from spectui.widgets.footer import KeysFooter

if TYPE_CHECKING:
    from engine.core.config import SpecConfig

__all__ = [
    "DEBOUNCE_S",
    "FIT_COLOR",
    "FIT_SIDE_WIDTH",
    "HINT",
    "INTERVAL_GLYPH",
    "MARK_ERROR",
    "NO_K",
    "OBSERVED_COLOR",
    "OBSERVED_GLYPH",
    "PANES",
    "PASTED",
    "ROWS_MAX",
    "SEND_DIGITS",
    "Analysis",
    "AnalysisReady",
    "CalibrateScreen",
    "RatesPlot",
    "details_text",
    "models_table",
    "recommendation_text",
    "scenario_label",
    "sendable",
    "sent_text",
    "settings_table",
    "source_label",
    "window_row",
]

DEBOUNCE_S = 0.5  # an edit to the pasted text is analysed after this pause
# The panes, shown by their number key.
PANES = (("cal-tab-windows", "Windows"), ("cal-tab-fit", "Fit"), ("cal-tab-recommend", "Recommend"))


class CalibrateScreen(
    ReportsWorkerErrors, CalibrateInput, CalibratePanes, ModalScreen["SpecConfig | None"]
):
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
        self._shown_input: tuple[str, str, str | None] | None = None  # what is shown's

    def compose(self) -> ComposeResult:
        yield Static("Calibrate from serving logs (vLLM, SGLang, llama.cpp)", id="cal-title")
        with Horizontal(id="cal-source"):
            yield Input(placeholder="log file path (enter loads it)", id="cal-path", compact=True)
            yield Input(
                placeholder=LOG_K_LABEL,
                id="cal-k",
                compact=True,
                restrict=r"[0-9]*",  # ASCII digits (type="integer" takes "١٢" and "1_0")
                max_length=8,
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

    # --- input (the rest in CalibrateInput) ----------------------------------------------------
    @property
    def pending(self) -> bool:
        """An edit waits for its analysis (the debounce timer runs)."""
        return self._timer is not None

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        event.stop()
        if self._timer is not None:
            self._timer.stop()
        self._timer = self.set_timer(DEBOUNCE_S, self.analyse_now)

    def worker_failed(self, worker: Worker[Any]) -> None:
        """The analysis raised something unexpected: say so (the app notifies the reason)."""
        self._status(f"{MARK_ERROR} calibration failed: {failure_reason(worker)}", error=True)

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
