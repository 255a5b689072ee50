"""The views' tab bar fits its place at 80x24 (issue 22: it read ``6 Reg`` and stopped): all
eight labels whole beside the form, with their number keys where there is room; each number
key shows its view, and key 6 the Regime view's map of the form.

One boot of the whole app (the keys are routed between its views) goes through every
state: 80x24 beside the form, the form hidden (ctrl+b), then 120x40 (a resize, as when the
terminal grows)."""

from __future__ import annotations

from textual.widgets import TabbedContent

from engine.analysis.regime import regime_map
from spectui.app import create_app
from spectui.messages import ConfigChanged
from spectui.widgets.cycle_table import CycleTable
from tests.app.app_waits import booted
from tests.app.helpers import type_into, until
from tests.app.screen import region_text, screen_text
from tests.app.test_regime_view import WEAK, _map_rows, _mapped, _text_of

NAMES = ["Run", "Speedup", "Sweep", "Analysis", "Plots", "Regime", "Arena", "Tree"]
FULL = [f"{i} {name}" for i, name in enumerate(NAMES, start=1)]
KEYED = ["1Run", "2Speed", "3Sweep", "4Stats", "5Plots", "6Regime", "7Arena", "8Tree"]


def _tab_row(app) -> str:
    from textual.widgets import Tabs

    return region_text(app, app.query_one("#views").query_one(Tabs)).splitlines()[0]


async def test_number_keys_show_every_view_and_the_tab_labels_stay_whole(monkeypatch):
    """Each number key shows its view (key 2 focuses the Speedup view's chart, so that its
    own keys work at once; key 6 the Regime view's map of the form, the form driving it);
    inside a text field a digit is text. The tab labels are whole at 80x24 beside the form
    and without it, and at 120x40."""
    # No sweep runs here: showing the Sweep view starts no sweep process (each imports the
    # engine, a second or more of CPU beside the test's).
    monkeypatch.setenv("SPECTUI_SWEEP_WORKERS", "0")
    app = create_app("default", replay_autoplay=False)  # linear cost: mapped as roofline
    async with app.run_test(size=(80, 24)) as pilot:
        await booted(pilot, app)
        await pilot.pause()
        assert _tab_row(app).split() == KEYED  # beside the form: names alone, in key order
        app.query_one(CycleTable).focus()  # outside a text field, digits switch views
        tabs = app.query_one(TabbedContent)
        for key, view in zip(
            "23451", ("speedup", "sweep", "analysis", "plots", "run"), strict=True
        ):
            await pilot.press(key)
            await until(pilot, lambda view=view: tabs.active == view)
            if view == "speedup":
                await until(pilot, lambda: app.focused is app.query_one("#speedup-view"))
                assert app.focused is app.query_one("#speedup-view")
        # Key 6: the Regime view, its map of the form drawn; the bar did not scroll.
        await pilot.press("6")
        await until(pilot, lambda: _mapped(app))
        await pilot.pause()
        assert tabs.active == "regime"
        assert _tab_row(app).split() == KEYED
        assert app.focused is app.query_one("#regime-map")
        text = screen_text(app)
        assert " 6Regime " in text.splitlines()[1]  # the tab, whole
        title = _text_of(app, "#regime-title")
        assert title == "Regime map, exact · roofline h100 (form is linear)"
        expected = regime_map(app.config.replace(cost_model="roofline"))
        rows = _map_rows(app)
        assert rows[0].split()[:2] == ["1k", "2k"]
        for i, batch in enumerate(expected.batch_sizes):  # all 10 rows on screen
            line = rows[1 + i]
            assert line.split()[0] == str(batch)
            assert f"{expected.cell_text(i, 0)}  {expected.cell_text(i, 1)}" in line
        assert "cell: K* speedup · ≈ tie · ✗ no K pays (off)" in text
        assert "some K pays in every cell" in text
        assert "batch 1 · 1k: K*=4 2.03x, verify 1.01 steps" in text
        await pilot.press("down", "right")  # the cursor describes its cell
        await until(pilot, lambda: "batch 2 · 2k: " in screen_text(app))
        assert f"batch 2 · 2k: K*={expected.k_opt[1, 1]} " in screen_text(app)
        # The form drives the view: the app passes a changed form on to the map.
        app.post_message(ConfigChanged(WEAK))
        await until(pilot, lambda: "no K pays in 3 of 80 cells" in screen_text(app))
        # The form hidden: room for the number keys.
        await pilot.press("ctrl+b")
        await until(pilot, lambda: "1 Run" in _tab_row(app))
        assert _tab_row(app).split() == " ".join(FULL).split()
        for label in FULL:
            assert label in _tab_row(app)
        # At 120x40 beside the form, the number keys show.
        await pilot.press("ctrl+b")
        await pilot.resize_terminal(120, 40)
        side = app.query_one("#side")
        await until(pilot, lambda: app.size == (120, 40) and side.display and side.size.width)
        await until(pilot, lambda: all(label in _tab_row(app) for label in FULL))
        for label in FULL:
            assert label in _tab_row(app)
        # Inside a text field, a digit is text, not a view switch.
        field = await type_into(pilot, app, "k", "2")
        assert field.value == "2" and tabs.active == "regime"
