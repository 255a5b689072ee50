"""Pin and compare (F9): the pinned result beside the form's, in the Run and Speedup views."""

from __future__ import annotations

from textual import work

from engine.core.config import SpecConfig
from spectui.messages import PinFigures, RunFinished
from spectui.mixins.base import AppBase
from spectui.widgets.run_view import RunView


class PinMixin(AppBase):
    """Pin the form's result (F9), compute the figures to compare with, show the comparison."""

    def action_pin(self) -> None:
        """Pin the form's result, or unpin the pinned one."""
        if self.pinned is not None:
            self.pinned = None
            self._show_pin()
            self.notify("Unpinned: the views show the form's result alone.")
            return
        if self.config is None:
            self.notify(f"Cannot pin: fix {self._wrong_fields()} first.", severity="error")
            return
        self._pin_figures(self.config)

    @work(thread=True, exclusive=True, group="pin", exit_on_error=False)
    def _pin_figures(self, config: SpecConfig) -> None:
        self._post_figures(config, True)

    @work(thread=True, exclusive=True, group="pin-now", exit_on_error=False)
    def _now_figures(self, config: SpecConfig) -> None:
        """The figures of the form's configuration, to compare with the pinned one (each
        edit cancels the previous computation; a pin being computed is not)."""
        self._post_figures(config, False)

    def _post_figures(self, config: SpecConfig, pin: bool) -> None:
        from textual.worker import get_current_worker

        from spectui.pinning import figures

        worker = get_current_worker()
        found = figures(config, lambda: worker.is_cancelled)
        if found is not None:
            self.post_message(PinFigures(config, found, pin))

    def on_pin_figures(self, message: PinFigures) -> None:
        from engine.analysis.formatting import speedup_text
        from spectui.pinning import Pinned

        self._figures_now = (message.config, message.figures)
        if message.pin:
            result = self.query_one(RunView).result
            run = result.metrics if result is not None and result.config == message.config else None
            self.pinned = Pinned(message.config, message.figures, run)
            self.notify(
                f"Pinned K={message.config.k}: speedup "
                f"{speedup_text(message.figures.speedup, 3)}, K*={message.figures.k_star}"
                " · change the form to compare · F9 unpins"
            )
        self._show_pin()

    def on_run_finished(self, message: RunFinished) -> None:
        if self.pinned is not None:  # the Run view has shown it: compare its metrics
            self._show_pin()

    def _show_pin(self) -> None:
        """The pinned result, compared with the form's now, in the Run view and the Speedup
        view (or neither, when nothing is pinned)."""
        from spectui.pinning import compare_text

        view = self.query_one(RunView)
        speedup = self._speedup_view()
        pinned = self.pinned
        if pinned is None:
            view.show_compare(None)
            if speedup is not None:
                speedup.set_pinned(None)
            return
        now = self._figures_now
        figures_now = now[1] if now is not None and now[0] == self.config else None
        result = view.result
        run_now = result.metrics if result is not None and not view.stale else None
        view.show_compare(compare_text(pinned, self.config, figures_now, run_now))
        if speedup is not None:
            speedup.set_pinned(pinned.curve())
