"""Run view: one Monte Carlo run of the form's configuration, cycle by cycle."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Static

from engine.config import SpecConfig
from spectui.messages import RunFinished
from spectui.widgets.common import ReportsWorkerErrors, results_dir
from spectui.widgets.cycle_table import MAX_ROWS, CycleTable
from spectui.widgets.position_bar import MAX_POSITIONS, PositionBar
from spectui.widgets.summary_cards import SummaryCards


class RunView(ReportsWorkerErrors, Vertical):
    """Summary cards, the live per-cycle table and the per-position acceptance bar."""

    BINDINGS = [
        Binding("r", "run", "Run", tooltip="Run the Monte Carlo for the form's configuration"),
        Binding("e", "run_to_end", "To end", tooltip="Show the rest of the cycles at once"),
        Binding("plus,equals_sign", "faster", "Faster", key_display="+"),
        Binding("minus", "slower", "Slower", key_display="-"),
        Binding("p", "pause", "Pause"),
        Binding("x", "export", "Export CSV", tooltip="Write every cycle record to a CSV file"),
    ]

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.result: RunFinished | None = None
        # The configuration of the newest run started: a slower, older run that finishes
        # later must not replace it (a running thread cannot be stopped).
        self.pending: SpecConfig | None = None

    def compose(self) -> ComposeResult:
        yield SummaryCards(id="cards")
        yield Static("r / F5: run the form", id="run-status")
        with Horizontal(id="run-bottom"):
            yield CycleTable(id="cycle-table", classes="main-view")
            yield PositionBar(id="position-bar")

    def on_mount(self) -> None:
        self.set_interval(0.25, self._refresh_status)

    @property
    def table(self) -> CycleTable:
        return self.query_one(CycleTable)

    def start_run(self, config: SpecConfig) -> None:
        self.query_one(SummaryCards).clear("running…")
        self.query_one("#run-status", Static).update("simulating…")
        self.pending = config
        self._simulate(config)

    @work(thread=True, exclusive=True, group="run", exit_on_error=False)
    def _simulate(self, config: SpecConfig) -> None:
        from engine.draft_models import get_model
        from engine.simulator import position_acceptance, simulate

        result = simulate(config, records=True)
        cycles = result.cycles
        assert cycles is not None
        positions = min(config.k, MAX_POSITIONS + 1)
        observed = [float(p) for p in position_acceptance(cycles, positions)]
        probs = [float(p) for p in get_model(config.draft_model).position_probs(config, config.k)]
        self.post_message(RunFinished(config, result.metrics, cycles, observed, probs))

    def on_run_finished(self, message: RunFinished) -> None:
        if message.config != self.pending:
            return  # superseded by a newer run
        self.result = message
        self.query_one(SummaryCards).show(message.metrics)
        self.query_one(PositionBar).show(message.observed, message.model_probs)
        self.table.start(message.cycles, message.config.verify_cost_us)
        self._refresh_status()

    def _refresh_status(self) -> None:
        if self.result is None:
            return
        table = self.table
        state = "paused" if table.paused else f"{table.pace} rows/s"
        if table.shown >= table.total:
            state = "done"
        self.query_one("#run-status", Static).update(
            f"cycle {table.shown}/{table.total} · {state} · last {MAX_ROWS} kept",
            layout=False,
        )

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
        path = results_dir() / (
            f"run-{config.draft_model}-k{config.k}-seed{config.seed}-{stamp}-cycles.csv"
        )
        self.notify(f"Writing {len(self.result.cycles)} cycles to {path}…")
        self._export(self.result, path)

    @work(thread=True, group="export", exit_on_error=False)
    def _export(self, result: RunFinished, path: Path) -> None:
        from engine.files import atomic_write_csv

        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_csv(path, result.cycles)
        except OSError as err:
            self.app.call_from_thread(self.notify, f"Export failed: {err}", severity="error")
            return
        self.app.call_from_thread(self.notify, f"Wrote {len(result.cycles)} cycles to {path}")
