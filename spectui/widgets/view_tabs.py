"""The views' tab bar, which fits its place: every label whole.

Each tab reads its number key and its name, ``1 Run``, while they all fit; where they do not
(80 columns beside the form: 54 for eight tabs), the tabs read their names alone, one space
apart, and the keys 1-8 still choose them in order.
"""

from __future__ import annotations

from typing import Any

from textual.widgets import TabbedContent


def short_label(label: str) -> str:
    """A tab's name without its number key: ``1 Run`` -> ``Run``."""
    key, _, name = label.partition(" ")
    return name if key.isdigit() and name else label


class ViewTabs(TabbedContent):
    """A TabbedContent whose tab labels drop their number keys when all do not fit."""

    DEFAULT_CSS = """
    ViewTabs.-compact Tab {
        padding: 0 0 0 1;
    }
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._labels: dict[str, str] = {}  # each pane's full label, by its id

    def on_resize(self) -> None:
        self.fit_labels()

    def fit_labels(self) -> None:
        """Full labels if they fit in the width the tabs have, else names alone."""
        from textual.widgets import Tab

        tabs = list(self.query(Tab))
        if not tabs or self.size.width <= 0:
            return
        for tab in tabs:
            self._labels.setdefault(tab.id or "", tab.label.plain)
        full = [self._labels[tab.id or ""] for tab in tabs]
        compact = sum(len(label) + 2 for label in full) > self.size.width
        self.set_class(compact, "-compact")
        for tab, label in zip(tabs, full, strict=True):
            wanted = short_label(label) if compact else label
            if tab.label.plain != wanted:
                tab.label = wanted
