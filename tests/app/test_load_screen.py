"""The Load screen in a small host app: the table and chart fill as levels finish, the
verdict under the title, Escape stops a run and keeps the finished levels, and records go
to a CSV file."""

from __future__ import annotations

import csv

from textual.app import App
from textual.widgets import DataTable

from engine.core.config import SpecConfig
from spectui.screens import load as load_screen
from spectui.screens.load import LoadScreen
from tests.app.helpers import APP_CSS, until
from tests.app.screen import screen_text

SETTINGS = {"rate": (2.0, 20.0), "policies": ("off", "fixed"), "requests": 30, "replications": 1}


class LoadHost(App[None]):
    CSS_PATH = APP_CSS

    def __init__(self, settings) -> None:
        super().__init__()
        self.settings = settings

    def on_mount(self) -> None:
        config = SpecConfig().replace(**{"cost.model": "roofline", "k": 4})
        self.push_screen(LoadScreen(config, self.settings))


async def test_the_levels_fill_the_table_and_the_verdict_follows():
    app = LoadHost(SETTINGS)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: "best: 2: " in screen_text(app))
        text = screen_text(app)
        assert "Load · rate 2, 20 · off, fixed" in text
        assert "speculation " in text and "TPOT p50 (ms)" in text
        table = app.screen.query_one(DataTable)
        assert [table.get_row_at(i)[:2] for i in range(table.row_count)] == [
            ["2", "off"], ["2", "fixed"], ["20", "off"], ["20", "fixed"],
        ]  # fmt: skip
        await pilot.press("t")  # the next chart
        await until(pilot, lambda: "TPOT p99 (ms)" in screen_text(app))


async def test_escape_stops_a_run_and_keeps_the_finished_levels(monkeypatch):
    import engine.serve.load as load

    real = load.simulate_load
    calls = []

    def slow_second_level(*args, **kwargs):
        calls.append(1)
        if len(calls) > 2:  # the second level never ends until stopped
            check = kwargs["check"]
            while True:
                check(0)
        return real(*args, **kwargs)

    monkeypatch.setattr(load, "simulate_load", slow_second_level)
    app = LoadHost(SETTINGS)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.screen.query_one(DataTable).row_count == 2)
        await pilot.press("escape")
        await until(pilot, lambda: "stopped: 1 of 2 levels kept" in screen_text(app))
        assert isinstance(app.screen, LoadScreen)
        await pilot.press("escape")  # nothing running: closes
        await until(pilot, lambda: not isinstance(app.screen, LoadScreen))


async def test_records_go_to_a_csv_file(tmp_path, monkeypatch):
    monkeypatch.setattr(load_screen, "results_dir", lambda: tmp_path)
    settings = {**SETTINGS, "rate": (4.0,)}
    app = LoadHost(settings)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: "best: 4: " in screen_text(app))
        await pilot.press("e")
        await until(pilot, lambda: "records written to" in screen_text(app))
    (path,) = tmp_path.glob("load-records-*.csv")
    with path.open() as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 2 * 30 and {r["policy"] for r in rows} == {"off", "fixed"}


async def test_records_go_to_a_parquet_file(tmp_path, monkeypatch):
    import pyarrow.parquet as pq

    monkeypatch.setattr(load_screen, "results_dir", lambda: tmp_path)
    app = LoadHost({**SETTINGS, "rate": (4.0,)})
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: "best: 4: " in screen_text(app))
        await pilot.press("p")
        await until(pilot, lambda: "records written to" in screen_text(app))
    (path,) = tmp_path.glob("load-records-*.parquet")
    assert pq.read_table(path).num_rows == 2 * 30
