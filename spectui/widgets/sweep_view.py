"""Sweep view: run a sweep preset, watch the optimal-K heatmap fill, cancel keeping results.

A sweep runs in the app's worker processes (:mod:`spectui.workers`), or on a Dask cluster when
a scheduler applies (:func:`sweep_scheduler`: $SPECTUI_SCHEDULER, else the preset's
``scheduler`` key). Its rows stream to the results file; the view keeps only what its views
draw (:class:`SweepStore`).

The view is made of parts (:mod:`spectui.widgets.sweep`): the picker, the heatmap, the status
lines and where the rows are computed; here it is composed, and the sweep's thread runs.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures.process import BrokenProcessPool
from datetime import datetime
from pathlib import Path
from typing import Any

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.widgets import ProgressBar, Select, Static
from textual.worker import get_current_worker

from engine.core.config import ConfigError, SpecConfig
from spectui.messages import SweepFinished, SweepSnapshot, SweepStarted
from spectui.widgets.common import results_dir
from spectui.widgets.heatmap import LEGEND, Heatmap, SweepHeatmap
from spectui.widgets.sweep.choice import SweepChoice, _CancelledPlanning, _CannotRun, _Planned
from spectui.widgets.sweep.grid import SweepGrid, _grids, _planned
from spectui.widgets.sweep.status import PROGRESS_EVERY_S, SweepStatus, _short_path
from spectui.widgets.sweep.store import SweepStore
from spectui.widgets.sweep.workers import SCHEDULER_FORMS, SweepExecutor, sweep_scheduler
from spectui.widgets.table_hint import ColumnsHint

__all__ = [
    "NO_PRESET",
    "PLANNING_STEP",
    "PROGRESS_EVERY_S",
    "SCHEDULER_FORMS",
    "SNAPSHOT_EVERY_S",
    "SNAPSHOT_SHARE",
    "SweepStore",
    "SweepView",
    "_short_path",
    "sweep_scheduler",
]

SNAPSHOT_EVERY_S = 1.0  # at most one new grid a second...
SNAPSHOT_SHARE = 0.1  # ...and building them takes at most this share of the sweep's time
PLANNING_STEP = 256  # configurations between two planning figures
NO_PRESET = "no preset"  # the picker's blank entry


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


class SweepView(SweepChoice, SweepGrid, SweepStatus):
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
        self.cancel_asked = False
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
        self.post_message(SweepStarted(self.running_total))  # for the Analysis view
        self._start_ticker()
        self.app.refresh_bindings()

    @work(thread=True, exclusive=True, group="sweep", exit_on_error=False)
    def _sweep(
        self,
        preset: Any,
        configs: Sequence[SpecConfig],
        out_path: Path,
        scheduler: str | None = None,
    ) -> None:
        _run(self, preset, configs, out_path, scheduler)

    def on_sweep_snapshot(self, message: SweepSnapshot) -> None:
        # A snapshot carries the grid of the model on screen only; the others keep their last
        # grid, so `m` draws at once (no 50-80 ms grid build on the UI thread) and the next
        # snapshot, at most SNAPSHOT_EVERY_S later, brings the newly shown model up to date.
        self.frame = message.frame
        if message.optimal:  # the model on screen had new rows: its cells change
            self.grids.update(message.optimal)
            self._draw()

    def action_cancel(self) -> None:
        if self.running and self.sweep_worker is not None:
            self.cancel_asked = True  # its rows so far are saved as its CSV (_run)
            self.sweep_worker.cancel()
            self.query_one("#sweep-count", Static).update("cancelling…")

    def _draw(self) -> None:
        model = self.model
        if model is None or self.planned is None:
            return
        if model not in self.grids:  # a model not on screen when the last snapshot came
            self.grids.update(_grids(self.frame, self.planned, [model]))
        self.query_one(Heatmap).show(self.grids[model])
        self._title()
        self._row_line()


def _run(
    view: SweepView, preset: Any, configs: Sequence[SpecConfig], out_path: Path, scheduler: Any
) -> None:
    """The sweep's thread: plan it, lay out its grid, compute its rows where they run
    (:class:`SweepExecutor`), writing each to ``out_path``, and post its end."""
    from engine.core.files import SweepWriter

    worker = get_current_worker()

    def stopped() -> bool:
        return worker.is_cancelled

    start = time.perf_counter()
    planning = _plan(view, preset, configs, stopped)
    if planning is None:
        return
    plan, planned = planning
    view.live = ("running", 0, plan.total, 0.0)
    where = SweepExecutor(view, scheduler)
    writer = None
    try:
        if not where.open(plan, stopped):  # cancelled while its cluster started
            _post_finished(view, SweepStore(planned, plan.columns), planned, None, start)
            return
        store = SweepStore(planned, plan.columns)
        writer = SweepWriter(out_path, plan.columns)
        _compute(view, configs, plan, planned, store, writer, where, stopped)
    except BrokenProcessPool:
        where.broken()  # a worker died; the next sweep gets new processes
        raise
    finally:
        if writer is not None:
            writer.close()
        where.close()
    if len(store) < plan.total:
        where.cancelled()
        if not view.cancel_asked:  # the app quits: the rows stay in <out>.partial
            _interrupted(writer, len(store))
            return
    _post_finished(view, store, planned, writer.finish(), start)


def _interrupted(writer: Any, done: int) -> None:
    """A sweep the app quit during (its worker cancelled, Escape not pressed): its rows are
    left where an interrupted ``spectui sweep`` leaves them, in ``<out>.partial``, which says
    the sweep is partial and which ``spectui sweep --resume --out <out>`` goes on with (a
    finished ``<out>`` would read as the whole sweep). Nothing done: no file at all."""
    if not done:
        writer.partial.unlink(missing_ok=True)


def _plan(
    view: SweepView, preset: Any, configs: Sequence[SpecConfig], stopped: Callable[[], bool]
) -> tuple[Any, Any] | None:
    """The sweep's plan and its configurations as a frame, its empty grids posted; None when
    a configuration cannot be or the sweep was cancelled meanwhile (each posted)."""
    from engine.sweep.sweep import plan_sweep

    total = view.running_total

    def counter(phase: str) -> Any:
        def seen(count: int) -> None:
            if stopped():  # Escape while planning: stop at once, nothing runs
                raise _PlanningStopped
            view.live = (phase, count, total, 0.0)

        return seen

    # Planned here, not on the UI thread: 46,080 configurations take seconds, during
    # which the count line says how far planning is (the plan first: it has figures to
    # show at once, and the grid no rows to show before it).
    try:
        plan = plan_sweep(_Counted(configs, counter("planning")))
        planned = view._planned_cache.get(preset.name)
        if planned is None:  # not laid out since it was chosen
            configs_seen = _Counted(configs, counter("laying out"))
            planned = view._planned_cache[preset.name] = _planned(configs_seen)
        view.post_message(_Planned(preset.name, planned, _grids(None, planned), True))
    except ConfigError as err:
        view.post_message(_CannotRun(preset.name, err, True))
        return None
    except _PlanningStopped:
        view.post_message(_CancelledPlanning(preset.name))
        return None
    return plan, planned


def _compute(
    view: SweepView,
    configs: Sequence[SpecConfig],
    plan: Any,
    planned: Any,
    store: SweepStore,
    writer: Any,
    where: SweepExecutor,
    stopped: Callable[[], bool],
) -> None:
    """Compute the sweep's rows, each written and kept, until done or cancelled: its
    figures in :attr:`SweepView.live`, and a snapshot of the model shown now and then."""
    from engine.sweep.sweep import sweep_rows

    model_of = planned["draft_model"].to_numpy()
    # The rate and ETA count from here: planning is not the sweep's pace.
    began = last = time.perf_counter()
    interval = SNAPSHOT_EVERY_S
    seen = 0  # rows the last snapshot had
    stale: set[str] = set()  # models with rows their last grid built lacks
    rows = sweep_rows(
        configs, executor=where.executor, should_stop=stopped, batch_size=where.batch, plan=plan
    )
    for row in rows:
        writer.write(row)
        store.add(row)
        done, now = len(store), time.perf_counter()
        view.live = ("running", done, plan.total, now - began)
        if now - last < interval or done >= plan.total:
            continue
        # Only the model on screen, and only if it has rows its grid lacks: the
        # others are built when shown (m).
        shown = view.model
        stale.update(model_of[store.ids_since(seen)].tolist())
        seen = done
        frame = store.frame()
        grids = {}
        if shown is not None and shown in stale:
            stale.discard(shown)
            grids = _grids(frame, planned, [shown])
        view.post_message(SweepSnapshot(frame, grids, plan.total))
        # A snapshot costs this thread's time and the UI's (one interpreter lock):
        # keep it under SNAPSHOT_SHARE of the sweep's, however big the sweep grows.
        last = time.perf_counter()
        interval = max(SNAPSHOT_EVERY_S, (last - now) / SNAPSHOT_SHARE)


def _post_finished(
    view: SweepView, store: SweepStore, planned: Any, path: Path | None, start: float
) -> None:
    """Post the sweep's end: its finished rows (all, or fewer when cancelled)."""
    frame = store.frame()
    total = len(planned)
    elapsed = time.perf_counter() - start
    view.post_message(
        SweepFinished(
            frame, _grids(frame, planned), path, len(frame) < total, elapsed, len(frame), total
        )
    )
