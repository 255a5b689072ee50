"""Sweep view: run a sweep preset, watch the optimal-K heatmap fill, cancel keeping results.

A sweep runs in the app's worker processes (:mod:`spectui.workers`), or on a Dask cluster when
a scheduler applies (:func:`sweep_scheduler`: $SPECTUI_SCHEDULER, else the preset's
``scheduler`` key). Its rows stream to the results file; the view keeps only what its views
draw (:class:`SweepStore`).
"""

from __future__ import annotations

import math
import os
import time
from array import array
from collections.abc import Sequence
from concurrent.futures.process import BrokenProcessPool
from datetime import datetime
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.timer import Timer
from textual.widgets import DataTable, ProgressBar, Select, Static
from textual.worker import Worker, get_current_worker

from engine.core.config import ConfigError, SpecConfig
from spectui.messages import (
    CellChosen,
    SweepFinished,
    SweepRunsOn,
    SweepSnapshot,
)
from spectui.widgets.common import (
    ReportsWorkerErrors,
    hide_timings,
    results_dir,
)
from spectui.widgets.heatmap import LEGEND, Heatmap, SweepHeatmap, legend
from spectui.widgets.table_hint import ColumnsHint

SNAPSHOT_EVERY_S = 1.0  # at most one new grid a second...
SNAPSHOT_SHARE = 0.1  # ...and building them takes at most this share of the sweep's time
PROGRESS_EVERY_S = 0.25  # the count line and the bar, read from the sweep (not pushed)
PLANNING_STEP = 256  # configurations between two planning figures
NO_PRESET = "no preset"  # the picker's blank entry
SCHEDULER_FORMS = "tcp://HOST:PORT or local:N (unset: this machine)"


def sweep_scheduler(preset: Any) -> str | None:
    """The Dask scheduler the app's sweeps of ``preset`` run on: $SPECTUI_SCHEDULER when set
    (for every sweep), else the preset's ``scheduler`` key; None: on this machine.
    :class:`engine.core.config.ConfigError` naming SPECTUI_SCHEDULER when its value is not a
    scheduler (:func:`engine.sweep.cluster.parse_scheduler`)."""
    from engine.sweep.cluster import SCHEDULER_ENV, parse_scheduler

    text = os.environ.get(SCHEDULER_ENV, "").strip()
    if text:
        parse_scheduler(text, field=SCHEDULER_ENV)
        return text
    return getattr(preset, "scheduler", None)


class _Planned(Message):
    """The configurations of ``name`` as a frame, and its empty K* grids, built in a thread
    (46,080 configurations take seconds); ``sweep``: those of the sweep started."""

    def __init__(self, name: str, planned: Any, grids: dict[str, Any], sweep: bool) -> None:
        super().__init__()
        self.name, self.planned, self.grids, self.sweep = name, planned, grids, sweep


class _CannotRun(Message):
    """A configuration of the grid of ``name`` cannot be (:class:`ConfigError`); ``sweep``:
    found by the sweep started (else when the preset was chosen)."""

    def __init__(self, name: str, error: ConfigError, sweep: bool) -> None:
        super().__init__()
        self.name, self.error, self.sweep = name, error, sweep


class _CancelledPlanning(Message):
    """The sweep of ``name`` was cancelled while it was being planned: nothing ran."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name


class _PlanningStopped(Exception):
    """Raised in the sweep's thread to stop planning (the sweep was cancelled)."""


class _Counted(Sequence[SpecConfig]):
    """``configs``, whose iteration reports every :data:`PLANNING_STEP` configurations to
    ``seen(count)``: a pass over a large grid (planning it) shows progress."""

    def __init__(self, configs: Sequence[SpecConfig], seen: Any) -> None:
        self.configs, self.seen = configs, seen

    def __len__(self) -> int:
        return len(self.configs)

    def __getitem__(self, index: Any) -> Any:
        return self.configs[index]

    def __iter__(self) -> Any:
        for count, config in enumerate(self.configs):
            if count and count % PLANNING_STEP == 0:
                self.seen(count)
            yield config


