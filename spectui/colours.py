"""The one colour scale of speedups, for the app's heatmap, the CLI's tables and plotext.

A cell's background says how much K* gains; its text colour is chosen by that background
(black or white, whichever contrasts more), so every cell reads at WCAG contrast >= 4.5:1 in
truecolor and after rich's downgrade to 256 and to 16 colours (tests/test_colours.py checks
every pair). The backgrounds are xterm-256 colours whose 16-colour downgrades stay distinct:
red, brown, bright yellow, bright green, green. With NO_COLOR there is no background at all:
the marks of :mod:`engine.analysis.formatting` (≈ ✗ …) carry the meaning.
"""

from __future__ import annotations

import math

from rich.color import Color
from rich.style import Style

# (upper bound of the speedup, background): below 1 loses, then marginal, fair, good, great.
HEAT_SCALE: tuple[tuple[float, str], ...] = (
    (1.0, "#af0000"),  # xterm 124, 16 colours: red
    (1.25, "#af5f00"),  # xterm 130, 16 colours: yellow (brown)
    (1.75, "#ffd75f"),  # xterm 221, 16 colours: bright yellow
    (2.5, "#87d75f"),  # xterm 113, 16 colours: bright green
    (math.inf, "#00af00"),  # xterm 34, 16 colours: green
)
INKS = ("#000000", "#ffffff")


def _luminance(colour: str) -> float:
    """WCAG relative luminance of a colour rich can parse."""
    triplet = Color.parse(colour).get_truecolor()

    def channel(value: int) -> float:
        c = value / 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(v) for v in triplet)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: str, b: str) -> float:
    """WCAG contrast ratio of two colours (1 to 21)."""
    high, low = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def speedup_background(speedup: float) -> str | None:
    """The background of a speedup on :data:`HEAT_SCALE`; None for a missing value."""
    if speedup is None or math.isnan(speedup):
        return None
    return next((colour for bound, colour in HEAT_SCALE if speedup < bound), HEAT_SCALE[-1][1])


def ink(background: str) -> str:
    """The text colour for ``background``: black or white, whichever contrasts more."""
    return max(INKS, key=lambda colour: contrast(colour, background))


def heat_style(speedup: float, no_color: bool = False) -> Style:
    """Style of a heatmap cell: bold text in :func:`ink` on :func:`speedup_background`.

    With ``no_color`` (or a missing speedup): bold only, on the terminal's own background.
    """
    background = None if no_color else speedup_background(speedup)
    if background is None:
        return Style(bold=True)
    return Style(bold=True, color=ink(background), bgcolor=background)
