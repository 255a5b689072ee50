"""The views' tab bar fits its place at 80x24 (issue 22: it read ``6 Reg`` and stopped): all
eight labels whole beside the form, with their number keys where there is room."""

from __future__ import annotations

from spectui.app import create_app
from tests.app.app_waits import booted
from tests.app.helpers import until
from tests.app.screen import region_text

NAMES = ["Run", "Speedup", "Sweep", "Analysis", "Plots", "Regime", "Arena", "Tree"]
FULL = [f"{i} {name}" for i, name in enumerate(NAMES, start=1)]


def _tab_row(app) -> str:
    from textual.widgets import Tabs

    return region_text(app, app.query_one("#views").query_one(Tabs)).splitlines()[0]


def _mapped(app) -> bool:
    found = app.query("#regime-view")
    return bool(found) and found.first().shown is not None


async def test_every_tab_label_is_whole_at_80x24_beside_the_form_and_without_it():
    app = create_app("default")
    async with app.run_test(size=(80, 24)) as pilot:
        await booted(pilot, app)
        await pilot.pause()
        assert _tab_row(app).split() == NAMES  # beside the form: names alone, in key order
        await pilot.press("6")  # the keys choose them still
        await until(pilot, lambda: _mapped(app))  # the view shown, its map drawn
        await pilot.pause()
        assert _tab_row(app).split() == NAMES  # the bar did not scroll
        await pilot.press("ctrl+b")  # the form hidden: room for the number keys
        await until(pilot, lambda: "1 Run" in _tab_row(app))
        assert _tab_row(app).split() == " ".join(FULL).split()
        for label in FULL:
            assert label in _tab_row(app)


async def test_the_number_keys_show_at_120x40():
    app = create_app("default")
    async with app.run_test(size=(120, 40)) as pilot:
        await booted(pilot, app)
        await pilot.pause()
        for label in FULL:
            assert label in _tab_row(app)
