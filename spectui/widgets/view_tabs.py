"""The views' tab bar, which fits its place: every label whole, with its number key.

Each tab reads its number key and its name, ``1 Run``, while they all fit; where they do not
(80 columns beside the form: 54 for eight tabs), the key is written against a shorter name
(``1Run 2Speed 3Sweep 4Stats 5Plots 6Regime 7Arena 8Tree``, one space apart, the key in
bold): the keys 1-8 that choose the views stay on screen. Only in a narrower place still
(a terminal under 80 columns) do the tabs read their names alone.
"""

from __future__ import annotations

from typing import Any

from textual.content import Content
from textual.widgets import TabbedContent

# The shorter names of the keyed labels, where the whole ones do not fit.
SHORT_NAMES = {"Speedup": "Speed", "Analysis": "Stats"}


def short_label(label: str) -> str:
    """A tab's name without its number key: ``1 Run`` -> ``Run``."""
    key, _, name = label.partition(" ")
    return name if key.isdigit() and name else label


def keyed_label(label: str) -> Content:
    """A tab's number key (bold) against its shorter name: ``2 Speedup`` -> ``2Speed``."""
    key, _, name = label.partition(" ")
    if not (key.isdigit() and name):
        return Content(label)
    return Content.assemble((key, "bold"), SHORT_NAMES.get(name, name))


class ViewTabs(TabbedContent):
    """A TabbedContent whose tab labels shorten to fit: whole (``1 Run``), else the key
    against a shorter name (``1Run``), else the names alone."""

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
        """The longest labels that fit in the width the tabs have (a tab takes its label
        and its padding: two cells, one when compact)."""
        from textual.widgets import Tab

        tabs = list(self.query(Tab))
        if not tabs or self.size.width <= 0:
            return
        for tab in tabs:
            self._labels.setdefault(tab.id or "", tab.label.plain)
        full = [self._labels[tab.id or ""] for tab in tabs]
        choices: list[tuple[list[Content], bool]] = [
            ([Content(label) for label in full], False),
            ([keyed_label(label) for label in full], True),
            ([Content(short_label(label)) for label in full], True),
        ]
        for wanted, compact in choices:
            if sum(len(label.plain) + (1 if compact else 2) for label in wanted) <= self.size.width:
                break
        self.set_class(compact, "-compact")
        for tab, label in zip(tabs, wanted, strict=True):
            if tab.label != label:
                tab.label = label
