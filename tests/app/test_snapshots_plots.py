"""Each of the six plots at 80x24 with the form shown, on the seed-576 sweep's results.

Update the baselines with ``pytest tests/app/test_snapshots_plots.py --snapshot-update``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.analysis import read_sweep_csv
from engine.plot_data import PLOTS
from spectui.app import create_app
from tests.app.helpers import settle

SEED_576 = Path(__file__).parents[2] / "results" / "sweep_summary.csv"


def _showing(plot: int):
    async def run_before(pilot) -> None:
        from textual.widgets import Input

        app = pilot.app
        await settle(pilot, app)
        app.sweep_frame = read_sweep_csv(SEED_576)
        await app.action_show_view("plots")
        await settle(pilot, app)
        app._plots_view().index = plot - 1  # as n pressed plot - 1 times, drawn once
        await pilot.pause(0.3)  # the redraw for the canvas's final size
        app.clear_notifications()
        for field in app.query(Input):
            field.cursor_blink = False
        await pilot.pause()

    return run_before


@pytest.mark.parametrize("plot", range(1, len(PLOTS) + 1), ids=lambda n: PLOTS[n - 1].plot_id)
def test_plot_snapshot_80x24(snap_compare, plot):
    assert snap_compare(create_app("tiny"), terminal_size=(80, 24), run_before=_showing(plot))
