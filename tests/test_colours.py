"""Every (text, background) pair the heatmap can produce reads at WCAG contrast >= 4.5:1, in
truecolor and after rich's downgrade to 256 and to 16 colours. (Issue 9, item 3.)"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass
from pathlib import Path

import pytest
from rich._palettes import EIGHT_BIT_PALETTE, STANDARD_PALETTE
from rich.color import Color, ColorSystem, ColorType
from rich.console import Console

from spectui.app import VIEWS
from spectui.colours import HEAT_SCALE, contrast, heat_style, speedup_background
from spectui.screens.calibrate import PANES

SYSTEMS = (ColorSystem.TRUECOLOR, ColorSystem.EIGHT_BIT, ColorSystem.STANDARD)
# One speedup inside each band of the scale, and its edges.
SPEEDUPS = (0.0, 0.5, 0.997, 1.0, 1.1, 1.249, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 6.06, 100.0)


def rgb(colour: Color, system: ColorSystem) -> str:
    """The colour a terminal of ``system`` shows (rich's palettes), as #rrggbb."""
    down = colour.downgrade(system)
    if down.type in (ColorType.TRUECOLOR,) or down.triplet is not None:
        triplet = down.get_truecolor()
    elif down.type == ColorType.STANDARD or (down.number is not None and down.number < 16):
        assert down.number is not None
        triplet = STANDARD_PALETTE[down.number]
    else:
        assert down.number is not None
        triplet = EIGHT_BIT_PALETTE[down.number]
    return "#{:02x}{:02x}{:02x}".format(*triplet)


@pytest.mark.parametrize("system", SYSTEMS, ids=lambda s: s.name)
@pytest.mark.parametrize("speedup", SPEEDUPS)
def test_every_cell_reads_at_contrast_4_5(speedup, system):
    style = heat_style(speedup)
    assert style.color is not None and style.bgcolor is not None
    text, background = rgb(style.color, system), rgb(style.bgcolor, system)
    assert contrast(text, background) >= 4.5, (speedup, system.name, text, background)


def test_the_old_pairs_fail_the_same_check():
    # grey 250 on gold 178: the issue's ~1.1:1, proof the check can fail.
    assert contrast("#bcbcbc", "#d7af00") < 1.5


def test_bands_stay_distinct_in_16_colours():
    standard = {
        Color.parse(colour).downgrade(ColorSystem.STANDARD).number for _, colour in HEAT_SCALE
    }
    assert len(standard) == len(HEAT_SCALE)


def test_losses_are_red_and_missing_values_have_no_background():
    assert speedup_background(0.997) == HEAT_SCALE[0][1]
    assert speedup_background(1.0) != HEAT_SCALE[0][1]
    assert speedup_background(math.nan) is None
    assert heat_style(math.nan).bgcolor is None


def test_no_color_has_no_background_and_rich_prints_no_colour():
    style = heat_style(0.5, no_color=True)
    assert style.bgcolor is None and style.color is None and style.bold
    console = Console(no_color=True, force_terminal=True, color_system="truecolor", width=40)
    with console.capture() as captured:
        console.print("x", style=heat_style(0.5))
    assert "48;2" not in captured.get()  # no background escape


# --- every glyph the app draws, in every colour mode ----------------------------------------
# Issue 22, item 4: under NO_COLOR in 16 colours the Exact panel's and the acc@i box's
# borders were black on black. The app itself is rendered (the compositor's segments, as the
# terminal gets them, NO_COLOR's monochrome filter included) in the states a person reaches:
# a run, focus and an invalid field, toasts of each severity, a sweep and an arena, every
# view after them, the dialogs (a name's error, a question), the Calibrate screen's panes.
# Then each cell's colours are downgraded as rich does for a 256- and a 16-colour terminal.
# A glyph (any non-blank character: text, borders, bars, plot marks) whose colour and
# background read at under MIN_CONTRAST in any mode is invisible there.
MIN_CONTRAST = 1.5
LOGS = Path(__file__).resolve().parent / "fixtures" / "logs"


@dataclass(frozen=True)
class Cell:
    state: str
    widget: str
    glyphs: str
    color: Color
    background: Color


def glyph_cells(app, state: str) -> list[Cell]:
    """Every run of non-blank characters on the app's screen with its colours (reverse
    video applied). A modal dialog's dimmed view of the screen under it is left out: what
    is checked there is the screen under it, in its own state."""
    screen = app.screen
    update = screen._compositor.render_update(full=True, screen_stack=app._background_screens)
    cells = []
    for y, line in enumerate(update.strips):
        x = 0
        for strip in line:
            for segment in strip:
                if segment.control:
                    continue
                text, style = segment.text, segment.style
                x += len(text)  # cell_len: the app draws no wide characters where checked
                if not text.strip() or style is None:
                    continue
                widget = screen.get_widget_at(x - len(text), y)[0]
                if widget is screen and app._background_screens:
                    continue  # the screen under a dialog, seen through its tint
                color, background = style.color, style.bgcolor
                if style.reverse:
                    color, background = background, color
                assert color is not None and background is not None, (state, widget, text)
                name = (
                    f"{type(widget).__name__}#{widget.id}" if widget.id else type(widget).__name__
                )
                cells.append(Cell(state, name, text.strip(), color, background))
    return cells


async def visit_every_state(app) -> list[Cell]:
    """Drive the app through the states its styles apply in; the glyphs of each."""
    from textual.widgets import Input

    from spectui.screens.calibrate import CalibrateScreen
    from spectui.screens.presets import Confirm
    from spectui.widgets.run_view import RunView
    from spectui.widgets.sweep_view import SweepView
    from tests.app.helpers import settle, until

    found: list[Cell] = []
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        found += glyph_cells(app, "start")
        await pilot.press("f5")
        run = app.query_one(RunView)
        await until(pilot, lambda: run.result is not None and not run.busy)
        run.action_run_to_end()  # what key e does: every cycle shown
        await settle(pilot, app)
        assert run.table.shown == run.table.total > 0
        found += glyph_cells(app, "after a run")
        app.notify("information")
        app.notify("warning", severity="warning")
        app.notify("error", severity="error")
        await pilot.pause()
        found += glyph_cells(app, "toasts")
        app.clear_notifications()
        app.form.focus_field("k")
        app.form.set_field("k", "abc")
        await settle(pilot, app)
        found += glyph_cells(app, "an invalid field, focused")
        app.form.set_field("k", "5")
        await settle(pilot, app)
        # A sweep (the heatmap's cells, then the Plots and Analysis views have a frame) and
        # an arena (its table and trace plot): the tiny preset's take a few seconds.
        await pilot.press("f6")
        sweep = app.query_one(SweepView)
        await until(pilot, lambda: sweep.finished is not None)
        await settle(pilot, app)
        found += glyph_cells(app, "a sweep")
        await pilot.press("f7")
        await until(
            pilot,
            lambda: (
                app._arena_view() is not None
                and app._arena_view().result is not None
                and not app._arena_running()
            ),
        )
        await settle(pilot, app)
        found += glyph_cells(app, "an arena")
        for key, (view, _) in enumerate(VIEWS, start=1):
            await pilot.press("f3", str(key))
            await settle(pilot, app)  # the view mounted, its workers' results drawn
            found += glyph_cells(app, f"view {view}")
        for key, state in (("f1", "help"), ("ctrl+o", "presets"), ("ctrl+s", "save")):
            await pilot.press(key)
            await settle(pilot, app)
            found += glyph_cells(app, state)
            if state == "save":  # a name that is not one: the error under it
                app.screen.query_one("#save-name", Input).value = "no good"
                await pilot.press("enter")
                await pilot.pause()
                found += glyph_cells(app, "save, a bad name")
            await pilot.press("escape")
            await pilot.pause()
        app.push_screen(Confirm("Overwrite the preset?"))
        await pilot.pause()
        found += glyph_cells(app, "confirm")
        await pilot.press("n")
        await pilot.pause()
        await pilot.press("f8")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, CalibrateScreen)
        log = str(LOGS / "vllm_v1_mean_length.log")
        screen.load_file(log)
        await until(pilot, lambda: screen.analysis is not None and screen.analysis.done)
        await settle(pilot, app)
        assert screen.analysis.source == log and screen.analysis.recommendation is not None
        for pane, title in PANES:
            screen.action_pane(pane)
            await pilot.pause()
            found += glyph_cells(app, f"calibrate {title}")
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("ctrl+l")  # the Load screen (a small study: see the test)
        await until(pilot, lambda: "best:" in str(app.screen.query_one("#load-status").render()))
        await settle(pilot, app)
        found += glyph_cells(app, "load")
    return found


