"""The Analysis view on the frames of every shipped sweep preset, finished or partial."""

from __future__ import annotations

import random

import pytest
from textual.app import App

from engine.presets import Preset, list_presets
from engine.sweep.sweep import run_sweep
from spectui.widgets.analysis_view import AnalysisView
from tests.app.helpers import notifications
from tests.app.screen import screen_text

SWEEP_PRESETS = [p for p in list_presets() if isinstance(p, Preset) and p.is_sweep]


class Host(App[None]):
    def compose(self):
        yield AnalysisView(id="analysis")


def small_frames(preset: Preset):
    """A few dozen of the preset's configurations (every draft model it has, a couple of
    sequences each), finished; then partial frames: its first third, and each model's rows
    alone (a sweep stopped early may hold one model only)."""
    configs = preset.sweep.lazy()
    picked = sorted(random.Random(0).sample(range(len(configs)), min(len(configs), 48)))
    frame = run_sweep([configs[i].replace(n_sequences=2) for i in picked])
    yield "finished", frame, False
    yield "first third", frame.iloc[: max(1, len(frame) // 3)].reset_index(drop=True), True
    for model in dict.fromkeys(frame["draft_model"]):
        rows = frame[frame["draft_model"] == model].reset_index(drop=True)
        yield f"only {model}", rows, True


async def shown(frame, partial: bool) -> tuple[str, list[str]]:
    app = Host()
    async with app.run_test(size=(100, 80)) as pilot:
        view = app.query_one(AnalysisView)
        view.set_frame(frame, partial)
        view.render_now()
        await pilot.pause()
        return screen_text(app), notifications(app)


def test_the_regime_study_sample_holds_every_model():
    """The frames below hold the model whose parameters have no column (beta_round's
    acceptance.beta_a stays at its default in regime-study): the case that crashed."""
    (preset,) = [p for p in SWEEP_PRESETS if p.name == "regime-study"]
    _, frame, _ = next(small_frames(preset))
    assert set(frame["draft_model"]) == {"fixed", "position_decay", "beta_round"}
    assert "acceptance.beta_a" not in frame.columns


@pytest.mark.parametrize("preset", SWEEP_PRESETS, ids=lambda p: p.name)
async def test_analysis_of_every_shipped_preset_shows_findings(preset):
    for what, frame, partial in small_frames(preset):
        text, notes = await shown(frame, partial)
        assert "analysis failed" not in text, (preset.name, what, text)
        assert not [n for n in notes if "Analysis failed" in n], (preset.name, what, notes)
        note = " (partial sweep)" if partial else ""
        assert f"Best configuration{note}: " in text, (preset.name, what, text)
        assert "Losing configurations" in text, (preset.name, what, text)


async def test_best_configuration_of_a_roofline_sweep_names_its_gpu_and_draft():
    (preset,) = [p for p in SWEEP_PRESETS if p.name == "regime-study"]
    frames = {what: frame for what, frame, _ in small_frames(preset)}
    text, _ = await shown(frames["only beta_round"], True)
    best = " ".join(text.split("Best configuration (partial sweep): ")[1].split())
    assert best.startswith("beta_round (rate ~ Beta(4, 1) per cycle), K=")
    assert "llama-3.1-8b verifies" in best and " drafts, batch " in best


async def test_losers_and_the_pareto_front_say_what_they_count():
    from tests.engine.test_plot_data import frame, row

    f = frame(
        row(k=1, speedup=0.9, overhead=0.1),
        row(k=2, speedup=1.5, overhead=0.3),
        row(k=3, speedup=1.2, overhead=0.5),  # slower and costlier than K=2: off the front
        # Two rows differing only in acceptance_rate, which position_decay ignores: one
        # configuration.
        row(k=1, draft_model="position_decay", acceptance_rate=0.5, speedup=0.8, overhead=0.9),
        row(k=1, draft_model="position_decay", acceptance_rate=0.9, speedup=0.8, overhead=0.9),
    )
    text, _ = await shown(f, False)
    flat = " ".join(text.split())
    assert (
        "(speedup < 1): 3 of 5 rows (2 of 4 once rows differing only in a parameter their "
        "model ignores are merged)"
    ) in flat
    assert "Pareto front: speedup vs compute overhead (2 configurations)" in flat
    assert "first 12" not in flat


REGIME_MINI = """description = "regime-study in small: roofline costs, a model without columns"

[config]
n_sequences = 5
tokens_per_seq = 64
"cost.model" = "roofline"
"cost.target" = "llama-3.1-8b"

[[grid]]
"cost.draft" = ["qwen2.5-0.5b", "eagle-llama-3.1-8b"]
draft_model = ["beta_round"]
k = [1, 2, 4]
"""


async def test_the_apps_sweep_of_a_regime_like_preset_is_analysed(isolated_dirs, monkeypatch):
    """Sweep view, F6, then 4 (issue 22: `analysis failed: KeyError: 'acceptance.beta_a'`)."""
    from spectui.app import create_app
    from tests.app.app_waits import booted
    from tests.app.helpers import until

    monkeypatch.setenv("SPECTUI_SWEEP_WORKERS", "0")  # in a thread: no processes to start
    presets, _ = isolated_dirs
    presets.mkdir(parents=True, exist_ok=True)
    (presets / "regime-mini.toml").write_text(REGIME_MINI)
    app = create_app("regime-mini")
    async with app.run_test(size=(80, 24)) as pilot:
        await booted(pilot, app)
        await pilot.press("f6")
        view = app.query_one("#sweep-view")
        await until(pilot, lambda: view.finished is not None and not view.running)
        await pilot.press("4")
        await until(pilot, lambda: "Best configuration" in screen_text(app))
        await pilot.pause()
        text = screen_text(app)
        assert "analysis failed" not in text
        assert not [n for n in notifications(app) if "Analysis failed" in n]
        assert "Best configuration: beta_round (rate ~ Beta(" in text, text
