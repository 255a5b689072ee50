"""The Arena view (key 7, F7): the leaderboard fills live as policies finish, escape stops it
keeping the finished rows, a scenario the contenders cannot work with is refused in the
status line, and the highlighted policy's per-cycle trace is drawn under the board.

Most tests drive a fake ``engine.analysis.arena.run_arena`` that releases one policy at a time
through gates (``threading.Event``), so a test sees the board after each row; the last one
runs the real engine on a tiny markov scenario. What is about the view alone runs it in a
small host app (tests/app/hosts_screens.py) at its size in the app; what is about the app
(views, keys, escape, presets, the form's changes) boots the whole app, once per state.
"""

from __future__ import annotations

import math
import threading

import numpy as np
import pytest
from textual.widgets import DataTable, TabbedContent

import engine.analysis.arena
from engine.analysis.arena import (
    LEADERBOARD_COLUMNS,
    LEADERBOARD_LEGEND,
    ArenaResult,
    Standing,
    contender_labels,
    default_contenders,
    standing_cells,
)
from engine.analysis.formatting import policy_text
from engine.core.config import SpecConfig
from engine.core.runs import RunStopped
from spectui.app import create_app
from spectui.messages import ConfigChanged
from tests.app.app_waits import booted
from tests.app.helpers import notifications, settle, until
from tests.app.hosts_screens import BESIDE_THE_FORM, WITHOUT_THE_FORM, ArenaHost
from tests.app.screen import region_text, screen_text

MARKOV = SpecConfig(draft_model="markov", n_sequences=200, tokens_per_seq=64, seed=7)
# Fake speedups, in the order the arena reports the rows (the best fixed K first, the oracle,
# then the other contenders): not their ranking, so that the final sort shows.
FAKE_SPEEDUPS = (1.50, 2.00, 1.80, 1.20, 1.40)
MAX_POLLS = 6000  # how long (x 5 ms) a gate waits for a test or a stop before giving up


def _standing(config: SpecConfig, speedup: float, best_fixed: bool) -> Standing:
    share = np.zeros(9)
    share[min(config.k, 8)] = 1.0
    return Standing(
        label=policy_text(config),
        config=config,
        speedup=speedup,
        ci95=0.02,
        speedup_exact=speedup if config.policy != "goodput" else math.nan,
        gain=speedup - FAKE_SPEEDUPS[0],
        gain_ci95=0.01,
        gain_ci95_unpaired=0.05,
        captured=(speedup - FAKE_SPEEDUPS[0]) / (FAKE_SPEEDUPS[1] - FAKE_SPEEDUPS[0]),
        mean_k=float(config.k),
        waste=0.25,
        k_share=share,
        is_best_fixed=best_fixed,
    )


class GatedArena:
    """Stands in for ``run_arena``: row i is reported once ``release(i)`` was called (or
    all rows, with ``release_all``). Honours ``should_stop`` while it waits."""

    def __init__(self) -> None:
        self.gates = [threading.Event() for _ in FAKE_SPEEDUPS]
        self.reported: list[Standing] = []
        self.stopped = threading.Event()

    def release(self, index: int) -> None:
        self.gates[index].set()

    def release_all(self) -> None:
        for gate in self.gates:
            gate.set()

    def __call__(self, scenario, contenders, *, on_standing, should_stop, on_progress):
        best = scenario.replace(**{"policy.name": "fixed", "k": 4})
        order = [best, *(c for c in contenders if c.policy == "oracle")]
        order += [c for c in contenders if c.policy != "oracle"]
        order = order[: len(FAKE_SPEEDUPS)]
        labels = contender_labels(order)
        standings = []
        for i, (config, speedup) in enumerate(zip(order, FAKE_SPEEDUPS, strict=True)):
            on_progress(i, len(order), labels[i])
            polls = 0
            while not self.gates[i].wait(0.005):
                if should_stop():
                    self.stopped.set()
                    raise RunStopped()
                polls += 1
                if polls > MAX_POLLS:  # never told to stop: fail rather than hang the test
                    raise RuntimeError("the arena was never told to stop")
            standing = _standing(config, speedup, i == 0)
            standings.append(standing)
            self.reported.append(standing)
            on_standing(standing)
        on_progress(len(order), len(order), "")
        return ArenaResult(scenario, standings, 4, ["a note of the arena"])


