"""A small host app for one view, at the place and size it has in the whole app.

The app's stylesheet, its header, the side panel (the form's width: an empty panel stands
in for the form and the exact figures), the views' tab bar and the key bar: the view gets
the same region as in ``create_app(...)`` at the same terminal size, with or without the
form shown (ctrl+b), but none of the app's ~150 other widgets are mounted, so each pause
costs little. Tests about the whole app (keys routed between views, the form driving a
view) boot the whole app instead.
"""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widget import Widget
from textual.widgets import Header, Static, TabPane

from spectui.widgets.footer import KeysFooter
from spectui.widgets.view_tabs import ViewTabs
from tests.app.helpers import APP_CSS


class ViewHost(App[None]):
    """``view`` in a tab of its own (``pane_id``, labelled ``label``) beside the side panel,
    or with the side panel hidden when ``form`` is False; a Run tab beside it to switch to
    (for the Run view itself, a Speedup tab)."""

    CSS_PATH = APP_CSS

    def __init__(self, view: Widget, pane_id: str, label: str, *, form: bool = True) -> None:
        super().__init__()
        self.view = view
        self.pane_id = pane_id
        self.label = label
        self.form_shown = form

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="main"):
            side = Vertical(id="side")
            side.display = self.form_shown
            with side:
                yield Static("", id="form-placeholder")
            with ViewTabs(id="views", initial=self.pane_id):
                if self.pane_id == "run":  # the Run view in its own tab, another beside it
                    with TabPane(self.label, id="run"):
                        yield self.view
                    with TabPane("2 Speedup", id="speedup"):
                        yield Static("")
                else:
                    with TabPane("1 Run", id="run"):
                        yield Static("")
                    with TabPane(self.label, id=self.pane_id):
                        yield self.view
        yield KeysFooter()

    async def show(self, pane_id: str) -> None:
        """Show the tab ``pane_id`` (as the app's number keys do)."""
        from textual.widgets import TabbedContent

        self.query_one(TabbedContent).active = pane_id
