"""The Calibrate screen's Fit plot (:mod:`spectui.screens.calibrate`): the observed
conditional per-position rates with their 95 % intervals, and the chosen model's curve."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.widgets import Static

from spectui.plotting.terminal import (
    GLYPHS,
    Drawing,
    LegendEntry,
    legend_lines,
    nice_ticks,
    spaced_ticks,
)
from spectui.widgets.plot import Plot

OBSERVED_COLOR = "red+"
FIT_COLOR = "blue+"
OBSERVED_GLYPH = "●"
INTERVAL_GLYPH = "│"
FIT_SIDE_WIDTH = 40  # columns of the Fit pane's models and notes, beside the plot


class RatesPlot(Plot):
    """Observed conditional rates with their 95 % intervals, and the chosen model's curve;
    the legend goes to the ``#cal-legend`` line under it."""

    data: tuple[list[Any], list[float], str] | None = None

    def show(self, positions: list[Any], fitted: list[float], label: str) -> None:
        """Draw ``positions`` (observed) and ``fitted`` (named ``label``), and the legend."""
        self.data = (positions, fitted, label)
        drawing = self.draw(positions, fitted, label)
        width = max(10, self.screen.size.width - FIT_SIDE_WIDTH - 2)
        lines = legend_lines(drawing, width, color=not self.app.no_color)
        self.screen.query_one("#cal-legend", Static).update(Text.from_ansi("\n".join(lines)))

    def on_resize(self) -> None:
        # The y ticks depend on the height (and the pane is sized only once shown).
        if self.data is not None:
            self.show(*self.data)

    def draw(self, positions: list[Any], fitted: list[float], label: str) -> Drawing:
        color = not self.app.no_color
        drawing = Drawing()
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        plt.xlabel("draft position i")
        plt.ylabel("P(accept i | i-1 accepted)")
        xs = [p.position for p in positions]
        lows, highs = [p.low for p in positions], [p.high for p in positions]
        if fitted:  # first: the observed marks are drawn over it
            plt.plot(xs[: len(fitted)], fitted, marker="hd", color=FIT_COLOR)
        for x, low, high in zip(xs, lows, highs, strict=True):
            plt.plot([x, x], [low, high], marker=INTERVAL_GLYPH, color=OBSERVED_COLOR)
        plt.scatter(xs, [p.rate for p in positions], marker=OBSERVED_GLYPH, color=OBSERVED_COLOR)
        drawing.legend.append(
            LegendEntry("observed, 95 % interval", OBSERVED_GLYPH, OBSERVED_COLOR)
        )
        if fitted:
            drawing.legend.append(LegendEntry(label, GLYPHS["hd"], FIT_COLOR))
        low = max(0.0, min([*lows, *fitted]) - 0.02)
        high = min(1.0, max([*highs, *fitted]) + 0.02)
        plt.ylim(low, high)
        ticks = nice_ticks(low, high, max(2, self.size.height - 4))
        plt.yticks(ticks, [f"{t:g}" for t in ticks])
        plt.xlim(0.5, max(xs) + 0.5)
        plt.xticks(*spaced_ticks(xs, [str(x) for x in xs], max(10, self.size.width - 8)))
        if not color:
            drawing.legend = [LegendEntry(e.label, e.glyph) for e in drawing.legend]
        self.refresh()
        return drawing
