"""The Arena view's trace (:mod:`spectui.widgets.arena_view`): the highlighted row's policy
along sequence 0 (:func:`engine.analysis.arena.policy_trace`, computed in a thread worker),
the k it drafted in each cycle and how many of them were accepted, and for the markov model
a band over the cycles spent in the easy regime. One cycle per column: ``[`` and ``]`` show
earlier and later cycles; ``l`` shows what the leaderboard's columns mean in its place.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from rich.text import Text
from textual import work
from textual.message import Message
from textual.widgets import DataTable, Static
from textual.worker import get_current_worker
from textual_plotext import PlotextPlot

from engine.core.config import SpecConfig
from spectui.plotting.terminal import (
    GLYPHS,
    Drawing,
    LegendEntry,
    legend_lines,
    spaced_ticks,
)

if TYPE_CHECKING:
    from textual.containers import Vertical

    from engine.analysis.arena import Standing

    _View = Vertical
else:
    _View = object

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


def easy_runs(regime: np.ndarray) -> list[tuple[int, int]]:
    """The runs of consecutive cycles in the easy regime (0), as (first, last) indexes."""
    easy = np.r_[False, regime == 0, False].astype(np.int8)
    edges = np.flatnonzero(np.diff(easy))
    return [(int(a), int(b) - 1) for a, b in zip(edges[::2], edges[1::2], strict=True)]


@dataclass
class TraceReady(Message):
    """The trace of row ``index`` (in arrival order) of arena number ``run``."""

    run: int
    index: int
    trace: dict[str, np.ndarray]


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
        if self.trace is not None and isinstance(view, ArenaTraces):
            view.redraw_trace()


class ArenaTraces(_View):
    """Mixin for ArenaView: the highlighted row's trace, computed once per row and arena,
    paged through and redrawn; the columns' legend in its place (``l``)."""

    run_number: int  # the arena shown: traces of an older one are dropped
    standings: list[Standing]  # this arena's rows, in the order they came
    order: list[int]  # the board's rows: indexes into standings
    traces: dict[int, dict[str, np.ndarray]]
    trace_index: int | None  # the standing whose trace is drawn

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
