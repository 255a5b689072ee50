"""ctrl+g in the app: the Acceptance screen from a focused form field; f fills the form."""

from __future__ import annotations

from textual.widgets import Input

from spectui.app import create_app
from spectui.screens.acceptance import AcceptanceScreen
from tests.app.helpers import until

# The catalog's first setup (as the screen lists them, highlighted when it opens): Spec-Bench's
# SAM-Decoding over EAGLE-2 on Vicuna-7B, one row, mean accepted tokens M = 4.61 at no stated
# K (the fit assumes the default K = 5). The fixed model's M at K 5 is (1 - a^6) / (1 - a):
# a = 0.8933 gives 4.61 (by hand: 0.8933^6 = 0.5081, 0.4919 / 0.1067 = 4.610).
FIRST_ROW = "specbench-3090-vicuna-7b-samd-eagle2"


def _mean_length(rate: float, k: int = 5) -> float:
    return (1 - rate ** (k + 1)) / (1 - rate)


async def test_ctrl_g_opens_the_catalog_from_a_form_field_and_f_fills_the_form():
    app = create_app("tiny")
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.form.ready)
        assert app.config.get("acceptance_rate") == 0.8  # the tiny preset's
        app.form.focus_field("acceptance_rate")  # an Input: ctrl+g must still reach the app
        await pilot.pause()
        await pilot.press("ctrl+g")
        await until(pilot, lambda: isinstance(app.screen, AcceptanceScreen))
        screen = app.screen
        await until(pilot, lambda: screen.current is not None and screen.current.key in screen.fits)
        assert [row.id for row in screen.current.rows] == [FIRST_ROW]
        values = screen.fits[screen.current.key].fit.values
        assert set(values) == {"draft_model", "acceptance_rate"}
        await pilot.press("f")
        await until(pilot, lambda: not isinstance(app.screen, AcceptanceScreen))
        await until(pilot, lambda: app.config is not None and app.config.acceptance_rate != 0.8)
        # Every value of the fit is in the form's configuration, and the field shows it.
        for key, value in values.items():
            assert app.config.get(key) == value, key
        assert app.config.draft_model == "fixed"
        rate = app.config.acceptance_rate
        assert abs(rate - 0.8933) < 5e-5
        assert abs(_mean_length(rate) - 4.61) < 1e-3  # the row's M, at the assumed K 5
        assert app.query_one("#acceptance_rate", Input).value.startswith("0.893")
