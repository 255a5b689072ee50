"""Styles, legends and ticks of the terminal plots (:mod:`spectui.plotting.terminal`).

Markers and colours (:class:`_Style`), what a drawing leaves for the caller to print under the
plot (:class:`Drawing`, :func:`legend_lines`), and tick labels that fit the plot's size in
character cells. Needs neither pandas nor plotext to import.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

# Anchors of matplotlib's viridis, for sequential lines (low acceptance dark, high bright).
_VIRIDIS = ((68, 1, 84), (59, 82, 139), (33, 145, 140), (94, 201, 98), (253, 231, 37))
# The stretch of it the lines take: its darkest quarter (purple) is near-black on a dark
# terminal, 1.1:1 on the app's plot (tests/test_colours.py).
_VIRIDIS_SPAN = (0.25, 0.9)
MODEL_COLORS = {"fixed": "blue", "position_decay": "orange", "entropy_aware": "green"}
MODEL_MARKERS = {"fixed": "o", "position_decay": "s", "entropy_aware": "^"}
PLAIN_MARKERS = ("o", "x", "+", "*", "#", "@", "%", "&", "=", "$", "~", "v")
LINE_MARKER = "hd"
BREAKEVEN_COLOR = "gray"
BREAKEVEN_NOTE = "line at 1: break-even"
DEFAULT_SIZE = (100, 30)  # width, height when the caller gives none
# Plot 1: a panel needs about this many columns and rows to stay readable.
PANEL_MIN_WIDTH = 25
PANEL_MIN_HEIGHT = 12
# What plotext takes around the plot area: y tick labels and frame; ticks, label and frame.
Y_AXIS_COLUMNS = 6
X_AXIS_ROWS = 5


def _sequential(n: int) -> list[tuple[int, int, int]]:
    """``n`` colours along viridis (as RGB tuples plotext understands)."""
    if n <= 1:
        return [_VIRIDIS[2]]
    colors = []
    for i in range(n):
        start, end = _VIRIDIS_SPAN
        position = (start + (end - start) * i / (n - 1)) * (len(_VIRIDIS) - 1)
        low = int(position)
        high = min(low + 1, len(_VIRIDIS) - 1)
        frac = position - low
        (r0, g0, b0), (r1, g1, b1) = _VIRIDIS[low], _VIRIDIS[high]
        colors.append(
            (
                round(r0 + (r1 - r0) * frac),
                round(g0 + (g1 - g0) * frac),
                round(b0 + (b1 - b0) * frac),
            )
        )
    return colors


@dataclass(frozen=True)
class LegendEntry:
    """One line of a legend: ``glyph`` as drawn in the plot, in ``color`` (plotext's name or
    RGB tuple; None: uncoloured), then ``label``."""

    label: str
    glyph: str
    color: Any = None


@dataclass
class Drawing:
    """What :func:`draw` drew besides the plot itself: the legend, notes (what a line or a
    mark means) and, for plot 1, which page of panels of how many is shown."""

    legend: list[LegendEntry] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    page: int = 0
    pages: int = 1


# How a plotext marker looks in a legend.
GLYPHS = {LINE_MARKER: "━━", "dot": "•", "-": "──", "sd": "█"}


class _Style:
    """Markers and colours: colour with a smooth marker, or distinct characters without.

    Also collects the legend and the notes, and knows the plot's size in character cells.
    """

    def __init__(self, color: bool, width: int, height: int) -> None:
        self.color = color
        self.width = width
        self.height = height
        self.drawing = Drawing()
        self._plain = 0

    def marker(self, preferred: str | None = None) -> str:
        if self.color:
            return LINE_MARKER
        marker = PLAIN_MARKERS[self._plain % len(PLAIN_MARKERS)]
        self._plain += 1
        return marker if preferred is None else preferred

    def paint(self, color: Any) -> Any:
        """``color`` when colours are on, else None (plotext's default)."""
        return color if self.color else None

    def legend(self, label: str, marker: str, color: Any = None) -> None:
        glyph = GLYPHS.get(marker, marker)
        self.drawing.legend.append(LegendEntry(label, glyph, self.paint(color)))

    def note(self, text: str) -> None:
        self.drawing.notes.append(text)


def legend_lines(
    drawing: Drawing, width: int, color: bool = False, flow: bool = False
) -> list[str]:
    """The legend (entries side by side, wrapped at ``width``) and then the notes, as lines;
    ANSI-coloured when ``color``. With ``flow`` the notes follow the entries on their line
    while they fit, each wrapped to a line of its own when not (a short screen's rows)."""
    import plotext

    items = []  # (text as printed, its width)
    for entry in drawing.legend:
        glyph = plotext.colorize(entry.glyph, entry.color) if color and entry.color else entry.glyph
        items.append((f"{glyph} {entry.label}", len(entry.glyph) + 1 + len(entry.label)))
    notes = [(note, len(note)) for note in drawing.notes] if flow else []
    lines: list[str] = []
    line, used = "", 0
    for text, size in items + notes:
        if used and used + 2 + size > width:
            lines.append(line)
            line, used = "", 0
        line += ("  " if used else "") + text
        used += (2 if used else 0) + size
    if used:
        lines.append(line)
    if drawing.notes and not flow:
        lines.append(" · ".join(drawing.notes))
    return lines


def nice_ticks(low: float, high: float, rows: int) -> list[float]:
    """Ticks at round values from ``low`` to ``high``, about one per two rows of plot."""
    most = max(2, rows // 2 + 1)
    span = high - low if high > low else 1.0
    for step in (0.05, 0.1, 0.2, 0.25, 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000):
        first = math.ceil(low / step - 1e-9)
        last = math.floor(high / step + 1e-9)
        if last - first + 1 <= most:
            return [round(i * step, 10) for i in range(first, last + 1)]
    return [low, high] if span else [low]


ROUND_STEPS = (1.0, 2.0, 2.5, 5.0)  # a tick step is one of these times a power of ten


def even_ticks(low: float, high: float, rows: int) -> tuple[float, float, list[float]]:
    """An axis for values from ``low`` to ``high`` (finite) drawn on ``rows`` character rows:
    its limits and its ticks, at round values (:data:`ROUND_STEPS` times a power of ten),
    the same number of rows apart: two to four rows (on fewer than five rows: one), at
    least three ticks on seven rows or more, else two.

    plotext puts a value ``v`` on row ``floor(0.5 + (rows - 1)(v - lo)/(hi - lo))``. The
    axis spans ``rows - 1`` rows of ``step / gap`` each and starts at a whole number of
    them, so every tick (a multiple of ``step``) lands on a row exactly, ``gap`` rows above
    the last; the limits themselves need not be ticks. Of the axes that hold the values, the
    one with the finest rows (the values fill the most of it), then the most ticks. The
    same arguments give the same axis: a redraw moves no tick. Values within a millionth of
    each other count as one, given 10 % either side.
    """
    rows = max(2, rows)
    if high < low:
        low, high = high, low
    if high - low <= 1e-6 * max(abs(low), abs(high)):
        # One value (to a millionth: lines equal but for rounding noise), in a span around
        # it: rows above and below it, not ticks a rounding error apart.
        spread = abs(low) * 0.1 or 1.0
        low, high = low - spread, high + spread
    span = high - low
    gaps = range(2, 5) if rows >= 5 else range(1, 2)
    least = 3 if rows >= 7 else 2
    best: tuple[float, int, float, float] | None = None  # (row's worth, -ticks, lo, step)
    exponent = math.floor(math.log10(span / rows)) - 1
    while best is None or 10.0**exponent <= best[0] * max(gaps):
        for mantissa in ROUND_STEPS:
            step = mantissa * 10.0**exponent
            for gap in gaps:
                per_row = step / gap
                lo = math.floor(low / per_row + 1e-9) * per_row
                hi = lo + per_row * (rows - 1)
                count = math.floor(hi / step + 1e-9) - math.ceil(lo / step - 1e-9) + 1
                if hi < high - 1e-9 * span or count < least:
                    continue
                candidate = (per_row, -count, lo, step)
                if best is None or candidate[:2] < best[:2]:
                    best = candidate
        exponent += 1
    assert best is not None  # a step as wide as the span always holds the values
    per_row, _, lo, step = best
    hi = lo + per_row * (rows - 1)
    first = math.ceil(lo / step - 1e-9)
    last = math.floor(hi / step + 1e-9)
    return lo, hi, [round(n * step, 10) for n in range(first, last + 1)]


def tick_labels(ticks: Sequence[float]) -> list[str]:
    """``ticks`` written with the same number of decimals, the fewest that tell them apart
    exactly ("0.10", "0.15", "0.20"; "0", "500", "1000")."""
    for decimals in range(11):
        if all(abs(round(t, decimals) - t) < 1e-9 * max(1.0, abs(t)) for t in ticks):
            break
    return [f"{t:.{decimals}f}" for t in ticks]


def _yticks(axes: Any, low: float, high: float, rows: int) -> None:
    """Round y ticks that do not collide in a plot area ``rows`` high."""
    ticks = nice_ticks(low, high, rows)
    axes.yticks(ticks, [f"{t:g}" for t in ticks])


def spaced_ticks(
    values: Sequence[float], labels: Sequence[str], columns: int, log: bool = False
) -> tuple[list[float], list[str]]:
    """The ticks (from the left) whose labels do not touch in a plot area ``columns`` wide,
    on a linear or log scale; the last value is kept in place of its neighbour."""
    if not values:
        return [], []
    where = [math.log10(v) for v in values] if log else list(values)
    low, high = min(where), max(where)
    scale = (columns - 1) / (high - low) if high > low else 0.0
    centres = [(w - low) * scale for w in where]
    kept: list[int] = []
    for i in range(len(values)):
        if kept and _overlap(centres, labels, kept[-1], i):
            if i == len(values) - 1 and len(kept) > 1:
                kept[-1] = i  # the range's end matters more than its neighbour
                if _overlap(centres, labels, kept[-2], i):
                    kept.pop()
            continue
        kept.append(i)
    return [values[i] for i in kept], [labels[i] for i in kept]


def _overlap(centres: list[float], labels: Sequence[str], a: int, b: int) -> bool:
    return centres[b] - centres[a] < (len(labels[a]) + len(labels[b])) / 2 + 1


def _plot_columns(style: _Style, cols: int = 1) -> int:
    return max(10, style.width // cols - Y_AXIS_COLUMNS - 1)


def _plot_rows(style: _Style, rows: int = 1, title: bool = False) -> int:
    return max(2, style.height // rows - X_AXIS_ROWS - (1 if title else 0))
