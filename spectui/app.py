"""The spectui Textual app: a form, eight views, presets and help. No simulation logic here."""

from __future__ import annotations

import asyncio
import gc
import os
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from textual import work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Header, Static, TabbedContent, TabPane
from textual.worker import Worker

from engine.core.config import SpecConfig
from engine.presets import Preset, PresetError, load_preset
from engine.sweep.pool import SweepPool
from spectui.messages import (
    CellChosen,
    ConfigChanged,
    ExactReady,
    FileWritten,
    PinFigures,
    RunFinished,
    SweepFinished,
    SweepSnapshot,
)
from spectui.widgets.analysis_view import AnalysisView
from spectui.widgets.common import failure_reason, report_worker_error
from spectui.widgets.exact_panel import ERROR_FIELD, ERROR_REASON, ExactPanel, exact_figures
from spectui.widgets.footer import KeysFooter
from spectui.widgets.param_form import LABELS, ParamForm
from spectui.widgets.run_view import RunView
from spectui.widgets.sweep_view import SweepView
from spectui.widgets.view_tabs import ViewTabs
from spectui.workers import worker_count

if TYPE_CHECKING:
    from pathlib import Path

    from spectui.pinning import Figures, Pinned
    from spectui.widgets.arena_view import ArenaView
    from spectui.widgets.speedup_view import SpeedupView

ANALYSIS_EVERY_S = 5.0
# Start-up creates a few hundred thousand objects (widgets, styles, strips) that all live on;
# the default gen-0 threshold (700) would run the cyclic GC over them hundreds of times.
# Raised until the form is on screen, then put back: about a tenth off the start-up time.
STARTUP_GC_THRESHOLD = (50_000, 50, 100)
_DEFAULT_GC_THRESHOLD = gc.get_threshold()
VIEWS: tuple[tuple[str, str], ...] = (
    ("run", "Run"),
    ("speedup", "Speedup vs K"),
    ("sweep", "Sweep"),
    ("analysis", "Analysis"),
    ("plots", "Plots"),
    ("regime", "Regime"),
    ("arena", "Arena"),
    ("trees", "Tree"),  # not "tree": the form's shape.tree field has that id
)

# One list drives the bindings and the command palette: (key, action, title, help, footer?).
ACTIONS: tuple[tuple[str, str, str, str, bool], ...] = (
    ("f1,question_mark", "help", "Help", "The model in a few sentences, and every key", True),
    ("f5,ctrl+r", "run", "Run", "Monte Carlo run of the form's configuration", True),
    ("f6", "start_sweep", "Sweep", "Start the chosen sweep preset", True),
    ("f7", "start_arena", "Arena", "Run the K policies of the arena on the form's scenario", True),
    (
        "f8",
        "calibrate",
        "Calibrate",
        "Fit the acceptance model to serving logs; recommend K for the form's scenario",
        False,
    ),
    (
        "escape",
        "cancel",
        "Cancel",
        "Stop the Monte Carlo run, else the sweep, else the arena (finished results are kept)",
        True,
    ),
    ("ctrl+o", "load_preset", "Presets", "Load a shipped or user preset", True),
    (
        "ctrl+s",
        "save_preset",
        "Save preset",
        "Save the form as a preset (never overwrites silently)",
        False,
    ),
    ("ctrl+b", "toggle_form", "Form panel", "Hide or show the parameter form", False),
    ("f2", "focus_form", "Form", "Focus the parameter form", False),
    ("f3", "focus_view", "View", "Focus the current view", False),
    (
        "f4",
        "copy",
        "Copy",
        "Copy to the clipboard: Calibrate's engine flags, a file just written, the focused "
        "table's row, else the form as a spectui run command",
        False,
    ),
    (
        "f9",
        "pin",
        "Pin / unpin",
        "Pin the form's result (cards, Speedup curve, K*) to compare as the form changes",
        False,
    ),
)


class MainScreen(Screen[None]):
    """The app's screen. Nothing is focused on compose: the form, which mounts just after the
    first frame, focuses its first field unless the person has already focused something."""

    AUTO_FOCUS = ""


