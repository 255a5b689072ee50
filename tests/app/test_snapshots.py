"""How each view looks, at 80x24 and 120x40, with the tiny preset and its fixed seed.

Two apps per terminal size go through the views in turn (:data:`SESSIONS`), and each
snapshot is compared with its own baseline file, as ``snap_compare`` would take it from an
app given only that view's steps (see tests/app/snap_session.py): the order is such that
no step leaves anything on screen that a later snapshot would show (the invalid value is
typed back before the run; the arena's preset is loaded from the Run view).
Update the baselines with ``pytest tests/app/test_snapshots.py --snapshot-update``.
Wall-clock figures (rate, ETA, durations, file paths) are hidden by SPECTUI_HIDE_TIMINGS.
The Run view's replay does not move by itself here: the test shows its rows at once.
Sweeps run in a thread of the app (SPECTUI_SWEEP_WORKERS=0): same rows, no process to start.
"""

from __future__ import annotations

import pytest

from spectui.app import create_app
from tests.app.helpers import settle, type_into, until
from tests.app.snap_session import Baselines, plots_drawn, quiet, run_session, screenshot

SIZES = [(80, 24), (120, 40)]


async def _start(pilot) -> None:
    await settle(pilot, pilot.app)


async def _help(pilot) -> None:
    await settle(pilot, pilot.app)
    pilot.app.action_help()
    await quiet(pilot)


async def _close_help(pilot) -> None:
    from spectui.screens.help import HelpScreen

    await pilot.press("escape")
    await until(pilot, lambda: not isinstance(pilot.app.screen, HelpScreen))
    await settle(pilot, pilot.app)


async def _invalid(pilot) -> None:
    await settle(pilot, pilot.app)
    await type_into(pilot, pilot.app, "acceptance_rate", "1.5")
    await quiet(pilot)


async def _valid_again(pilot) -> None:
    """The preset's own value typed back: the form as the app started."""
    await type_into(pilot, pilot.app, "acceptance_rate", "0.8")
    await until(pilot, lambda: pilot.app.config == pilot.app.preset.config)
    await settle(pilot, pilot.app)


async def _run(pilot) -> None:
    await settle(pilot, pilot.app)
    pilot.app.action_run()
    await settle(pilot, pilot.app)
    await pilot.press("e")  # every row at once: the replay is not on a timer here
    await quiet(pilot)


async def _speedup(pilot) -> None:
    await settle(pilot, pilot.app)
    await pilot.app.action_show_view("speedup")
    await settle(pilot, pilot.app)
    await drawn_at_final_size(pilot)
    await quiet(pilot)


async def drawn_at_final_size(pilot) -> None:
    """Until the Speedup view's curve (its ticks, its legend's wrapping) was drawn at the
    sizes the view and its chart have now: a state, not a time (under load the chart was
    once drawn before the layout settled, and the snapshot showed it at another height)."""
    from spectui.widgets.speedup_view import SpeedupPlot, SpeedupView

    view = pilot.app.query_one(SpeedupView)
    await settle(pilot, pilot.app, rounds=1)
    await until(
        pilot,
        lambda: (
            view.last is not None and view.drawn_at == (view.size, view.query_one(SpeedupPlot).size)
        ),
    )


async def _sweep(pilot) -> None:
    from spectui.widgets.sweep_view import SweepView

    app = pilot.app
    await settle(pilot, app)
    await app.action_start_sweep()
    view = app.query_one(SweepView)
    await until(pilot, lambda: app.sweep_frame is not None and not view.running)
    await settle(pilot, app, rounds=5)
    await quiet(pilot)


async def _analysis(pilot) -> None:
    await pilot.app.action_show_view("analysis")
    await quiet(pilot)


async def _plots(pilot) -> None:
    await pilot.app.action_show_view("plots")
    await settle(pilot, pilot.app)
    await plots_drawn(pilot)
    await quiet(pilot)


async def _regime(pilot) -> None:
    """The form on a roofline at batch 8, then the regime map of that scenario."""
    from engine.presets import load_preset
    from spectui.widgets.param_form import ParamForm
    from spectui.widgets.regime_view import RegimeMapTable, RegimeView

    app = pilot.app
    await settle(pilot, app)
    config = load_preset("tiny").config.replace(cost_model="roofline", batch_size=8)
    app.query_one(ParamForm).load_config(config)
    await settle(pilot, app)
    await app.action_show_view("regime")
    view = app.query_one(RegimeView)
    table = view.query_one(RegimeMapTable)
    await settle(pilot, app, rounds=5)
    # The map of this scenario laid out and scrolled home before the screenshot.
    await until(
        pilot,
        lambda: (
            not view.dirty
            and view.shown is not None
            and view.config == app.config
            and table.regime is view.shown
            and not table._require_update_dimensions
            and table.scroll_offset == (0, 0)
        ),
    )
    await quiet(pilot)


async def _arena(pilot) -> None:
    """The arena of bursty-code-chat (markov acceptance), small: every row and the trace of
    the highlighted policy."""
    await settle(pilot, pilot.app)
    pilot.app.apply_preset("bursty-code-chat")
    await settle(pilot, pilot.app)
    from spectui.widgets.param_form import ParamForm

    form = pilot.app.query_one(ParamForm)
    config, _ = form.current_config()
    form.load_config(config.replace(n_sequences=200, tokens_per_seq=64))
    await settle(pilot, pilot.app)
    await pilot.app.action_start_arena()
    view = pilot.app._arena_view()
    assert view is not None
    # Until the arena has ended and its board is sorted: a state (400 pauses of 20 ms were
    # once too few under load, and the snapshot showed the arena still running).
    await until(pilot, lambda: view.result is not None and not pilot.app._arena_running())
    await settle(pilot, pilot.app, rounds=5)
    # The sorted board's column widths measured (a DataTable does it when idle).
    board = view.query_one("#arena-board")
    await until(pilot, lambda: not board._require_update_dimensions)
    await quiet(pilot)


async def _back_to_run(pilot) -> None:
    """The Run view again: a preset loaded on the Regime view would be mapped at once."""
    await pilot.app.action_show_view("run")
    await settle(pilot, pilot.app)


# Three apps per size, each through its views in this order: (snapshot, steps). Steps without
# a snapshot put back what the next snapshot must not show. (One app for all ten ran past
# the per-test timeout on a loaded machine; three keep each test short on the slowest.)
SESSIONS = {
    "form": [
        ("start", _start),
        ("help", _help),
        (None, _close_help),
        ("invalid_form", _invalid),
        (None, _valid_again),
        ("run", _run),
        ("speedup", _speedup),
    ],
    "results": [
        ("sweep", _sweep),
        ("analysis", _analysis),
        ("plots", _plots),
    ],
    "scenarios": [
        ("regime", _regime),
        (None, _back_to_run),
        ("arena", _arena),
    ],
}


@pytest.fixture
def sweeps_in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPECTUI_SWEEP_WORKERS", "0")


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("session", list(SESSIONS))
def test_view_snapshot(snapshot, request, sweeps_in_process, session, size):
    """These views' snapshots at this size: baselines test_view_snapshot[VIEW-WxH].svg."""
    baselines = Baselines(snapshot, request)
    width, height = size

    async def script(pilot) -> None:
        for view, steps in SESSIONS[session]:
            await steps(pilot)
            if view is not None:
                baselines.check(
                    f"test_view_snapshot[{view}-{width}x{height}]", await screenshot(pilot)
                )

    run_session(create_app("tiny", replay_autoplay=False), size, script)
    assert len(baselines.checked) == sum(view is not None for view, _ in SESSIONS[session])
    baselines.verify()
