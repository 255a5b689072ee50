"""Run, sweep and arena control: start (F5, F6, F7), cancel (Escape), the sweep's rows."""

from __future__ import annotations

import time
from typing import Any

from textual.widgets import TabbedContent

from spectui.messages import SweepFinished, SweepSnapshot, SweepStarted
from spectui.mixins.views import ViewsMixin
from spectui.widgets.analysis_view import ANALYSIS_EVERY_S, AnalysisView
from spectui.widgets.param_form import LABELS
from spectui.widgets.run_view import RunView
from spectui.widgets.sweep_view import SweepView

__all__ = ["ANALYSIS_EVERY_S", "RunsMixin"]


class RunsMixin(ViewsMixin):
    """Start and stop the Monte Carlo run, the sweep and the arena; hand the sweep's rows
    to the Analysis and Plots views."""

    def action_run(self) -> None:
        if self.config is None:
            fields = ", ".join(LABELS.get(k, k) for k in self.form.errors) or "the form"
            self.notify(f"Cannot run: fix {fields} first.", severity="error")
            return
        self.query_one(TabbedContent).active = "run"
        self._written = None
        view = self.query_one(RunView)
        view.start_run(self.config)
        view.table.focus()
        self.refresh_bindings()

    async def action_start_sweep(self) -> None:
        self.query_one(TabbedContent).active = "sweep"
        await self._mount_lazy("sweep")
        view = self.query_one(SweepView)
        view.action_start()
        self.call_after_refresh(self.action_focus_view)

    async def action_start_arena(self) -> None:
        self.query_one(TabbedContent).active = "arena"
        await self._mount_lazy("arena")
        view = self._arena_view()
        if view is not None:
            view.start()
        self.call_after_refresh(self.action_focus_view)
        self.refresh_bindings()

    def action_cancel(self) -> None:
        """Escape: stop the arena when its view is shown, else the run if one is simulated,
        else the sweep, else the arena."""
        if self.query_one(TabbedContent).active == "arena" and self.action_cancel_arena():
            return
        if self.action_cancel_run():
            return
        if self._sweep_running():
            self.action_cancel_sweep()
        else:
            self.action_cancel_arena()

    def action_cancel_arena(self) -> bool:
        view = self._arena_view()
        stopped = view is not None and view.cancel()
        self.refresh_bindings()
        return stopped

    def action_cancel_run(self) -> bool:
        stopped = self.query_one(RunView).cancel_run()
        self.refresh_bindings()
        return stopped

    def action_cancel_sweep(self) -> None:
        for view in self.query(SweepView):
            view.action_cancel()

    def _sweep_running(self) -> bool:
        view = self._view("sweep", "sweep-view")
        return view is not None and bool(view.running)

    def _arena_running(self) -> bool:
        view = self._arena_view()
        return view is not None and view.running

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "cancel":
            run = self._view("run", "run-view")
            return (run is not None and run.busy) or self._sweep_running() or self._arena_running()
        if action == "cancel_sweep":
            return self._sweep_running()
        return True

    def on_sweep_started(self, message: SweepStarted) -> None:
        """A new sweep: the Analysis view says it runs (not the sweep before's rows)."""
        self._sweep_rows(None, partial=True, total=message.total, running=True)

    def on_sweep_snapshot(self, message: SweepSnapshot) -> None:
        self._sweep_rows(message.frame, partial=True, total=message.total, running=True)

    def on_sweep_finished(self, message: SweepFinished) -> None:
        self._sweep_rows(message.frame, partial=message.cancelled, total=message.total)
        if message.path is not None and message.path.exists():
            self._written = self._last_written = (message.path, "sweep CSV")

    def _sweep_rows(
        self, frame: Any, partial: bool, total: int | None, running: bool = False
    ) -> None:
        self.sweep_frame, self.sweep_partial = frame, partial
        self.sweep_total, self.sweep_live = total, running
        for analysis in self.query(AnalysisView):
            analysis.set_frame(frame, partial, total, running)
        self._draw_analysis()
        plots = self._plots_view()
        if frame is not None and plots is not None and hasattr(plots, "update_results"):
            plots.update_results(frame)

    def _draw_analysis(self) -> None:
        """Draw the Analysis view, if it is shown, on the newest rows: at once when the sweep
        has ended or the last drawing is ANALYSIS_EVERY_S old; else when it will be (a
        timer), so that the rows shown are never older than that while rows come."""
        if self.query_one(TabbedContent).active != "analysis":
            return
        for analysis in self.query(AnalysisView):
            now = time.monotonic()
            wait = ANALYSIS_EVERY_S - (now - self._analysis_drawn)
            if analysis.partial and analysis.frame is not None and wait > 0:
                if self._analysis_timer is None:
                    self._analysis_timer = self.set_timer(wait, self._analysis_due)
                continue
            if self._analysis_timer is not None:
                self._analysis_timer.stop()
                self._analysis_timer = None
            analysis.render_now()
            self._analysis_drawn = now

    def _analysis_due(self) -> None:
        """The timer of :meth:`_draw_analysis`: the newest rows, drawn now."""
        self._analysis_timer = None
        self._analysis_drawn = 0.0
        self._draw_analysis()