def fake_trace(config: SpecConfig) -> dict[str, np.ndarray]:
    """A trace whose largest k names the policy: the oracle drafts up to 7, the rest 3."""
    top = 7 if config.policy == "oracle" else 3
    k = np.array([1, 2, top, top, 2, 1, top, top] * 20)
    return {
        "r": np.arange(k.size, 0, -1),
        "k": k,
        "accepted": np.minimum(k, 1),
        "regime": np.array([1, 1, 0, 0, 1, 1, 0, 0] * 20),
        "q_mean": np.full(k.size, np.nan),
    }


@pytest.fixture
def gated(monkeypatch: pytest.MonkeyPatch) -> GatedArena:
    fake = GatedArena()
    monkeypatch.setattr(engine.analysis.arena, "run_arena", fake)
    monkeypatch.setattr(engine.analysis.arena, "policy_trace", fake_trace)
    return fake


def _board(app) -> DataTable:
    return app.query_one("#arena-board", DataTable)


def _shown_rows(app) -> list[tuple[str, ...]]:
    board = _board(app)
    return [tuple(str(c) for c in board.get_row_at(i)) for i in range(board.row_count)]


def _status(app) -> str:
    return " ".join(region_text(app, app.query_one("#arena-status")).split())


async def _open_arena(pilot, app) -> None:
    """In the app: the form's scenario becomes MARKOV, and key 7 shows the Arena view."""
    await booted(pilot, app)
    app.post_message(ConfigChanged(MARKOV))
    await pilot.press("7")
    await until(pilot, lambda: "Scenario: markov" in screen_text(app))


