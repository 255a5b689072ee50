"""The Run view under a context-dependent cost: the replay's running speedup is the
baseline's time for the tokens so far (each at its own context) over the time so far, so
its last row is the run's own speedup.

The Run view runs alone in a small host app (tests/app/hosts_run.py), the run started as
F5 starts it on the form's configuration."""

from __future__ import annotations

from engine.analysis.formatting import speedup_text
from engine.presets import load_preset
from engine.simulate.simulator import simulate
from spectui.widgets.cycle_table import CycleTable
from tests.app.hosts_run import RunHost, run_finished


async def test_the_last_running_speedup_is_the_runs_speedup_under_a_roofline():
    config = load_preset("tiny").config.replace(
        cost_model="roofline", batch_size=64, prompt_len=8192, n_sequences=20, k=4
    )
    app = RunHost()  # the replay moves only when driven
    async with app.run_test(size=(120, 40)) as pilot:
        view = await run_finished(pilot, app, config)
        table = app.query_one(CycleTable)
        assert view.result is not None and view.result.config == config
        expected = simulate(config).metrics["speedup"]
        await pilot.press("e")  # run to end
        await pilot.pause()
        last = [str(c).strip() for c in table.get_row_at(table.row_count - 1)]
        assert speedup_text(expected, 3, unit="") in last
