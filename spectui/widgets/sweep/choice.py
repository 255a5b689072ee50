"""The Sweep view's preset picker: the sweep presets, the one chosen described, and its grid
laid out (in a thread: a big grid takes seconds) before any sweep of it runs."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from textual import work
from textual.message import Message
from textual.widgets import ProgressBar, Select, Static
from textual.worker import get_current_worker

from engine.core.config import ConfigError, SpecConfig
from spectui.widgets.sweep.base import SweepBase
from spectui.widgets.sweep.grid import _grids, _planned


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


class SweepChoice(SweepBase):
    """The picker (``#sweep-preset``), the info line on the preset chosen, and its grid laid
    out, every cell pending; or why it cannot run."""

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
        self._can_start()
        self.app.refresh_bindings()

    def on__cancelled_planning(self, message: _CancelledPlanning) -> None:
        self._stop_ticker()
        self.dashboard, self.where = None, ""
        self._count_line(f"{message.name}: cancelled while planning, nothing ran")
        self.query_one("#heatmap-title", Static).update(f"{message.name}: no grid (s starts it)")
        self._can_start()
        self.app.refresh_bindings()
        self.notify(f"Sweep {message.name} cancelled before it started: nothing saved")