async def test_rows_appear_live_sort_best_first_go_stale_and_escape_stops_the_arena(
    tmp_path, gated
):
    """In the app: key 7 shows the view (its board has the focus), F7 runs the arena on the
    form's scenario, rows come as policies finish and sort best first at the end; a change of
    the form then marks the board stale, its rows kept.

    Then escape: in the Arena view it stops the arena first (even with a sweep running),
    keeping the finished rows; the app stays responsive (another view, then F7 from there
    runs a new arena to its end); from another view, with nothing else running, escape
    stops the arena too. Before all that, with the form hidden, loading a preset brings its
    contenders."""
    path = tmp_path / "confidence-stop.toml"
    path.write_text(PRESET)
    app = create_app("default")
    async with app.run_test(size=(80, 24)) as pilot:
        # First, with the form hidden (the contenders' line fits), a preset loaded brings
        # its contenders; then the default preset, the form shown, and MARKOV again.
        await pilot.press("ctrl+b")
        await _open_arena(pilot, app)
        assert "Contenders (+ the best fixed K): the default set" in screen_text(app)
        assert app.apply_preset(str(path))
        await until(pilot, lambda: "threshold" in _status(app))
        text = screen_text(app)
        assert "Contenders (+ the best fixed K): preset confidence-stop's [[arena]]" in text
        assert _status(app) == "F7 runs the arena: threshold p_min=0.75, threshold h=0.5"
        assert app.apply_preset("default")
        await pilot.press("ctrl+b")
        app.post_message(ConfigChanged(MARKOV))
        await until(pilot, lambda: "the default set" in screen_text(app))
        await until(pilot, lambda: "Scenario: markov" in screen_text(app))
        assert app.query_one(TabbedContent).active == "arena"
        text = screen_text(app)
        assert "Scenario: markov (easy 0.9, hard 0.3" in text
        assert "Contenders (+ the best fixed K): the default set" in text
        names = ", ".join(contender_labels(default_contenders(MARKOV)))
        assert _status(app) == f"F7 runs the arena: {names}"
        await pilot.press("f7")
        running = "0/5 policies · running the best fixed K, fixed K=4…"
        await until(pilot, lambda: running in _status(app))
        assert _board(app).row_count == 0
        for shown in range(1, len(FAKE_SPEEDUPS)):  # all but the last: then it sorts
            gated.release(shown - 1)
            await until(pilot, lambda n=shown: _board(app).row_count == n)
            # What the board shows is what the engine says a row reads, in arrival order.
            assert _shown_rows(app) == [standing_cells(s) for s in gated.reported]
            assert _status(app).startswith(f"{shown}/5 policies · running ")
        gated.release(len(FAKE_SPEEDUPS) - 1)
        await until(pilot, lambda: not app.check_action("cancel", ()))  # the arena ended
        await until(pilot, lambda: _status(app).startswith("5 policies"))
        assert [str(c.label) for c in _board(app).ordered_columns] == list(LEADERBOARD_COLUMNS)
        ranked = sorted(gated.reported, key=lambda s: -s.best_speedup)
        assert _shown_rows(app) == [standing_cells(s) for s in ranked]
        assert _shown_rows(app)[0][0] == "oracle"
        assert _status(app) == "5 policies, best first · * best fixed K=4 · a note of the arena"
        board_text = region_text(app, _board(app))
        assert "oracle" in board_text and "fixed K=4 *" in board_text
        assert app.focused is _board(app)  # as key 7 and F7 leave it
        # The form changes: the board stays, marked stale; an invalid form says why.
        rows = _shown_rows(app)
        app.post_message(ConfigChanged(MARKOV.replace(seed=8)))
        await until(pilot, lambda: "seed 8" in screen_text(app))
        assert _status(app).startswith("stale (the form changed; F7 runs it again) · 5 policies")
        assert _shown_rows(app) == rows  # kept until the next arena
        app.post_message(ConfigChanged(None))  # an invalid form: the reason replaces the hint
        await until(pilot, lambda: "form invalid" in _status(app))
        assert _status(app) == "stale (the form changed) · form invalid: fix it to run the arena"
        assert _shown_rows(app) == rows
        # The form's scenario again, and a new arena (new gates, all closed) to stop.
        app.post_message(ConfigChanged(MARKOV))
        await until(pilot, lambda: "form invalid" not in _status(app))
        gated.__init__()
        await pilot.press("f7")
        gated.release(0)
        gated.release(1)
        await until(pilot, lambda: _board(app).row_count == 2)
        assert app.check_action("cancel", ())
        # In the Arena view escape stops the arena first, even with a sweep running.
        app._sweep_running = lambda: True
        await pilot.press("escape")
        await until(pilot, gated.stopped.is_set)
        del app._sweep_running
        await until(pilot, lambda: not app.check_action("cancel", ()))  # the arena ended
        await until(pilot, lambda: _status(app).startswith("stopped"))
        assert _status(app) == "stopped: 2 finished policies kept"
        ranked = sorted(gated.reported, key=lambda s: -s.best_speedup)
        assert _shown_rows(app) == [standing_cells(s) for s in ranked]
        # Still responsive: another view and back, and a new arena runs to its end.
        await pilot.press("1")
        assert app.query_one(TabbedContent).active == "run"
        gated.__init__()  # new gates, all open
        gated.release_all()
        await pilot.press("f7")
        await until(pilot, lambda: _status(app).startswith("5 policies, best first"))
        assert app.query_one(TabbedContent).active == "arena"
        assert _board(app).row_count == len(FAKE_SPEEDUPS)
        # Escape in another view: nothing else runs, so escape stops the arena.
        await until(pilot, lambda: not app.check_action("cancel", ()))
        gated.__init__()  # new gates, all closed
        await pilot.press("f7")
        await until(pilot, lambda: "running the best fixed K" in _status(app))
        await pilot.press("1", "escape")
        await until(pilot, gated.stopped.is_set)
        await pilot.press("7")
        await until(pilot, lambda: _status(app).startswith("stopped"))
        assert _status(app) == "stopped: 0 finished policies kept"


async def test_the_progress_names_the_policy_running(gated):
    app = ArenaHost(MARKOV)
    async with app.run_test(size=BESIDE_THE_FORM) as pilot:
        await settle(pilot, app)
        await pilot.press("f7")
        gated.release(0)
        await until(pilot, lambda: _board(app).row_count == 1)
        await until(pilot, lambda: "1/5 policies · running oracle…" in _status(app))
        gated.release(1)
        hf = contender_labels(default_contenders(MARKOV))[0]
        await until(pilot, lambda: f"2/5 policies · running {hf}…" in _status(app))
        gated.release_all()
        await settle(pilot, app)


