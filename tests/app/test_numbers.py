"""Numbers in the app: one formatter, width-limited, engineering notation beyond the width."""

from __future__ import annotations

import math
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from textual.app import App
from textual.containers import Vertical

import spectui
from engine.core.config import SpecConfig
from spectui.widgets.common import FMT_WIDTH, fmt
from spectui.widgets.exact_panel import ExactPanel
from tests.app.screen import screen_lines


def test_fixed_point_while_it_fits():
    assert fmt(2.4237) == "2.424"
    assert fmt(1025.0) == "1025.000"
    assert fmt(-3.5, digits=1) == "-3.5"
    assert fmt(0.0) == "0.000"
    assert fmt(float("nan")) == "—" and fmt(None) == "—"
    assert fmt(float("inf")) == "inf"


def test_engineering_notation_beyond_the_width_or_below_the_digits():
    assert fmt(2e301) == "20.0e300"  # cost ratio at verify = 1e-300 us
    assert fmt(1.999999999e300) == "2.00e300"
    assert fmt(-123456.0) == "-123e3"
    assert fmt(999999.9) == "1.00e6"  # rounding carries into the next exponent
    assert fmt(1e-300) == "1.00e-300"
    assert fmt(0.0004) == "400e-6"  # not "0.000": a non-zero value never reads as zero (cards:
    # a half-width below the last digit shown is "±<0.001", see below)
    assert fmt(5e-324) == "4.94e-324"


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_every_float_fits_in_ten_characters_and_reads_back_close(value):
    text = fmt(value)
    assert len(text) <= max(FMT_WIDTH, 10)
    if value == 0 or abs(value) > 1e307:  # 1.795e308 is "180e306", which overflows back
        return
    assert float(text) != 0
    if "e" in text:  # three significant digits
        assert math.isclose(float(text), value, rel_tol=5e-3)
    else:  # fixed point, three decimals
        assert abs(float(text) - value) <= 0.0005 + 1e-12 * abs(value)


async def test_exact_panel_at_extreme_values_keeps_one_line_per_figure():
    config = SpecConfig(verify_cost_us=1e-3, draft_cost_us=1e9)
    figures = {
        "speedup_exact": 36.4e-300,  # verify = 1e-300 us: the widest a figure gets
        "speedup_limit": 2.0000000001e-12,
        "tokens_per_cycle_exact": 1024.9999,
        "breakeven_cost_ratio": 1.999999999e300,
        "cost_ratio": config.cost_ratio,
        "limit_draft_us": 5 * 1e9,
        "limit_verify_us": 1e-3,
        "limit_step_us": 1e-3,
        "bound": "compute",  # the widest word
    }
    panel = ExactPanel(id="exact")

    class Host(App[None]):  # the panel in the app's side column, with the app's styles
        CSS_PATH = str(Path(spectui.__file__).parent / "app.tcss")

        def compose(self):
            with Vertical(id="side"):
                yield panel

    async with Host().run_test(size=(40, 12)) as pilot:
        panel.show_figures(config, figures)
        await pilot.pause()
        lines = [line[:26] for line in screen_lines(pilot.app)]
        assert panel.size.height == 10  # one row per figure and "per cycle:": nothing wrapped
        shown = "\n".join(lines)
        for label, value in (
            ("speedup ", "36.4e-300"),
            ("speedup T→∞", "2.00e-12"),
            ("tokens/cyc", "1025.000"),
            ("cost ratio", "1.00e12"),
            ("breakeven c", "2.00e300"),
            (" draft us", "5.00e9"),
            (" verify us", "0.001"),
            ("  bound", "compute"),
            ("step us", "0.001"),
        ):
            assert any(label in line and value in line for line in lines), shown


def test_a_losing_speedup_never_reads_as_break_even_in_a_card_or_panel():
    assert fmt(0.9996, speedup=True) == "0.999"
    assert fmt(0.9996) == "1.000"  # a plain number rounds as usual
    assert fmt(1.0004, speedup=True) == "1.000"
    assert fmt(36.4e-300, speedup=True) == fmt(36.4e-300)  # too small: engineering either way


async def test_a_long_runs_cards_read_as_numbers():
    """27,805,132 cycles (issue 22): the count with separators, as the CLI writes it, and a
    half-width below the speedup's last digit as "±<0.001", not "±487e-6"."""
    from spectui.widgets.summary_cards import SummaryCards

    cards = SummaryCards()

    class Host(App[None]):  # the cards as wide as beside the form at 80 columns
        CSS_PATH = str(Path(spectui.__file__).parent / "app.tcss")

        def compose(self):
            yield cards

    metrics = {
        "speedup": 2.4312,
        "speedup_ci95": 0.000487,
        "speedup_exact": 2.424,
        "tokens_per_cycle": 3.7,
        "tokens_per_cycle_exact": 3.689,
        "acceptance_observed": 0.54,
        "waste": 0.467,
        "draft_time_fraction": 0.333,
        "cycles": 27805132.0,
    }
    async with Host().run_test(size=(54, 8)) as pilot:
        cards.show(metrics)
        await pilot.pause()
        shown = "\n".join(screen_lines(pilot.app))
        assert "│ 2.431 ±<0.001 │" in shown, shown
        assert "│ 27,805,132 " in shown, shown
        cards.show({**metrics, "speedup_ci95": 0.019})
        await pilot.pause()
        assert "│ 2.431 ±0.019 " in "\n".join(screen_lines(pilot.app))


async def test_a_rejected_number_reads_as_typed_and_f5_names_the_forms_label():
    from spectui.app import create_app
    from tests.app.helpers import notifications, type_into, until

    app = create_app("tiny")
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.form.ready)
        await type_into(pilot, app, "acceptance_rate", "9")
        await until(pilot, lambda: "▌✗ 9 is not allowed" in "\n".join(screen_lines(app)))
        shown = "\n".join(screen_lines(app))
        assert "▌✗ 9 is not allowed" in shown, shown
        assert "9.0" not in shown
        await until(pilot, lambda: app.config is None)
        await pilot.press("f5")
        await until(pilot, lambda: "Cannot run: fix accept first." in notifications(app))


async def test_a_runs_cycle_counts_have_separators():
    """The Run view beside the form, at 80 columns (tests.app.hosts_run)."""
    from tests.app.helpers import until
    from tests.app.hosts_run import RunHost, run_finished, tiny

    app = RunHost()
    async with app.run_test(size=(80, 24)) as pilot:
        view = await run_finished(pilot, app, tiny().replace(n_sequences=200))  # ~2,000 cycles
        cycles = int(view.result.metrics["cycles"])
        assert cycles >= 1000
        with_commas = f"{cycles // 1000},{cycles % 1000:03d}"
        await until(pilot, lambda: f"/{with_commas} · " in "\n".join(screen_lines(app)))
        shown = "\n".join(screen_lines(app))
        assert f"│ {with_commas} " in shown, shown  # the card
        assert f"/{with_commas} · " in shown, shown  # the replay's status line
