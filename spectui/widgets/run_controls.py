"""The Run view's keys on the replay (to end, faster, slower, pause) and its CSV export.

:class:`RunControls` is a mixin of :class:`spectui.widgets.run_view.RunView`.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import work
from textual.worker import get_current_worker

from engine.core.parts import SHAPE
from spectui.messages import FileWritten, RunFinished
from spectui.widgets.common import results_dir

if TYPE_CHECKING:
    from spectui.widgets.cycle_table import CycleTable


class RunControls:
    """Mixin for :class:`~spectui.widgets.run_view.RunView`: the replay's keys and the export
    of the run's full record."""

    result: RunFinished | None

    if TYPE_CHECKING:  # provided by RunView (a Vertical)
        app: Any

        @property
        def table(self) -> CycleTable: ...
        def _refresh_status(self) -> None: ...
        def notify(self, *args: Any, **kwargs: Any) -> None: ...
        def post_message(self, message: Any) -> bool: ...

    def action_run(self) -> None:
        self.app.action_run()  # type: ignore[attr-defined]

    def action_run_to_end(self) -> None:
        self.table.run_to_end()
        self._refresh_status()

    def action_faster(self) -> None:
        self.table.faster()
        self._refresh_status()

    def action_slower(self) -> None:
        self.table.slower()
        self._refresh_status()

    def action_pause(self) -> None:
        self.table.paused = not self.table.paused
        self._refresh_status()

    def action_export(self) -> None:
        """Write the run's full record (not just the visible rows), off the UI thread."""
        if self.result is None:
            self.notify("Nothing to export: run first (r).", severity="warning")
            return
        config = self.result.config
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S-%f")
        drafting = config.shape if SHAPE.of(config).tree else f"{config.draft_model}-k{config.k}"
        path = results_dir() / f"run-{drafting}-seed{config.seed}-{stamp}-cycles.csv"
        cycles = int(self.result.metrics["cycles"])
        self.notify(f"Writing {cycles:,} cycles to {path}…")
        self._export(self.result, path)

    @work(thread=True, group="export", exit_on_error=False)
    def _export(self, result: RunFinished, path: Path) -> None:
        from engine.core.runs import RunStopped
        from engine.simulate.cycles_file import cycles_writer
        from engine.simulate.simulator import simulate

        worker = get_current_worker()
        cycles = int(result.metrics["cycles"])
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # The same file as `spectui run --cycles-out` (accept pattern, running speedup).
            with cycles_writer(path, result.config) as write:
                if len(result.cycles) == cycles:
                    write(result.cycles)
                else:  # only the first records were kept: run again (same seed), streaming
                    stop = lambda: worker.is_cancelled  # noqa: E731
                    simulate(result.config, on_cycles=write, should_stop=stop)
        except RunStopped:
            return
        except OSError as err:
            self.app.call_from_thread(self.notify, f"Export failed: {err}", severity="error")
            return
        self.app.call_from_thread(self.notify, f"Wrote {cycles:,} cycles to {path}")
        self.post_message(FileWritten(path, "cycles CSV"))
