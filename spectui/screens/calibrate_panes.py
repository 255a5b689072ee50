"""The Calibrate screen's panes (:mod:`spectui.screens.calibrate`) as the analysis fills
them: the status line, the Windows table, the Fit plot and models, the Recommend pane."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.console import Group
from rich.text import Text
from textual.widgets import DataTable, Input, Static

from spectui.screens.calibrate_analysis import Analysis, AnalysisReady, calibration_module
from spectui.screens.calibrate_plot import FIT_SIDE_WIDTH, RatesPlot
from spectui.screens.calibrate_text import (
    PASTED,
    counts_text,
    details_text,
    models_table,
    recommendation_text,
    scenario_label,
    settings_table,
    source_label,
    window_row,
)
from spectui.widgets.common import fmt

if TYPE_CHECKING:
    from textual.screen import ModalScreen

    from engine.core.config import SpecConfig

    _Screen = ModalScreen[SpecConfig | None]
else:
    _Screen = object

ROWS_MAX = 1000  # windows listed in the table (the fit uses every one)
MARK_ERROR = "✗"


class CalibratePanes(_Screen):
    """Mixin for CalibrateScreen: shows the newest analysis as it comes, in the status line
    and the panes."""

    scenario: SpecConfig | None  # the form's configuration: None when it is invalid
    _rows: list[tuple[Any, bool]]  # the table's windows, and whether used
    _windows_note: str
    _generation: int  # the newest analysis started: an older one's news is dropped
    analysis: Analysis | None
    _last: tuple[str, str, str | None] | None  # what was analysed last
    _shown_input: tuple[str, str, str | None] | None  # what the analysis shown was of

    def on_analysis_ready(self, message: AnalysisReady) -> None:
        message.stop()
        found = message.analysis
        if found.generation != self._generation:
            return  # an older text's analysis
        if self._keeps_loaded(found):
            return
        self.analysis, self._shown_input = found, self._last
        label = source_label(found.source)
        self.query_one("#cal-k", Input).set_class(found.wants_k, "-wanted")
        if found.error is not None:
            self._status(f"{MARK_ERROR} {found.error}", error=True)
        elif found.done or found.recommendation is not None:
            self._status(self._summary(found))
        elif found.calibration is not None:
            self._status(f"{label}: {counts_text(found.parsed)} · recommending K…")
        else:
            self._status(f"{label}: {counts_text(found.parsed)} · fitting…")
        if found.parsed is not None:
            self._show_windows(found.parsed)
        self._show_fit(found.calibration, found.curves)
        self._show_recommendation(found)

    def _keeps_loaded(self, found: Analysis) -> bool:
        """Pasted text with nothing usable (a digit typed into the paste box for a pane's
        key, say) does not wipe a log file's fit: the panes keep it, the status says both."""
        shown = self.analysis
        if found.error is None or found.source != PASTED or shown is None:
            return False
        if shown.source == PASTED or shown.calibration is None:
            return False
        self._status(
            f"{MARK_ERROR} {found.error} · still showing {source_label(shown.source)}",
            error=True,
        )
        self._last = self._shown_input  # what enter in the log K analyses again
        return True

    def _status(self, text: str, error: bool = False) -> None:
        status = self.query_one("#cal-status", Static)
        status.update(Text(text))
        status.set_class(error, "-error")

    def _summary(self, found: Analysis) -> str:
        parts = [f"{source_label(found.source)}: {counts_text(found.parsed)}"]
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
            f"windows: {counts_text(parsed)} · {parsed.skipped} of {parsed.lines} lines "
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
        criterion = str(getattr(calibration_module("fit"), "CRITERION", "criterion")).split(" ")[0]
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
