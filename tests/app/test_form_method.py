"""The form's method and dataset fields (issue #42, spectui.widgets.method_fields): choosing
a method fills the acceptance fields from the catalog's nearest rows' fit and the Exact panel
says under its figures which rows, their sources and how near; an explicit edit of an
acceptance field afterwards wins and the line says so.

A small host app: the form on the ``tiny`` preset (Llama-3.1-8B, the default target), the
method fields and the Exact panel, wired as their host must (a chosen method loads the
fitted configuration into the form; every configuration the form posts is shown with the
provenance line).
"""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.widgets import Select

from engine.acceptance.catalog import METHODS
from engine.presets import load_preset
from spectui.messages import ConfigChanged
from spectui.widgets.exact_panel import ExactPanel, exact_figures
from spectui.widgets.method_fields import DATASET_ID, METHOD_ID, CatalogProvenance, MethodFields
from spectui.widgets.param_form import IDS, ParamForm
from tests.app.helpers import set_field, until
from tests.app.screen import screen_text

PROVENANCE_20780 = (
    "to EAGLE-3 from the catalog, same target and head: 6 rows of vllm-20780-eagle3 "
    "(meta-llama/Llama-3.1-8B-Instruct, yuhuili/EAGLE3-LLaMA3.1-Instruct-8B, MT-Bench, "
    "T not stated, chain K 2..7; vllm-project/vllm issue #20780"
)


class MethodHost(App[None]):
    def __init__(self) -> None:
        super().__init__()
        self.form = ParamForm(load_preset("tiny").config, id="form")
        self.provenance = CatalogProvenance()
        self.config = None

    def compose(self) -> ComposeResult:
        yield MethodFields()
        yield self.form
        yield ExactPanel("computing…", id="exact")

    def on_method_fields_chosen(self, message: MethodFields.Chosen) -> None:
        config, _ = self.form.current_config()
        if config is None:
            return
        fitted = self.provenance.choose(message.method, message.dataset, config)
        if fitted is not None:
            self.form.load_config(fitted)
        else:
            self._show(config)

    def on_config_changed(self, message: ConfigChanged) -> None:
        self.config = message.config
        if message.config is not None:
            self._show(message.config)

    def _show(self, config) -> None:
        panel = self.query_one(ExactPanel)
        panel.set_provenance(self.provenance.line(config))
        panel.show_figures(config, exact_figures(config))


def provenance_text(app) -> str:
    """The line the Exact panel shows under its figures, on one line."""
    return " ".join(str(app.query_one(ExactPanel).provenance or "").split())


async def test_a_method_fills_the_acceptance_and_an_edit_afterwards_wins():
    app = MethodHost()
    async with app.run_test(size=(100, 60)) as pilot:
        await until(pilot, lambda: app.config is not None)
        method = app.query_one(f"#{METHOD_ID}", Select)
        # The catalog's methods, read from it, are the choices.
        assert [option[0] for option in method._options[1:]] == [str(m) for m in METHODS]
        method.value = "EAGLE-3"
        await until(pilot, lambda: app.config is not None and app.config.draft_model != "fixed")
        # The form holds the fit (vLLM #20780's M at K 2..7): its fields show it.
        fitted = app.config
        assert app.form.current_config()[0] == fitted
        shown = " ".join(screen_text(app).split())
        assert PROVENANCE_20780 in shown  # on the screen, under the figures
        assert "fitted within" in shown
        assert f"acceptance: {fitted.draft_model}" in " ".join(app.provenance.text.split())
        # An explicit edit of an acceptance field afterwards wins, and the line says so.
        edited_field = next(k for k in app.provenance.fitted if k != "draft_model")
        await set_field(pilot, app, IDS[edited_field], "0.5")
        await until(pilot, lambda: app.config is not None and app.config.get(edited_field) == 0.5)
        await until(pilot, lambda: "as edited" in provenance_text(app))
        shown = " ".join(screen_text(app).split())
        assert "as edited: the catalog's fit for EAGLE-3 is no longer used" in shown
        assert PROVENANCE_20780 not in shown


async def test_a_dataset_chooses_its_rows_and_none_leaves_the_form_alone(monkeypatch):
    # tests/engine/test_nearest.py's made-up catalog: no row of suffix decoding.
    import engine.acceptance.catalog
    from tests.engine.test_nearest import CATALOG_TEXT

    made_up = engine.acceptance.catalog.parse_catalog(CATALOG_TEXT, "made-up.toml")
    monkeypatch.setattr(engine.acceptance.catalog, "load_catalog", lambda path=None: made_up)
    app = MethodHost()
    async with app.run_test(size=(100, 60)) as pilot:
        await until(pilot, lambda: app.config is not None)
        before = app.config
        app.query_one(f"#{DATASET_ID}", Select).value = "HumanEval"  # no method: nothing
        await until(pilot, lambda: "as the form says" in provenance_text(app))
        assert app.config == before
        assert provenance_text(app) == (
            "acceptance: fixed (acceptance 0.8), as the form says (assumed unless measured: "
            "a method takes it from the catalog)"
        )
        app.query_one(f"#{METHOD_ID}", Select).value = "suffix decoding"  # no row of it
        await until(pilot, lambda: "nothing in the catalog" in provenance_text(app))
        assert app.config == before
        assert provenance_text(app) == (
            "acceptance: suffix decoding: nothing in the catalog (no row of this method); "
            "target llama-3.1-8b; assumed fixed (acceptance 0.8), as the form says"
        )