class SpectuiApp(App[None]):
    """Tune a configuration, watch it run, see speedup against K, sweep, analyse."""

    CSS_PATH = "app.tcss"
    TITLE = "spectui"
    BINDINGS = [
        *(Binding(k, a, t, show=s, tooltip=h, id=a) for k, a, t, h, s in ACTIONS),
        *(
            Binding(str(i), f"show_view('{v}')", title, show=False)
            for i, (v, title) in enumerate(VIEWS, start=1)
        ),
    ]

    def __init__(self, preset: Preset, *, replay_autoplay: bool = True) -> None:
        super().__init__()
        self.preset = preset
        self.replay_autoplay = replay_autoplay  # False: tests drive the Run view's replay
        self.config: SpecConfig | None = preset.config
        self.sweep_frame: Any = None
        self.sweep_partial = False
        self._sweep_preset = preset if preset.is_sweep else None  # the newest sweep preset
        self._analysis_drawn = 0.0
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

    def get_default_screen(self) -> Screen:
        return MainScreen(id="_default")

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="main"):
            with Vertical(id="side"):
                # The form's place, kept until it mounts (just after the first frame).
                placeholder = Static("loading…", id="form-placeholder")
                placeholder.border_title = "Configuration"
                yield placeholder
                yield ExactPanel("computing…", id="exact")
            with ViewTabs(id="views", initial="run"):  # labels fit its width
                with TabPane("1 Run", id="run"):
                    yield RunView(id="run-view", autoplay=self.replay_autoplay)
                # The other views mount after the first screen: see _mount_lazy.
                with TabPane("2 Speedup", id="speedup"):
                    yield Static("loading…", classes="lazy")
                with TabPane("3 Sweep", id="sweep"):
                    yield Static("loading…", classes="lazy")
                with TabPane("4 Analysis", id="analysis"):
                    yield Static("loading…", classes="lazy")
                with TabPane("5 Plots", id="plots"):
                    yield Static("loading…", classes="lazy")
                with TabPane("6 Regime", id="regime"):
                    yield Static("loading…", classes="lazy")
                with TabPane("7 Arena", id="arena"):
                    yield Static("loading…", classes="lazy")
                with TabPane("8 Tree", id="trees"):
                    yield Static("loading…", classes="lazy")
        yield KeysFooter()

    def on_load(self) -> None:
        gc.set_threshold(*STARTUP_GC_THRESHOLD)  # back to the default in _started()

    def on_mount(self) -> None:
        self.sub_title = f"preset {self.preset.name}"
        self.call_after_refresh(self._mount_form)
        # Later, not at once: importing pandas holds the GIL and would delay the first screen.
        self.set_timer(1.0, self._preload)

    async def _mount_form(self) -> None:
        placeholder = self.query_one("#form-placeholder")
        await self.query_one("#side").mount(self.form, before=placeholder)
        await placeholder.remove()

    def _started(self) -> None:
        """The form is on screen (it posted its first values): start-up is over."""
        gc.set_threshold(*_DEFAULT_GC_THRESHOLD)
        self.call_after_refresh(self._mount_lazy, "sweep")  # the next view a person needs

    def on_unmount(self) -> None:
        gc.set_threshold(*_DEFAULT_GC_THRESHOLD)  # also when the app quits during start-up
        self.pool.shutdown()

    @work(thread=True, group="preload", exit_on_error=False)
    def _preload(self) -> None:
        """Import the heavy engine modules (pandas) after the first screen, off the UI thread."""
        import engine.analysis.analysis
        import engine.simulate.simulator
        import engine.sweep.sweep  # noqa: F401

    @work(thread=True, group="warm", exit_on_error=False)
    def _warm_pool(self) -> None:
        """Start the sweep processes once the Sweep view is shown: F6 then need not wait.
        Not when $SPECTUI_SCHEDULER sends every sweep to Dask (they would sit idle)."""
        from engine.sweep.cluster import SCHEDULER_ENV

        if not os.environ.get(SCHEDULER_ENV, "").strip():
            self.pool.warm()

    # --- the form and the exact figures -------------------------------------------------
    def on_config_changed(self, message: ConfigChanged) -> None:
        if not self._up:
            self._up = True
            self._started()
        if message.config != self.config:
            self._written = None  # F4 copies the path of a file written since then only
        self.config = message.config
        self.query_one(RunView).config_changed(message.config)
        if self.pinned is not None:
            if message.config is not None and message.config != self.pinned.config:
                self._now_figures(message.config)
            self._show_pin()
        if message.config is None:
            self.query_one(ExactPanel).show_invalid()
        else:
            self._exact(message.config)
        speedup = self._speedup_view()
        if speedup is not None:
            speedup.set_config(message.config)
        for regime in self.query("#regime-view"):
            regime.set_config(message.config)  # type: ignore[attr-defined]
        for arena in self.query("#arena-view"):
            arena.set_config(message.config)  # type: ignore[attr-defined]
        for tree in self.query("#tree-view"):
            tree.set_config(message.config)  # type: ignore[attr-defined]

    @work(thread=True, exclusive=True, group="exact", exit_on_error=False)
    def _exact(self, config: SpecConfig) -> None:
        self.post_message(ExactReady(config, exact_figures(config)))

    def on_exact_ready(self, message: ExactReady) -> None:
        panel = self.query(ExactPanel)  # gone if the app is closing
        if panel and message.config == self.config:
            panel.first().show_figures(message.config, message.figures)
            field, reason = message.figures.get(ERROR_FIELD), message.figures.get(ERROR_REASON)
            if field is not None and not self.form.reject(message.config, str(field), str(reason)):
                self.notify(f"Exact figures: {field}: {reason}", severity="error", timeout=10)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        # The app's own workers; each view reports its own (common.ReportsWorkerErrors).
        if report_worker_error(self, event) and event.worker.group == "exact":
            for panel in self.query(ExactPanel):
                panel.show_failed(failure_reason(event.worker))

    # --- views ---------------------------------------------------------------------------
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

    async def _mount_lazy(self, pane_id: str) -> None:
        """Mount a view in place of its pane's placeholder, once; return when it is mounted.

        Only the Run view is in the first screen. The sweep view mounts as soon as the form is
        on screen; the other views when first shown (or, for the sweep, first needed). A
        caller that comes while another mounts the view waits for that mount.
        """
        if pane_id in self._mounts:
            await self._mounts[pane_id]
            return
        done = self._mounts[pane_id] = asyncio.get_running_loop().create_future()
        try:
            await self._mount_view(pane_id)
        finally:
            done.set_result(None)

    async def _mount_view(self, pane_id: str) -> None:
        pane = self.query_one(f"#{pane_id}", TabPane)
        await pane.query(".lazy").remove()
        if pane_id == "sweep":
            await pane.mount(SweepView(self._sweep_preset, id="sweep-view"))
        elif pane_id == "analysis":  # picks up self.sweep_frame itself
            await pane.mount(AnalysisView(id="analysis-view", classes="main-view"))
        elif pane_id == "regime":
            from spectui.widgets.regime_view import RegimeView

            regime = RegimeView(id="regime-view")
            regime.config = self.config
            await pane.mount(regime)
        elif pane_id == "arena":
            from spectui.widgets.arena_view import ArenaView

            arena = ArenaView(id="arena-view")
            arena.config = self.config
            await pane.mount(arena)
        elif pane_id == "trees":
            from spectui.widgets.tree_view import TreeView

            tree = TreeView(id="tree-view")
            tree.config = self.config
            await pane.mount(tree)
        elif pane_id == "speedup":
            from spectui.widgets.speedup_view import SpeedupView

            view = SpeedupView(id="speedup-view", classes="main-view")
            view.config = self.config
            await pane.mount(view)
            if self.pinned is not None:
                view.set_pinned(self.pinned.curve())
        else:
            try:
                from spectui.widgets.plots_view import PlotsView
            except ImportError:
                await pane.mount(Static("Plots view not available yet.", id="plots-view"))
                return
            plots = PlotsView(id="plots-view", classes="main-view")
            await pane.mount(plots)
            if self.sweep_frame is not None:
                plots.update_results(self.sweep_frame)

    async def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        pane_id = event.pane.id or ""
        if pane_id == "sweep":
            self._warm_pool()
        if pane_id != "run":
            await self._mount_lazy(pane_id)
        if pane_id == "speedup":
            view = self._speedup_view()
            if view is not None and view.dirty:
                view.refresh_curve()
        elif pane_id == "analysis":
            for analysis in self.query(AnalysisView):
                analysis.render_now()
        elif pane_id == "regime":
            for regime in self.query("#regime-view"):
                if regime.dirty:  # type: ignore[attr-defined]
                    regime.refresh_map()  # type: ignore[attr-defined]
        elif pane_id == "trees":
            for tree in self.query("#tree-view"):
                if tree.dirty:  # type: ignore[attr-defined]
                    tree.refresh_view()  # type: ignore[attr-defined]

    async def action_show_view(self, view: str) -> None:
        self.query_one(TabbedContent).active = view
        if view != "run":
            await self._mount_lazy(view)
        self.call_after_refresh(self.action_focus_view)

    def action_focus_view(self) -> None:
        pane = self.query_one(TabbedContent).active_pane
        if pane is None:
            return
        # The main widget of each view: the table, the chart, the heatmap, the text.
        found = pane.query(".main-view")
        if found and found.first().focusable:
            found.first().focus()

    def action_focus_form(self) -> None:
        self.query_one("#side").display = True
        self.form.focus_field("k")
        self._fit_tabs()

    def action_toggle_form(self) -> None:
        side = self.query_one("#side")
        side.display = not side.display
        self._fit_tabs()

    def _fit_tabs(self) -> None:
        """The tab labels for the views' new width, once laid out (their resize event alone
        sometimes came before the width changed, and the tabs kept the narrow labels)."""
        self.call_after_refresh(self.query_one(ViewTabs).fit_labels)

    def action_help(self) -> None:
        from spectui.screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            # A form field focused: its help, unit and range first (what its tooltip says).
            within = self.focused is not None and self.form in self.focused.ancestors
            self.push_screen(HelpScreen(self.form.focused_field if within else None))

    def action_calibrate(self) -> None:
        """Open the Calibrate screen on the form's scenario; ``f`` there loads the fitted
        model and the recommended K into the form."""
        from spectui.screens.calibrate import CalibrateScreen

        if isinstance(self.screen, CalibrateScreen):
            return

        def chosen(config: SpecConfig | None) -> None:
            if config is not None:  # the screen's toast says what is set
                self.form.load_config(config)

        self.push_screen(CalibrateScreen(self.config), chosen)

    # --- run and sweep -------------------------------------------------------------------
    def action_run(self) -> None:
        if self.config is None:
            fields = ", ".join(LABELS.get(k, k) for k in self.form.errors) or "the form"
            self.notify(f"Cannot run: fix {fields} first.", severity="error")
            return
        self.query_one(TabbedContent).active = "run"
        self._written = None
        view = self.query_one(RunView)
        view.start_run(self.config)
        view.table.focus()
        self.refresh_bindings()

    async def action_start_sweep(self) -> None:
        self.query_one(TabbedContent).active = "sweep"
        await self._mount_lazy("sweep")
        view = self.query_one(SweepView)
        view.action_start()
        self.call_after_refresh(self.action_focus_view)

    async def action_start_arena(self) -> None:
        self.query_one(TabbedContent).active = "arena"
        await self._mount_lazy("arena")
        view = self._arena_view()
        if view is not None:
            view.start()
        self.call_after_refresh(self.action_focus_view)
        self.refresh_bindings()

    def _arena_view(self) -> ArenaView | None:
        return self._view("arena", "arena-view")  # type: ignore[no-any-return]

    def action_cancel(self) -> None:
        """Escape: stop the arena when its view is shown, else the run if one is simulated,
        else the sweep, else the arena."""
        if self.query_one(TabbedContent).active == "arena" and self.action_cancel_arena():
            return
        if self.action_cancel_run():
            return
        if self._sweep_running():
            self.action_cancel_sweep()
        else:
            self.action_cancel_arena()

    def action_cancel_arena(self) -> bool:
        view = self._arena_view()
        stopped = view is not None and view.cancel()
        self.refresh_bindings()
        return stopped

    def action_cancel_run(self) -> bool:
        stopped = self.query_one(RunView).cancel_run()
        self.refresh_bindings()
        return stopped

    def action_cancel_sweep(self) -> None:
        for view in self.query(SweepView):
            view.action_cancel()

    def _sweep_running(self) -> bool:
        view = self._view("sweep", "sweep-view")
        return view is not None and bool(view.running)

    def _arena_running(self) -> bool:
        view = self._arena_view()
        return view is not None and view.running

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "cancel":
            run = self._view("run", "run-view")
            return (run is not None and run.busy) or self._sweep_running() or self._arena_running()
        if action == "cancel_sweep":
            return self._sweep_running()
        return True

    def on_sweep_snapshot(self, message: SweepSnapshot) -> None:
        self._sweep_rows(message.frame, partial=True)

    def on_sweep_finished(self, message: SweepFinished) -> None:
        self._sweep_rows(message.frame, partial=message.cancelled)
        if message.path is not None and message.path.exists():
            self._written = self._last_written = (message.path, "sweep CSV")

    # --- copy (F4) -------------------------------------------------------------------------
    def on_file_written(self, message: FileWritten) -> None:
        self._written = self._last_written = (message.path, message.what)

    def action_copy(self) -> None:
        """Copy what is current (see the help screen): on the Calibrate screen its engine
        flags; else the path of a file written since the form last changed (once); else the
        focused table's highlighted row; else the form as a ``spectui run`` command."""
        from spectui.copying import engine_flags, table_row
        from spectui.screens.calibrate import CalibrateScreen

        screen = self.screen
        if isinstance(screen, CalibrateScreen):
            found = screen.analysis
            if found is None or not found.emitted:
                self.notify("Nothing to copy yet: no recommended K.", severity="warning")
                return
            k = found.recommendation.k if found.recommendation is not None else "?"
            engines = ", ".join(found.emitted)
            text = engine_flags(found.emitted)
            self._copy(text, f"the engine flags for K = {k} ({engines}; one line each)")
            return
        if self._written is not None:
            path, what = self._written
            self._written = None
            self._copy(str(path), f"the {what}'s path")
            return
        row = table_row(screen.focused)
        if row is not None:
            self._copy(row, "the highlighted row (tab-separated)")
            return
        self.action_copy_command()

    def action_copy_command(self) -> None:
        from spectui.copying import command_line

        if self.config is None:
            self.notify(
                f"Cannot copy the command: fix {self._wrong_fields()} first.", severity="error"
            )
            return
        self._copy(command_line(self.config), "the form as a command")

    def action_copy_path(self) -> None:
        if self._last_written is None:
            self.notify("No file written yet (x in the Run view exports).", severity="warning")
            return
        path, what = self._last_written
        self._copy(str(path), f"the {what}'s path")

    def _wrong_fields(self) -> str:
        """The form's wrong fields by their labels (as the form marks them)."""
        from spectui.widgets.param_form import LABELS

        return ", ".join(LABELS.get(key, key) for key in self.form.errors) or "the form"

    def _copy(self, text: str, what: str) -> None:
        from spectui.copying import preview

        self.copy_to_clipboard(text)
        self.notify(f"Copied {what}: {preview(text)}", title="Copied")

    # --- pin and compare (F9) --------------------------------------------------------------
    def action_pin(self) -> None:
        """Pin the form's result, or unpin the pinned one."""
        if self.pinned is not None:
            self.pinned = None
            self._show_pin()
            self.notify("Unpinned: the views show the form's result alone.")
            return
        if self.config is None:
            self.notify(f"Cannot pin: fix {self._wrong_fields()} first.", severity="error")
            return
        self._pin_figures(self.config)

    @work(thread=True, exclusive=True, group="pin", exit_on_error=False)
    def _pin_figures(self, config: SpecConfig) -> None:
        self._post_figures(config, True)

    @work(thread=True, exclusive=True, group="pin-now", exit_on_error=False)
    def _now_figures(self, config: SpecConfig) -> None:
        """The figures of the form's configuration, to compare with the pinned one (each
        edit cancels the previous computation; a pin being computed is not)."""
        self._post_figures(config, False)

    def _post_figures(self, config: SpecConfig, pin: bool) -> None:
        from textual.worker import get_current_worker

        from spectui.pinning import figures

        worker = get_current_worker()
        found = figures(config, lambda: worker.is_cancelled)
        if found is not None:
            self.post_message(PinFigures(config, found, pin))

    def on_pin_figures(self, message: PinFigures) -> None:
        from engine.analysis.formatting import speedup_text
        from spectui.pinning import Pinned

        self._figures_now = (message.config, message.figures)
        if message.pin:
            result = self.query_one(RunView).result
            run = result.metrics if result is not None and result.config == message.config else None
            self.pinned = Pinned(message.config, message.figures, run)
            self.notify(
                f"Pinned K={message.config.k}: speedup "
                f"{speedup_text(message.figures.speedup, 3)}, K*={message.figures.k_star}"
                " · change the form to compare · F9 unpins"
            )
        self._show_pin()

    def on_run_finished(self, message: RunFinished) -> None:
        if self.pinned is not None:  # the Run view has shown it: compare its metrics
            self._show_pin()

    def _show_pin(self) -> None:
        """The pinned result, compared with the form's now, in the Run view and the Speedup
        view (or neither, when nothing is pinned)."""
        from spectui.pinning import compare_text

        view = self.query_one(RunView)
        speedup = self._speedup_view()
        pinned = self.pinned
        if pinned is None:
            view.show_compare(None)
            if speedup is not None:
                speedup.set_pinned(None)
            return
        now = self._figures_now
        figures_now = now[1] if now is not None and now[0] == self.config else None
        result = view.result
        run_now = result.metrics if result is not None and not view.stale else None
        view.show_compare(compare_text(pinned, self.config, figures_now, run_now))
        if speedup is not None:
            speedup.set_pinned(pinned.curve())

    def _sweep_rows(self, frame: Any, partial: bool) -> None:
        self.sweep_frame, self.sweep_partial = frame, partial
        now = time.monotonic()
        for analysis in self.query(AnalysisView):
            analysis.set_frame(frame, partial)
            # Analysis runs on the UI thread: while a sweep runs, redraw it only now and then.
            due = not partial or now - self._analysis_drawn >= ANALYSIS_EVERY_S
            if self.query_one(TabbedContent).active == "analysis" and due:
                analysis.render_now()
                self._analysis_drawn = now
        plots = self._plots_view()
        if plots is not None and hasattr(plots, "update_results"):
            plots.update_results(frame)

    async def on_cell_chosen(self, message: CellChosen) -> None:
        self.query_one(TabbedContent).active = "speedup"
        await self._mount_lazy("speedup")
        view = self._speedup_view()
        if view is not None:
            view.set_config(message.config, message.rows)
            view.refresh_curve()
            view.focus()  # so the view's own keys (c, f) work at once

    # --- presets ---------------------------------------------------------------------------
    def apply_preset(self, name_or_path: str) -> bool:
        """Load a preset into the form (and the sweep picker); errors become notifications."""
        from engine.presets import resolve_preset
        from spectui.confined import OutsideFiles, confine, confine_config

        try:
            confine(resolve_preset(name_or_path))  # a served app opens its own folders only
            preset = load_preset(name_or_path)
            confine_config(preset.config)  # nor a cost table elsewhere
        except (PresetError, OutsideFiles) as err:
            self.notify(str(err), title="Preset not loaded", severity="error", timeout=10)
            return False
        self.preset = preset
        if not self.form.ready:  # the form shows it when it mounts; run it meanwhile
            self.config = preset.config
            self._exact(preset.config)
        self.form.load_config(preset.config)
        if preset.is_sweep:
            self._sweep_preset = preset  # what a sweep view not mounted yet will start on
            for view in self.query(SweepView):
                view.choose(preset)
        self.sub_title = f"preset {preset.name}"
        self.notify(f"Loaded preset {preset.name}")
        return True

    def action_load_preset(self) -> None:
        from spectui.screens.presets import PresetPicker

        def chosen(name: str | None) -> None:
            if name:
                self.apply_preset(name)

        self.push_screen(PresetPicker(), chosen)

    def action_save_preset(self) -> None:
        from spectui.screens.presets import save_form_as_preset

        if self.config is None:
            self.notify("Cannot save: the form has invalid fields.", severity="error")
            return
        save_form_as_preset(self, self.config)

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for _keys, action, title, help_text, _show in ACTIONS:
            yield SystemCommand(title, help_text, getattr(self, f"action_{action}"))
        yield SystemCommand("Cancel run", "Stop the Monte Carlo run", self.action_cancel_run)
        yield SystemCommand(
            "Copy command line",
            "Copy the form as a spectui run command",
            self.action_copy_command,
        )
        yield SystemCommand(
            "Copy file path", "Copy the path of the newest file written", self.action_copy_path
        )
        yield SystemCommand(
            "Cancel sweep", "Stop the sweep; finished cells are kept", self.action_cancel_sweep
        )
        yield SystemCommand(
            "Cancel arena", "Stop the arena; finished rows are kept", self.action_cancel_arena
        )
        for view, title in VIEWS:
            yield SystemCommand(f"View: {title}", f"Show the {title} view", self._show(view))
        from engine.presets import preset_paths

        for name in preset_paths():
            yield SystemCommand(f"Preset: {name}", f"Load preset {name}", self._loader(name))

    def _show(self, view: str) -> Any:
        async def show() -> None:
            await self.action_show_view(view)

        return show

    def _loader(self, name: str) -> Any:
        return lambda: self.apply_preset(name)


def create_app(preset: str | None = None, *, replay_autoplay: bool = True) -> SpectuiApp:
    """The app opened on ``preset`` (a name or a path; None means "default").

    ``replay_autoplay=False``: the Run view's replay moves only when a test drives it
    (``CycleTable.advance``, ``advance_to``, ``run_to_end``).

    Raises :class:`engine.presets.PresetError` when the preset is missing or malformed, and
    :class:`spectui.errors.UsageError` when $SPECTUI_SWEEP_WORKERS is not a valid count.
    """
    return SpectuiApp(load_preset(preset or "default"), replay_autoplay=replay_autoplay)
