"""The Load screen (ctrl+l): the form's scenario served under load (engine.serve).

A chart of TPOT p50 (``t`` cycles it through TPOT p99 and throughput) against the level of
load, one line per policy, filling as levels finish, with the level where speculation stops
paying marked: round y ticks the same rows apart, each policy a line style of its own and
its letter on its points (told apart without colour; policies on one point name it
together, "fg"), the legend on the line under the chart, off its lines. Under it a table of
every level and policy, with units, that scrolls. The load settings
are the preset's ``[load]`` table, else :data:`DEFAULTS`. The run is a thread worker:
Escape stops it (the finished levels stay), a second Escape closes the screen; ``r`` runs
again; ``e`` (``p``) runs again streaming a row per finished request to a CSV (Parquet)
file in the results directory (written whole when the run ends; memory holds a block of
rows and the running requests).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static
from textual.worker import get_current_worker

from engine.serve.load import COLUMNS
from spectui.plotting.chart_style import (
    PLAIN_MARKERS,
    Drawing,
    LegendEntry,
    even_ticks,
    legend_lines,
    spaced_ticks,
    tick_labels,
)
from spectui.widgets.common import ReportsWorkerErrors, results_dir
from spectui.widgets.footer import KeysFooter
from spectui.widgets.plot import Plot

# Without a preset's [load] table: a quick study on the form's scenario.
DEFAULTS: dict[str, Any] = {
    "rate": (1.0, 2.0, 4.0, 8.0, 16.0),
    "policies": ("off", "fixed", "goodput"),
    "requests": 150,
    "replications": 2,
}
CHARTS = (
    ("tpot_p50_ms", "TPOT p50 (ms)"),
    ("tpot_p99_ms", "TPOT p99 (ms)"),
    ("throughput_tok_s", "throughput (tok/s)"),
)
# Where speculation stops paying, by the figure the chart shows (its p50 TPOT: the p99's).
STOPS_BY = {
    "tpot_p50_ms": ("tpot_p99_ms", "p99 TPOT"),
    "tpot_p99_ms": ("tpot_p99_ms", "p99 TPOT"),
    "throughput_tok_s": ("throughput_tok_s", "throughput"),
}
# A line style per policy, in the plan's order: the character its line is drawn with. Lines
# that differ in colour alone are one grey line under NO_COLOR. Whole characters, not
# plotext's half blocks or braille: those put a value up to a row away from where its letter
# (and another line's character) puts it.
LINE_STYLES = ("•", "-", ":", "~", "+")
# textual-plotext's colours for a figure's first series (its plot.py's sequence): the lines'
# colours before they were named here, on the theme's plot background.
LINE_COLOURS = ((0, 130, 200), (60, 180, 75), (230, 25, 75), (255, 225, 25), (245, 130, 48))
# What plotext draws around the plot area: the frame (a row above, a row below), the x tick
# labels and the axis labels' row; the frame's two columns beside the y tick labels.
FRAME_ROWS = 4
FRAME_COLUMNS = 2


def _header(figure: str, header: str) -> str:
    """A column's header with its unit: the figures in milliseconds say so ("TTFT p50 ms")."""
    return f"{header} ms" if figure.endswith("_ms") else header


class LoadStopped(Exception):
    """The run was cancelled (raised in the worker by the progress check)."""


@dataclass
class CellDone(Message):
    """A level and policy finished (all its replications)."""

    cell: Any


@dataclass
class LoadDone(Message):
    """The run ended: ``stopped`` if cancelled, with the records file if any."""

    stopped: bool
    records: str | None


@dataclass(frozen=True)
class Line:
    """One policy's finished levels and its figure at each (finite values only)."""

    policy: str
    levels: list[float]
    values: list[float]


class Area(NamedTuple):
    """The plot area as drawn: the x axis's limits over ``columns`` character columns, the
    y axis's over ``rows`` rows."""

    left: float
    right: float
    columns: int
    low: float
    high: float
    rows: int

    def cell(self, x: float, y: float) -> tuple[int, int]:
        """The character (column, row) of the point (x, y)."""
        return _cell(x, self.left, self.right, self.columns), _cell(
            y, self.low, self.high, self.rows
        )