async def test_quitting_while_the_arena_runs_exits(gated):
    app = ArenaHost(MARKOV)
    async with app.run_test(size=BESIDE_THE_FORM) as pilot:
        await settle(pilot, app)
        await pilot.press("f7")
        await until(pilot, lambda: "running the best fixed K" in _status(app))
        await pilot.press("ctrl+q")
        await pilot.pause()
    assert gated.stopped.is_set()  # the worker was told to stop, the gates never opened
    assert app.return_code == 0


PRESET = """\
description = "threshold stops on a confidence model"

[config]
draft_model = "confidence"
n_sequences = 100
tokens_per_seq = 32

[[arena]]
"policy.name" = "threshold"
"policy.rule" = ["p_min", "h"]
"""


async def test_a_contender_that_cannot_work_with_the_scenario_is_refused(tmp_path, gated):
    from engine.presets import load_preset

    path = tmp_path / "confidence-stop.toml"
    path.write_text(PRESET)
    preset = load_preset(str(path))
    app = ArenaHost(preset.config, preset)  # the form hidden: the contenders' line fits
    async with app.run_test(size=WITHOUT_THE_FORM) as pilot:
        await settle(pilot, app)
        text = screen_text(app)
        assert "Contenders (+ the best fixed K): preset confidence-stop's [[arena]]" in text
        assert _status(app) == "F7 runs the arena: threshold p_min=0.75, threshold h=0.5"
        app.view.set_config(MARKOV)  # the form changed: no confidences, threshold cannot work
        refusal = (
            "policy.name: threshold needs per-token confidences, which draft_model markov "
            "does not give; use draft_model confidence"
        )
        await until(pilot, lambda: _status(app) == refusal)
        await pilot.press("f7")
        await settle(pilot, app)
        assert _status(app) == refusal
        assert _board(app).row_count == 0 and not gated.reported
        assert app.is_running


def _y_labels(drawn: str) -> list[str]:
    """The y tick labels of a plot on screen (the digits starting its rows), top down."""
    return [line.split()[0] for line in drawn.splitlines() if line[:1].isdigit()]


async def test_the_trace_follows_the_highlighted_row(gated):
    app = ArenaHost(MARKOV)
    async with app.run_test(size=WITHOUT_THE_FORM) as pilot:
        await settle(pilot, app)
        gated.release_all()
        await pilot.press("f7")
        await settle(pilot, app)
        title = app.query_one("#arena-trace-title")
        plot = app.query_one("#arena-trace")
        # The cursor stayed on the first row that came, the best fixed K, now third.
        assert _board(app).cursor_row == 2
        span = plot.span  # one cycle per column
        assert span < 160 // 2
        assert region_text(app, title).startswith(f" fixed K=4 · sequence 0 · cycles 1-{span}/160:")
        assert "━━ k drafted  x accepted  █ easy" in region_text(app, title)
        drawn = region_text(app, plot)
        assert "█" in drawn  # the easy-regime band
        assert _y_labels(drawn) == ["3", "0"]  # the fake's fixed K drafts up to 3
        await pilot.press("right_square_bracket")  # the next cycles
        await pilot.pause()
        assert f" cycles {span + 1}-{2 * span}/160:" in region_text(app, title)
        assert f"{span + 1} " in region_text(app, plot).splitlines()[-1]  # the x ticks
        await pilot.press("left_square_bracket")
        await pilot.pause()
        assert f" cycles 1-{span}/160:" in region_text(app, title)
        await pilot.press("up", "up")  # the oracle, best first
        await settle(pilot, app)
        assert region_text(app, title).startswith(f" oracle · sequence 0 · cycles 1-{span}/160:")
        assert _y_labels(region_text(app, plot)) == ["7", "3", "0"]  # the oracle, up to 7
        # l: what the columns mean, in the trace's place; l again: the trace.
        await pilot.press("l")
        await pilot.pause()
        legend = " ".join(region_text(app, app.query_one("#arena-columns")).split())
        assert legend == " ".join(LEADERBOARD_LEGEND.split())
        assert not title.display and not plot.display
        await pilot.press("l")
        await pilot.pause()
        assert region_text(app, title).startswith(" oracle · sequence 0 ·")
        assert plot.display and not app.query_one("#arena-columns").display
        assert _y_labels(region_text(app, plot)) == ["7", "3", "0"]


