"""What a person sees: the app's screen as lines of text, and the style of each cell.

Read from the compositor, as the terminal would be written: a marker the tests look for
here is on the screen, not only in a widget's state or CSS classes.
"""

from __future__ import annotations

from rich.style import Style


def screen_lines(app) -> list[str]:
    """Every row of the current screen, as plain text."""
    return [strip.text for strip in app.screen._compositor.render_strips()]


def screen_text(app) -> str:
    return "\n".join(screen_lines(app))


def row_with(app, needle: str) -> int:
    """The index of the first screen row holding ``needle`` (AssertionError if none)."""
    for index, line in enumerate(screen_lines(app)):
        if needle in line:
            return index
    raise AssertionError(f"{needle!r} is not on the screen:\n{screen_text(app)}")


def style_of(app, needle: str) -> Style:
    """The style of the first character of ``needle`` where it first appears on screen."""
    strip = app.screen._compositor.render_strips()[row_with(app, needle)]
    start = strip.text.index(needle)
    offset = 0
    for segment in strip:
        if offset + len(segment.text) > start:
            return segment.style or Style.null()
        offset += len(segment.text)
    raise AssertionError(needle)  # pragma: no cover - row_with found it


def region_text(app, widget) -> str:
    """The rows and columns of the screen that ``widget`` covers."""
    region = widget.region
    rows = screen_lines(app)[region.y : region.y + region.height]
    return "\n".join(row[region.x : region.x + region.width] for row in rows)
