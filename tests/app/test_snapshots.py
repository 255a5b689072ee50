"""How each view looks, at 80x24 and 120x40, with the tiny preset and its fixed seed.

Update the baselines with ``pytest tests/app/test_snapshots.py --snapshot-update``.
Wall-clock figures (rate, ETA, durations, file paths) are hidden by SPECTUI_HIDE_TIMINGS.
The Run view's replay does not move by itself here: the test shows its rows at once.
"""

from __future__ import annotations

import pytest

from spectui.app import create_app
from tests.app.helpers import settle, type_into, until

SIZES = [(80, 24), (120, 40)]


async def _quiet(pilot) -> None:
    """No toasts (they name tmp paths) and no blinking cursor in the snapshot."""
    from textual.widgets import Input

    await settle(pilot, pilot.app)
    pilot.app.clear_notifications()
    for field in pilot.app.query(Input):
        field.cursor_blink = False
    await pilot.pause()


async def _start(pilot) -> None:
    await settle(pilot, pilot.app)


async def _run(pilot) -> None:
    await settle(pilot, pilot.app)
    pilot.app.action_run()
    await settle(pilot, pilot.app)
    await pilot.press("e")  # every row at once: the replay is not on a timer here
    await _quiet(pilot)


async def _speedup(pilot) -> None:
    await settle(pilot, pilot.app)
    await pilot.app.action_show_view("speedup")
    await settle(pilot, pilot.app)
    await drawn_at_final_size(pilot)
    await _quiet(pilot)


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
    await settle(pilot, pilot.app)
    await pilot.app.action_start_sweep()
    await settle(pilot, pilot.app, rounds=5)
    await _quiet(pilot)


async def _analysis(pilot) -> None:
    await _sweep(pilot)
    await pilot.app.action_show_view("analysis")
    await _quiet(pilot)


async def _plots(pilot) -> None:
    await _sweep(pilot)
    await pilot.app.action_show_view("plots")
    await settle(pilot, pilot.app)
    await pilot.pause(0.6)
    await _quiet(pilot)


async def _invalid(pilot) -> None:
    await settle(pilot, pilot.app)
    await type_into(pilot, pilot.app, "acceptance_rate", "1.5")
    await _quiet(pilot)


async def _help(pilot) -> None:
    await settle(pilot, pilot.app)
    pilot.app.action_help()
    await _quiet(pilot)


async def _regime(pilot) -> None:
    """The form on a roofline at batch 8, then the regime map of that scenario."""
    from engine.presets import load_preset
    from spectui.widgets.param_form import ParamForm

    await settle(pilot, pilot.app)
    config = load_preset("tiny").config.replace(cost_model="roofline", batch_size=8)
    pilot.app.query_one(ParamForm).load_config(config)
    await settle(pilot, pilot.app)
    await pilot.app.action_show_view("regime")
    await settle(pilot, pilot.app, rounds=5)
    await pilot.pause(0.1)  # the map laid out (and scrolled home) before the screenshot
    await _quiet(pilot)


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
    await _quiet(pilot)


VIEWS = {
    "start": _start,
    "run": _run,
    "speedup": _speedup,
    "sweep": _sweep,
    "analysis": _analysis,
    "plots": _plots,
    "invalid_form": _invalid,
    "help": _help,
    "regime": _regime,
    "arena": _arena,
}


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("view", list(VIEWS))
def test_view_snapshot(snap_compare, view, size):
    app = create_app("tiny", replay_autoplay=False)
    assert snap_compare(app, terminal_size=size, run_before=VIEWS[view])
