"""Preset screens: the picker, the save form, and the overwrite confirmation."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, OptionList, Static
from textual.widgets.option_list import Option

if TYPE_CHECKING:
    from collections.abc import Callable

    from textual.app import App

    from engine.core.config import SpecConfig

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
NAME_RULE = "✗ name: use letters, digits, '-', '_' or '.', starting with a letter or digit"


def suggest_name(config: SpecConfig, taken: Callable[[str], bool]) -> str:
    """A preset name for ``config`` that ``taken`` does not refuse: ``fixed-k5``, then
    ``fixed-k5-2``, ``fixed-k5-3``..."""
    base = f"{config.draft_model}-k{config.k}"
    name, n = base, 1
    while taken(name):
        n += 1
        name = f"{base}-{n}"
    return name


class PresetPicker(ModalScreen[str | None]):
    """Choose a shipped or user preset, or type a path. Dismisses with the name/path."""

    BINDINGS = [Binding("escape", "close", "Close")]

    def compose(self) -> ComposeResult:
        from engine.presets import Preset, list_presets

        options = []
        for item in list_presets():
            if isinstance(item, Preset):
                kind = f"sweep of {item.size()}" if item.is_sweep else "single run"
                options.append(Option(f"{item.name} · {kind} · {item.description}", id=item.name))
            else:
                options.append(Option(f"✗ {item}", id=f"error:{item}"))
        with Vertical(id="picker", classes="dialog"):
            yield Label("Load a preset (enter), or type a .toml path below")
            yield OptionList(*options, id="preset-list")
            yield Input(placeholder="path/to/preset.toml", id="preset-path")

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        option_id = event.option.id or ""
        if option_id.startswith("error:"):
            self.notify(option_id[6:], severity="error", timeout=8)
            return
        self.dismiss(option_id)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.value.strip():
            self.dismiss(event.value.strip())

    def action_close(self) -> None:
        self.dismiss(None)


class SavePreset(ModalScreen[tuple[str, str] | None]):
    """Ask for a name (prefilled with ``name``) and a description; dismisses with them, or
    None. Enter in either field saves; the name's error goes as soon as the name is right."""

    BINDINGS = [Binding("escape", "close", "Cancel")]

    def __init__(self, directory: str, name: str = "") -> None:
        super().__init__()
        self.directory = directory
        self.suggested = name

    def compose(self) -> ComposeResult:
        with Vertical(id="save", classes="dialog"):
            yield Label(f"Save the form as a preset in {self.directory}")
            yield Input(self.suggested, placeholder="name (letters, digits, - _ .)", id="save-name")
            yield Input(placeholder="one-line description (optional)", id="save-description")
            yield Static("", id="save-error")
            with Horizontal(classes="buttons"):
                yield Button("Save", id="save-ok", variant="primary")
                yield Button("Cancel", id="save-cancel")

    def _submit(self) -> None:
        name = self.query_one("#save-name", Input).value.strip()
        if not NAME_RE.match(name):
            self._show_error(NAME_RULE)
            self.query_one("#save-name", Input).focus()
            return
        self.dismiss((name, self.query_one("#save-description", Input).value.strip()))

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "save-name" and NAME_RE.match(event.value.strip()):
            self._show_error("")

    def _show_error(self, message: str) -> None:
        error = self.query_one("#save-error", Static)
        error.update(message)
        error.set_class(bool(message), "-shown")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self._submit()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "save-ok":
            self._submit()
        else:
            self.dismiss(None)

    def action_close(self) -> None:
        self.dismiss(None)


class Confirm(ModalScreen[bool]):
    """A yes/no question: y or enter says yes, n or escape says no."""

    BINDINGS = [
        Binding("y", "answer(True)", "Yes"),
        Binding("n,escape", "answer(False)", "No"),
    ]

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm", classes="dialog"):
            yield Label(self.question)
            with Horizontal(classes="buttons"):
                yield Button("Yes (y)", id="yes", variant="warning")
                yield Button("No (n)", id="no", variant="primary")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


def save_form_as_preset(app: App, config: SpecConfig) -> None:
    """Ask for a name, then save ``config`` in the user preset directory; ask before
    replacing an existing file (engine.presets.save_preset refuses to overwrite silently)."""
    from engine.presets import SHIPPED_DIR, save_preset, user_preset_dir

    directory = user_preset_dir()

    def write(path: Path, description: str, overwrite: bool) -> None:
        try:
            save_preset(path, config, description, overwrite=overwrite)
        except OSError as err:
            app.notify(f"Not saved: {err}", severity="error")
            return
        app.notify(f"Saved preset {path}")
        from spectui.messages import FileWritten

        app.post_message(FileWritten(path, "preset"))

    def named(answer: tuple[str, str] | None) -> None:
        if answer is None:
            return
        path = directory / f"{answer[0]}.toml"
        shadows = (SHIPPED_DIR / path.name).exists()
        if not path.exists() and not shadows:
            write(path, answer[1], False)
            return

        def confirmed(yes: bool | None) -> None:
            if yes:
                write(path, answer[1], True)
            else:
                app.notify(f"Not saved: {path.stem} is taken.", severity="warning")

        question = (
            f"{path} exists. Overwrite it?"
            if path.exists()
            else f"A shipped preset is called {path.stem!r}: yours would hide it. Save anyway?"
        )
        app.push_screen(Confirm(question), confirmed)

    name = suggest_name(
        config, lambda n: (directory / f"{n}.toml").exists() or (SHIPPED_DIR / f"{n}.toml").exists()
    )
    app.push_screen(SavePreset(str(directory), name), named)
