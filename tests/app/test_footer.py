"""The key bar: it shows the keys whose actions are enabled now, and it is rebuilt only
when they change (a rebuild mounts a widget per key: on every focus move and view switch,
Textual's own footer spent a third of the work of a key press on it)."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import Button
from textual.widgets._footer import FooterKey

from spectui.widgets.footer import KeysFooter
from tests.app.helpers import until
from tests.app.screen import screen_lines


class Host(App[None]):
    BINDINGS = [
        Binding("s", "start", "Start"),
        Binding("escape", "cancel", "Cancel"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.busy = False

    def compose(self) -> ComposeResult:
        yield Button("one", id="one")
        yield Button("two", id="two")
        yield KeysFooter()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "cancel":
            return self.busy  # hidden unless busy
        return True

    def action_start(self) -> None:
        self.busy = True
        self.refresh_bindings()


def _footer(app: Host) -> str:
    return screen_lines(app)[-1]


def _keys(app: Host) -> list[FooterKey]:
    return list(app.query(FooterKey))


async def test_the_footer_follows_what_the_actions_allow_and_is_rebuilt_only_on_a_change():
    app = Host()
    async with app.run_test(size=(60, 8)) as pilot:
        await until(pilot, lambda: "Start" in _footer(app))
        assert "Cancel" not in _footer(app)
        shown = _keys(app)

        # Focus moves and refreshes that change nothing keep the same key widgets.
        for _ in range(3):
            await pilot.press("tab")
            app.refresh_bindings()
            await pilot.pause()
        assert _keys(app) == shown

        await pilot.press("s")  # busy: Cancel appears
        await until(pilot, lambda: "esc Cancel" in _footer(app))
        assert _keys(app) != shown

        app.busy = False  # idle again: Cancel goes
        app.refresh_bindings()
        await until(pilot, lambda: "Cancel" not in _footer(app))
        assert "s Start" in _footer(app)
