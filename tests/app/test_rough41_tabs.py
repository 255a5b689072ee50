"""Issue #41, the app's rough edges: at 80 columns beside the form the tab bar dropped the
keys 1-8 that choose the views (it read ``Run Speedup Sweep ...``); it now keeps them, with
two names shortened. The help screen says, in sight when it opens, how to close it.

One boot of the whole app at 80x24."""

from __future__ import annotations

from spectui.app import create_app
from spectui.screens.help import HelpScreen
from tests.app.app_waits import booted
from tests.app.helpers import until
from tests.app.screen import screen_lines, style_of
from tests.app.test_view_tabs import FULL, _tab_row

KEYED = "1Run 2Speed 3Sweep 4Stats 5Plots 6Regime 7Arena 8Tree"


async def test_the_tabs_show_their_keys_at_80_columns_and_the_help_how_to_close_it():
    app = create_app("tiny", replay_autoplay=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await booted(pilot, app)
        await pilot.pause()
        assert _tab_row(app).split() == KEYED.split()  # beside the form: 54 columns
        assert style_of(app, "2Speed").bold  # the key, in bold
        await pilot.press("ctrl+b")  # the form hidden: the whole labels fit
        await until(pilot, lambda: _tab_row(app).split() == " ".join(FULL).split())
        await pilot.press("ctrl+b")
        await until(pilot, lambda: _tab_row(app).split() == KEYED.split())
        app.action_help()
        await until(pilot, lambda: isinstance(app.screen, HelpScreen))
        await pilot.pause()
        hint = "Help · escape, q or F1 closes it · ↑ ↓ scroll"  # on the frame's top
        assert any(hint in line for line in screen_lines(app)[:3]), screen_lines(app)
        await pilot.press("q")
        await until(pilot, lambda: not isinstance(app.screen, HelpScreen))
