"""The Arena view's runs (:mod:`spectui.widgets.arena_view`): F7 runs
:func:`engine.analysis.arena.run_arena` in a thread worker; each policy's row joins the
leaderboard as it finishes, as the CLI writes it (:func:`engine.analysis.arena.standing_cells`),
and at the end the rows are sorted best first with the arena's notes under them. Escape stops
the arena and keeps the finished rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual import work
from textual.message import Message
from textual.widgets import DataTable
from textual.worker import Worker, get_current_worker

from engine.core.config import ConfigError, SpecConfig

if TYPE_CHECKING:
    import numpy as np
    from textual.containers import Vertical

    from engine.analysis.arena import ArenaResult, Standing

    _View = Vertical
else:
    _View = object


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


def running_text(done: int, total: int, running: str, share: float = 0.0) -> str:
    """The status while the arena runs, "3/6 policies · running goodput w=16: 40 %…"
    (the best fixed K first, as :func:`engine.analysis.arena.run_arena` names it; the share of
    its tokens simulated once there is one)."""
    shown = f": {share:.0%}" if share > 0 else ""
    if done == 0 and shown:  # in one line beside the form at 80 columns
        return f"0/{total} policies · the best fixed K, {running}{shown}…"
    if done == 0:
        return f"0/{total} policies · running the best fixed K, {running}…"
    return f"{done}/{total} policies · running {running}{shown}…"


class ArenaRuns(_View):
    """Mixin for ArenaView: starts and stops the arena, and fills the leaderboard from its
    messages."""

    config: SpecConfig | None  # the form's configuration: the scenario F7 runs
    contenders: list[SpecConfig]
    problem: str  # why the arena cannot run on the form's scenario
    run_number: int
    arena_worker: Worker[None] | None
    board_scenario: SpecConfig | None  # the scenario of the rows shown
    standings: list[Standing]  # this arena's rows, in the order they came
    order: list[int]  # the board's rows: indexes into standings
    traces: dict[int, dict[str, np.ndarray]]
    result: ArenaResult | None

    if TYPE_CHECKING:

        def set_config(self, config: SpecConfig | None) -> None: ...
        def _set_state(self, text: str) -> None: ...
        def _clear_trace(self) -> None: ...
        def _highlighted(self) -> int | None: ...

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

    def on_arena_progress(self, message: ArenaProgress) -> None:
        message.stop()
        if message.run == self.run_number and self.running and message.done < message.total:
            self._set_state(
                running_text(message.done, message.total, message.running, message.share)
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
