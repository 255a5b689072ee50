"""The parameter form: validation as typed, only the model's parameters, exact figures.

Tests of the form alone run it in :class:`tests.app.hosts_form.FormHost` (the side panel
at its place in the app); those where keys or the form drive the app boot the whole app.
"""

from __future__ import annotations

from textual.widgets import Select, Static

from engine.presets import load_preset
from engine.simulate.exact import exact_metrics
from spectui.app import create_app
from spectui.widgets.exact_panel import ExactPanel
from spectui.widgets.run_view import RunView
from tests.app.helpers import notifications, type_into, until
from tests.app.hosts_form import FormHost, caught_up
from tests.app.screen import row_with, screen_lines, screen_text, style_of
from tests.app.test_form_cost import shown


def _plain(widget) -> str:
    from io import StringIO

    from rich.console import Console

    console = Console(width=60, record=True, file=StringIO())
    console.print(widget.content)
    return console.export_text()


async def test_a_valid_edit_recomputes_exact_figures_and_an_invalid_one_is_refused():
    """In the app: an edit reaches the app's configuration and the Exact panel; an invalid
    value is marked with its reason, and F5 refused until it is fixed."""
    app = create_app("tiny")
    expected = load_preset("tiny").config.replace(k=6)
    figures = exact_metrics(expected)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.form.ready)
        await type_into(pilot, app, "k", "6")
        panel = app.query_one(ExactPanel)
        speedup = f"{figures['speedup_exact']:.3f}"
        await until(pilot, lambda: app.config == expected and speedup in _plain(panel))
        assert app.config == expected
        shown = _plain(panel)
        assert speedup in shown
        assert f"{figures['tokens_per_cycle_exact']:.3f}" in shown
        # An invalid value: marked with its reason, and F5 refused.
        field = await type_into(pilot, app, "acceptance_rate", "1.5")
        assert not field.is_valid
        assert field.has_class("-invalid")
        error = app.query_one("#error-acceptance_rate", Static)
        assert error.display
        assert "1.5" in str(error.content) and "[0, 1]" in str(error.content)
        await until(pilot, lambda: app.config is None)
        assert "form invalid" in _plain(app.query_one(ExactPanel))
        await pilot.press("f5")
        await until(pilot, lambda: any("Cannot run" in m for m in notifications(app)))
        await app.workers.wait_for_complete()
        await pilot.pause()
        run = app.query_one(RunView)
        assert run.result is None and not run.busy  # no run started (nor failed)
        assert not any("Monte Carlo run failed" in m for m in notifications(app))
        # Fixing the value makes the form runnable again.
        await type_into(pilot, app, "acceptance_rate", "0.7")
        await until(pilot, lambda: app.config is not None)
        assert app.config.acceptance_rate == 0.7
        assert not app.query_one("#error-acceptance_rate", Static).display
        # Wrong again: the same error line comes back (mounted once, on the first error).
        await type_into(pilot, app, "acceptance_rate", "-1")
        assert len(app.query("#error-acceptance_rate")) == 1
        assert app.query_one("#error-acceptance_rate", Static).display
        assert "-1" in str(app.query_one("#error-acceptance_rate", Static).content)


async def test_text_that_is_not_a_number_is_explained():
    app = FormHost("tiny")
    async with app.run_test(size=(120, 40)) as pilot:
        await caught_up(pilot, app)
        await type_into(pilot, app, "k", "abc")
        assert "not an integer" in str(app.query_one("#error-k", Static).content)
        await type_into(pilot, app, "k", "0")
        assert "[1, 1024]" in str(app.query_one("#error-k", Static).content)
        await caught_up(pilot, app)
        assert app.config is None


async def test_only_the_chosen_models_parameters_are_shown_and_a_hidden_error_comes_back():
    """A model's parameters show only while it is chosen; an invalid value in a field the
    model does not read does not block the form, and keeps its reason for when it shows
    again."""
    app = FormHost("tiny")
    async with app.run_test(size=(80, 24)) as pilot:
        await caught_up(pilot, app)
        assert shown(app, "acceptance_rate")
        assert not shown(app, "decay_base")
        select = app.query_one("#draft_model", Select)
        select.value = "position_decay"
        await caught_up(pilot, app)
        assert not shown(app, "acceptance_rate")
        assert shown(app, "decay_base")
        assert shown(app, "decay_factor")
        assert not shown(app, "entropy_high")
        assert app.config is not None and app.config.draft_model == "position_decay"
        select.value = "entropy_aware"
        await caught_up(pilot, app)
        assert shown(app, "entropy_frac")
        assert app.config is not None and app.config.draft_model == "entropy_aware"
        # An invalid value in a field the model does not read does not block the form...
        select.value = "fixed"
        await caught_up(pilot, app)
        await type_into(pilot, app, "acceptance_rate", "7")
        await caught_up(pilot, app)
        assert app.config is None  # ...while it is shown, it does
        assert "✗ 7" in screen_text(app)
        select.value = "position_decay"
        await caught_up(pilot, app)
        assert not shown(app, "acceptance_rate")
        assert app.config is not None and app.config.draft_model == "position_decay"
        assert "✗ 7" not in screen_text(app)
        # Shown again, it keeps its reason.
        select.value = "fixed"
        await caught_up(pilot, app)
        error = app.query_one("#error-acceptance_rate", Static)
        assert error.display and "7" in str(error.content)
        text = screen_text(app)
        assert "✗accept" in text and "▌✗ 7" in text
        assert app.config is None and "invalid: accept" in text


