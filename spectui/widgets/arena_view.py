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

The view is made of :mod:`~spectui.widgets.arena_run` (running the arena, the leaderboard's
rows) and :mod:`~spectui.widgets.arena_trace` (the trace and its plot).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import DataTable, Static
from textual.worker import Worker

from engine.core.config import ConfigError, SpecConfig
from spectui.widgets.arena_run import (
    ArenaEnded,
    ArenaProgress,
    ArenaRuns,
    ArenaStanding,
    running_text,
)
from spectui.widgets.arena_trace import (
    ACCEPTED_COLOR,
    ACCEPTED_MARKER,
    K_COLOR,
    K_MARKER,
    REGIME_COLOR,
    REGIME_MARKER,
    TRACE_DEFAULT_HEIGHT,
    TRACE_DEFAULT_WIDTH,
    TRACE_MIN_SPAN,
    X_TICKS_MIN_HEIGHT,
    ArenaTraces,
    TracePlot,
    TraceReady,
    easy_runs,
)
from spectui.widgets.common import ReportsWorkerErrors
from spectui.widgets.table_hint import ColumnsHint, HidesColumnsHint

if TYPE_CHECKING:
    import numpy as np

    from engine.analysis.arena import ArenaResult, Standing

__all__ = [
    "ACCEPTED_COLOR",
    "ACCEPTED_MARKER",
    "K_COLOR",
    "K_MARKER",
    "REGIME_COLOR",
    "REGIME_MARKER",
    "START_HINT",
    "TRACE_DEFAULT_HEIGHT",
    "TRACE_DEFAULT_WIDTH",
    "TRACE_MIN_SPAN",
    "X_TICKS_MIN_HEIGHT",
    "ArenaEnded",
    "ArenaProgress",
    "ArenaStanding",
    "ArenaView",
    "Leaderboard",
    "TracePlot",
    "TraceReady",
    "arena_contenders",
    "easy_runs",
    "running_text",
]

START_HINT = "F7 runs the arena"


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


class Leaderboard(HidesColumnsHint, DataTable[Any]):
    """The arena's rows, one per policy (the policy's name fixed on the left); the line
    under it says which columns are out of sight."""


class ArenaView(ReportsWorkerErrors, ArenaRuns, ArenaTraces, Vertical):
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

    # --- failures ----------------------------------------------------------------------------
    def worker_failed(self, worker: Worker[Any]) -> None:
        """A worker raised (the notification says why): leave the busy state."""
        if worker.group == "arena" and worker is self.arena_worker:
            self._set_state("the arena failed (see the notification); rows so far kept")
        elif worker.group == "trace":
            self.query_one("#arena-trace-title", Static).update(
                "could not trace this policy (see the notification)"
            )
