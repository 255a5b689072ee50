"""The spectui Textual app: a form, eight views, presets and help. No simulation logic here.

SpectuiApp composes the screen, starts up, and passes the form's configuration to the
views; its actions come from the mixins in spectui.mixins, one group each.
"""

from __future__ import annotations

import asyncio
import gc
import threading
from collections.abc import Iterable
from typing import Any

from textual import events, work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.driver import Driver
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Header, Static, TabPane
from textual.worker import Worker

from engine.presets import load_preset
from spectui.messages import ConfigChanged, ExactReady, TypedKeys
from spectui.mixins.clipboard import CopyMixin
from spectui.mixins.pin import PinMixin
from spectui.mixins.presets import PresetsMixin
from spectui.mixins.runs import ANALYSIS_EVERY_S, RunsMixin
from spectui.mixins.screens import ScreensMixin
from spectui.widgets.common import failure_reason, report_worker_error
from spectui.widgets.exact_panel import ERROR_FIELD, ERROR_REASON, ExactPanel
from spectui.widgets.footer import KeysFooter
from spectui.widgets.method_fields import MethodFields
from spectui.widgets.param_fields import FieldInput
from spectui.widgets.run_view import RunView
from spectui.widgets.view_tabs import ViewTabs

__all__ = [
    "ACTIONS",
    "ANALYSIS_EVERY_S",
    "QUIT_KEYS",
    "STARTUP_GC_THRESHOLD",
    "VIEWS",
    "MainScreen",
    "SpectuiApp",
    "create_app",
]

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

# The keys that quit (Textual's own binding, ctrl+q): queued keys are dropped when one comes
# (SpectuiApp.post_message).
QUIT_KEYS = frozenset(
    key.strip()
    for binding in App.BINDINGS
    if isinstance(binding, Binding) and binding.action == "quit"
    for key in binding.key.split(",")
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
        "ctrl+l",
        "load_study",
        "Load",
        "Serve the form's scenario under load: TPOT and throughput by request rate, per policy",
        False,
    ),
    (
        "ctrl+t",
        "lab",
        "Lab",
        "The distribution acceptance model one context at a time: p, q, min(p, q) and the "
        "residual; send the rates it implies to the form",
        False,
    ),
    (
        "ctrl+g",
        "acceptance",
        "Acceptance",
        "The acceptance catalog: published rows by method, target, draft and dataset, each "
        "setup's fitted M by K with its sources; send a fit to the form",
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


_QUICK: dict[type[Driver], type[Driver]] = {}


def quick_driver(driver: type[Driver]) -> type[Driver]:
    """``driver``, posting each input event to the app with one callback on its loop
    (``loop.call_soon_threadsafe``) where Textual's runs a coroutine for each
    (``asyncio.run_coroutine_threadsafe``: a task and two futures a key, most of the cost of
    reading 100 KB of keys). The same order, the same ``App.post_message``."""
    if driver.send_message is not Driver.send_message:  # a driver with its own: kept
        return driver
    if driver not in _QUICK:

        def send_message(self: Driver, message: Message) -> None:
            self._loop.call_soon_threadsafe(self._app.post_message, message)

        _QUICK[driver] = type(driver.__name__, (driver,), {"send_message": send_message})
    return _QUICK[driver]


class MainScreen(Screen[None]):
    """The app's screen. Nothing is focused on compose: the form, which mounts just after the
    first frame, focuses its first field unless the person has already focused something."""

    AUTO_FOCUS = ""


class SpectuiApp(PresetsMixin, PinMixin, CopyMixin, RunsMixin, ScreensMixin):
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

    _typing: TypedKeys | None = None  # the printable keys queued last, not yet handled

    def post_message(self, message: Message) -> bool:
        """Queue ``message``. An unbracketed paste comes as one key event each, and each
        cost Textual about 0.15 ms before it reached the field (the bindings of the focused
        widget and its ancestors are looked up): 100 KB took 30 s to type, and ctrl+q after
        it waited as long. So printable keys that come one after another are queued as one
        :class:`TypedKeys` (:meth:`on_typed_keys`), and a quit key (:data:`QUIT_KEYS`) first
        drops the keys queued before it, which quitting would throw away."""
        on_loop = self._thread_id == threading.get_ident()
        if isinstance(message, events.Key):
            if message.key in QUIT_KEYS:
                if on_loop:
                    self._drop_queued_keys()
                elif self._loop is not None:  # before the quit key is queued, on the loop
                    self._loop.call_soon_threadsafe(self._drop_queued_keys)
            elif on_loop and message.is_printable and not message.is_forwarded:
                if self._typing is not None:  # queued last: the key joins it
                    self._typing.keys.append(message)
                    return True
                self._typing = TypedKeys(message)
                return super().post_message(self._typing)
        if on_loop:
            self._typing = None  # what comes next is queued after this
        return super().post_message(message)

    async def on_typed_keys(self, message: TypedKeys) -> None:
        """Printable keys that came one after another: typed as one text into the form
        field that has the focus (as the keys one by one would type them), else each key
        handled as it would have been."""
        if self._typing is message:
            self._typing = None
        field = self.focused
        if isinstance(field, FieldInput) and isinstance(self.screen, MainScreen):
            field.type_text("".join(key.character for key in message.keys))
            return
        for key in message.keys:
            await self._dispatch_message(key)

    def _drop_queued_keys(self) -> None:
        """Take the key events out of the app's queue (``MessagePump._message_queue``,
        Textual 8); every other message stays, in its order."""
        queue: asyncio.Queue[Message | None] = self._message_queue
        kept: list[Message | None] = []
        while True:
            try:
                queued: Message | None = queue.get_nowait()
            except asyncio.QueueEmpty:
                break
            queue.task_done()
            if not isinstance(queued, events.Key | TypedKeys):
                kept.append(queued)
        for message in kept:
            queue.put_nowait(message)
        self._typing = None

    def get_driver_class(self) -> type[Driver]:
        """Textual's driver for this terminal, handing each input event to the app with a
        callback (:func:`quick_driver`)."""
        return quick_driver(super().get_driver_class())

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
                with VerticalScroll(id="exact-box"):  # its provenance line can be long
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
        # The catalog's method and dataset above the form (they read the catalog): with it.
        placeholder = self.query_one("#form-placeholder")
        await self.query_one("#side").mount(
            MethodFields(id="method-fields"), self.form, before=placeholder
        )
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
        panel = self.query_one(ExactPanel)
        panel.set_provenance(self.provenance.line(message.config))
        if message.config is None:
            panel.show_invalid()
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

    def on_method_fields_chosen(self, message: MethodFields.Chosen) -> None:
        """A method or dataset chosen above the form: the acceptance fields take the
        catalog's fit (the Exact panel then says its rows and sources), or, with nothing to
        fit, the panel says what the form assumes."""
        config, _ = self.form.current_config()
        if config is None:
            return  # (the form is invalid: the panel says so)
        fitted = self.provenance.choose(message.method, message.dataset, config)
        if fitted is not None:
            self.form.load_config(fitted)
        else:
            self.query_one(ExactPanel).set_provenance(self.provenance.line(config))

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

    # --- the command palette ------------------------------------------------------------
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
