"""Run view: one Monte Carlo run of the form's configuration, cycle by cycle.

A run shows its progress, can be cancelled (Escape, the palette, or a new run), and keeps
at most :data:`RECORDS_KEPT` cycle records for the replay; its metrics cover every cycle.
"""

from __future__ import annotations

import time
from typing import Any

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Static
from textual.worker import Worker, get_current_worker

from engine.core.config import SpecConfig
from engine.core.parts import SHAPE
from spectui.messages import RunFinished, RunProgress
from spectui.widgets.common import ReportsWorkerErrors, hide_timings
from spectui.widgets.cycle_table import MAX_ROWS, CycleTable
from spectui.widgets.position_bar import MAX_POSITIONS, PositionBar
from spectui.widgets.run_controls import RunControls
from spectui.widgets.summary_cards import SummaryCards

RECORDS_KEPT = 50_000  # cycle records kept for the replay (about 2 MB)
PROGRESS_EVERY_S = 0.25
STALE_NOTE = "from an earlier configuration · F5 runs the form"


def compact_count(n: float) -> str:
    """A count in at most 6 characters: 950, 12.3k, 4.50M."""
    if n < 10_000:
        return f"{n:.0f}"
    if n < 1_000_000:
        return f"{n / 1e3:.1f}k"
    return f"{n / 1e6:.2f}M"


def progress_text(config: SpecConfig, sequences: int, tokens: int, elapsed: float) -> str:
    """``37% · 1.23M/10.00M seq · 250.0k seq/s · ETA 36s`` (no rate or ETA if timings hidden)."""
    total = config.n_sequences * config.tokens_per_seq
    text = (
        f"{100 * tokens / total:.0f}% · {compact_count(sequences)}/"
        f"{compact_count(config.n_sequences)} seq"
    )
    if not hide_timings() and elapsed > 0 and tokens:
        rate = tokens / elapsed
        text += f" · {compact_count(rate / config.tokens_per_seq)} seq/s"
        text += f" · ETA {(total - tokens) / rate:.0f}s"
    return text


