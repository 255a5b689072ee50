"""Issue #41, the Load screen's rough edges, at 80x24 and under NO_COLOR: the y ticks are
round and the same rows apart, and stay put when the chart is drawn again; each policy has
a line style and a letter of its own, and policies on one point are named there together;
the legend is under the chart, not over its lines; every level is reached by scrolling the
table; the milliseconds columns say so.

The study's cells are made by hand (engine.serve.load.run_cell replaced), so the figures
on screen are known: TPOT p50 is 0.20 ms with speculation off and 0.08 ms for fixed and
goodput alike, at every level."""

from __future__ import annotations

import pytest
from textual.app import App

from engine.core.config import SpecConfig
from engine.serve import load as engine_load
from engine.serve.load import Cell
from spectui.screens.load import LoadChart, LoadScreen
from tests.app.helpers import APP_CSS, until
from tests.app.screen import region_text

LEVELS = tuple(float(level) for level in range(1, 13))  # 36 rows: more than 80x24 shows
POLICIES = ("off", "fixed", "goodput")
SETTINGS = {"rate": LEVELS, "policies": POLICIES, "requests": 30, "replications": 1}


def made_cell(config, plan, level, policy, **kwargs) -> Cell:
    """A cell by hand: speculation (fixed, goodput: the same figures) halves TPOT."""
    off = policy == "off"
    figures = {
        "throughput_tok_s": 100.0 * level,
        "ttft_p50_ms": 12.5,
        "ttft_p99_ms": 40.0,
        "tpot_p50_ms": 0.20 if off else 0.08,
        "tpot_p99_ms": 0.25 if off else 0.10,
        "goodput_req_s": level,
    }
    return Cell(level, policy, {name: [value] for name, value in figures.items()})


class LoadHost(App[None]):
    CSS_PATH = APP_CSS

    def on_mount(self) -> None:
        config = SpecConfig().replace(**{"cost.model": "roofline", "k": 4})
        self.push_screen(LoadScreen(config, SETTINGS))


@pytest.fixture
def host(monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setattr(engine_load, "run_cell", made_cell)
    return LoadHost()


async def finished(pilot, app) -> None:
    await until(
        pilot, lambda: "best: 1: " in region_text(app, app.screen.query_one("#load-status"))
    )
    await pilot.pause()


def chart_lines(app) -> list[str]:
    return region_text(app, app.screen.query_one(LoadChart)).splitlines()


def y_ticks(app) -> list[tuple[int, str]]:
    """The chart's y tick labels as drawn, with the chart's row each is on."""
    return [
        (row, line.split("┤")[0].strip())
        for row, line in enumerate(chart_lines(app))
        if "┤" in line
    ]


def row_of(app, label: str) -> str:
    """The chart's row of the y tick ``label``, inside the frame."""
    (line,) = [line for line in chart_lines(app) if line.startswith(f"{label}┤")]
    return line.split("┤")[1]


def table_rows(app) -> list[str]:
    """The table's lines on screen (its header first), stripped."""
    return [
        line.strip() for line in region_text(app, app.screen.query_one("#load-table")).splitlines()
    ]


async def test_the_y_ticks_are_round_the_same_rows_apart_and_stay_put(host):
    async with host.run_test(size=(80, 24)) as pilot:
        await finished(pilot, host)
        # TPOT p50 from 0.08 to 0.20 on a plot area 5 rows high: rows of at least 0.12/4
        # = 0.03; the roundest, 0.1/3 (0.1 every three rows), from 0.0667 (2 of them).
        tpot = [(1, "0.2"), (4, "0.1")]
        assert y_ticks(host) == tpot
        # Each value on its nearest row: off's 0.20 on 0.2's, 0.08 on the bottom one.
        assert row_of(host, "0.2").count("o") == len(LEVELS)
        assert chart_lines(host)[5].count("fg") == len(LEVELS)
        await pilot.press("t")  # TPOT p99, 0.10 to 0.25: rows of 0.05 from 0.10
        assert y_ticks(host) == [(1, "0.3"), (3, "0.2"), (5, "0.1")]
        # Throughput, 100 to 1200 tok/s, 4 rows (the legend's note of where speculation
        # stops paying takes a line): a tick every row, 500 from 0.
        await pilot.press("t")
        assert y_ticks(host) == [(1, "1500"), (2, "1000"), (3, "500"), (4, "0")]
        await pilot.press("t")
        assert y_ticks(host) == tpot  # the same data, the same ticks
        await pilot.resize_terminal(100, 40)
        await until(pilot, lambda: host.screen.query_one(LoadChart).size.width == 100)
        await pilot.pause()
        # The chart 17 rows high, its plot area 13: 0.08 to 0.20 in rows of 0.01 (0.02
        # every two rows), 0.08 on the bottom row, 0.20 on the top one.
        labels = ["0.20", "0.18", "0.16", "0.14", "0.12", "0.10", "0.08"]
        assert host.screen.query_one(LoadChart).size.height == 17
        assert y_ticks(host) == list(zip(range(1, 14, 2), labels, strict=True))
        await pilot.resize_terminal(80, 24)
        await until(pilot, lambda: host.screen.query_one(LoadChart).size.width == 80)
        await pilot.pause()
        assert y_ticks(host) == tpot


async def test_policies_on_one_point_stay_told_apart_without_colour(host):
    async with host.run_test(size=(80, 24)) as pilot:
        await finished(pilot, host)
        assert host.no_color
        # fixed's and goodput's points coincide: both letters at each, and the legend says so.
        bottom = chart_lines(host)[5]
        assert bottom.count("fg") == len(LEVELS)
        legend = region_text(host, host.screen.query_one("#load-legend")).strip()
        assert legend == "•o• off  -f- fixed  :g: goodput  fg: fixed and goodput at one point"
        # The lines between the points: off's dots, goodput's colons over fixed's dashes.
        assert "o•••" in row_of(host, "0.2") and "fg::" in bottom


async def test_the_legend_is_under_the_chart_not_over_its_lines(host):
    async with host.run_test(size=(80, 24)) as pilot:
        await finished(pilot, host)
        chart = "\n".join(chart_lines(host))
        assert not any(policy in chart for policy in POLICIES)
        legend = host.screen.query_one("#load-legend")
        assert legend.region.y == host.screen.query_one(LoadChart).region.bottom
        assert "goodput" in region_text(host, legend)


async def test_every_level_is_reached_by_scrolling_the_table(host):
    async with host.run_test(size=(80, 24)) as pilot:
        await finished(pilot, host)
        assert len(table_rows(host)) - 1 < len(LEVELS) * len(POLICIES)  # not all in sight
        seen = set()
        for _ in range(6):  # a page at a time: 8 of the 36 rows in sight, 5 pages (and 1)
            seen |= {tuple(row.split()[:2]) for row in table_rows(host)[1:] if row}
            await pilot.press("pagedown")
        assert seen == {(f"{level:g}", policy) for level in LEVELS for policy in POLICIES}
        assert (
            table_rows(host)[-1]
            == "12     goodput  1200   12.5         40.0    0.08         0.10    12.00"
        )


async def test_the_milliseconds_columns_say_so(host):
    async with host.run_test(size=(80, 24)) as pilot:
        await finished(pilot, host)
        assert table_rows(host)[:2] == [
            "level  policy   tok/s  TTFT p50 ms  p99 ms  TPOT p50 ms  p99 ms  goodput",
            "1      off      100    12.5         40.0    0.20         0.25    1.00",
        ]
