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
    from tests.app.helpers import settle

    app = create_app("tiny")
    async with app.run_test(size=(80, 24)) as pilot:
        app.apply_preset("default")  # possibly before the form has mounted
        await pilot.press("f2", "f5", "f6")  # focus the form, run, sweep
        await settle(pilot, app, rounds=6)
        default = load_preset("default").config
        assert app.config == default
        assert app.form.current_config() == (default, {})
        assert app.query_one(RunView).result is not None
        assert app.query_one(RunView).result.config == default
        sweep = app.query_one(SweepView).finished
        assert sweep is not None and sweep.total == 24  # still the tiny sweep, not the default