class RunView(RunControls, ReportsWorkerErrors, Vertical):
    """Summary cards, the live per-cycle table and the per-position acceptance bar."""

    BINDINGS = [
        Binding("r", "run", "Run", tooltip="Run the Monte Carlo for the form's configuration"),
        Binding("e", "run_to_end", "To end", tooltip="Show the rest of the cycles at once"),
        Binding("plus,equals_sign", "faster", "Faster", key_display="+"),
        Binding("minus", "slower", "Slower", key_display="-"),
        Binding("p", "pause", "Pause"),
        Binding("x", "export", "Export CSV", tooltip="Write every cycle record to a CSV file"),
    ]

    def __init__(self, *, autoplay: bool = True, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.autoplay = autoplay  # False: the replay moves only when driven (tests)
        self.result: RunFinished | None = None
        self.runs = 0  # runs started; messages of any run but the active one are ignored
        self.active_run = 0  # the run being simulated, 0 when none
        self.running: SpecConfig | None = None
        self.sim_worker: Worker | None = None
        self.progress: RunProgress | None = None
        self.form_config: SpecConfig | None = None  # what the form holds now

    def compose(self) -> ComposeResult:
        yield SummaryCards(id="cards")
        compare = Static("", id="pin-compare")  # F9: the pinned result against this one
        compare.display = False
        yield compare
        yield Static("r / F5: run the form", id="run-status")
        with Horizontal(id="run-bottom"):
            yield CycleTable(id="cycle-table", classes="main-view", autoplay=self.autoplay)
            yield PositionBar(id="position-bar")

    def on_mount(self) -> None:
        self.set_interval(0.25, self._refresh_status)

    def show_compare(self, text: str | None) -> None:
        """Under the cards: how the pinned result differs from this one (None: hidden)."""
        compare = self.query_one("#pin-compare", Static)
        compare.update(text or "")
        compare.display = text is not None

    @property
    def table(self) -> CycleTable:
        return self.query_one(CycleTable)

    @property
    def busy(self) -> bool:
        """True while a run is being simulated."""
        return self.active_run != 0

    @property
    def stale(self) -> bool:
        """True when the shown run is not of the form's configuration."""
        return self.result is not None and self.result.config != self.form_config

    def start_run(self, config: SpecConfig) -> None:
        """Run ``config``; a run still going is cancelled, the old replay cleared."""
        self.cancel_run(note=None)
        self.runs += 1
        self.active_run, self.running, self.progress = self.runs, config, None
        self.result = None
        self.form_config = config
        self.table.stop()
        self.query_one(SummaryCards).clear("running…")
        self.query_one(PositionBar).reset()
        self._refresh_status()
        self.sim_worker = self._simulate(config, self.runs)

    def cancel_run(self, note: str | None = "cancelled") -> bool:
        """Stop the run being simulated (its thread stops within ~50 ms); True if one was."""
        if not self.busy:
            return False
        if self.sim_worker is not None:
            self.sim_worker.cancel()
        done = ""
        if self.progress is not None and self.running is not None:
            done = f"{compact_count(self.progress.sequences)}/"
            done += f"{compact_count(self.running.n_sequences)} seq"
        self.active_run, self.running, self.sim_worker = 0, None, None
        if note is not None:
            self.query_one(SummaryCards).clear("—")
            text = f"run {note}" + (f" at {done}" if done else "") + " · F5: run again"
            self.query_one("#run-status", Static).update(text)
        return True

    def worker_failed(self, worker: Worker) -> None:
        """A worker of this view failed (the app notifies the reason): leave the busy state."""
        if worker is self.sim_worker:
            self.active_run, self.running, self.sim_worker = 0, None, None
            self.query_one(SummaryCards).clear("—")
            self.query_one("#run-status", Static).update("run failed · r / F5: run again")
            self.app.refresh_bindings()

    def config_changed(self, config: SpecConfig | None) -> None:
        """The form now holds ``config`` (None: invalid): say whether the run shown is of it."""
        self.form_config = config
        self.query_one(SummaryCards).set_class(self.stale, "-stale")
        self._refresh_status()

    @work(thread=True, exclusive=True, group="run", exit_on_error=False)
    def _simulate(self, config: SpecConfig, run: int) -> None:
        from engine.acceptance.draft_models import get_model
        from engine.core.runs import RunStopped
        from engine.simulate.simulator import simulate

        worker = get_current_worker()
        started = time.perf_counter()
        last = [started]

        def on_progress(sequences: int, tokens: int) -> None:
            now = time.perf_counter()
            if now - last[0] >= PROGRESS_EVERY_S:
                last[0] = now
                self.post_message(RunProgress(run, sequences, tokens, now - started))

        try:
            result = simulate(
                config,
                records=True,
                max_records=RECORDS_KEPT,
                position_counts=True,
                should_stop=lambda: worker.is_cancelled,
                on_progress=on_progress,
            )
        except RunStopped:
            return  # cancelled: a newer run, Escape, or the app quitting
        cycles = result.cycles
        assert cycles is not None
        if SHAPE.of(config).tree:  # by depth: the accepted path's, the tree's
            from engine.simulate.tree_scenario import depth_acceptance

            model = depth_acceptance(config)
        else:
            model = get_model(config.draft_model).position_probs(config, config.k)
        positions = min(len(model), MAX_POSITIONS + 1)
        observed = [float(p) for p in result.position_acceptance(positions)]
        probs = [float(p) for p in model]
        self.post_message(RunFinished(config, result.metrics, cycles, observed, probs, run))

    def on_run_progress(self, message: RunProgress) -> None:
        if message.run == self.active_run:
            self.progress = message
            self._refresh_status()

    def _progress_text(self) -> str:
        assert self.running is not None and self.progress is not None
        p = self.progress
        return progress_text(self.running, p.sequences, p.tokens, p.elapsed)

    def on_run_finished(self, message: RunFinished) -> None:
        if message.run != self.active_run:
            return  # cancelled, or superseded by a newer run
        self.active_run, self.running, self.sim_worker = 0, None, None
        self.result = message
        cards = self.query_one(SummaryCards)
        cards.show(message.metrics)
        cards.set_class(self.stale, "-stale")
        self.query_one(PositionBar).show(message.observed, message.model_probs)
        self.table.start(message.cycles, message.config)
        self._refresh_status()
        self.app.refresh_bindings()

    def _refresh_status(self) -> None:
        text = self._status_text()
        status = self.query_one("#run-status", Static)
        # Every 0.25 s, on whichever view shows: an update of the same text still repaints.
        if text is not None and status.content != text:
            status.update(text, layout=False)

    def _status_text(self) -> str | None:
        """The status line of the run as it is now (None: leave the line as it is)."""
        if self.busy:
            return "simulating…" if self.progress is None else self._progress_text()
        if self.result is None:
            return None
        if self.stale:
            return STALE_NOTE
        table = self.table
        state = "paused" if table.paused else f"{table.pace} rows/s"
        if table.shown >= table.total:
            state = "done"
        cycles = int(self.result.metrics["cycles"])
        kept = f"last {MAX_ROWS:,} shown" if cycles == table.total else f"first of {cycles:,}"
        return f"cycle {table.shown:,}/{table.total:,} · {state} · {kept}"
