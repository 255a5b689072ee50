"""What the Sweep view's parts share: its state, set once here, and the preset chosen."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual.containers import Vertical
from textual.timer import Timer
from textual.widgets import Select
from textual.worker import Worker

from spectui.messages import SweepFinished
from spectui.widgets.common import ReportsWorkerErrors


class SweepBase(ReportsWorkerErrors, Vertical):
    """The Sweep view's state; each part (spectui.widgets.sweep) is a mixin of it, and
    :class:`spectui.widgets.sweep_view.SweepView` is made of them."""

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
        # Escape (or the app's cancel) stopped the sweep running: its rows so far are saved
        # as its CSV. Stopped otherwise (the app quits), they stay in the CSV's .partial.
        self.cancel_asked = False
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

    @property
    def running(self) -> bool:
        """A sweep started and not yet finished (a worker just created is still pending)."""
        return self.sweep_worker is not None and not self.sweep_worker.is_finished

    def _selected(self) -> Any:
        value = self.query_one("#sweep-preset", Select).value
        return self.presets.get(str(value)) if value != Select.NULL else None

    if TYPE_CHECKING:  # what the parts ask of each other (each defined once, in its part)

        def _draw(self) -> None: ...  # SweepView
        def _clear_grid(self, title: str) -> None: ...  # grid
        def _title(self) -> None: ...
        def _row_line(self) -> None: ...
        @property
        def model(self) -> str | None: ...
        def _count_line(self, text: str) -> None: ...  # status
        def _fit(self, text: str, where: str) -> str: ...
        def _where_next(self, preset: Any) -> str: ...
        def _stop_ticker(self) -> None: ...
        def _can_start(self) -> None: ...
