"""Arena view: K policies compared on the form's scenario, and one policy's cycles.

The scenario is the form's configuration; the contenders are the loaded preset's
``[[arena]]`` tables when it has them, else :func:`engine.analysis.arena.default_contenders` (the
arena always adds the best fixed K). F7 runs :func:`engine.analysis.arena.run_arena` in a thread
worker: each policy's row joins the leaderboard as it finishes, as the CLI writes it
(:func:`engine.analysis.arena.standing_cells`), and at the end the rows are sorted best first with
the arena's notes under them. Escape stops the arena and keeps the finished rows; a form
change marks the board stale (it stays, and says so).

Under the board, the trace of the highlighted row's policy along sequence 0
(:func:`engine.analysis.arena.policy_trace`, computed in a worker): the k it drafted in each cycle
and how many of them were accepted, and for the markov model a band over the cycles spent
in the easy regime, so that a policy chasing a regime switch can be watched. One cycle per
column: ``[`` and ``]`` show earlier and later cycles. ``l`` shows what the columns mean
(:data:`engine.analysis.arena.LEADERBOARD_LEGEND`) in the trace's place.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import DataTable, Static
from textual.worker import Worker, get_current_worker
from textual_plotext import PlotextPlot

from engine.core.config import ConfigError, SpecConfig
from spectui.plotting.terminal import (
    GLYPHS,
    Drawing,
    LegendEntry,
    legend_lines,
    spaced_ticks,
)
from spectui.widgets.common import ReportsWorkerErrors
from spectui.widgets.table_hint import ColumnsHint, HidesColumnsHint

if TYPE_CHECKING:
    from engine.analysis.arena import ArenaResult, Standing

START_HINT = "F7 runs the arena"
TRACE_MIN_SPAN = 10  # the fewest cycles the trace shows
TRACE_DEFAULT_WIDTH = 60  # the plot's size in cells before it is laid out
TRACE_DEFAULT_HEIGHT = 8
X_TICKS_MIN_HEIGHT = 7  # a lower plot gives its x ticks' row to the curves
K_COLOR = "blue+"
ACCEPTED_COLOR = "green+"
REGIME_COLOR = "gray"
K_MARKER = "hd"
ACCEPTED_MARKER = "x"
REGIME_MARKER = "sd"


def arena_contenders(config: SpecConfig, preset: Any) -> tuple[list[SpecConfig], str]:
    """The contenders the arena runs on ``config`` and where they come from, in words: the
    ``preset``'s [[arena]] tables if it has them, else the default set. Raises
    :class:`engine.core.config.ConfigError` when a contender cannot work with the scenario."""
    from engine.analysis.arena import default_contenders

    name = getattr(preset, "name", None)
    if preset is not None and preset.is_arena:
        return preset.contenders(config), f"preset {name}'s [[arena]] tables"
    where = f" (preset {name} has no [[arena]] tables)" if name else ""
    return default_contenders(config), f"the default set{where}"


def easy_runs(regime: np.ndarray) -> list[tuple[int, int]]:
    """The runs of consecutive cycles in the easy regime (0), as (first, last) indexes."""
    easy = np.r_[False, regime == 0, False].astype(np.int8)
    edges = np.flatnonzero(np.diff(easy))
    return [(int(a), int(b) - 1) for a, b in zip(edges[::2], edges[1::2], strict=True)]


@dataclass
class ArenaStanding(Message):
    """Arena number ``run`` finished a policy: its leaderboard row."""

    run: int
    standing: Standing


@dataclass
class ArenaProgress(Message):
    """Arena number ``run`` has finished ``done`` of ``total`` policies and is running the
    one named ``running`` ("" when it is done), ``share`` of its tokens simulated."""

    run: int
    done: int
    total: int
    running: str = ""
    share: float = 0.0

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, ArenaProgress)


@dataclass
class ArenaEnded(Message):
    """Arena number ``run`` ended: ``result`` when it finished, else stopped (``error`` "")
    or refused (``error``: the one-line reason)."""

    run: int
    result: ArenaResult | None
    error: str = ""


@dataclass
class TraceReady(Message):
    """The trace of row ``index`` (in arrival order) of arena number ``run``."""

    run: int
    index: int
    trace: dict[str, np.ndarray]


class Leaderboard(HidesColumnsHint, DataTable[Any]):
    """The arena's rows, one per policy (the policy's name fixed on the left); the line
    under it says which columns are out of sight."""


class TracePlot(PlotextPlot):
    """The per-cycle chart of a window of a trace's cycles, one cycle per column."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.trace: dict[str, np.ndarray] | None = None
        self.first = 0  # the first cycle shown (0-based)

    @property
    def span(self) -> int:
        """How many cycles the plot shows: one per column, less the y tick labels."""
        return max(TRACE_MIN_SPAN, (self.size.width or TRACE_DEFAULT_WIDTH) - 3)

    def window(self) -> tuple[int, int]:
        """The cycles shown, ``first`` to ``last`` (0-based, inclusive), of the trace."""
        cycles = 0 if self.trace is None else int(self.trace["k"].size)
        last = min(cycles, self.first + self.span) - 1
        return self.first, last

    def draw(self, trace: dict[str, np.ndarray], first: int = 0) -> Drawing:
        """Plot ``trace``'s cycles from ``first`` on (as many as fit); return the legend."""
        self.trace = trace
        self.first = max(0, min(first, int(trace["k"].size) - 1))
        first, last = self.window()
        color = not self.app.no_color
        drawing = Drawing()
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        plt.frame(False)  # rows are scarce at 80x24: no box around the curves
        shown = slice(first, last + 1)
        k, accepted = trace["k"][shown], trace["accepted"][shown]
        cycles = list(range(first + 1, last + 2))  # numbered from 1
        top = max(1, int(k.max()) if k.size else 1)
        height = self.size.height or TRACE_DEFAULT_HEIGHT
        x_ticks = height >= X_TICKS_MIN_HEIGHT  # else the title's cycle range says where
        band = 0.0
        regime = trace.get("regime")
        if regime is not None and (regime >= 0).any():
            # A band over the cycles in the easy regime, in a row of its own above the curves:
            # the top one of the plot's rows (but the x ticks' row), which share 0..band.
            rows = max(3, height - x_ticks)
            band = top * rows / (rows - 1)
            for start, end in easy_runs(regime[shown]):
                xs = [first + start + 0.5, first + end + 1.5]
                plt.plot(xs, [band, band], marker=REGIME_MARKER, color=REGIME_COLOR)
            drawing.legend.append(LegendEntry("easy", GLYPHS[REGIME_MARKER], REGIME_COLOR))
        if cycles:
            plt.plot(cycles, k.tolist(), marker=K_MARKER, color=K_COLOR)
            plt.scatter(cycles, accepted.tolist(), marker=ACCEPTED_MARKER, color=ACCEPTED_COLOR)
            plt.xlim(cycles[0], max(cycles[0] + 1, cycles[-1]))
            plt.ylim(0, band if band else top)
            ticks = [c for c in cycles if c == cycles[0] or c % 5 == 0] if x_ticks else []
            plt.xticks(*spaced_ticks(ticks, [str(c) for c in ticks], self.span))
            # 0 and the largest k shown, and half of it where there are rows for it.
            tall = height >= 7 and top >= 4
            yticks: list[float] = [0, top // 2, top] if tall else [0, top]
            plt.yticks(yticks, [f"{t:g}" for t in yticks])
        drawing.legend[:0] = [
            LegendEntry("k drafted", GLYPHS[K_MARKER], K_COLOR),
            LegendEntry("accepted", ACCEPTED_MARKER, ACCEPTED_COLOR),
        ]
        if not color:
            drawing.legend = [LegendEntry(e.label, e.glyph) for e in drawing.legend]
        self.refresh()
        return drawing

    def on_resize(self) -> None:
        # How many cycles fit depends on the size: draw again (and retitle) for the new one.
        view = self.parent
        if self.trace is not None and isinstance(view, ArenaView):
            view.redraw_trace()


class ArenaView(ReportsWorkerErrors, Vertical):
    """The leaderboard of the form's scenario (F7 runs it) and the highlighted row's trace."""

    BINDINGS = [
        Binding("right_square_bracket", "trace_page(1)", "Later cycles", show=False),
        Binding("left_square_bracket", "trace_page(-1)", "Earlier cycles", show=False),
        Binding("l", "toggle_legend", "Columns", tooltip="What the leaderboard's columns mean"),
    ]

    DEFAULT_CSS = """
    ArenaView > Static {
        height: auto;
        padding: 0 1;
    }
    ArenaView #arena-scenario {
        max-height: 3;
    }
    ArenaView #arena-source {
        height: 1;
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    ArenaView #arena-status {
        color: $text-muted;
    }
    ArenaView #arena-board {
        height: auto;
        max-height: 9;
    }
    ArenaView TracePlot {
        height: 1fr;
        min-height: 5;
        display: none;
    }
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.config: SpecConfig | None = None
        self.contenders: list[SpecConfig] = []
        self.source = ""
        self.problem = ""  # why the arena cannot run on the form's scenario
        self.run_number = 0
        self.arena_worker: Worker[None] | None = None
        self.board_scenario: SpecConfig | None = None  # the scenario of the rows shown
        self.standings: list[Standing] = []  # this arena's rows, in the order they came
        self.order: list[int] = []  # the board's rows: indexes into standings
        self.traces: dict[int, dict[str, np.ndarray]] = {}
        self.trace_index: int | None = None  # the standing whose trace is drawn
        self.state = START_HINT  # the status line, after the stale mark
        self.result: ArenaResult | None = None

    def compose(self) -> ComposeResult:
        yield Static("", id="arena-scenario")
        yield Static("", id="arena-source")
        yield Leaderboard(
            id="arena-board",
            classes="main-view",
            cursor_type="row",
            fixed_columns=1,
            zebra_stripes=True,
        )
        yield ColumnsHint(id="arena-more")
        yield Static("", id="arena-status")
        yield Static("", id="arena-columns")  # the columns' legend, shown with l
        yield Static("", id="arena-trace-title")
        yield TracePlot(id="arena-trace")

    def on_mount(self) -> None:
        from engine.analysis.arena import LEADERBOARD_COLUMNS, LEADERBOARD_LEGEND

        columns = self.query_one("#arena-columns", Static)
        columns.update(Text(LEADERBOARD_LEGEND))
        columns.display = False
        board = self.query_one("#arena-board", DataTable)
        for column in LEADERBOARD_COLUMNS:
            board.add_column(column, key=column)
        self.set_config(self.config)

    # --- the scenario and its contenders -----------------------------------------------
    def set_config(self, config: SpecConfig | None) -> None:
        """The form's configuration (None when invalid): the scenario F7 runs next. A board
        of another scenario stays, marked stale."""
        self.config = config
        if not self.query("#arena-status"):
            return  # not composed yet: on_mount describes it
        self.contenders, self.source, self.problem = [], "", ""
        if config is None:
            self.problem = "form invalid: fix it to run the arena"
        else:
            try:
                self.contenders, self.source = arena_contenders(config, self.app_preset())
            except ConfigError as err:
                self.problem = str(err)
        self._describe()
        if not self.standings and not self.running:
            self.state = self._ready_text()
        self._show_status()

    def app_preset(self) -> Any:
        """The preset the app has loaded (its [[arena]] tables, if any, are the contenders)."""
        return getattr(self.app, "preset", None)

    def _describe(self) -> None:
        from engine.analysis.arena import scenario_text

        if self.config is None:
            scenario, source = "Scenario: none (the form is invalid)", ""
        else:
            scenario = f"Scenario: {scenario_text(self.config)}"
            source = f"Contenders (+ the best fixed K): {self.source}" if self.source else ""
        self.query_one("#arena-scenario", Static).update(Text(scenario))
        self.query_one("#arena-source", Static).update(Text(source))

    def _ready_text(self) -> str:
        if self.problem:
            return self.problem
        from engine.analysis.arena import contender_labels

        return f"{START_HINT}: {', '.join(contender_labels(self.contenders))}"

    @property
    def stale(self) -> bool:
        """Rows are shown, and the form has moved on to another scenario since."""
        return self.board_scenario is not None and self.board_scenario != self.config

    def _show_status(self) -> None:
        text = self.state
        if self.stale and not self.running and self.problem:
            text = f"stale (the form changed) · {self.problem}"
        elif self.stale and not self.running:
            text = f"stale (the form changed; F7 runs it again) · {text}"
        self.query_one("#arena-status", Static).update(Text(text))

    def _set_state(self, text: str) -> None:
        self.state = text
        self._show_status()

    # --- running ---------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        """An arena started and not yet finished (a worker just created is still pending)."""
        return self.arena_worker is not None and not self.arena_worker.is_finished

    def start(self) -> bool:
        """Run the arena on the form's scenario (a running one is stopped first); False,
        with the reason in the status line, when it cannot run."""
        self.set_config(self.config)  # the contenders of the preset loaded now
        if self.problem or self.config is None:
            self._set_state(self.problem)
            return False
        self.cancel(note=None)
        self.run_number += 1
        self.standings, self.order, self.traces, self.result = [], [], {}, None
        self.board_scenario = self.config
        self.query_one("#arena-board", DataTable).clear()
        self._clear_trace()
        self._set_state("starting: finding the best fixed K…")
        self.arena_worker = self._run(self.run_number, self.config, list(self.contenders))
        self.app.refresh_bindings()  # escape now cancels it (the footer says so)
        return True

    def cancel(self, note: str | None = "stopping…") -> bool:
        """Stop the running arena, keeping its finished rows; False if none runs."""
        if not self.running:
            return False
        assert self.arena_worker is not None
        self.arena_worker.cancel()
        if note is not None:
            self._set_state(note)
        return True

    @work(thread=True, exclusive=True, group="arena", name="Arena", exit_on_error=False)
    def _run(self, run: int, scenario: SpecConfig, contenders: list[SpecConfig]) -> None:
        from engine.analysis.arena import run_arena
        from engine.core.runs import RunStopped

        worker = get_current_worker()

        def on_standing(standing: Standing) -> None:
            self.post_message(ArenaStanding(run, standing))

        shown: list[tuple[int, int]] = []  # the last (policy, percent) posted

        def on_progress(done: int, total: int, running: str, share: float = 0.0) -> None:
            step = (done, int(share * 100))
            if not shown or shown[-1] != step:  # a message per percent, not per check
                shown[:] = [step]
                self.post_message(ArenaProgress(run, done, total, running, share))

        try:
            result = run_arena(
                scenario,
                contenders,
                on_standing=on_standing,
                should_stop=lambda: worker.is_cancelled,
                on_progress=on_progress,
            )
        except RunStopped:
            self.post_message(ArenaEnded(run, None))
            return
        except ConfigError as err:
            self.post_message(ArenaEnded(run, None, str(err)))
            return
        self.post_message(ArenaEnded(run, result))

    @staticmethod
    def _running_text(done: int, total: int, running: str, share: float = 0.0) -> str:
        """The status while the arena runs, "3/6 policies · running goodput w=16: 40 %…"
        (the best fixed K first, as :func:`engine.analysis.arena.run_arena` names it; the share of
        its tokens simulated once there is one)."""
        shown = f": {share:.0%}" if share > 0 else ""
        if done == 0 and shown:  # in one line beside the form at 80 columns
            return f"0/{total} policies · the best fixed K, {running}{shown}…"
        if done == 0:
            return f"0/{total} policies · running the best fixed K, {running}…"
        return f"{done}/{total} policies · running {running}{shown}…"

    def on_arena_progress(self, message: ArenaProgress) -> None:
        message.stop()
        if message.run == self.run_number and self.running and message.done < message.total:
            self._set_state(
                self._running_text(message.done, message.total, message.running, message.share)
            )

    def on_arena_standing(self, message: ArenaStanding) -> None:
        message.stop()
        if message.run != self.run_number:
            return  # a row of an arena started before
        from engine.analysis.arena import standing_cells

        index = len(self.standings)
        self.standings.append(message.standing)
        self.order.append(index)
        board = self.query_one("#arena-board", DataTable)
        board.add_row(*standing_cells(message.standing), key=str(index))

    def on_arena_ended(self, message: ArenaEnded) -> None:
        message.stop()
        if message.run != self.run_number:
            return
        from engine.analysis.arena import ArenaResult

        done = len(self.standings)
        if message.error:
            self._set_state(message.error)
            return
        if message.result is None:
            self._set_state(
                f"stopped: {done} finished {'policy' if done == 1 else 'policies'} kept"
            )
            if self.board_scenario is not None:  # the rows so far, best first too
                self._sort(ArenaResult(self.board_scenario, self.standings, 0))
            return
        self.result = message.result
        self._sort(message.result)
        notes = "".join(f" · {note}" for note in message.result.notes)
        self._set_state(
            f"{done} policies, best first · * best fixed K={message.result.best_fixed_k}{notes}"
        )

    def _sort(self, result: ArenaResult) -> None:
        """Show the rows best first, the cursor staying on its policy."""
        from engine.analysis.arena import standing_cells

        board = self.query_one("#arena-board", DataTable)
        current = self._highlighted()
        ranked = result.ranked()
        self.order = [next(i for i, s in enumerate(self.standings) if s is r) for r in ranked]
        board.clear()
        for index in self.order:
            board.add_row(*standing_cells(self.standings[index]), key=str(index))
        if current is not None:
            board.move_cursor(row=self.order.index(current), animate=False)

    # --- the trace ---------------------------------------------------------------------------
    def _highlighted(self) -> int | None:
        """The highlighted row's standing (its index in arrival order), if any."""
        board = self.query_one("#arena-board", DataTable)
        if not self.order or not 0 <= board.cursor_row < len(self.order):
            return None
        return self.order[board.cursor_row]

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        index = self._highlighted()
        if index is None:
            return
        if index in self.traces:
            self._show_trace_of(index)
            return
        standing = self.standings[index]
        self.query_one("#arena-trace-title", Static).update(
            Text(f"{standing.label}, sequence 0: computing the trace…")
        )
        self._trace(self.run_number, index, standing.config)

    def action_trace_page(self, pages: int) -> None:
        """Show the next (``pages`` 1) or previous (-1) window of the trace's cycles."""
        plot = self.query_one(TracePlot)
        if plot.trace is not None:
            self.redraw_trace(plot.first + pages * plot.span)

    @work(thread=True, exclusive=True, group="trace", name="Arena trace", exit_on_error=False)
    def _trace(self, run: int, index: int, config: SpecConfig) -> None:
        from engine.analysis.arena import policy_trace

        trace = policy_trace(config)
        if not get_current_worker().is_cancelled:
            self.post_message(TraceReady(run, index, trace))

    def on_trace_ready(self, message: TraceReady) -> None:
        message.stop()
        if message.run != self.run_number:
            return
        self.traces[message.index] = message.trace
        if self._highlighted() == message.index:
            self._show_trace_of(message.index)

    def _show_trace_of(self, index: int) -> None:
        """Show the trace of row ``index`` (arrival order) from its first cycle, unless it
        is shown already (the rows re-sorted)."""
        plot = self.query_one(TracePlot)
        first = plot.first if index == self.trace_index and plot.trace is not None else 0
        self.trace_index = index
        self._show_parts()
        self.redraw_trace(first)

    def action_toggle_legend(self) -> None:
        """Show what the columns mean in place of the trace, or the trace again."""
        columns = self.query_one("#arena-columns", Static)
        columns.display = not columns.display
        self._show_parts()

    def _show_parts(self) -> None:
        """The trace (when there is one) unless the columns' legend takes its place."""
        legend = bool(self.query_one("#arena-columns", Static).display)
        self.query_one("#arena-trace-title", Static).display = not legend
        self.query_one(TracePlot).display = self.trace_index is not None and not legend

    def redraw_trace(self, first: int | None = None) -> None:
        """Draw the shown trace from cycle ``first`` (None: where it is), with its title
        and legend above it."""
        plot = self.query_one(TracePlot)
        if self.trace_index is None or self.trace_index not in self.traces:
            return
        trace = self.traces[self.trace_index]
        drawing = plot.draw(trace, plot.first if first is None else first)
        start, end = plot.window()
        label = self.standings[self.trace_index].label
        title = f"{label} · sequence 0 · cycles {start + 1}-{end + 1}/{trace['k'].size}:"
        legend = legend_lines(drawing, 10**6, color=not self.app.no_color)[0]  # one line
        self.query_one("#arena-trace-title", Static).update(Text.from_ansi(f"{title} {legend}"))

    def _clear_trace(self) -> None:
        self.workers.cancel_group(self, "trace")
        plot = self.query_one(TracePlot)
        plot.trace, plot.first, self.trace_index = None, 0, None
        self._show_parts()
        self.query_one("#arena-trace-title", Static).update("")

    # --- failures ----------------------------------------------------------------------------
    def worker_failed(self, worker: Worker[Any]) -> None:
        """A worker raised (the notification says why): leave the busy state."""
        if worker.group == "arena" and worker is self.arena_worker:
            self._set_state("the arena failed (see the notification); rows so far kept")
        elif worker.group == "trace":
            self.query_one("#arena-trace-title", Static).update(
                "could not trace this policy (see the notification)"
            )