async def test_a_tiny_arena_on_the_real_engine_fills_every_row():
    app = ArenaHost(MARKOV)
    async with app.run_test(size=BESIDE_THE_FORM) as pilot:
        await settle(pilot, app)
        await pilot.press("f7")
        await settle(pilot, app, rounds=6)
        view = app.query_one("#arena-view")
        result = view.result
        assert result is not None
        contenders = default_contenders(MARKOV)
        best_fixed = MARKOV.replace(**{"policy.name": "fixed", "k": result.best_fixed_k})
        expected = len(contenders) + (best_fixed not in contenders)
        assert _board(app).row_count == expected == len(result.standings)
        assert _shown_rows(app) == [standing_cells(s) for s in result.ranked()]
        assert _status(app).startswith(f"{expected} policies, best first")
        title = region_text(app, app.query_one("#arena-trace-title"))
        assert "sequence 0 · cycles 1-" in title


async def test_a_refusal_from_the_engine_shows_in_the_status_line(monkeypatch):
    from engine.core.config import ConfigError

    def refuse(scenario, contenders, **kwargs):
        raise ConfigError("policy.window", "a refusal only the run can see")

    monkeypatch.setattr(engine.analysis.arena, "run_arena", refuse)
    app = ArenaHost(MARKOV)
    async with app.run_test(size=BESIDE_THE_FORM) as pilot:
        await settle(pilot, app)
        await pilot.press("f7")
        await settle(pilot, app)
        assert _status(app) == "policy.window: a refusal only the run can see"
        assert not notifications(app) and app.is_running


def test_contenders_are_named_as_the_leaderboard_names_them():
    """Two contenders that differ only in their bound on k read apart, as in run_arena."""
    from engine.presets import load_preset

    preset = load_preset("hf-vs-fixed")
    scenario = preset.config.replace(n_sequences=20, tokens_per_seq=16)
    contenders = preset.contenders(scenario)
    labels = contender_labels(contenders)
    assert len(set(labels)) == len(labels)
    ran = {s.label for s in engine.analysis.arena.run_arena(scenario, contenders).standings}
    assert set(labels) <= ran


async def test_at_80x24_beside_the_form_every_column_is_reached_by_keys(gated):
    """Issue 22: the board's last columns (k most) were cut at 80 columns, unmarked."""
    app = ArenaHost(MARKOV)
    async with app.run_test(size=BESIDE_THE_FORM) as pilot:
        await settle(pilot, app)
        gated.release_all()
        await pilot.press("f7")
        await settle(pilot, app)
        board = _board(app)
        assert board.row_count == len(FAKE_SPEEDUPS)
        board.focus()  # as key 7 and F7 do in the app (the test of rows appearing live)

        def header() -> str:
            return region_text(app, board).splitlines()[0]

        def hint() -> str:
            return " ".join(region_text(app, app.query_one("#arena-more")).split())

        await until(pilot, lambda: hint().endswith("more columns (→ or End)"))
        assert "k most" not in header()
        await pilot.press("end")
        await pilot.pause()
        assert header().split()[0] == "policy"  # fixed on the left
        assert header().rstrip().endswith("k most")
        assert hint().endswith("(← or Home)")
        await pilot.press("home")
        await pilot.pause()
        assert "exact" in header() and hint().endswith("(→ or End)")


async def test_the_best_fixed_k_says_how_far_it_is(gated, monkeypatch):
    """On a large form the best fixed K runs alone for many seconds: the status tells the
    share of its tokens simulated, as the engine reports it (issue 22)."""

    def sharing(scenario, contenders, *, on_standing, should_stop, on_progress):
        def told(done, total, running, *share):
            on_progress(done, total, running)
            if done == 0 and running:  # the engine: 42 % of the first policy's tokens done
                on_progress(done, total, running, 0.42)

        return gated(
            scenario, contenders, on_standing=on_standing, should_stop=should_stop, on_progress=told
        )

    monkeypatch.setattr(engine.analysis.arena, "run_arena", sharing)
    app = ArenaHost(MARKOV)
    async with app.run_test(size=BESIDE_THE_FORM) as pilot:
        await settle(pilot, app)
        await pilot.press("f7")
        running = "0/5 policies · the best fixed K, fixed K=4: 42%…"
        await until(pilot, lambda: running in _status(app))
        assert running in screen_text(app)  # on one line
        gated.release_all()
        await settle(pilot, app)
