"""The key bar at the bottom of the app and its screens."""

from __future__ import annotations

from typing import Any

from textual.screen import Screen
from textual.widgets import Footer


class KeysFooter(Footer):
    """Textual's footer, rebuilt only when the keys it shows change.

    Textual's own rebuilds its keys (a widget each) whenever the screen's bindings *may*
    have changed: on every focus move, view switch and ``refresh_bindings``, which is most
    key presses here. Most of those change nothing it shows, and each rebuild mounts and
    styles some twenty widgets: about a third of the work of switching views was that."""

    _shown: tuple[Any, ...] | None = None

    def _keys(self, screen: Screen[Any]) -> tuple[Any, ...]:
        """What the footer draws: each shown binding with whether it is enabled."""
        shown = tuple(
            (binding.key, binding.action, binding.description, binding.group, enabled, tooltip)
            for key, (_node, binding, enabled, tooltip) in screen.active_bindings.items()
            if binding.show or key == self.app.COMMAND_PALETTE_BINDING
        )
        return (self.show_command_palette, self.compact, shown)

    def bindings_changed(self, screen: Screen[Any]) -> None:
        self._bindings_ready = True
        if not screen.app.app_focus:
            return
        if self.is_attached and screen is self.screen:
            # As Textual's: look after the refresh (a caller may change what an action's
            # check says just after asking for the refresh), then rebuild if it differs.
            self.call_after_refresh(self._rebuild_if_changed)

    async def _rebuild_if_changed(self) -> None:
        if not self.is_attached:
            return
        keys = self._keys(self.screen)
        if keys != self._shown:
            self._shown = keys
            await self.recompose()
