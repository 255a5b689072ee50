"""Save SVG screenshots of the main views for the README (the app renders them itself).

Run: ``.venv/bin/python -m tests.app.screenshots [OUT_DIR]`` (default docs/screenshots).
The default preset drives the Run and Speedup views; the original's 576-configuration sweep
fills the Sweep, Analysis and Plots views.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path

from tests.app.helpers import settle

SIZE = (120, 40)


async def _shoot(out: Path) -> list[Path]:
    from spectui.app import create_app
    from spectui.widgets.heatmap import Heatmap

    saved: list[Path] = []
    app = create_app("default")
    async with app.run_test(size=SIZE) as pilot:

        async def save(name: str) -> None:
            await settle(pilot, app)
            app.clear_notifications()
            await pilot.pause()
            saved.append(Path(app.save_screenshot(f"{name}.svg", str(out))))

        await settle(pilot, app)
        app.action_run()
        await settle(pilot, app)
        await pilot.pause(1.5)  # a few rows streamed, as a person sees it
        app.query_one("#cycle-table").run_to_end()
        await save("run")
        await app.action_show_view("speedup")
        await settle(pilot, app)
        await pilot.press("c")  # overlay the other two draft models
        await save("speedup")
        app.apply_preset("seed-576")
        await app.action_start_sweep()
        await settle(pilot, app, rounds=8)
        app.query_one(Heatmap).move_cursor(row=3, column=1)
        await save("sweep")
        await app.action_show_view("analysis")
        await save("analysis")
        await app.action_show_view("plots")
        await pilot.pause(0.6)
        await save("plots")
        app.action_help()
        await save("help")
        await pilot.press("escape")
        await settle(pilot, app)
        # A serving scenario: Llama-3.1-8B on an H100 with a Llama-3.2-1B draft, batch 64.
        from spectui.widgets.param_form import ParamForm

        form = app.query_one(ParamForm)
        config, _ = form.current_config()
        assert config is not None
        form.load_config(config.replace(cost_model="roofline", batch_size=64, prompt_len=8192))
        await settle(pilot, app)
        await app.action_show_view("run")
        await save("form-roofline")
        await app.action_show_view("regime")
        await settle(pilot, app, rounds=8)
        await save("regime")
        # The policy arena on bursty acceptance: the leaderboard and hf_heuristic's trace.
        app.apply_preset("bursty-code-chat")
        await settle(pilot, app)
        await app.action_start_arena()
        view = app._arena_view()
        for _ in range(200):  # until the arena has ended and its board is sorted
            await pilot.pause(0.05)
            if view is not None and view.result is not None and not app._arena_running():
                break
        await settle(pilot, app)
        await pilot.press("down")  # hf_heuristic, second best
        await settle(pilot, app, rounds=4)
        await save("arena")
        # A token tree: EAGLE's default shape on the roofline, and the best size by batch.
        form2 = app.query_one(ParamForm)
        config, _ = form2.current_config()
        assert config is not None
        form2.load_config(config.replace(**{"shape.name": "tree", "shape.tree": "sequoia:16,4"}))
        await settle(pilot, app)
        await app.action_show_view("trees")
        await settle(pilot, app, rounds=10)
        await save("tree")
        # Calibration from a real vLLM log (the offline example's summaries): the fit pane.
        app.action_calibrate()
        await settle(pilot, app)
        screen = app.screen
        screen.load_file("tests/fixtures/logs/vllm_offline_spec_decode.txt")  # from the repo
        await settle(pilot, app, rounds=6)
        screen.query_one("#cal-windows").focus()
        await pilot.press("2")
        await settle(pilot, app)
        await save("calibrate")
    return saved


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/screenshots").resolve()
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["SPECTUI_PRESET_DIR"] = str(Path(tmp) / "presets")
        os.environ["SPECTUI_RESULTS_DIR"] = str(Path(tmp) / "results")
        os.environ["SPECTUI_HIDE_TIMINGS"] = "1"
        for path in asyncio.run(_shoot(out)):
            print(path)


if __name__ == "__main__":
    main()