def invisible_glyphs(cells: list[Cell], system: ColorSystem) -> str:
    """Where a glyph reads at under MIN_CONTRAST: one line per widget and pair of colours."""
    invisible: dict[tuple[str, str, str], str] = {}
    for cell in cells:
        text, ground = rgb(cell.color, system), rgb(cell.background, system)
        ratio = contrast(text, ground)
        if ratio < MIN_CONTRAST:
            where = f"{cell.state}: {cell.glyphs[:12]!r} at {ratio:.2f}:1"
            invisible.setdefault((cell.widget, text, ground), where)
    return "\n".join(
        f"{widget}: {text} on {ground} ({where})"
        for (widget, text, ground), where in sorted(invisible.items())
    )


@pytest.mark.parametrize("no_color", [False, True], ids=["colour", "NO_COLOR"])
def test_no_glyph_is_invisible_in_any_colour_mode(no_color, monkeypatch):
    """The app's glyphs in every state, with colours and under NO_COLOR (the app then draws
    some things differently, and Textual turns every colour to grey), in each colour system.
    One walk per colour mode, checked for all three systems: a walk is built once, and the
    two can run in two test processes."""
    from spectui.app import create_app

    monkeypatch.setenv("SPECTUI_HIDE_TIMINGS", "1")
    # The sweep in a thread of the app (as SPECTUI_SWEEP_WORKERS=0): its view draws the
    # same; no process to start and import numpy and pandas in.
    monkeypatch.setenv("SPECTUI_SWEEP_WORKERS", "0")
    if no_color:
        monkeypatch.setenv("NO_COLOR", "1")
    else:
        monkeypatch.delenv("NO_COLOR", raising=False)
    # The Load screen's study kept small: one level, two policies, 20 requests.
    from spectui.screens import load as load_screen

    small = {"rate": (4.0,), "policies": ("off", "fixed"), "requests": 20, "replications": 1}
    monkeypatch.setattr(load_screen, "DEFAULTS", small)
    # The replay is shown to its end at once (key e's action), not ticked all along.
    app = create_app("tiny", replay_autoplay=False)
    assert app.no_color is no_color
    every_glyph = asyncio.run(visit_every_state(app))

    states = {cell.state for cell in every_glyph}
    seen = {"start", "after a run", "toasts", "an invalid field, focused", "a sweep"}
    seen |= {"an arena", "help", "presets", "save", "save, a bad name", "confirm"}
    seen |= {f"view {view}" for view, _ in VIEWS} | {f"calibrate {title}" for _, title in PANES}
    seen |= {"load"}
    assert seen <= states

    # The two borders, the Exact panel's and the acc@i box's (black on black under
    # NO_COLOR): drawn, and read in 16 colours.
    boxes = ("ExactPanel#exact", "PositionBar#position-bar")
    borders = [c for c in every_glyph if c.widget in boxes and c.glyphs[0] in "╭╮╰╯"]
    assert {c.widget for c in borders} == set(boxes)
    assert invisible_glyphs(borders, ColorSystem.STANDARD) == ""

    invisible = "\n".join(
        f"{system.name}: {line}"
        for system in SYSTEMS
        for line in invisible_glyphs(every_glyph, system).splitlines()
    )
    assert invisible == ""
