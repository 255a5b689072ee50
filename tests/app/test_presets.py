"""Presets: load from the picker, malformed ones notified, save never overwrites silently.

(The help screen's keys, F1, ? and Escape, are tested in tests/app/test_keys.py.)"""

from __future__ import annotations

import pytest
from textual.widgets import Input, OptionList

from engine.presets import PresetError, load_preset
from spectui.app import create_app
from spectui.screens.presets import Confirm, PresetPicker, SavePreset
from tests.app.helpers import notifications, set_field, until
from tests.app.screen import row_with, screen_lines, screen_text


def test_create_app_rejects_missing_and_malformed_presets(tmp_path):
    with pytest.raises(PresetError, match="not found"):
        create_app("no-such-preset")
    bad = tmp_path / "bad.toml"
    bad.write_text("[config]\nk = 'five'\n")
    with pytest.raises(PresetError, match=r"config\.k"):
        create_app(str(bad))


async def _shown(pilot, app, screen_type) -> None:
    """Wait until a screen of ``screen_type`` is the app's screen, drawn."""
    await until(pilot, lambda: isinstance(app.screen, screen_type))
    await pilot.pause()


async def _gone(pilot, app, screen_type) -> None:
    await until(pilot, lambda: not isinstance(app.screen, screen_type))


async def test_load_preset_from_picker_and_a_malformed_one_is_named_by_file_and_key(
    isolated_dirs,
):
    """The command palette lists every action and preset. A malformed user preset is
    refused, naming its file and key, and the picker lists it as an error instead of
    crashing; enter on a preset in the picker loads it."""
    presets, _ = isolated_dirs
    presets.mkdir(parents=True)
    bad = presets / "broken.toml"
    bad.write_text("[config]\nacceptance_rate = 1.7\n")
    app = create_app("tiny")
    async with app.run_test(size=(120, 40)) as pilot:
        titles = [c.title for c in app.get_system_commands(app.screen)]
        for title in ("Help", "Run", "Sweep", "Presets", "Save preset", "Cancel sweep"):
            assert title in titles
        assert "Preset: seed-576" in titles and "View: Sweep" in titles
        await until(pilot, lambda: app.form.ready and app.config is not None)
        before = app.config
        assert app.apply_preset("broken") is False
        await pilot.pause()
        message = notifications(app)[-1]
        assert str(bad) in message and "config.acceptance_rate" in message
        assert app.config == before and app.is_running
        # The picker lists the malformed preset as an error instead of crashing.
        await pilot.press("ctrl+o")
        await _shown(pilot, app, PresetPicker)
        assert isinstance(app.screen, PresetPicker)
        options = app.screen.query_one(OptionList)
        ids = [options.get_option_at_index(i).id or "" for i in range(options.option_count)]
        assert any(i.startswith("error:") and "broken.toml" in i for i in ids)
        # Enter on a preset loads it.
        options.focus()
        options.highlighted = ids.index("cheap-draft")
        await pilot.press("enter")
        await _gone(pilot, app, PresetPicker)
        cheap = load_preset("cheap-draft").config
        await until(pilot, lambda: app.config == cheap)
        assert not isinstance(app.screen, PresetPicker)
        assert app.config == cheap
        assert app.query_one("#k", Input).value == str(cheap.k)


async def test_save_dialog_suggests_a_free_name_and_never_overwrites_silently(isolated_dirs):
    """The dialog suggests a name not taken; enter in the name field saves; a wrong name is
    explained, and the error goes once the name is fixed. Saving under a name taken asks
    before overwriting."""
    presets, _ = isolated_dirs
    app = create_app("tiny")  # fixed, K = 3
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.form.ready and app.config is not None)
        await pilot.press("ctrl+s")
        await _shown(pilot, app, SavePreset)
        assert app.screen.query_one("#save-name", Input).value == "fixed-k3"
        await pilot.press("enter")  # in the name field: saves at once
        await _gone(pilot, app, SavePreset)
        assert load_preset(str(presets / "fixed-k3.toml")).config == app.config
        await until(pilot, lambda: any("Saved preset" in m for m in notifications(app)))
        assert "Saved preset" in notifications(app)[-1]
        # The name is taken now: the next suggestion is free.
        await pilot.press("ctrl+s")
        await _shown(pilot, app, SavePreset)
        assert app.screen.query_one("#save-name", Input).value == "fixed-k3-2"
        # A wrong name (typed over the suggestion, which is selected) is explained.
        await pilot.press(*"-bad")
        await pilot.click("#save-ok")
        await until(pilot, lambda: "✗ name: use letters" in screen_text(app))
        assert isinstance(app.screen, SavePreset)
        assert "✗ name: use letters" in screen_text(app)
        await pilot.press("home", "delete")  # "bad": a valid name
        await until(pilot, lambda: "✗ name" not in screen_text(app))
        assert app.screen.query_one("#save-name", Input).value == "bad"
        assert "✗ name" not in screen_text(app)
        await pilot.press("enter")
        await until(pilot, (presets / "bad.toml").exists)
        await _gone(pilot, app, SavePreset)
        # A name typed over the suggestion (selected), and a description.
        path = presets / "mine.toml"
        await set_field(pilot, app, "k", "4")
        await until(pilot, lambda: app.config is not None and app.config.k == 4)
        await pilot.press("ctrl+s")
        await _shown(pilot, app, SavePreset)
        await pilot.press(*"mine")  # replaces the suggested name, which is selected
        await pilot.press("tab")
        await pilot.press(*"my run")
        await pilot.press("enter")
        await until(pilot, path.exists)
        saved = load_preset(str(path))
        assert saved.config == app.config and saved.description == "my run"
        # Same name again: a question, and "n" leaves the file alone.
        await set_field(pilot, app, "k", "6")
        await until(pilot, lambda: app.config is not None and app.config.k == 6)
        for answer, expected_k, said in (("n", 4, "Not saved: mine is taken."), ("y", 6, None)):
            await pilot.press("ctrl+s")
            await _shown(pilot, app, SavePreset)
            await pilot.press(*"mine")
            await pilot.press("enter")
            await _shown(pilot, app, Confirm)
            assert isinstance(app.screen, Confirm)
            count = len(notifications(app))
            await pilot.press(answer)
            await _gone(pilot, app, Confirm)
            await until(pilot, lambda count=count: len(notifications(app)) > count)  # done
            if said is not None:
                assert notifications(app)[-1] == said
            assert load_preset(str(path)).config.k == expected_k


async def test_error_toasts_are_framed_apart():
    """In 16 colours a toast's background is the screen's black: each needs its own frame,
    with no gap where the text beneath shows through."""
    app = create_app("tiny")
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await until(pilot, lambda: app.form.ready)
        await set_field(pilot, app, "k", "x")
        await until(pilot, lambda: app.config is None)
        await pilot.press("f5")
        await pilot.press("ctrl+s")
        await until(pilot, lambda: "┃ Cannot save: the form has invalid" in screen_text(app))
        await until(pilot, lambda: "┃ Cannot run: fix K first." in screen_text(app))
        lines = screen_lines(app)
        first = row_with(app, "┃ Cannot run: fix K first.")
        second = row_with(app, "┃ Cannot save: the form has invalid")
        assert "┏━━" in lines[first - 1] and "┗━━" in lines[first + 1]
        assert "┏━━" in lines[second - 1]
        assert second - 2 == first + 1  # frame under frame, no row between
