"""Issue #41: the form marks a placement that cannot exist at its field, as the command line
refuses it (engine.cost.placement), and the app keeps running: a valid value clears it."""

from __future__ import annotations

from textual.widgets import Static

from tests.app.helpers import set_field
from tests.app.hosts_form import FormHost, caught_up
from tests.app.test_form_cost import choose


def error_line(app, field_id: str) -> str:
    """The error line under a field, as shown ("" when hidden or absent)."""
    found = app.query(f"#error-{field_id}")
    if not found or not found.first(Static).display:
        return ""
    return str(found.first(Static).content)


async def test_weights_that_do_not_fit_and_an_odd_tp_are_marked_at_their_fields():
    app = FormHost("tiny")
    async with app.run_test(size=(80, 24)) as pilot:
        await caught_up(pilot, app)
        await choose(pilot, app, "cost.model", "roofline")
        await choose(pilot, app, "cost.gpu", "a100-80gb")
        assert app.config is not None and error_line(app, "target") == ""
        await choose(pilot, app, "cost.target", "llama-3.1-405b")
        assert app.config is None  # the form is invalid: nothing runs on it
        assert "llama-3.1-405b and llama-3.2-1b take 814.2 GB a GPU of a100-80gb's 78.0 GB " in (
            error_line(app, "target")
        )
        assert "the weights do not fit" in error_line(app, "target")
        # Over 16 GPUs they fit: the mark goes, the configuration is the form's again.
        await set_field(pilot, app, "tp", "16")
        await caught_up(pilot, app)
        assert error_line(app, "target") == ""
        assert app.config is not None
        assert (app.config.gpu, app.config.target, app.config.tp) == (
            "a100-80gb",
            "llama-3.1-405b",
            16,
        )
        # 3 GPUs do not split the target's 128 attention heads: tp is marked.
        await set_field(pilot, app, "tp", "3")
        await caught_up(pilot, app)
        assert app.config is None
        assert "3 does not divide llama-3.1-405b's 128 attention heads; choose 1, 2, 4, 8" in (
            error_line(app, "tp")
        )
        assert app.is_running
