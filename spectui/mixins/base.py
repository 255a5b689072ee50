"""What SpectuiApp's mixins share: the app's state, its views as found, the exact figures."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from textual import work
from textual.app import App

from engine.core.config import SpecConfig
from engine.presets import Preset
from engine.sweep.pool import SweepPool
from spectui.messages import ExactReady
from spectui.widgets.exact_panel import exact_figures
from spectui.widgets.method_fields import CatalogProvenance
from spectui.widgets.param_form import LABELS, ParamForm
from spectui.workers import worker_count

if TYPE_CHECKING:
    from pathlib import Path

    from textual.timer import Timer

    from spectui.pinning import Figures, Pinned
    from spectui.widgets.arena_view import ArenaView
    from spectui.widgets.speedup_view import SpeedupView


class AppBase(App[None]):
    """The app's state, set once here; SpectuiApp adds the screen and the form's handlers,
    each mixin (spectui.mixins) a group of actions."""

    def __init__(self, preset: Preset, *, replay_autoplay: bool = True) -> None:
        super().__init__()
        self.preset = preset
        self.replay_autoplay = replay_autoplay  # False: tests drive the Run view's replay
        self.config: SpecConfig | None = preset.config
        self.sweep_frame: Any = None
        self.sweep_partial = False
        self._sweep_preset = preset if preset.is_sweep else None  # the newest sweep preset
        self.sweep_total: int | None = None  # the newest sweep's rows in all
        self.sweep_live = False  # its rows so far, while it runs
        self._analysis_drawn = 0.0  # when the Analysis view was last drawn (monotonic s)
        self._analysis_timer: Timer | None = None  # its next drawing, while rows come
        self._up = False  # True once the form has posted its first values
        self.pool = SweepPool(worker_count())  # sweeps run in these processes
        self._mounts: dict[str, asyncio.Future[None]] = {}  # views mounted or mounting
        self._found: dict[str, Any] = {}  # views by id, as last found (see _view)
        # Copy (F4): a file written since the form last changed, and the newest one at all.
        self._written: tuple[Path, str] | None = None
        self._last_written: tuple[Path, str] | None = None
        # Pin (F9): the pinned result, and the figures of the form's configuration now.
        self.pinned: Pinned | None = None
        self._figures_now: tuple[SpecConfig, Figures] | None = None
        # The form is most of the start-up cost: it mounts right after the first frame.
        self.form = ParamForm(preset.config, id="form")
        # Where the form's acceptance comes from: the catalog's fit for the method chosen
        # above the form (spectui.widgets.method_fields), or the form's own values.
        self.provenance = CatalogProvenance()

    @work(thread=True, exclusive=True, group="exact", exit_on_error=False)
    def _exact(self, config: SpecConfig) -> None:
        self.post_message(ExactReady(config, exact_figures(config)))

    def _view(self, pane_id: str, view_id: str) -> Any:
        """The view mounted in the pane ``pane_id`` (widget id ``view_id``), or None. Asked
        for on every key (the key bar asks each action whether it is enabled): a pane not
        yet mounted answers at once, and a view found once is not looked for again while it
        stays in the app."""
        if pane_id != "run" and pane_id not in self._mounts:  # (the Run view is composed)
            return None
        view = self._found.get(view_id)
        if view is not None and view.is_attached:
            return view
        found = self.query(f"#{view_id}")
        view = self._found[view_id] = found.first() if found else None
        return view

    def _speedup_view(self) -> SpeedupView | None:
        # By id: importing the class would load plotext before the view is ever shown.
        return self._view("speedup", "speedup-view")  # type: ignore[no-any-return]

    def _plots_view(self) -> Any:
        return self._view("plots", "plots-view")

    def _arena_view(self) -> ArenaView | None:
        return self._view("arena", "arena-view")  # type: ignore[no-any-return]

    def _wrong_fields(self) -> str:
        """The form's wrong fields by their labels (as the form marks them)."""
        return ", ".join(LABELS.get(key, key) for key in self.form.errors) or "the form"
