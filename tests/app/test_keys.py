"""Keyboard-only use over SSH: a field's help on F1, copy (F4), pin and compare (F9)."""

from __future__ import annotations

import pytest

from engine.presets import load_preset
from spectui.app import create_app
from spectui.screens.help import HelpScreen
from tests.app.helpers import settle
from tests.app.screen import screen_lines, screen_text

# (field key, its label, words of its help, its unit or None, its allowed values), as a
# person reads them in the tooltip today.
FIELDS = (
    ("cost.eta_kv", "η kv", "bandwidth efficiency reading the KV cache", None, "(0, 1]"),
    ("cost.t0_us", "t0 us", "fixed overhead of every pass", "us", "[0, 1e6]"),
    ("cost.bytes_per_kv", "kv bytes", "bytes per KV-cache element", "bytes", "(0, 8]"),
    ("cost.verify_token_us", "verify/tk", "verify cost per drafted token", "us", "[0, 1e9]"),
    ("cost.draft_fixed_us", "draft fix", "fixed cost of a cycle that drafts", "us", "[0, 1e9]"),
    ("shape.rank_probs", "rank p", "the rank-c child is accepted", None, "numbers in [0, 1]"),
    ("shape.tree", "tree", "eagle[:total,depth,top_k]", None, "sequoia:budget,depth"),
    ("draft_cost_us", "draft/tk", "per draft token", "us", "[0, 1e9]"),
)


@pytest.mark.parametrize("cost", ["linear", "roofline"])
async def test_f1_on_a_focused_field_shows_its_help_unit_and_range(cost):
    base = load_preset("tiny").config.replace(**{"cost.model": cost, "shape.name": "tree"})
    app = create_app("tiny")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        app.form.load_config(base)
        await settle(pilot, app)
        shown = [f for f in FIELDS if f[0] in app.form.visible_fields()]
        assert len(shown) == 5
        for key, label, words, unit, allowed in shown:
            app.form.focus_field(key)
            await pilot.pause()
            await pilot.press("f1")
            await pilot.pause()
            assert isinstance(app.screen, HelpScreen)
            text = " ".join(line.strip() for line in screen_lines(app))
            assert f"Field {label}: {key}" in text, text
            assert words in text, text
            assert f"allowed: a number in {allowed}" in text or allowed in text, text
            if unit is not None:
                assert f"unit: {unit}" in text, text
            else:
                assert "unit:" not in text.split("Keys")[0], text
            await pilot.press("escape")
            await pilot.pause()
            assert not isinstance(app.screen, HelpScreen)
        # Outside the form, F1 is the general help: no field's section first.
        app.query_one("#cycle-table").focus()
        await pilot.press("f1")
        await pilot.pause()
        assert "Field " not in screen_text(app)
        assert "speculative decoding, cycle by cycle" in screen_text(app)


async def test_form_labels_stay_whole_at_80x24_and_draft_cost_says_per_token():
    """The form's draft cost is per token, the Exact panel's draft time per cycle: the
    labels differ, and every label of the linear form is whole on an 80x24 screen."""
    app = create_app("tiny")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        app.form.focus_field("k")
        await settle(pilot, app)
        lines = screen_lines(app)
        side = [line[:26] for line in lines]
        assert any(" draft/tk " in line for line in side), "\n".join(side)
        assert not any("draft us" in line for line in side[:12]), "\n".join(side)
        for label in ("accept", "verify us", "sequences", "tok/seq", "seed"):
            assert any(f" {label} " in line for line in side), (label, "\n".join(side))
