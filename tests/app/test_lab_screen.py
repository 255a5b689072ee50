"""The Lab screen in a small host app: a context's bars with min(p, q) marked, the rules'
acceptance and the residual; left and right step through the contexts; f sends the implied
rates to the form; a scenario on another model is offered the distribution model."""

from __future__ import annotations

import pytest
from textual.app import App

from engine.core.config import SpecConfig
from spectui.screens.lab import LabScreen
from tests.app.helpers import APP_CSS, until
from tests.app.screen import screen_text

SMALL = {
    "draft_model": "distribution",
    "acceptance.vocab": 300,
    "acceptance.family_size": 3,
    "acceptance.mismatch": "noise",
    "acceptance.mismatch_size": 1.0,
    "k": 3,
}


class LabHost(App[None]):
    CSS_PATH = APP_CSS

    def __init__(self, config) -> None:
        super().__init__()
        self.config = config
        self.sent = []

    def on_mount(self) -> None:
        self.push_screen(LabScreen(self.config), self.sent.append)


async def test_a_context_its_rules_and_the_rates_sent_to_the_form():
    app = LabHost(SpecConfig().replace(**SMALL))
    async with app.run_test(size=(100, 40)) as pilot:
        await until(pilot, lambda: "acceptance here:" in screen_text(app))
        text = screen_text(app)
        assert "context 1 of 6 (easy)" in text and "min(p, q)" in text
        for rule in ("rejection", "one_hot", "exact_match", "greedy", "typical"):
            assert f"{rule} " in text
        assert "residual norm(max(0, p - q)): token" in text
        await pilot.press("left")  # wraps to the last context, a hard one
        await until(pilot, lambda: "context 6 of 6 (hard)" in screen_text(app))
        await pilot.press("f")
        await until(pilot, lambda: app.sent)
    sent = app.sent[0]
    assert sent.draft_model == "per_position" and len(sent.rates.split(",")) == 3
    config = SpecConfig().replace(**SMALL)
    from engine.core.parts import ACCEPTANCE

    implied = ACCEPTANCE.of(config).position_probs(config, 3)
    assert [float(r) for r in sent.rates.split(",")] == [float(f"{r:.6g}") for r in implied]


async def test_another_model_is_offered_the_distribution_model():
    app = LabHost(SpecConfig())
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: "needs the distribution" in screen_text(app))
        await pilot.press("d")
        await until(pilot, lambda: app.sent)
    assert app.sent[0].draft_model == "distribution"


async def test_r_sends_the_acceptance_by_rank_to_the_trees_rank_p():
    app = LabHost(SpecConfig().replace(**SMALL, **{"acceptance.accept_rule": "one_hot"}))
    async with app.run_test(size=(100, 40)) as pilot:
        await until(pilot, lambda: "by rank at a tree node of 4 candidates:" in screen_text(app))
        await pilot.press("r")
        await until(pilot, lambda: app.sent)
    sent = app.sent[0]
    from engine.acceptance.distribution import rank_rates

    config = SpecConfig().replace(**SMALL, **{"acceptance.accept_rule": "one_hot"})
    ranks = rank_rates(config, 4)["one_hot"]
    assert [float(p) for p in sent.rank_probs.split(",")] == [
        pytest.approx(p, abs=1e-6) for p in ranks
    ]
    assert (
        sent.draft_model == "distribution"
        and sum(float(p) for p in sent.rank_probs.split(",")) <= 1
    )