async def test_form_takes_focus_once_mounted_and_its_border_follows_focus():
    app = create_app("tiny")
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.form.ready and app.focused is not None)
        await pilot.pause()
        assert app.focused is app.query_one("#draft_model", Select)
        focused_border = app.form.styles.border_top
        await pilot.press("f3")  # focus the current view: the form's border dims
        await until(pilot, lambda: app.form not in app.focused.ancestors_with_self)
        assert app.form.styles.border_top != focused_border
        await pilot.press("f2")
        await until(pilot, lambda: app.focused is app.query_one("#k"))
        assert app.form.styles.border_top == focused_border


async def test_preset_loaded_before_the_form_mounts_is_shown():
    from textual.app import App

    from spectui.widgets.param_form import ParamForm

    first, second = load_preset("default").config, load_preset("tiny").config
    assert first != second
    form = ParamForm(first, id="form")
    form.load_config(second)  # not mounted yet: remembered, not lost

    class Host(App[None]):
        def compose(self):
            yield form

    async with Host().run_test(size=(60, 30)) as pilot:
        await pilot.pause()
        config, errors = form.current_config()
        assert errors == {} and config == second


async def test_focused_and_invalid_fields_are_marked_on_screen_without_colour():
    """Focus and errors show by glyph and text attributes, which survive 16 colours and
    NO_COLOR (a background 235 against 234 does not)."""
    app = FormHost("tiny")
    async with app.run_test(size=(80, 24)) as pilot:
        await caught_up(pilot, app)
        app.form.focus_field("k")  # as F2 does
        await until(pilot, lambda: "▶K " in screen_text(app))
        assert style_of(app, "▶K").reverse
        assert " accept " in screen_text(app)  # not focused: no marker, plain
        assert not style_of(app, "accept").reverse
        await type_into(pilot, app, "k", "x")
        await pilot.press("tab")  # on to the acceptance rate: K stays marked invalid
        await until(pilot, lambda: "▶accept" in screen_text(app))
        await caught_up(pilot, app)
        lines = screen_lines(app)
        k_row = row_with(app, "✗K ")
        assert style_of(app, "✗K").bold and not style_of(app, "✗K").reverse
        assert style_of(app, "✗K").bgcolor is not None  # a block, not just a tint
        assert "▌✗ 'x' is not an" in lines[k_row + 1]  # the reason, behind a bar
        assert style_of(app, "✗ 'x'").bold
        assert "▶accept" in screen_text(app) and style_of(app, "▶accept").reverse
        assert "▌✗ invalid: K" in screen_text(app)


async def test_labels_and_model_names_are_whole_at_80x24():
    from spectui.widgets.param_form import LABELS

    app = FormHost("tiny")
    async with app.run_test(size=(80, 24)) as pilot:
        await caught_up(pilot, app)
        select = app.query_one("#draft_model", Select)
        select.value = "position_decay"
        await caught_up(pilot, app)
        text = screen_text(app)
        assert "position_decay" in text  # the chosen model, not "position_d"
        assert f" {LABELS['decay_base']} " in text and f" {LABELS['decay_factor']} " in text
        assert LABELS["decay_base"] != LABELS["decay_factor"]
        select.focus()
        await until(pilot, lambda: app.form.focused_field == "draft_model")
        await pilot.pause()
        assert style_of(app, "position_decay").reverse  # focused: shows in 16 colours too
        await pilot.press("enter")  # open the list: every name on one line
        await until(pilot, lambda: "│entropy_aware" in screen_text(app))
        text = screen_text(app)
        for name in ("│fixed", "│position_decay", "│entropy_aware"):
            assert name in text, text
        await pilot.press("escape")
        select.value = "entropy_aware"
        await caught_up(pilot, app)  # its fields' rows are built when first shown
        await type_into(pilot, app, "entropy_high", "2")  # errors make the form scroll
        await type_into(pilot, app, "entropy_low", "2")
        await caught_up(pilot, app)
        assert app.form.max_scroll_y > 0
        assert "entropy_aware" in screen_text(app)
        for name in ("entropy_high", "entropy_low", "entropy_frac"):
            app.form.scroll_to_widget(app.query_one(f"#{name}"), animate=False)
            await until(pilot, lambda name=name: LABELS[name] in screen_text(app))
    from spectui.widgets.param_form import LABEL_CHARS  # a longer label would wrap

    assert all(len(label) <= LABEL_CHARS for label in LABELS.values())
