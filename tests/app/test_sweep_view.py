"""The Sweep view in a small host app: what its picker, title and count line say, and that
a big sweep costs the screen little per update (issue 22)."""

from __future__ import annotations

import pandas as pd
from textual.app import App, ComposeResult
from textual.widgets import Select

from engine.presets import load_preset
from spectui.widgets.heatmap import Heatmap
from spectui.widgets.sweep_view import SweepView
from tests.app.helpers import settle


class Host(App):
    """The Sweep view alone (no worker processes: sweeps run in a thread of the app)."""

    def __init__(self, preset: str) -> None:
        super().__init__()
        self.preset = load_preset(preset)

    def compose(self) -> ComposeResult:
        yield SweepView(self.preset, id="sweep-view")


def text(app: App, selector: str) -> str:
    return str(app.query_one(selector).render())


def heatmap_rows(app: App) -> list[str]:
    heatmap = app.query_one(Heatmap)
    return [str(row.label) for row in heatmap.ordered_rows]


async def _choose(pilot, app: App, value) -> None:
    app.query_one("#sweep-preset", Select).value = value
    await settle(pilot, app)


async def test_choosing_another_preset_shows_its_grid_not_the_last_sweeps(isolated_dirs):
    app = Host("tiny")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        view = app.query_one(SweepView)
        view.action_start()
        await settle(pilot, app)
        assert view.finished is not None
        assert "24/24 done" in text(app, "#sweep-count")
        tiny_rows = heatmap_rows(app)
        await _choose(pilot, app, "seed-576")
        rows = heatmap_rows(app)
        assert rows != tiny_rows
        # seed-576's fixed model: one row per acceptance of its grid.
        assert rows[:2] == ["a=0.5", "a=0.6"], rows
        assert "0/576 · not started" in text(app, "#sweep-count")
        assert not app.query_one(Heatmap).cells  # none of tiny's results


async def test_the_blank_entry_says_no_preset_and_shows_no_grid(isolated_dirs):
    app = Host("seed-576")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        assert "0/576 · not started" in text(app, "#sweep-count")
        await _choose(pilot, app, Select.NULL)
        select = app.query_one("#sweep-preset", Select)
        assert "sweep" not in str(select.query_one("SelectCurrent").render()).lower() or (
            "no" in str(select.query_one("SelectCurrent").render()).lower()
        )
        assert "576" not in text(app, "#sweep-count")
        assert heatmap_rows(app) == []
        assert "no sweep preset chosen" in text(app, "#sweep-info")
