"""Sweep view: run a sweep preset, watch the optimal-K heatmap fill, cancel keeping results."""

from __future__ import annotations

import math
import time
from concurrent.futures.process import BrokenProcessPool
from datetime import datetime
from pathlib import Path
from typing import Any

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import DataTable, ProgressBar, Select, Static
from textual.worker import Worker, get_current_worker

from engine.config import SpecConfig
from spectui.messages import CellChosen, SweepFinished, SweepProgress, SweepSnapshot
from spectui.widgets.common import (
    ReportsWorkerErrors,
    hide_timings,
    results_dir,
)
from spectui.widgets.heatmap import LEGEND, Heatmap

SNAPSHOT_EVERY_S = 0.5
PROGRESS_EVERY_S = 0.25


class SweepView(ReportsWorkerErrors, Vertical):
    """Pick a sweep preset, start it with ``s``, cancel with Escape."""

    BINDINGS = [
        Binding("s", "start", "Start sweep", tooltip="Run the chosen sweep preset"),
        Binding("m", "next_model", "Model", tooltip="Show the next draft model's heatmap"),
    ]

    def __init__(self, sweep_preset: Any = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.initial = sweep_preset
        self.presets: dict[str, Any] = {}
        self.sweep_worker: Worker | None = None
        self.frame: Any = None
        self.planned: Any = None  # the configurations of the sweep shown, as a frame
        self.grids: dict[str, Any] = {}  # model -> engine.plot_data.optimal_k_heatmap
        self.models: list[str] = []
        self.model_index = 0
        self.out_path: Path | None = None
        self.finished: SweepFinished | None = None
        self._configs_cache: dict[str, list[SpecConfig]] = {}
        self.running_name: str | None = None  # the preset of the sweep started last

    def compose(self) -> ComposeResult:
        with Horizontal(id="sweep-top"):
            yield Select([], id="sweep-preset", compact=True, allow_blank=True, prompt="sweep")
            yield Static("", id="sweep-info")
        yield ProgressBar(id="sweep-progress", show_eta=False, show_percentage=True)
        yield Static("", id="sweep-count")
        yield Static("", id="heatmap-title")
        yield Heatmap(id="heatmap", classes="main-view")
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

    def _configs(self, preset: Any) -> list[SpecConfig]:
        if preset.name not in self._configs_cache:
            self._configs_cache[preset.name] = preset.sweep.configs()
        return self._configs_cache[preset.name]

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
        self._configs_cache.pop(preset.name, None)
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
            return
        configs = self._configs(preset)
        if self.running:
            # The heatmap keeps showing the running sweep; the choice applies to the next one.
            if preset.name != self.running_name:
                info.update(f"{len(configs)} configs · s starts it when this sweep ends")
            else:  # chosen, then started before this ran
                info.update(f"{len(configs)} configs · running (Escape cancels)")
            return
        info.update(f"{len(configs)} configs · s start")
        # A new choice: the status and the grid describe it, not the sweep shown before.
        self.query_one(ProgressBar).update(total=len(configs), progress=0)
        count = self.query_one("#sweep-count", Static)
        count.styles.height = 1
        count.update(f"0/{len(configs)} · not started")
        self.frame = self.finished = None
        self._prepare(configs)
        self._draw()

    def _prepare(self, configs: list[SpecConfig]) -> None:
        """The empty grids of a sweep about to run: every cell pending, in its final shape."""
        self.planned = _planned(configs)
        self.models = list(dict.fromkeys(self.planned["draft_model"]))
        self.model_index = 0
        self.grids = _grids(None, self.planned)

    def action_start(self) -> None:
        preset = self._selected()
        if preset is None:
            self.notify("Choose a sweep preset first.", severity="warning")
            return
        if self.running:
            self.notify("A sweep is already running (Escape cancels it).", severity="warning")
            return
        configs = self._configs(preset)
        self.running_name = preset.name
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        self.out_path = results_dir() / f"sweep-{preset.name}-{stamp}.csv"
        self.frame = self.finished = None
        self._prepare(configs)
        bar = self.query_one(ProgressBar)
        bar.update(total=len(configs), progress=0)
        self.query_one("#sweep-count", Static).styles.height = 1
        self.query_one("#sweep-info", Static).update(
            f"{len(configs)} configs · running (Escape cancels)"
        )
        self._set_count(0, len(configs), 0.0)
        self._draw()
        self.sweep_worker = self._sweep(configs, self.planned, self.out_path)
        self.app.refresh_bindings()

    @work(thread=True, exclusive=True, group="sweep", exit_on_error=False)
    def _sweep(self, configs: list[SpecConfig], planned: Any, out_path: Path) -> None:
        import pandas as pd

        from engine.files import SweepWriter
        from engine.pool import batch_size
        from engine.sweep import run_sweep, sweep_columns

        worker = get_current_worker()
        pool = getattr(self.app, "pool", None)
        executor = pool.executor() if pool is not None else None
        if pool is not None and executor is None and pool.problem and pool.workers:
            self.app.call_from_thread(
                self.notify,
                f"Sweep runs in the app's own process (no worker processes: {pool.problem})",
                severity="warning",
            )
        # Serially (no executor) each group of configurations that share draws (or a slice of
        # an exact-only sweep) is one step; batches are for workers.
        batch = batch_size(configs, pool.workers) if pool is not None and executor else 1
        spacing = 10 if executor is None else 3
        columns = list(sweep_columns(configs))
        writer = SweepWriter(out_path, columns)
        rows: list[dict[str, Any]] = []
        start = time.perf_counter()
        last = [start, start]  # last snapshot, last progress message
        interval = [SNAPSHOT_EVERY_S]

        def on_result(row: dict[str, Any], done: int, total: int) -> None:
            writer.write(row)
            rows.append(row)
            now = time.perf_counter()
            # Few messages: each costs the UI thread a refresh, and the sweep the GIL.
            if now - last[1] >= PROGRESS_EVERY_S:
                last[1] = now
                self.post_message(SweepProgress(done, total, now - start))
            if now - last[0] >= interval[0] and done < total:
                frame = pd.DataFrame(rows, columns=columns)
                # Only the model on screen: the others are built when shown (m).
                shown = self.model
                grids = _grids(frame, planned, [shown] if shown else None)
                self.post_message(SweepSnapshot(frame, grids))
                # A snapshot costs a sweep in this thread its own time (the GIL): keep that
                # under ~10 %. With worker processes it delays only the collection of results.
                last[0] = time.perf_counter()
                interval[0] = max(SNAPSHOT_EVERY_S, spacing * (last[0] - now))

        try:
            frame = run_sweep(
                configs,
                executor=executor,
                batch_size=batch,
                on_result=on_result,
                should_stop=lambda: worker.is_cancelled,
            )
        except BrokenProcessPool:
            assert pool is not None
            pool.discard()  # a worker died; the next sweep gets new processes
            raise
        finally:
            writer.close()
        cancelled = len(frame) < len(configs)
        if cancelled and executor is not None and pool is not None:
            pool.discard()  # stop the batches in flight; the next sweep starts fresh processes
        path = writer.finish()
        grids = _grids(frame, planned)
        elapsed = time.perf_counter() - start
        self.post_message(
            SweepFinished(frame, grids, path, cancelled, elapsed, len(frame), len(configs))
        )

    def worker_failed(self, worker: Worker) -> None:
        """The sweep's worker raised (the one handler has said why): leave "running"."""
        if worker.group == "sweep":
            self.query_one("#sweep-count", Static).update("sweep failed (see notification)")

    def _set_count(self, done: int, total: int, elapsed: float) -> None:
        text = f"{done}/{total}"
        if not hide_timings() and elapsed > 0 and done:
            rate = done / elapsed
            eta = (total - done) / rate if rate else float("nan")
            text += f" · {rate:.0f}/s · ETA {eta:.0f}s"
        # Fixed height in the stylesheet: no re-layout of the screen on every update.
        self.query_one("#sweep-count", Static).update(text, layout=False)

    def on_sweep_progress(self, message: SweepProgress) -> None:
        self.query_one(ProgressBar).update(total=message.total, progress=message.done)
        self._set_count(message.done, message.total, message.elapsed)

    def on_sweep_snapshot(self, message: SweepSnapshot) -> None:
        # A snapshot carries the grid of the model on screen only; the others keep their last
        # grid, so `m` draws at once (no 50-80 ms grid build on the UI thread) and the next
        # snapshot, at most SNAPSHOT_EVERY_S later, brings the newly shown model up to date.
        self.frame = message.frame
        self.grids.update(message.optimal)
        self._draw()

    def on_sweep_finished(self, message: SweepFinished) -> None:
        self.app.refresh_bindings()
        self.frame, self.grids, self.finished = message.frame, message.optimal, message
        self.query_one(ProgressBar).update(total=message.total, progress=message.done)
        preset = self._selected()
        if preset is not None:  # the chosen preset, maybe chosen while this one ran, can start
            info = self.query_one("#sweep-info", Static)
            info.update(f"{len(self._configs(preset))} configs · s start")
        word = "cancelled" if message.cancelled else "done"
        text = f"{message.done}/{message.total} {word}"
        count = self.query_one("#sweep-count", Static)
        if not hide_timings():
            # The saved path on a line of its own, shortened to fit: it must stay visible.
            text += f" in {message.elapsed:.1f}s\nsaved "
            room = max(count.content_region.width, 20) - len("saved ")
            text += _short_path(message.path, room) if message.path is not None else "nowhere"
            count.styles.height = 2
        count.update(text)
        self._draw()
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
        grid = self.grids[model]
        heatmap = self.query_one(Heatmap)
        heatmap.show(grid)
        position = f"{self.model_index + 1}/{len(self.models)}"
        # Axes that vary but are not drawn are held at one value: say which (the grid's notes).
        held = "".join(f" · {k}={_value(v)} only" for k, v in grid.attrs.get("held", {}).items())
        self.query_one("#heatmap-title", Static).update(
            f"K* of {model} ({position}, m: next) · {heatmap.row_title} × draft cost{held}",
            layout=False,
        )

    def on_data_table_cell_selected(self, event: DataTable.CellSelected) -> None:
        event.stop()
        from engine.analysis import row_config
        from engine.plot_data import heatmap_cell_rows

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


def _planned(configs: list[SpecConfig]) -> Any:
    from engine.sweep import config_frame

    return config_frame(configs)


def _grids(frame: Any, planned: Any, models: list[str] | None = None) -> dict[str, Any]:
    """The K* grid (engine.plot_data.optimal_k_heatmap) of ``models`` (default: every model
    of the sweep), each in the sweep's own shape."""
    import pandas as pd

    from engine.plot_data import optimal_k_heatmap

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