class SweepView(ReportsWorkerErrors, Vertical):
    """Pick a sweep preset, start it with ``s``, cancel with Escape."""

    BINDINGS = [
        Binding("s", "start", "Start sweep", tooltip="Run the chosen sweep preset"),
        Binding("m", "next_model", "Model", tooltip="Show the next draft model's heatmap"),
    ]

    DEFAULT_CSS = """
    SweepView SweepHeatmap {
        scrollbar-size-horizontal: 0;  /* the line under it says which columns are hidden */
    }
    SweepView #heatmap-row {
        height: auto;
        padding: 0 1;
        display: none;
    }
    """

    def __init__(self, sweep_preset: Any = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.initial = sweep_preset
        self.presets: dict[str, Any] = {}
        self.sweep_worker: Worker | None = None
        self.frame: Any = None
        self.planned: Any = None  # the configurations of the sweep shown, as a frame
        self.grids: dict[str, Any] = {}  # model -> engine.analysis.plot_data.optimal_k_heatmap
        self.models: list[str] = []
        self.model_index = 0
        self.out_path: Path | None = None
        self.finished: SweepFinished | None = None
        self._planned_cache: dict[str, Any] = {}  # preset name -> its planned frame
        self.running_name: str | None = None  # the preset of the sweep started last
        self.running_total = 0  # its configurations
        self.runner: Any = None  # the Dask runner of the sweep running, while it has one
        self.where = ""  # where it runs, for the count line: "on local:2 · 2 workers"
        self.dashboard: str | None = None  # that cluster's dashboard URL, if it has one
        self._progress = (0, 0, 0.0)  # the count line's last done, total, elapsed
        self.shown_name: str | None = None  # the preset whose grid is on screen
        # What the sweep thread has done: (phase, done, total, seconds of work), phase
        # "planning", "laying out" (the grid) or "running". The thread only writes it; a
        # timer of the UI reads it (PROGRESS_EVERY_S): no message per row, and the figure
        # shown is always the last.
        self.live: tuple[str, int, int, float] = ("", 0, 0, 0.0)
        self._shown_live: tuple[str, int, int, float] | None = None
        self._ticker: Timer | None = None

    def compose(self) -> ComposeResult:
        with Horizontal(id="sweep-top"):
            yield Select([], id="sweep-preset", compact=True, allow_blank=True, prompt=NO_PRESET)
            yield Static("", id="sweep-info")
        yield ProgressBar(id="sweep-progress", show_eta=False, show_percentage=True)
        yield Static("", id="sweep-count")
        yield Static("", id="heatmap-title")
        yield SweepHeatmap(id="heatmap", classes="main-view")
        yield ColumnsHint(id="heatmap-more")
        # The highlighted row's whole label, when labels are drawn cut (heatmap.short_label)
        yield Static("", id="heatmap-row")
        yield Static(LEGEND + " · enter: curve", id="heatmap-legend")

    def on_mount(self) -> None:
        from engine.presets import Preset, list_presets

        self.presets = {p.name: p for p in list_presets() if isinstance(p, Preset) and p.is_sweep}
        if self.initial is not None:  # the app's preset, possibly loaded from a path
            self.presets[self.initial.name] = self.initial
        self._set_options()
        default = self.initial.name if self.initial is not None else "seed-576"
        if default in self.presets:
            self.query_one("#sweep-preset", Select).value = default

    def _set_options(self) -> None:
        # Grid sizes from the axis lengths: expanding 576 configurations here would slow start-up.
        sizes = {
            n: sum(math.prod(len(v) for v in grid.values()) for grid in p.sweep.grids)
            for n, p in self.presets.items()
        }
        options = [(f"{n} ({sizes[n]})", n) for n in self.presets]
        self.query_one("#sweep-preset", Select).set_options(options)

    def _configs(self, preset: Any) -> Sequence[SpecConfig]:
        """The preset's configurations, built on demand (none is kept)."""
        return preset.sweep.lazy()  # type: ignore[no-any-return]

    def _planned(self, preset: Any) -> Any:
        """The preset's configurations as a frame (:func:`engine.sweep.sweep.config_frame`)."""
        if preset.name not in self._planned_cache:
            self._planned_cache[preset.name] = _planned(self._configs(preset))
        return self._planned_cache[preset.name]

    @property
    def running(self) -> bool:
        """A sweep started and not yet finished (a worker just created is still pending)."""
        return self.sweep_worker is not None and not self.sweep_worker.is_finished

    def choose(self, preset: Any) -> None:
        """Select a loaded sweep preset (from the picker, the palette or a path)."""
        if not self.is_mounted:  # on_mount selects it
            self.initial = preset
            return
        self.presets[preset.name] = preset
        self._planned_cache.pop(preset.name, None)
        self._set_options()
        self.query_one("#sweep-preset", Select).value = preset.name

    def on_select_changed(self, event: Select.Changed) -> None:
        event.stop()
        self.call_after_refresh(self._describe)

    def _selected(self) -> Any:
        value = self.query_one("#sweep-preset", Select).value
        return self.presets.get(str(value)) if value != Select.NULL else None

    def _describe(self) -> None:
        preset = self._selected()
        info = self.query_one("#sweep-info", Static)
        if preset is None:
            info.update("no sweep preset chosen")
            if not self.running:  # nothing chosen: no status or grid of another preset
                self.query_one(ProgressBar).update(total=None, progress=0)
                self._count_line("")
                self._clear_grid("choose a sweep preset above")
            return
        size = preset.size()
        if self.running:
            # The heatmap keeps showing the running sweep; the choice applies to the next one.
            if preset.name != self.running_name:
                info.update(f"{size} configs · s starts it when this sweep ends")
            else:  # chosen, then started before this ran
                info.update(f"{size} configs · running (Escape cancels)")
            self._title()
            return
        info.update(f"{size} configs · s start")
        if self.finished is not None and preset.name == self.running_name:
            # Its own sweep, finished before this ran (a choice made as the view mounted,
            # then started at once): its results stay on screen.
            self._title()
            return
        # A new choice: the status and the grid describe it, not the sweep shown before.
        self.query_one(ProgressBar).update(total=size, progress=0)
        self._count_line(self._fit(f"0/{size} · not started", self._where_next(preset)))
        self.frame = self.finished = None
        self._clear_grid(f"{preset.name}: laying out its grid…")
        self._prepare(preset)

    def _count_line(self, text: str) -> None:
        count = self.query_one("#sweep-count", Static)
        count.styles.height = 1
        count.update(text)

    def _clear_grid(self, title: str) -> None:
        """No grid on screen (one is being laid out, or none is chosen): ``title`` says why."""
        self.planned, self.grids, self.models, self.shown_name = None, {}, [], None
        self.query_one(Heatmap).blank()
        self.query_one("#heatmap-title", Static).update(title)
        self._row_line()

    @work(thread=True, exclusive=True, group="prepare", exit_on_error=False)
    def _prepare(self, preset: Any) -> None:
        """The empty grids of ``preset``, every cell pending, in their final shape: built in
        this thread (a big grid takes seconds), then shown (:class:`_Planned`); or, for a
        grid one of whose configurations cannot be (a combination the preset's loading does
        not check), :class:`_CannotRun`: one notification, and the app goes on."""
        try:
            planned = self._planned(preset)
        except ConfigError as err:
            self.post_message(_CannotRun(preset.name, err, False))
            return
        if not get_current_worker().is_cancelled:
            self.post_message(_Planned(preset.name, planned, _grids(None, planned), False))

    def on__planned(self, message: _Planned) -> None:
        if not message.sweep and (self.running or self.finished is not None):
            return  # described before a sweep started: the sweep's grid is on screen
        selected = self._selected()
        if not message.sweep and (selected is None or selected.name != message.name):
            return  # another preset was chosen meanwhile
        self.planned, self.grids, self.shown_name = message.planned, message.grids, message.name
        self.models = list(dict.fromkeys(self.planned["draft_model"]))
        self.model_index = 0
        self._draw()

    def on__cannot_run(self, message: _CannotRun) -> None:
        err = message.error
        self.notify(f"{message.name}: {err}", title="Sweep cannot run", severity="error")
        if self.running and not message.sweep:  # chosen during a sweep: its status stays
            return
        self._stop_ticker()
        self._count_line(f"cannot run: {err.field} (see notification)")
        self.query_one("#heatmap-title", Static).update(f"{message.name}: no grid")
        preset = self._selected()
        if preset is not None:
            self.query_one("#sweep-info", Static).update(f"{preset.size()} configs · s start")
        self.app.refresh_bindings()

    def on__cancelled_planning(self, message: _CancelledPlanning) -> None:
        self._stop_ticker()
        self.dashboard, self.where = None, ""
        self._count_line(f"{message.name}: cancelled while planning, nothing ran")
        self.query_one("#heatmap-title", Static).update(f"{message.name}: no grid (s starts it)")
        preset = self._selected()
        if preset is not None:
            self.query_one("#sweep-info", Static).update(f"{preset.size()} configs · s start")
        self.app.refresh_bindings()
        self.notify(f"Sweep {message.name} cancelled before it started: nothing saved")

    def _where_next(self, preset: Any) -> str:
        """Where a sweep of ``preset`` would run, for the count line: "" (here), "on
        ADDRESS", or that $SPECTUI_SCHEDULER is invalid."""
        from engine.sweep.cluster import SCHEDULER_ENV

        try:
            scheduler = sweep_scheduler(preset)
        except ConfigError:
            return f"{SCHEDULER_ENV} invalid"
        return "" if scheduler is None else f"on {scheduler}"

    def _fit(self, text: str, where: str) -> str:
        """``text · where`` in the count line's width: ``where`` (an address) shortened in
        its middle if need be."""
        if not where:
            return text
        return f"{text} · {_shorten(where, self._count_width() - len(text) - 3)}"

    def _count_width(self) -> int:
        width = self.query_one("#sweep-count", Static).content_region.width
        if width <= 0:  # not laid out yet: the view's width, less the count line's padding
            width = self.content_region.width - 2
        return width if width > 0 else 50

    def action_start(self) -> None:
        preset = self._selected()
        if preset is None:
            self.notify("Choose a sweep preset first.", severity="warning")
            return
        if self.running:
            self.notify("A sweep is already running (Escape cancels it).", severity="warning")
            return
        try:
            scheduler = sweep_scheduler(preset)
        except ConfigError as err:  # $SPECTUI_SCHEDULER: the sweep does not start
            self.notify(
                f"{err}. Allowed: {SCHEDULER_FORMS}",
                title="Sweep not started",
                severity="error",
                timeout=10,
            )
            self._count_line(f"not started: {err.field} is not a scheduler")
            return
        self.workers.cancel_group(self, "prepare")  # the sweep lays out its own grid
        configs = self._configs(preset)
        self.running_name, self.running_total = preset.name, preset.size()
        self.dashboard = None
        # SweepRunsOn says more once the cluster answers.
        self.where = "" if scheduler is None else f"connecting to {scheduler}…"
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        self.out_path = results_dir() / f"sweep-{preset.name}-{stamp}.csv"
        self.frame = self.finished = None
        bar = self.query_one(ProgressBar)
        bar.update(total=self.running_total, progress=0)
        self.query_one("#sweep-count", Static).styles.height = 1
        self.query_one("#sweep-info", Static).update(
            f"{self.running_total} configs · running (Escape cancels)"
        )
        # "0/N" until planning has a figure to show (a small sweep never shows one).
        self.live, self._shown_live = ("running", 0, self.running_total, 0.0), None
        self._poll_progress()
        self._clear_grid(f"{preset.name}: laying out its grid…")  # the thread posts it
        self.sweep_worker = self._sweep(preset, configs, self.out_path, scheduler)
        self._stop_ticker()
        self._ticker = self.set_interval(PROGRESS_EVERY_S, self._poll_progress)
        self.app.refresh_bindings()

    def _stop_ticker(self) -> None:
        if self._ticker is not None:
            self._ticker.stop()
            self._ticker = None

    def _poll_progress(self) -> None:
        """Show what the sweep thread has done (:attr:`live`), if it changed."""
        live = self.live
        if live == self._shown_live or not live[0]:
            return
        self._shown_live = live
        phase, done, total, elapsed = live
        if phase != "running":  # planning, laying out the grid
            self.query_one(ProgressBar).update(total=total, progress=0)
            self._set_count(0, total, 0.0, f"{phase} {done}/{total} configurations…")
            return
        self.query_one(ProgressBar).update(total=total, progress=done)
        self._set_count(done, total, elapsed)

    @work(thread=True, exclusive=True, group="sweep", exit_on_error=False)
    def _sweep(
        self,
        preset: Any,
        configs: Sequence[SpecConfig],
        out_path: Path,
        scheduler: str | None = None,
    ) -> None:
        from engine.core.files import SweepWriter
        from engine.sweep.pool import batch_size_for
        from engine.sweep.sweep import plan_sweep, sweep_rows

        worker = get_current_worker()

        def stopped() -> bool:
            return worker.is_cancelled

        start = time.perf_counter()
        total = self.running_total

        def counter(phase: str) -> Any:
            def seen(count: int) -> None:
                if stopped():  # Escape while planning: stop at once, nothing runs
                    raise _PlanningStopped
                self.live = (phase, count, total, 0.0)

            return seen

        # Planned here, not on the UI thread: 46,080 configurations take seconds, during
        # which the count line says how far planning is (the plan first: it has figures to
        # show at once, and the grid no rows to show before it).
        try:
            plan = plan_sweep(_Counted(configs, counter("planning")))
            planned = self._planned_cache.get(preset.name)
            if planned is None:  # not laid out since it was chosen
                configs_seen = _Counted(configs, counter("laying out"))
                planned = self._planned_cache[preset.name] = _planned(configs_seen)
            self.post_message(_Planned(preset.name, planned, _grids(None, planned), True))
        except ConfigError as err:
            self.post_message(_CannotRun(preset.name, err, True))
            return
        except _PlanningStopped:
            self.post_message(_CancelledPlanning(preset.name))
            return
        self.live = ("running", 0, plan.total, 0.0)
        model_of = planned["draft_model"].to_numpy()
        pool = runner = writer = None
        try:
            if scheduler is not None:
                from engine.sweep.cluster import DaskRunner, task_size

                runner = self.runner = DaskRunner(scheduler)
                if not runner.start(stopped):  # cancelled, or the app quit
                    # Not closed here (close waits for start): its start thread closes it.
                    runner = self.runner = None
                    self._post_finished(SweepStore(planned, plan.columns), planned, None, start)
                    return
                executor: Any = runner
                workers = runner.workers
                batch = task_size(plan, False, workers)
                self.post_message(SweepRunsOn(scheduler, workers, runner.dashboard))
            else:
                pool = getattr(self.app, "pool", None)
                executor = pool.executor() if pool is not None else None
                if pool is not None and executor is None and pool.problem and pool.workers:
                    self.app.call_from_thread(
                        self.notify,
                        "Sweep runs in the app's own process "
                        f"(no worker processes: {pool.problem})",
                        severity="warning",
                    )
                # Serially (no executor) each group of configurations that share draws (or a
                # slice of an exact-only sweep) is one step; batches are for workers.
                batch = batch_size_for(plan, pool.workers) if pool is not None and executor else 1
            store = SweepStore(planned, plan.columns)
            writer = SweepWriter(out_path, plan.columns)
            # The rate and ETA count from here: planning is not the sweep's pace.
            began = last = time.perf_counter()
            interval = SNAPSHOT_EVERY_S
            seen = 0  # rows the last snapshot had
            stale: set[str] = set()  # models with rows their last grid built lacks
            rows = sweep_rows(
                configs, executor=executor, should_stop=stopped, batch_size=batch, plan=plan
            )
            for row in rows:
                writer.write(row)
                store.add(row)
                done, now = len(store), time.perf_counter()
                self.live = ("running", done, plan.total, now - began)
                if now - last < interval or done >= plan.total:
                    continue
                # Only the model on screen, and only if it has rows its grid lacks: the
                # others are built when shown (m).
                shown = self.model
                stale.update(model_of[store.ids_since(seen)].tolist())
                seen = done
                frame = store.frame()
                grids = {}
                if shown is not None and shown in stale:
                    stale.discard(shown)
                    grids = _grids(frame, planned, [shown])
                self.post_message(SweepSnapshot(frame, grids))
                # A snapshot costs this thread's time and the UI's (one interpreter lock):
                # keep it under SNAPSHOT_SHARE of the sweep's, however big the sweep grows.
                last = time.perf_counter()
                interval = max(SNAPSHOT_EVERY_S, (last - now) / SNAPSHOT_SHARE)
        except BrokenProcessPool:
            if pool is not None:
                pool.discard()  # a worker died; the next sweep gets new processes
            raise
        finally:
            if writer is not None:
                writer.close()
            if runner is not None:
                runner.close()  # a local cluster is shut down
                self.runner = None
        cancelled = len(store) < plan.total
        if cancelled and executor is not None and pool is not None:
            pool.discard()  # stop the batches in flight; the next sweep starts fresh processes
        self._post_finished(store, planned, writer.finish(), start)

    def _post_finished(
        self, store: SweepStore, planned: Any, path: Path | None, start: float
    ) -> None:
        """Post the sweep's end: its finished rows (all, or fewer when cancelled)."""
        frame = store.frame()
        total = len(planned)
        elapsed = time.perf_counter() - start
        self.post_message(
            SweepFinished(
                frame, _grids(frame, planned), path, len(frame) < total, elapsed, len(frame), total
            )
        )

    def worker_failed(self, worker: Worker) -> None:
        """The sweep's worker raised (the one handler has said why): leave "running"."""
        if worker.group != "sweep":
            return
        from engine.sweep.cluster import DaskUnavailable

        self.app.refresh_bindings()
        self._stop_ticker()
        self.dashboard, self.where = None, ""
        count = self.query_one("#sweep-count", Static)
        count.styles.height = 1
        if isinstance(worker.error, DaskUnavailable):  # nothing ran
            count.update("not run: Dask cannot run it (see notification)")
        else:
            count.update("sweep failed (see notification)")
        preset = self._selected()
        if preset is not None:
            self.query_one("#sweep-info", Static).update(f"{preset.size()} configs · s start")

    def _set_count(self, done: int, total: int, elapsed: float, text: str = "") -> None:
        """The count line: ``done/total`` with the rate and ETA (``elapsed``: seconds of
        the sweep's work, its planning left out), or ``text`` (planning)."""
        self._progress = (done, total, elapsed)
        if not text:
            text = f"{done}/{total}"
            if not hide_timings() and elapsed > 0 and done:
                rate = done / elapsed
                eta = (total - done) / rate if rate else float("nan")
                text += f" · {rate:.0f}/s · ETA {eta:.0f}s"
        text = self._fit(text, self.where)
        if self.dashboard is not None:  # a line of its own (the notification has it whole)
            text += f"\ndashboard {_shorten(self.dashboard, self._count_width() - 10)}"
        # Fixed height in the stylesheet: no re-layout of the screen on every update.
        self.query_one("#sweep-count", Static).update(text, layout=False)

    def on_sweep_runs_on(self, message: SweepRunsOn) -> None:
        """The sweep's Dask cluster answered: say where it runs, and its dashboard."""
        plural = "" if message.workers == 1 else "s"
        self.where = f"on {message.scheduler} · {message.workers} worker{plural}"
        if message.dashboard is not None:
            self.dashboard = message.dashboard
            self.query_one("#sweep-count", Static).styles.height = 2
            self.notify(f"Dask dashboard: {message.dashboard}", title="Sweep on Dask")
        self._shown_live = None  # the count line again, with where it runs
        self._poll_progress()

    def on_sweep_snapshot(self, message: SweepSnapshot) -> None:
        # A snapshot carries the grid of the model on screen only; the others keep their last
        # grid, so `m` draws at once (no 50-80 ms grid build on the UI thread) and the next
        # snapshot, at most SNAPSHOT_EVERY_S later, brings the newly shown model up to date.
        self.frame = message.frame
        if message.optimal:  # the model on screen had new rows: its cells change
            self.grids.update(message.optimal)
            self._draw()

    def on_sweep_finished(self, message: SweepFinished) -> None:
        self._stop_ticker()
        self.app.refresh_bindings()
        self.dashboard, self.where = None, ""  # the cluster's: gone with it
        self.frame, self.grids, self.finished = message.frame, message.optimal, message
        self.query_one(ProgressBar).update(total=message.total, progress=message.done)
        preset = self._selected()
        if preset is not None:  # the chosen preset, maybe chosen while this one ran, can start
            info = self.query_one("#sweep-info", Static)
            info.update(f"{preset.size()} configs · s start")
        word = "cancelled" if message.cancelled else "done"
        text = f"{message.done}/{message.total} {word}"
        count = self.query_one("#sweep-count", Static)
        count.styles.height = 1
        if not hide_timings():
            # The saved path on a line of its own, shortened to fit: it must stay visible.
            text += f" in {message.elapsed:.1f}s\nsaved "
            room = max(count.content_region.width, 20) - len("saved ")
            text += _short_path(message.path, room) if message.path is not None else "nowhere"
            count.styles.height = 2
        count.update(text)
        self._draw()
        if message.path is None:  # cancelled while its cluster started
            self.notify(f"Sweep {word} before it started: nothing saved")
            return
        kept = "partial results" if message.cancelled else "results"
        self.notify(f"Sweep {word}: {message.done} rows; {kept} saved to {message.path}")

    def action_cancel(self) -> None:
        if self.running and self.sweep_worker is not None:
            self.sweep_worker.cancel()
            self.query_one("#sweep-count", Static).update("cancelling…")

    def action_next_model(self) -> None:
        if self.models:
            self.model_index = (self.model_index + 1) % len(self.models)
            self._draw()

    @property
    def model(self) -> str | None:
        return self.models[self.model_index] if self.models else None

    def _draw(self) -> None:
        model = self.model
        if model is None or self.planned is None:
            return
        if model not in self.grids:  # a model not on screen when the last snapshot came
            self.grids.update(_grids(self.frame, self.planned, [model]))
        self.query_one(Heatmap).show(self.grids[model])
        self._title()
        self._row_line()

    def _row_line(self) -> None:
        """The line under the heatmap naming the highlighted row whole, shown while some
        row labels are drawn cut."""
        heatmap = self.query_one(Heatmap)
        line = self.query_one("#heatmap-row", Static)
        line.display = heatmap.labels_cut()
        if line.display:
            line.update(Text(f"row: {heatmap.row_label(heatmap.cursor_row)}"))

    def on_data_table_cell_highlighted(self, event: DataTable.CellHighlighted) -> None:
        event.stop()
        self._row_line()

    def _title(self) -> None:
        """The heatmap's title: which preset's grid it is (and, if the picker shows another,
        that ``s`` runs that one), the model, the axes, what is held and whether K varies;
        the legend says whether the speedups are Monte Carlo or exact."""
        heatmap = self.query_one(Heatmap)
        grid, model = heatmap.grid, self.model
        if grid is None or model is None or self.shown_name is None:
            return
        position = f"{self.model_index + 1}/{len(self.models)}"
        # Axes that vary but are not drawn are held at one value: say which (the grid's notes).
        held = "".join(f" · {k}={_value(v)} only" for k, v in grid.attrs.get("held", {}).items())
        if grid.attrs.get("k_count") == 1 and len(ks := set(self.planned["k"])) == 1:
            # No K* to find: each cell is the speedup at the grid's one K.
            held += f" · K={ks.pop()} only: K does not vary"
        name = self.shown_name
        selected = self._selected()
        if selected is not None and selected.name != name:
            name += f" (s runs {selected.name})"
        self.query_one("#heatmap-title", Static).update(
            f"{name} · K* of {model} ({position}, m: next) · {heatmap.row_title} × draft "
            f"cost{held}",
            layout=False,
        )
        self.query_one("#heatmap-legend", Static).update(f"{legend(grid)} · enter: curve")

    def on_data_table_cell_selected(self, event: DataTable.CellSelected) -> None:
        event.stop()
        from engine.analysis.analysis import row_config
        from engine.analysis.plot_data import heatmap_cell_rows

        heatmap = self.query_one(Heatmap)
        cell = heatmap.cell_at_cursor()
        grid = heatmap.grid
        if cell is None or self.frame is None or grid is None:
            return
        row, column = cell
        shown = grid[(grid["row"] == row) & (grid["column"] == column)]
        rows = heatmap_cell_rows(self.frame, grid, row, column)
        if shown.empty or rows.empty:
            self.notify("That cell has no finished configurations yet.", severity="warning")
            return
        # The configuration at the K* the cell shows (the grid's rule, ties to the smaller K).
        best = rows[rows["k"] == int(shown["k_opt"].iloc[0])].iloc[0]
        config = row_config(best)
        self.post_message(CellChosen(config, rows))


def _planned(configs: Sequence[SpecConfig]) -> Any:
    from engine.sweep.sweep import config_frame

    return config_frame(configs)


class SweepStore:
    """The finished rows of a sweep, kept as its views need them, not as dicts.

    A row's result columns (``config_id``, the metrics, the sampler) go to compact columns
    (:class:`_Column`: 8 bytes a value); its configuration columns are not kept: they are the
    planned frame's (:func:`engine.sweep.sweep.config_frame`, one row a configuration, which the
    heatmap holds anyway), looked up by ``config_id``. :meth:`frame` builds the frame of the
    rows so far, ordered by ``config_id``, with the sweep's columns: the frame
    :func:`engine.sweep.sweep.run_sweep` would return for them, in O(rows) array operations.
    """

    def __init__(self, planned: Any, columns: Sequence[str]) -> None:
        self.planned = planned
        self.columns = list(columns)
        self.config_columns = [c for c in self.columns[1:] if c in planned.columns]
        self._ids = array("q")
        self._results = {c: _Column() for c in self.columns[1:] if c not in planned.columns}

    def __len__(self) -> int:
        return len(self._ids)

    def ids_since(self, count: int) -> Any:
        """The ``config_id`` of the rows kept after the first ``count``, as a numpy array."""
        import numpy as np

        return np.frombuffer(self._ids, dtype=np.int64)[count:].copy()

    def add(self, row: dict[str, Any]) -> None:
        """Keep a finished row (a :func:`engine.sweep.sweep.sweep_rows` row)."""
        self._ids.append(row["config_id"])
        for name, column in self._results.items():
            column.append(row[name])

    def frame(self) -> Any:
        """The rows so far as a frame, ordered by ``config_id``."""
        import numpy as np
        import pandas as pd

        ids = np.array(self._ids, dtype=np.int64)
        order = np.argsort(ids, kind="stable")
        ids = ids[order]
        data: dict[str, Any] = {"config_id": ids}
        for name in self.config_columns:
            data[name] = self.planned[name].to_numpy()[ids]
        for name, column in self._results.items():
            data[name] = column.values()[order]
        return pd.DataFrame(data, columns=self.columns)


class _Column:
    """One result column: integers or floats in an :class:`array.array` (8 bytes a value),
    anything else (the sampler's few strings) as codes into its distinct values. Mixed
    values widen as pandas would widen a column of them (int and float: float; numbers
    and strings: object)."""

    def __init__(self) -> None:
        self.kind = ""  # "q" int64, "d" float64, "o" codes into self.distinct
        self.data: array[Any] = array("q")
        self.distinct: dict[tuple[type, Any], int] = {}
        self.fast: type | None = None  # int or float: the column's own values

    def append(self, value: Any) -> None:
        if type(value) is self.fast:  # the type the column began with: no question to ask
            self.data.append(value)
            return
        kind = _kind(value)
        if not self.kind:
            self.kind = kind
            self.data = array("d") if kind == "d" else array("q")
            self.fast = type(value) if type(value) in (int, float) else None
        elif kind != self.kind and self.kind != "o" and (self.kind, kind) != ("d", "q"):
            self._widen(kind)
        if self.kind == "o":
            self._append_code(value)
        else:
            self.data.append(value)

    def _widen(self, kind: str) -> None:
        self.fast = None
        if self.kind == "q" and kind == "d":
            self.data, self.kind, self.fast = array("d", self.data), "d", float
            return
        values = self.data.tolist()  # numbers, to keep as objects
        self.kind, self.data, self.distinct = "o", array("q"), {}
        for value in values:
            self._append_code(value)

    def _append_code(self, value: Any) -> None:
        # Keyed by type too: 1, 1.0 and True are one key of a dict, three values of a column.
        self.data.append(self.distinct.setdefault((type(value), value), len(self.distinct)))

    def values(self) -> Any:
        """The values as a numpy array (int64, float64 or object)."""
        import numpy as np

        if self.kind != "o":
            return np.array(self.data, dtype=np.float64 if self.kind == "d" else np.int64)
        distinct = np.empty(len(self.distinct), dtype=object)
        distinct[:] = [value for _, value in self.distinct]
        return distinct[np.array(self.data, dtype=np.int64)]


def _kind(value: Any) -> str:
    """A value's column kind (see :class:`_Column`)."""
    import numpy as np

    if isinstance(value, bool | np.bool_):
        return "o"
    if isinstance(value, int | np.integer):
        return "q"
    if isinstance(value, float | np.floating):
        return "d"
    return "o"


def _shorten(text: str, room: int) -> str:
    """``text`` in at most ``room`` characters (at least 9): its middle cut to …"""
    room = max(room, 9)
    if len(text) <= room:
        return text
    head = (room - 1) // 2
    return text[:head] + "…" + text[len(text) - (room - 1 - head) :]


def _grids(frame: Any, planned: Any, models: list[str] | None = None) -> dict[str, Any]:
    """The K* grid (engine.analysis.plot_data.optimal_k_heatmap) of ``models`` (default: every model
    of the sweep), each in the sweep's own shape."""
    import pandas as pd

    from engine.analysis.plot_data import optimal_k_heatmap

    rows = frame if frame is not None else pd.DataFrame()
    models = models if models is not None else list(dict.fromkeys(planned["draft_model"]))
    return {str(model): optimal_k_heatmap(rows, str(model), planned) for model in models}


def _short_path(path: Path, room: int) -> str:
    """``path`` in at most ``room`` characters if it can: ~ for home, then …/ for leading
    directories; the file name is always kept whole."""
    text = str(path)
    home = str(Path.home())
    if text.startswith(home + "/"):
        text = "~" + text[len(home) :]
    parts = text.split("/")
    while len(text) > room and len(parts) > 2:
        parts = ["…", *parts[2:]] if parts[0] == "…" else ["…", *parts[1:]]
        text = "/".join(parts)
    return text


def _value(value: Any) -> str:
    return f"{value:g}" if isinstance(value, int | float) else str(value)
