"""A small host app for the parameter form: the side panel alone, at its place in the app.

The app's stylesheet, its header, the side panel (the form above the Exact panel), an empty
region where the views are, and the key bar: the form gets the same region as in
``create_app(...)`` at the same terminal size, but none of the views' widgets are mounted
(about half of the app's ~150), so each pause costs little.

The host does for the side panel what ``SpectuiApp.on_config_changed`` does: the values
the form posts become ``config``, and the Exact panel shows that configuration's figures,
or that the form is invalid. The figures are computed and shown by the app's own handlers
(``_exact``, ``on_exact_ready``: a cost table that cannot be read marks its field through
``ParamForm.reject``). Tests where keys or the form drive the rest of the app (F2, F5, a
view following the form) boot the whole app instead.
"""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Header, Static

from engine.core.config import SpecConfig
from engine.presets import load_preset
from spectui.app import SpectuiApp
from spectui.messages import ConfigChanged, ExactReady
from spectui.widgets.exact_panel import ExactPanel
from spectui.widgets.footer import KeysFooter
from spectui.widgets.param_form import ParamForm
from tests.app.helpers import APP_CSS, until


class FormHost(App[None]):
    """The form on ``preset``'s configuration (a name, as ``create_app``'s) beside an empty
    view region; ``config`` is what the form last posted (None: invalid)."""

    CSS_PATH = APP_CSS
    TITLE = "spectui"
    AUTO_FOCUS = ""  # as the app's screen: the form focuses its first field itself

    # The app's own: the Exact panel's figures, computed in a worker, shown when they come
    # (or the field the configuration fails on marked), and failed workers notified.
    _exact = SpectuiApp._exact
    on_worker_state_changed = SpectuiApp.on_worker_state_changed

    def __init__(self, preset: str = "tiny") -> None:
        super().__init__()
        self.config: SpecConfig | None = load_preset(preset).config
        self.form = ParamForm(self.config, id="form")
        self.posted = 0  # ConfigChanged messages handled
        self.figures_of: SpecConfig | None = None  # the configuration the panel shows

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="main"):
            with Vertical(id="side"):
                yield self.form
                yield ExactPanel("computing…", id="exact")
            yield Static("", id="views")  # the views' place (app.tcss: #views)
        yield KeysFooter()

    def on_config_changed(self, message: ConfigChanged) -> None:
        self.posted += 1
        self.config = message.config
        if message.config is None:
            self.query_one(ExactPanel).show_invalid()
        else:
            self._exact(message.config)

    def on_exact_ready(self, message: ExactReady) -> None:
        SpectuiApp.on_exact_ready(self, message)  # type: ignore[arg-type]
        if message.config == self.config:
            self.figures_of = message.config

    def caught_up(self) -> bool:
        """The form's values now have been posted, and the Exact panel shows their figures
        (or that they are invalid). Never, while the figures' computation rejects the
        form's configuration (the form then posts None for it: wait on that instead)."""
        if not self.posted:
            return False
        config, _ = self.form.current_config()
        if config != self.config:
            return False
        return config is None or self.figures_of == config


async def caught_up(pilot, app: FormHost) -> None:
    """Wait until the form's values have reached the Exact panel, and the screen is drawn."""
    await until(pilot, app.caught_up)
    await pilot.pause()