def point_letters(policies: Sequence[str]) -> dict[str, str]:
    """The letter on each policy's points: the first letter of its name that no earlier
    policy took ("o" off, "f" fixed, "g" goodput, "s" schedule, "b" budget), else the first
    free plain marker."""
    letters: dict[str, str] = {}
    for policy in policies:
        free = [c for c in policy.lower() if c.isalnum() and c not in letters.values()]
        spare = [m for m in PLAIN_MARKERS if m not in letters.values()]
        letters[policy] = (free or spare or ["?"])[0]
    return letters


class LoadChart(Plot):
    """One figure against the level of load: a line per policy (:data:`LINE_STYLES`), the
    policy's letter on each of its points; the caller prints the legend under it."""

    def draw(
        self,
        levels: Sequence[float],
        lines: Sequence[Line],
        labels: tuple[str, str],
        stop: tuple[float, str] | None = None,
    ) -> Drawing:
        """Draw ``lines`` on an x axis over every level of the plan (``levels``), so that
        the axis stays put as levels finish, with the axes' ``labels`` (x, y) and a vertical
        line at ``stop`` (the level, and in what speculation stops paying there); returns
        the legend and its notes for the caller to print under the chart."""
        drawing = Drawing()
        letters = point_letters([line.policy for line in lines])
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        plt.xlabel(labels[0])
        plt.ylabel(labels[1])
        for i, line in enumerate(lines):
            glyph = LINE_STYLES[i % len(LINE_STYLES)]
            mark = f"{glyph}{letters[line.policy]}{glyph}"
            drawing.legend.append(LegendEntry(line.policy, mark, self._colour(i)))
        if any(line.values for line in lines):
            area = self._axes(levels, [v for line in lines for v in line.values])
            for i, line in enumerate(lines):
                if line.levels:
                    marker = LINE_STYLES[i % len(LINE_STYLES)]
                    plt.plot(line.levels, line.values, marker=marker, color=self._colour(i))
            drawing.notes += self._letters(lines, letters, area)
            if stop is not None:
                plt.vline(stop[0])
                drawing.notes.append(f"│ {stop[0]:g}: speculation stops paying in {stop[1]}")
        self.refresh()
        return drawing

    def _colour(self, index: int) -> Any:
        """The colour of the ``index``-th policy's line, None under NO_COLOR."""
        return None if self.app.no_color else LINE_COLOURS[index % len(LINE_COLOURS)]

    def _axes(self, levels: Sequence[float], values: list[float]) -> Area:
        """Set both axes for ``values`` at the chart's size: the y ticks the same rows apart
        (:func:`even_ticks`), an x tick per level that fits. Returns the plot area."""
        plt = self.plt
        rows = self.size.height - FRAME_ROWS
        low, high, ticks = even_ticks(min(values), max(values), rows)
        texts = tick_labels(ticks)
        plt.ylim(low, high)
        plt.yticks(ticks, texts)
        columns = max(2, self.size.width - FRAME_COLUMNS - max(len(text) for text in texts))
        left, right = _x_limits(levels, columns)
        plt.xlim(left, right)
        plt.xticks(*spaced_ticks(list(levels), [f"{lv:g}" for lv in levels], columns))
        return Area(left, right, columns, low, high, max(2, rows))

    def _letters(self, lines: Sequence[Line], letters: dict[str, str], area: Area) -> list[str]:
        """Each point's letter, over the lines, in its line's colour. The policies whose
        points fall in one character cell have their letters side by side there ("fg"; a
        later line would hide an earlier one's point). Returns the notes that say which
        policies share a point."""
        cells: dict[tuple[int, int], list[tuple[int, float]]] = {}
        for i, line in enumerate(lines):
            for level, value in zip(line.levels, line.values, strict=True):
                cells.setdefault(area.cell(level, value), []).append((i, value))
        per_column = (area.right - area.left) / (area.columns - 1)
        together: dict[str, str] = {}
        for (column, _), points in cells.items():
            start = column - len(points) // 2  # centred on the point's column
            for offset, (i, value) in enumerate(points):
                x = area.left + (start + offset) * per_column  # on that column exactly
                marker = letters[lines[i].policy]
                self.plt.scatter([x], [value], marker=marker, color=self._colour(i))
            if len(points) > 1:
                names = [lines[i].policy for i, _ in points]
                text = "".join(letters[name] for name in names)
                together[text] = f"{', '.join(names[:-1])} and {names[-1]}"
        return [f"{text}: {names} at one point" for text, names in together.items()]

    def on_resize(self) -> None:
        # The ticks and the points' cells follow the size: drawn again at the new one.
        screen = self.screen
        if isinstance(screen, LoadScreen) and screen.result is not None:
            screen.draw_chart()


