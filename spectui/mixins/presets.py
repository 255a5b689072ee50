"""Presets: load one into the form and the sweep picker (Ctrl+O), save the form (Ctrl+S)."""

from __future__ import annotations

from engine.presets import PresetError, load_preset
from spectui.mixins.base import AppBase
from spectui.widgets.sweep_view import SweepView


class PresetsMixin(AppBase):
    """Load and save presets; what fails to load is a notification."""

    def apply_preset(self, name_or_path: str) -> bool:
        """Load a preset into the form (and the sweep picker); errors become notifications."""
        from engine.presets import resolve_preset
        from spectui.confined import OutsideFiles, confine, confine_config

        try:
            confine(resolve_preset(name_or_path))  # a served app opens its own folders only
            preset = load_preset(name_or_path)
            confine_config(preset.config)  # nor a cost table elsewhere
        except (PresetError, OutsideFiles) as err:
            self.notify(str(err), title="Preset not loaded", severity="error", timeout=10)
            return False
        self.preset = preset
        if not self.form.ready:  # the form shows it when it mounts; run it meanwhile
            self.config = preset.config
            self._exact(preset.config)
        self.form.load_config(preset.config)
        if preset.is_sweep:
            self._sweep_preset = preset  # what a sweep view not mounted yet will start on
            for view in self.query(SweepView):
                view.choose(preset)
        self.sub_title = f"preset {preset.name}"
        self.notify(f"Loaded preset {preset.name}")
        return True

    def action_load_preset(self) -> None:
        from spectui.screens.presets import PresetPicker

        def chosen(name: str | None) -> None:
            if name:
                self.apply_preset(name)

        self.push_screen(PresetPicker(), chosen)

    def action_save_preset(self) -> None:
        from spectui.screens.presets import save_form_as_preset

        if self.config is None:
            self.notify("Cannot save: the form has invalid fields.", severity="error")
            return
        save_form_as_preset(self, self.config)
