"""The screens over the main one: help (F1), Calibrate (F8), Load (ctrl+l), Lab (ctrl+t)
and Acceptance (ctrl+g)."""

from __future__ import annotations

from engine.core.config import SpecConfig
from spectui.mixins.base import AppBase


class ScreensMixin(AppBase):
    """Open the help screen (on the focused field's help) and the Calibrate screen."""

    def _load_chosen(self, config: SpecConfig | None) -> None:
        """What a screen that sends a scenario back (Calibrate, Lab, Acceptance) sent: into
        the form (None: nothing sent; the screen's toast says what is set)."""
        if config is not None:
            self.form.load_config(config)

    def action_help(self) -> None:
        from spectui.screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            # A form field focused: its help, unit and range first (what its tooltip says).
            within = self.focused is not None and self.form in self.focused.ancestors
            self.push_screen(HelpScreen(self.form.focused_field if within else None))

    def action_calibrate(self) -> None:
        """Open the Calibrate screen on the form's scenario; ``f`` there loads the fitted
        model and the recommended K into the form."""
        from spectui.screens.calibrate import CalibrateScreen

        if isinstance(self.screen, CalibrateScreen):
            return
        self.push_screen(CalibrateScreen(self.config), self._load_chosen)

    def action_load_study(self) -> None:
        """Open the Load screen on the form's scenario, with the preset's [load] settings."""
        from spectui.screens.load import LoadScreen

        if isinstance(self.screen, LoadScreen) or self.config is None:
            return
        settings = getattr(self.preset, "load", None) or None
        self.push_screen(LoadScreen(self.config, settings))

    def action_lab(self) -> None:
        """Open the Lab screen on the form's scenario; ``f`` there sends the rates it implies
        to the form (``d`` sets the form's model to distribution)."""
        from spectui.screens.lab import LabScreen

        if isinstance(self.screen, LabScreen) or self.config is None:
            return
        self.push_screen(LabScreen(self.config), self._load_chosen)

    def action_acceptance(self) -> None:
        """Open the Acceptance screen (the catalog) on the form's scenario (None while a
        field is invalid: the catalog is shown, and ``f`` says why it cannot send); ``f``
        there sends the highlighted setup's fitted acceptance to the form."""
        from spectui.screens.acceptance import AcceptanceScreen

        if isinstance(self.screen, AcceptanceScreen):
            return
        self.push_screen(AcceptanceScreen(self.config), self._load_chosen)
