"""Presets: load from the picker, malformed ones notified, save never overwrites silently."""

from __future__ import annotations

import pytest
from textual.widgets import Input, OptionList

from engine.presets import PresetError, load_preset
from spectui.app import create_app
from spectui.screens.help import HelpScreen
from spectui.screens.presets import Confirm, PresetPicker, SavePreset
from tests.app.helpers import notifications, settle, type_into
from tests.app.screen import row_with, screen_lines, screen_text


def test_create_app_rejects_missing_and_malformed_presets(tmp_path):
    with pytest.raises(PresetError, match="not found"):
        create_app("no-such-preset")
    bad = tmp_path / "bad.toml"
    bad.write_text("[config]\nk = 'five'\n")
    with pytest.raises(PresetError, match=r"config\.k"):
        create_app(str(bad))


async def test_load_preset_from_picker():
    app = create_app("tiny")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("ctrl+o")
        await settle(pilot, app)
        assert isinstance(app.screen, PresetPicker)
        options = app.screen.query_one(OptionList)
        ids = [options.get_option_at_index(i).id for i in range(options.option_count)]
        options.focus()
        options.highlighted = ids.index("cheap-draft")
        await pilot.press("enter")
        await settle(pilot, app)
        assert not isinstance(app.screen, PresetPicker)
        assert app.config == load_preset("cheap-draft").config
        assert app.query_one("#k", Input).value == str(load_preset("cheap-draft").config.k)


async def test_malformed_preset_inside_the_app_names_file_and_key(isolated_dirs):
    presets, _ = isolated_dirs
    presets.mkdir(parents=True)
    bad = presets / "broken.toml"
    bad.write_text("[config]\nacceptance_rate = 1.7\n")
    app = create_app("tiny")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        before = app.config
        assert app.apply_preset("broken") is False
        await pilot.pause()
        message = notifications(app)[-1]
        assert str(bad) in message and "config.acceptance_rate" in message
        assert app.config == before and app.is_running
        # The picker lists the malformed preset as an error instead of crashing.
        await pilot.press("ctrl+o")
        await settle(pilot, app)
        options = app.screen.query_one(OptionList)
        ids = [options.get_option_at_index(i).id or "" for i in range(options.option_count)]
        assert any(i.startswith("error:") and "broken.toml" in i for i in ids)


async def test_save_preset_asks_before_overwriting(isolated_dirs):
    presets, _ = isolated_dirs
    app = create_app("tiny")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await type_into(pilot, app, "k", "4")
        await pilot.press("ctrl+s")
        await settle(pilot, app)
        assert isinstance(app.screen, SavePreset)
        for char in "mine":  # replaces the suggested name, which is selected
            await pilot.press(char)
        await pilot.press("tab")
        for char in "my run":
            await pilot.press(char)
        await pilot.press("enter")
        await settle(pilot, app)
        path = presets / "mine.toml"
        assert path.exists()
        saved = load_preset(str(path))
        assert saved.config == app.config and saved.description == "my run"
        # Same name again: a question, and "n" leaves the file alone.
        await type_into(pilot, app, "k", "6")
        for answer, expected_k in (("n", 4), ("y", 6)):
            await pilot.press("ctrl+s")
            await settle(pilot, app)
            for char in "mine":
                await pilot.press(char)
            await pilot.press("enter")
            await settle(pilot, app)
            assert isinstance(app.screen, Confirm)
            await pilot.press(answer)
            await settle(pilot, app)
            assert load_preset(str(path)).config.k == expected_k


async def test_help_screen_opens_and_closes():
    app = create_app("tiny")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        await pilot.press("f1")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, HelpScreen)
        app.query_one("#cycle-table").focus()
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)


async def test_command_palette_lists_every_action_and_preset():
    app = create_app("tiny")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        titles = [c.title for c in app.get_system_commands(app.screen)]
        for title in ("Help", "Run", "Sweep", "Presets", "Save preset", "Cancel sweep"):
            assert title in titles
        assert "Preset: seed-576" in titles and "View: Sweep" in titles


async def test_save_dialog_suggests_a_free_name_and_enter_in_it_saves(isolated_dirs):
    presets, _ = isolated_dirs
    app = create_app("tiny")  # fixed, K = 3
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        await pilot.press("ctrl+s")
        await settle(pilot, app)
        assert isinstance(app.screen, SavePreset)
        assert app.screen.query_one("#save-name", Input).value == "fixed-k3"
        await pilot.press("enter")  # in the name field: saves at once
        await settle(pilot, app)
        assert not isinstance(app.screen, SavePreset)
        assert load_preset(str(presets / "fixed-k3.toml")).config == app.config
        assert "Saved preset" in notifications(app)[-1]
        # The name is taken now: the next suggestion is free.
        await pilot.press("ctrl+s")
        await settle(pilot, app)
        assert app.screen.query_one("#save-name", Input).value == "fixed-k3-2"


async def test_save_dialog_name_error_goes_once_the_name_is_fixed(isolated_dirs):
    presets, _ = isolated_dirs
    app = create_app("tiny")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        await pilot.press("ctrl+s")
        await settle(pilot, app)
        for char in "-bad":
            await pilot.press(char)
        await pilot.click("#save-ok")
        await settle(pilot, app)
        assert isinstance(app.screen, SavePreset)
        assert "✗ name: use letters" in screen_text(app)
        await pilot.press("home", "delete")  # "bad": a valid name
        await settle(pilot, app)
        assert app.screen.query_one("#save-name", Input).value == "bad"
        assert "✗ name" not in screen_text(app)
        await pilot.press("enter")
        await settle(pilot, app)
        assert (presets / "bad.toml").exists()


async def test_error_toasts_are_framed_apart():
    """In 16 colours a toast's background is the screen's black: each needs its own frame,
    with no gap where the text beneath shows through."""
    app = create_app("tiny")
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await settle(pilot, app)
        await type_into(pilot, app, "k", "x")
        await pilot.press("f5")
        await pilot.press("ctrl+s")
        await settle(pilot, app)
        lines = screen_lines(app)
        first = row_with(app, "┃ Cannot run: fix K first.")
        second = row_with(app, "┃ Cannot save: the form has invalid")
        assert "┏━━" in lines[first - 1] and "┗━━" in lines[first + 1]
        assert "┏━━" in lines[second - 1]
        assert second - 2 == first + 1  # frame under frame, no row between
