"""Each of the six plots at 80x24 with the form shown, on the seed-576 sweep's results.

One app shows the six in turn (as n pressed, each drawn once), each compared with its own
baseline file (see tests/app/snap_session.py).
Update the baselines with ``pytest tests/app/test_snapshots_plots.py --snapshot-update``.
"""

from __future__ import annotations

from pathlib import Path

from engine.analysis.analysis import read_sweep_csv
from engine.analysis.plot_data import PLOTS
from spectui.app import create_app
from tests.app.helpers import settle
from tests.app.snap_session import Baselines, plots_drawn, quiet, run_session, screenshot

SEED_576 = Path(__file__).parents[2] / "results" / "sweep_summary.csv"


def test_plot_snapshot_80x24(snapshot, request):
    """Baselines test_plot_snapshot_80x24[PLOT_ID].svg."""
    baselines = Baselines(snapshot, request)

    async def script(pilot) -> None:
        app = pilot.app
        await settle(pilot, app)
        app.sweep_frame = read_sweep_csv(SEED_576)
        await app.action_show_view("plots")
        await settle(pilot, app)
        view = app._plots_view()
        for index, spec in enumerate(PLOTS):
            view.index = index  # as n pressed once more, drawn once
            await plots_drawn(pilot)
            await quiet(pilot)
            baselines.check(f"test_plot_snapshot_80x24[{spec.plot_id}]", await screenshot(pilot))

    run_session(create_app("tiny"), (80, 24), script)
    assert len(baselines.checked) == len(PLOTS)
    baselines.verify()
