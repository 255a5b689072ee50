"""The base of the app's plotext charts."""

from __future__ import annotations

from rich.console import RenderableType
from rich.text import Text
from textual_plotext import PlotextPlot


class Plot(PlotextPlot):
    """A plotext chart that, under NO_COLOR, draws every mark in the text's own colour: the
    series' colours turned grey are too dark to read (a red mark is grey at 1.5:1 on the
    plot's ground); their glyphs and the legend tell them apart."""

    def render(self) -> RenderableType:
        rendered = super().render()
        if self.app.no_color and isinstance(rendered, Text):
            return Text(rendered.plain)
        return rendered
