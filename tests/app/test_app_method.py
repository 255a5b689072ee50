"""The form's method and dataset fields in the real app (issue #42): above the form at
80x24, each on its own line; EAGLE-3 fills the form's acceptance fields with the catalog's
fit and the Exact panel says its rows and sources; an edit of the acceptance afterwards
wins, and the panel says the fit is no longer used."""

from __future__ import annotations

from textual.widgets import Select

from spectui.app import create_app
from spectui.widgets.exact_panel import ExactPanel
from spectui.widgets.method_fields import METHOD_ID
from spectui.widgets.param_form import IDS
from tests.app.helpers import set_field, until
from tests.app.screen import screen_text

# The catalog's six rows of vLLM issue #20780 (EAGLE-3 on Llama-3.1-8B-Instruct, the
# ``tiny`` preset's target), as test_form_method.py reads them.
ROWS_20780 = "6 rows of vllm-20780-eagle3"
SOURCE_20780 = "vllm-project/vllm issue #20780"


def _line(app) -> str:
    return " ".join(str(app.query_one(ExactPanel).provenance or "").split())


async def _side_text(pilot, app) -> str:
    """The side panel's text on screen, its box of exact figures scrolled to its end (the
    provenance line is under the figures), its lines joined as a person reads them."""
    app.query_one("#exact-box").scroll_end(animate=False)
    await pilot.pause()
    side = [line[:25].strip(" │▕▄▀█") for line in screen_text(app).splitlines()]
    return " ".join(" ".join(side).split())


async def test_eagle3_fills_the_acceptance_and_an_edit_afterwards_wins():
    app = create_app("tiny")
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.form.ready and app.config is not None)
        lines = screen_text(app).splitlines()
        # At 80x24 the two fields sit above the form, one line each, the prompts whole.
        assert lines[1].startswith("method  none ")
        assert lines[2].startswith("dataset any ")
        assert "Configuration" in lines[3]
        # The form keeps five fields in sight (the Exact panel, figures and provenance line,
        # is at most 13 rows and scrolls): model, K, accept, draft/tk, verify us.
        labels = ["model", "K", "accept", "draft/tk", "verify us"]
        assert [
            line[2:].startswith(f"{label} ") for line, label in zip(lines[4:9], labels, strict=True)
        ] == [True] * 5, lines[4:9]
        assert lines[9].startswith("╰")
        before = app.config
        assert before.draft_model == "fixed" and before.get("acceptance_rate") == 0.8
        assert _line(app).startswith("acceptance: fixed (acceptance 0.8), as the form says")
        app.query_one(f"#{METHOD_ID}", Select).value = "EAGLE-3"
        await until(pilot, lambda: app.config is not None and app.config.draft_model != "fixed")
        # The form's acceptance fields hold the fit, and the panel says where it is from.
        fitted = app.provenance.fitted
        assert fitted and all(app.config.get(k) == v for k, v in fitted.items())
        assert app.form.current_config()[0] == app.config
        await until(pilot, lambda: ROWS_20780 in _line(app))
        assert SOURCE_20780 in _line(app)
        assert "EAGLE-3 from the catalog" in _line(app)
        shown = await _side_text(pilot, app)
        assert "vllm-project/vllm issue #20780" in shown  # on screen, not only in the panel
        # Edit the acceptance (a field the fitted model reads): the edit wins.
        edited = next(k for k in fitted if k != "draft_model")
        await set_field(pilot, app, IDS[edited], "0.5")
        await until(pilot, lambda: app.config is not None and app.config.get(edited) == 0.5)
        await until(pilot, lambda: "as edited" in _line(app))
        assert _line(app).endswith("as edited: the catalog's fit for EAGLE-3 is no longer used")
        assert ROWS_20780 not in _line(app)
        shown = await _side_text(pilot, app)
        assert "as edited: the catalog's fit for EAGLE-3 is no longer used" in shown
