"""What a person sees: the app's screen, or one widget's part of it, as plain text."""

from __future__ import annotations

import io

from rich.console import Console


def screen_text(app) -> str:
    """The whole screen as plain text, one line per terminal row."""
    width, height = app.size
    console = Console(
        width=width,
        height=height,
        file=io.StringIO(),
        force_terminal=True,
        color_system="truecolor",
        record=True,
        legacy_windows=False,
        safe_box=False,
    )
    console.print(app.screen._compositor.render_update(full=True))
    return console.export_text()


def region_text(app, widget) -> str:
    """The rows and columns of the screen that ``widget`` covers."""
    region = widget.region
    lines = screen_text(app).splitlines()
    rows = lines[region.y : region.y + region.height]
    return "\n".join(row[region.x : region.x + region.width] for row in rows)
