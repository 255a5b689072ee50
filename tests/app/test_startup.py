"""Start-up stays light: the heavy modules load after the first screen, not on import."""

from __future__ import annotations

import subprocess
import sys

from engine.presets import load_preset
from spectui.widgets.run_view import RunView

HEAVY = ("numpy", "pandas", "plotext", "matplotlib", "textual_plotext")


def test_importing_the_app_leaves_heavy_modules_for_later():
    code = (
        "import sys, spectui.app, spectui.__main__\n"
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


async def test_keys_and_a_preset_right_at_start_are_not_lost(isolated_dirs):
    """The form and the sweep view mount after the first frame; what comes before counts."""
    from spectui.app import create_app
    from spectui.widgets.sweep_view import SweepView
    from tests.app.helpers import until

    app = create_app("tiny")
    default = load_preset("default").config
    async with app.run_test(size=(80, 24)) as pilot:
        app.apply_preset("default")  # possibly before the form has mounted
        assert app.config == default  # at once: a run started now runs it
        app.action_focus_form()
        await until(pilot, lambda: app.form.ready and app.focused is not None)
        await pilot.pause()
        assert app.focused is app.query_one("#k")  # F2's field, not the form's default
        await pilot.press("f5", "f6")  # run, sweep
        run = app.query_one(RunView)
        await until(pilot, lambda: run.result is not None and not run.busy)
        await until(pilot, lambda: any(v.finished is not None for v in app.query(SweepView)))
        assert app.config == default
        assert app.form.current_config() == (default, {})
        assert app.query_one(RunView).result is not None
        assert app.query_one(RunView).result.config == default
        sweep = app.query_one(SweepView).finished
        assert sweep is not None and sweep.total == 24  # still the tiny sweep, not the default


async def test_actions_during_the_sweep_view_mount_wait_for_it(isolated_dirs):
    """F6 or a sweep preset that arrives while the Sweep view mounts acts on the mounted view."""
    from spectui.app import create_app
    from spectui.widgets.sweep_view import SweepView
    from tests.app.helpers import until

    app = create_app("default")
    async with app.run_test(size=(80, 24)) as pilot:
        # Both before the sweep view has mounted, or while it mounts.
        app.apply_preset("tiny")
        await app.action_start_sweep()
        await until(pilot, lambda: any(v.finished is not None for v in app.query(SweepView)))
        view = app.query_one(SweepView)
        assert view.finished is not None and view.finished.total == 24
        assert view._selected().name == "tiny"
