"""Every (text, background) pair the heatmap can produce reads at WCAG contrast >= 4.5:1, in
truecolor and after rich's downgrade to 256 and to 16 colours. (Issue 9, item 3.)"""

from __future__ import annotations

import math

import pytest
from rich._palettes import EIGHT_BIT_PALETTE, STANDARD_PALETTE
from rich.color import Color, ColorSystem, ColorType
from rich.console import Console

from spectui.colours import HEAT_SCALE, contrast, heat_style, speedup_background

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
