"""Small host apps for the Calibrate screen and the Arena view: each test of one screen or
view runs it alone, not in the whole app (~150 widgets to boot, and every pilot pause
posts a message to each of them). The app's stylesheet is used, so what is drawn is what
the app draws at the same size."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.binding import Binding

from engine.core.config import SpecConfig
from spectui.screens.calibrate import CalibrateScreen
from spectui.widgets.arena_view import ArenaView
from tests.app.helpers import APP_CSS, until

# The Arena view's size in the app at 80x24: beside the form, and with the form hidden
# (ctrl+b): measured on SpectuiApp (the view's region, between the tabs and the footer).
BESIDE_THE_FORM = (54, 20)
WITHOUT_THE_FORM = (80, 20)


class CalibrateHost(App[None]):
    """Opens the Calibrate screen on ``scenario`` (the form's configuration, None when the
    form is invalid); what the screen is dismissed with is kept in ``sent``."""

    CSS_PATH = APP_CSS

    def __init__(self, scenario: SpecConfig | None) -> None:
        super().__init__()
        self.scenario = scenario
        self.sent: list[SpecConfig | None] = []

    def on_mount(self) -> None:
        self.push_screen(CalibrateScreen(self.scenario), self.sent.append)


async def shown_screen(pilot, app: CalibrateHost) -> CalibrateScreen:
    """The screen, once it is shown."""
    await until(pilot, lambda: isinstance(app.screen, CalibrateScreen))
    return app.screen  # type: ignore[return-value]


class ArenaHost(App[None]):
    """The Arena view alone on the screen (size it with BESIDE_THE_FORM or
    WITHOUT_THE_FORM), on ``config``; f7 starts it and escape stops it, as in the app."""

    CSS_PATH = APP_CSS
    BINDINGS = [Binding("f7", "start", "Arena"), Binding("escape", "stop", "Cancel")]

    def __init__(self, config: SpecConfig | None, preset: object = None) -> None:
        super().__init__()
        self.config = config
        self.preset = preset  # what the view reads as the app's preset

    def compose(self) -> ComposeResult:
        view = ArenaView(id="arena-view")
        view.config = self.config
        yield view

    @property
    def view(self) -> ArenaView:
        return self.query_one(ArenaView)

    def action_start(self) -> None:
        self.view.start()

    def action_stop(self) -> None:
        self.view.cancel()
