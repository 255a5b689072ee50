"""The Sweep view over a newer field: the batch-size preset draws one K* row per batch size,
and `enter` on a row opens that batch size's configuration (issue 10)."""

from __future__ import annotations

from textual.coordinate import Coordinate
from textual.widgets import Static, TabbedContent

from engine.analysis.plot_data import heatmap_cell_rows, optimal_k_heatmap
from spectui.app import create_app
from spectui.widgets.heatmap import Heatmap
from spectui.widgets.speedup_view import SpeedupView
from spectui.widgets.sweep_view import SweepView
from tests.app.app_waits import booted
from tests.app.helpers import until
from tests.app.hosts_sweep import finished


async def test_batch_size_sweep_has_a_k_star_row_per_batch_and_enter_opens_it(monkeypatch):
    monkeypatch.setenv("SPECTUI_SWEEP_WORKERS", "0")  # in a thread: no processes to start
    app = create_app("batch-size")
    async with app.run_test(size=(120, 40)) as pilot:
        await booted(pilot, app)
        await pilot.press("f6")
        view = await finished(pilot, app)
        assert isinstance(view, SweepView)
        assert view.finished is not None and not view.finished.cancelled
        assert sorted(view.frame["workload.batch_size"].unique()) == [1, 8, 32, 128]
        heatmap = app.query_one(Heatmap)
        labels = [heatmap.rows[key].label.plain for key in heatmap.rows]
        assert labels == ["batch=1", "batch=8", "batch=32", "batch=128"]
        grid = optimal_k_heatmap(view.frame, "fixed")
        for _, cell in grid.iterrows():  # K* of each batch size, as the engine finds it
            text = heatmap.get_cell_at(Coordinate(int(cell["row"]), 0)).plain
            assert text.split()[0].rstrip("≈") == str(int(cell["k_opt"]))
        assert "workload.batch_size" in str(app.query_one("#heatmap-title", Static).render())
        heatmap.focus()
        heatmap.move_cursor(row=2, column=0)  # batch 32
        await pilot.press("enter")

        def cell_curve() -> bool:
            found = app.query(SpeedupView)
            last = found.first().last if found else None
            return last is not None and last.title.startswith("sweep cell")

        await until(pilot, cell_curve)
        assert app.query_one(TabbedContent).active == "speedup"
        config = app.query_one(SpeedupView).config
        assert config is not None
        assert (config.batch_size, config.cost_model, config.prompt_len) == (32, "roofline", 1024)
        assert config.k == int(grid.loc[grid["row"] == 2, "k_opt"].iloc[0])
        assert len(heatmap_cell_rows(view.frame, grid, 2, 0)) == 8