def _x_limits(levels: Sequence[float], columns: int) -> tuple[float, float]:
    """The x axis's limits over ``levels`` in a plot area ``columns`` wide: two columns
    beyond the first and the last level, so that their letters stay inside the frame."""
    first, last = min(levels), max(levels)
    if last == first:
        return first - 1.0, last + 1.0
    margin = 2 * (last - first) / max(1, columns - 5)
    return first - margin, last + margin


def _cell(value: float, low: float, high: float, cells: int) -> int:
    """The character column (or row) of ``value`` on an axis from ``low`` to ``high`` over
    ``cells`` columns, as plotext places it (its utility get_matrix_data)."""
    return math.floor(round(0.5 + (cells - 1) * (value - low) / (high - low), 8))


class LoadScreen(ReportsWorkerErrors, ModalScreen[None]):
    """The form's scenario under load."""

    DEFAULT_CSS = """
    LoadScreen {
        background: $background;
    }
    LoadScreen #load-title {
        height: 1;
        padding: 0 1;
        text-style: bold;
    }
    LoadScreen #load-status {
        height: auto;
        padding: 0 1;
    }
    LoadScreen LoadChart {
        height: 1fr;
        min-height: 8;
    }
    LoadScreen #load-legend {
        height: auto;
        padding: 0 1;
    }
    LoadScreen DataTable {
        height: 1fr;
    }
    """
    BINDINGS = [
        Binding("escape", "stop_or_close", "Stop / close"),
        Binding("t", "next_chart", "Chart"),
        Binding("r", "rerun", "Run again"),
        Binding("e", "export", "Records to CSV"),
        Binding("p", "export_parquet", "to Parquet", show=False),
    ]

    def __init__(self, config: Any, settings: dict[str, Any] | None = None) -> None:
        super().__init__()
        self.config = config
        self.settings = dict(settings if settings else DEFAULTS)
        self.result: Any = None
        self.plan: Any = None
        self.chart = 0
        self.running = False
        self.stopped = False

    def compose(self) -> ComposeResult:
        yield Static("Load", id="load-title")
        yield Static("", id="load-status")
        yield LoadChart(id="load-chart")
        yield Static("", id="load-legend")
        yield DataTable(id="load-table", zebra_stripes=False, cursor_type="row")
        yield KeysFooter()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        for name in (
            "level",
            "policy",
            *(_header(figure, header) for figure, header, _ in COLUMNS),
        ):
            table.add_column(name)
        self.start()

    # ------------------------------------------------------------------ the run

    def start(self, records: str | None = None) -> None:
        from engine.core.config import ConfigError
        from engine.serve.load import LoadResult
        from engine.serve.settings import plan_of

        try:
            self.plan = plan_of(self.settings, self.config)
        except ConfigError as err:
            self._status(f"cannot run: {err}")
            return
        self.result = LoadResult(self.plan)
        self.query_one(DataTable).clear()
        unit = self.plan.unit
        levels = ", ".join(f"{level:g}" for level in self.plan.levels)
        self.query_one("#load-title", Static).update(
            Text(f"Load · {unit} {levels} · {', '.join(self.plan.policies)}")
        )
        self.running, self.stopped = True, False
        path = None
        if records:
            stamp = time.strftime("%Y%m%d-%H%M%S")
            path = str(results_dir() / f"load-records-{stamp}.{records}")
        self._status(self._progress_text(0))
        self._run(self.plan, path)

    @work(thread=True, exclusive=True, group="load", name="Load study", exit_on_error=False)
    def _run(self, plan: Any, records: str | None) -> None:
        from pathlib import Path

        from engine.cost.models import build_cost
        from engine.serve.load import run_load
        from engine.serve.server import kv_capacity

        worker = get_current_worker()
        cost = build_cost(self.config)
        kv_capacity(cost, plan.server, self.config)

        def check(done: int) -> None:
            if worker.is_cancelled:
                raise LoadStopped

        def on_cell(cell: Any) -> None:
            self.post_message(CellDone(cell))

        try:
            if records is None:
                run_load(self.config, cost, plan, on_cell=on_cell, check=check)
            else:
                from engine.serve.records import records_writer

                Path(records).parent.mkdir(parents=True, exist_ok=True)
                with records_writer(Path(records)) as on_finish:
                    run_load(
                        self.config, cost, plan, on_cell=on_cell, check=check, on_finish=on_finish
                    )
        except LoadStopped:
            self.post_message(LoadDone(True, None))
            return
        self.post_message(LoadDone(False, records))

    def on_cell_done(self, message: CellDone) -> None:
        message.stop()
        cell = message.cell
        self.result.cells[(cell.level, cell.policy)] = cell
        table = self.query_one(DataTable)
        row = [f"{cell.level:g}", cell.policy]
        for figure, _, fmt in COLUMNS:
            value = cell.mean(figure)
            row.append(fmt.format(value) if math.isfinite(value) else "-")
        table.add_row(*row)
        self.draw_chart()
        self._status(self._progress_text(len(self.result.cells)))

    def on_load_done(self, message: LoadDone) -> None:
        message.stop()
        self.running = False
        done = len(self.result.levels_done())
        if message.stopped:
            self.stopped = True
            self._status(f"stopped: {done} of {len(self.plan.levels)} levels kept · r: run again")
            return
        text = self._verdict()
        if message.records:
            text += f" · records written to {message.records}"
        self._status(text)

    def worker_failed(self, worker: Any) -> None:
        self.running = False
        self._status("could not run (see the notification)")

    # ------------------------------------------------------------------ words and chart

    def _status(self, text: str) -> None:
        status = self.query_one("#load-status", Static)
        status.update(Text(text))
        # Its height follows its lines. Under load a layout asked for while the screen
        # lays out was seen lost (the status kept one line and cut the verdict's "best:"):
        # it is asked for again once the screen has refreshed (a no-op when it was not).
        self.call_after_refresh(status.refresh, layout=True)

    def _progress_text(self, cells: int) -> str:
        total = len(self.plan.levels) * len(self.plan.policies)
        return f"running: {cells} of {total} (level, policy) done · esc: stop"

    def _verdict(self) -> str:
        """Where speculation stops paying, and the best policy by level."""
        words = self.result.verdicts()
        best = ", ".join(
            f"{level:g}: {self.result.best_policy(level)}" for level in self.result.levels_done()
        )
        return f"speculation {'; '.join(words)} · best: {best}" if words else f"best: {best}"

    def draw_chart(self) -> None:
        figure, label = CHARTS[self.chart]
        names = {"rate": "rate (req/s)", "concurrency": "concurrency", "speed": "trace speed"}
        lines = []
        for policy in self.plan.policies:
            points = [
                (lv, self.result.cells[(lv, policy)].mean(figure))
                for lv in self.plan.levels
                if (lv, policy) in self.result.cells
            ]
            points = [(lv, value) for lv, value in points if math.isfinite(value)]
            lines.append(Line(policy, [lv for lv, _ in points], [v for _, v in points]))
        stop_figure, stop_words = STOPS_BY[figure]
        stop = self.result.stops_paying(stop_figure)
        drawing = self.query_one(LoadChart).draw(
            self.plan.levels,
            lines,
            (names[self.plan.unit] + " · t: next chart", label),
            None if stop is None else (stop, stop_words),
        )
        width = max(10, self.size.width - 2)
        lines_text = legend_lines(drawing, width, color=not self.app.no_color, flow=True)
        self.query_one("#load-legend", Static).update(Text.from_ansi("\n".join(lines_text)))

    # ------------------------------------------------------------------ keys

    def action_next_chart(self) -> None:
        self.chart = (self.chart + 1) % len(CHARTS)
        if self.result is not None:
            self.draw_chart()

    def action_stop_or_close(self) -> None:
        if self.running:
            self.workers.cancel_group(self, "load")
            self._status("stopping…")
            return
        self.dismiss(None)

    def action_rerun(self) -> None:
        if not self.running:
            self.start()

    def action_export(self) -> None:
        if not self.running:
            self.start(records="csv")

    def action_export_parquet(self) -> None:
        from engine.simulate.cycles_file import parquet_available

        if self.running:
            return
        if not parquet_available():
            self._status("Parquet needs pyarrow: pip install 'spectui[parquet]' (e: CSV)")
            return
        self.start(records="parquet")
