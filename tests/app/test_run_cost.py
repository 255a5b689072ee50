"""The Run view under a context-dependent cost: the replay's running speedup is the
baseline's time for the tokens so far (each at its own context) over the time so far, so
its last row is the run's own speedup."""

from __future__ import annotations

from engine.formatting import speedup_text
from engine.presets import load_preset
from engine.simulator import simulate
from spectui.app import create_app
from spectui.widgets.cycle_table import CycleTable
from spectui.widgets.param_form import ParamForm
from spectui.widgets.run_view import RunView
from tests.app.helpers import settle


async def test_the_last_running_speedup_is_the_runs_speedup_under_a_roofline():
    config = load_preset("tiny").config.replace(
        cost_model="roofline", batch_size=64, prompt_len=8192, n_sequences=20, k=4
    )
    app = create_app("tiny", replay_autoplay=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        app.query_one(ParamForm).load_config(config)
        await settle(pilot, app)
        await pilot.press("f5")
        await settle(pilot, app)
        view, table = app.query_one(RunView), app.query_one(CycleTable)
        assert view.result is not None and view.result.config == config
        expected = simulate(config).metrics["speedup"]
        await pilot.press("e")  # run to end
        await pilot.pause()
        last = [str(c).strip() for c in table.get_row_at(table.row_count - 1)]
        assert speedup_text(expected, 3, unit="") in last
