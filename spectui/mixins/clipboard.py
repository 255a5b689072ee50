"""Copy (F4): what is current to the clipboard, and the files written to copy the path of."""

from __future__ import annotations

from spectui.messages import FileWritten
from spectui.mixins.base import AppBase


class CopyMixin(AppBase):
    """Copy (F4) and the palette's copy commands; files written are remembered here."""

    def on_file_written(self, message: FileWritten) -> None:
        self._written = self._last_written = (message.path, message.what)

    def action_copy(self) -> None:
        """Copy what is current (see the help screen): on the Calibrate screen its engine
        flags; else the path of a file written since the form last changed (once); else the
        focused table's highlighted row; else the form as a ``spectui run`` command."""
        from spectui.copying import engine_flags, table_row
        from spectui.screens.calibrate import CalibrateScreen

        screen = self.screen
        if isinstance(screen, CalibrateScreen):
            found = screen.analysis
            if found is None or not found.emitted:
                self.notify("Nothing to copy yet: no recommended K.", severity="warning")
                return
            k = found.recommendation.k if found.recommendation is not None else "?"
            engines = ", ".join(found.emitted)
            text = engine_flags(found.emitted)
            self._copy(text, f"the engine flags for K = {k} ({engines}; one line each)")
            return
        if self._written is not None:
            path, what = self._written
            self._written = None
            self._copy(str(path), f"the {what}'s path")
            return
        row = table_row(screen.focused)
        if row is not None:
            self._copy(row, "the highlighted row (tab-separated)")
            return
        self.action_copy_command()

    def action_copy_command(self) -> None:
        from spectui.copying import command_line

        if self.config is None:
            self.notify(
                f"Cannot copy the command: fix {self._wrong_fields()} first.", severity="error"
            )
            return
        self._copy(command_line(self.config), "the form as a command")

    def action_copy_path(self) -> None:
        if self._last_written is None:
            self.notify("No file written yet (x in the Run view exports).", severity="warning")
            return
        path, what = self._last_written
        self._copy(str(path), f"the {what}'s path")

    def _copy(self, text: str, what: str) -> None:
        from spectui.copying import preview

        self.copy_to_clipboard(text)
        self.notify(f"Copied {what}: {preview(text)}", title="Copied")
