"""The Load screen (ctrl+l): the form's scenario served under load (engine.serve).

A chart of TPOT p50 (``t`` cycles it through TPOT p99 and throughput) against the level of
load, one line per policy, filling as levels finish, with the level where speculation stops
paying marked; under it a table of every level and policy that scrolls. The load settings
are the preset's ``[load]`` table, else :data:`DEFAULTS`. The run is a thread worker:
Escape stops it (the finished levels stay), a second Escape closes the screen; ``r`` runs
again; ``e`` (``p``) runs again streaming a row per finished request to a CSV (Parquet)
file in the results directory (written whole when the run ends; memory holds a block of
rows and the running requests).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static
from textual.worker import get_current_worker

from engine.serve.load import COLUMNS
from spectui.widgets.common import ReportsWorkerErrors, results_dir
from spectui.widgets.footer import KeysFooter
from spectui.widgets.plot import Plot

# Without a preset's [load] table: a quick study on the form's scenario.
DEFAULTS: dict[str, Any] = {
    "rate": (1.0, 2.0, 4.0, 8.0, 16.0),
    "policies": ("off", "fixed", "goodput"),
    "requests": 150,
    "replications": 2,
}
CHARTS = (
    ("tpot_p50_ms", "TPOT p50 (ms)"),
    ("tpot_p99_ms", "TPOT p99 (ms)"),
    ("throughput_tok_s", "throughput (tok/s)"),
)
GLYPHS = ("dot", "hd", "braille", "fhd", "sd")


class LoadStopped(Exception):
    """The run was cancelled (raised in the worker by the progress check)."""


@dataclass
class CellDone(Message):
    """A level and policy finished (all its replications)."""

    cell: Any


@dataclass
class LoadDone(Message):
    """The run ended: ``stopped`` if cancelled, with the records file if any."""

    stopped: bool
    records: str | None


class LoadChart(Plot):
    """One figure against the level of load, a line per policy."""


class LoadScreen(ReportsWorkerErrors, ModalScreen[None]):
    """The form's scenario under load."""

    DEFAULT_CSS = """
    LoadScreen {
        background: $background;
    }
    LoadScreen #load-title {
        height: 1;
        padding: 0 1;
        text-style: bold;
    }
    LoadScreen #load-status {
        height: auto;
        padding: 0 1;
    }
    LoadScreen LoadChart {
        height: 1fr;
        min-height: 8;
    }
    LoadScreen DataTable {
        height: 1fr;
    }
    """
    BINDINGS = [
        Binding("escape", "stop_or_close", "Stop / close"),
        Binding("t", "next_chart", "Chart"),
        Binding("r", "rerun", "Run again"),
        Binding("e", "export", "Records to CSV"),
        Binding("p", "export_parquet", "to Parquet", show=False),
    ]

    def __init__(self, config: Any, settings: dict[str, Any] | None = None) -> None:
        super().__init__()
        self.config = config
        self.settings = dict(settings if settings else DEFAULTS)
        self.result: Any = None
        self.plan: Any = None
        self.chart = 0
        self.running = False
        self.stopped = False

    def compose(self) -> ComposeResult:
        yield Static("Load", id="load-title")
        yield Static("", id="load-status")
        yield LoadChart(id="load-chart")
        yield DataTable(id="load-table", zebra_stripes=False, cursor_type="row")
        yield KeysFooter()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        for name in ("level", "policy", *(header for _, header, _ in COLUMNS)):
            table.add_column(name)
        self.start()

    # ------------------------------------------------------------------ the run

    def start(self, records: str | None = None) -> None:
        from engine.core.config import ConfigError
        from engine.serve.load import LoadResult
        from engine.serve.settings import plan_of

        try:
            self.plan = plan_of(self.settings, self.config)
        except ConfigError as err:
            self._status(f"cannot run: {err}")
            return
        self.result = LoadResult(self.plan)
        self.query_one(DataTable).clear()
        unit = self.plan.unit
        levels = ", ".join(f"{level:g}" for level in self.plan.levels)
        self.query_one("#load-title", Static).update(
            Text(f"Load · {unit} {levels} · {', '.join(self.plan.policies)}")
        )
        self.running, self.stopped = True, False
        path = None
        if records:
            stamp = time.strftime("%Y%m%d-%H%M%S")
            path = str(results_dir() / f"load-records-{stamp}.{records}")
        self._status(self._progress_text(0))
        self._run(self.plan, path)

    @work(thread=True, exclusive=True, group="load", name="Load study", exit_on_error=False)
    def _run(self, plan: Any, records: str | None) -> None:
        from pathlib import Path

        from engine.cost.models import build_cost
        from engine.serve.load import run_load
        from engine.serve.server import kv_capacity

        worker = get_current_worker()
        cost = build_cost(self.config)
        kv_capacity(cost, plan.server)

        def check(done: int) -> None:
            if worker.is_cancelled:
                raise LoadStopped

        def on_cell(cell: Any) -> None:
            self.post_message(CellDone(cell))

        try:
            if records is None:
                run_load(self.config, cost, plan, on_cell=on_cell, check=check)
            else:
                from engine.serve.records import records_writer

                Path(records).parent.mkdir(parents=True, exist_ok=True)
                with records_writer(Path(records)) as on_finish:
                    run_load(
                        self.config, cost, plan, on_cell=on_cell, check=check, on_finish=on_finish
                    )
        except LoadStopped:
            self.post_message(LoadDone(True, None))
            return
        self.post_message(LoadDone(False, records))

    def on_cell_done(self, message: CellDone) -> None:
        message.stop()
        cell = message.cell
        self.result.cells[(cell.level, cell.policy)] = cell
        table = self.query_one(DataTable)
        row = [f"{cell.level:g}", cell.policy]
        for figure, _, fmt in COLUMNS:
            value = cell.mean(figure)
            row.append(fmt.format(value) if math.isfinite(value) else "-")
        table.add_row(*row)
        self.draw_chart()
        self._status(self._progress_text(len(self.result.cells)))

    def on_load_done(self, message: LoadDone) -> None:
        message.stop()
        self.running = False
        done = len(self.result.levels_done())
        if message.stopped:
            self.stopped = True
            self._status(f"stopped: {done} of {len(self.plan.levels)} levels kept · r: run again")
            return
        text = self._verdict()
        if message.records:
            text += f" · records written to {message.records}"
        self._status(text)

    def worker_failed(self, worker: Any) -> None:
        self.running = False
        self._status("could not run (see the notification)")

    # ------------------------------------------------------------------ words and chart

    def _status(self, text: str) -> None:
        status = self.query_one("#load-status", Static)
        status.update(Text(text))
        # Its height follows its lines. Under load a layout asked for while the screen
        # lays out was seen lost (the status kept one line and cut the verdict's "best:"):
        # it is asked for again once the screen has refreshed (a no-op when it was not).
        self.call_after_refresh(status.refresh, layout=True)

    def _progress_text(self, cells: int) -> str:
        total = len(self.plan.levels) * len(self.plan.policies)
        return f"running: {cells} of {total} (level, policy) done · esc: stop"

    def _verdict(self) -> str:
        """Where speculation stops paying, and the best policy by level."""
        words = self.result.verdicts()
        best = ", ".join(
            f"{level:g}: {self.result.best_policy(level)}" for level in self.result.levels_done()
        )
        return f"speculation {'; '.join(words)} · best: {best}" if words else f"best: {best}"

    def draw_chart(self) -> None:
        figure, label = CHARTS[self.chart]
        plt = self.query_one(LoadChart).plt
        plt.clear_data()
        plt.clear_figure()
        names = {"rate": "rate (req/s)", "concurrency": "concurrency", "speed": "trace speed"}
        plt.xlabel(names[self.plan.unit] + " · t: next chart")
        plt.ylabel(label)
        for i, policy in enumerate(self.plan.policies):
            levels = [lv for lv in self.plan.levels if (lv, policy) in self.result.cells]
            if not levels:
                continue
            values = [self.result.cells[(lv, policy)].mean(figure) for lv in levels]
            plt.plot(levels, values, marker=GLYPHS[i % len(GLYPHS)], label=policy)
        stop = self.result.stops_paying(figure if figure != "tpot_p50_ms" else "tpot_p99_ms")
        if stop is not None:
            plt.vline(stop)  # where speculation stops paying
        self.query_one(LoadChart).refresh()

    # ------------------------------------------------------------------ keys

    def action_next_chart(self) -> None:
        self.chart = (self.chart + 1) % len(CHARTS)
        if self.result is not None:
            self.draw_chart()

    def action_stop_or_close(self) -> None:
        if self.running:
            self.workers.cancel_group(self, "load")
            self._status("stopping…")
            return
        self.dismiss(None)

    def action_rerun(self) -> None:
        if not self.running:
            self.start()

    def action_export(self) -> None:
        if not self.running:
            self.start(records="csv")

    def action_export_parquet(self) -> None:
        from engine.simulate.cycles_file import parquet_available

        if self.running:
            return
        if not parquet_available():
            self._status("Parquet needs pyarrow: pip install 'spectui[parquet]' (e: CSV)")
            return
        self.start(records="parquet")
