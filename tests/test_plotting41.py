"""Issue #41: y ticks at round values the same rows apart (spectui.plotting.chart_style's
even_ticks, the Load screen's chart), checked by hand and in what plotext draws."""

from __future__ import annotations

import itertools

import pytest

from spectui.plotting.chart_style import even_ticks, tick_labels


def test_the_finest_rows_that_hold_the_values_with_ticks_on_round_values():
    # 0.08..0.20 on 6 rows: rows of at least 0.12/5 = 0.024; the roundest such, 0.025
    # (0.05 every two rows), from 0.075 (a whole number of rows), reaches 0.075 + 5 x 0.025.
    assert even_ticks(0.08, 0.20, 6) == (pytest.approx(0.075), 0.2, [0.1, 0.15, 0.2])
    # 125.7..2009.9 on 12 rows: rows of at least 1884.2/11 = 171.3; 250 (500 every two
    # rows: six ticks, where 1000 every four gives three) from 0 to 11 x 250.
    assert even_ticks(125.7, 2009.9, 12) == (0.0, 2750.0, [0, 500, 1000, 1500, 2000, 2500])
    # Fewer than five rows: a tick on every row.
    assert even_ticks(0.08, 0.20, 4) == (0.05, 0.2, [0.05, 0.1, 0.15, 0.2])


def test_one_value_gets_rows_above_and_below():
    # 0.2 alone: 0.18..0.22 (10 % each way); rows of 0.01 from 0.18, a tick every 0.02.
    assert even_ticks(0.2, 0.2, 6) == (0.18, pytest.approx(0.23), [0.18, 0.2, 0.22])
    # Two lines equal but for rounding noise: one value (not ticks 1e-13 apart).
    assert even_ticks(0.2, 0.2 + 1e-12, 6) == even_ticks(0.2, 0.2, 6)


def test_tick_labels_share_their_decimals():
    assert tick_labels([0.1, 0.15, 0.2]) == ["0.10", "0.15", "0.20"]
    assert tick_labels([0, 500, 1000]) == ["0", "500", "1000"]
    assert tick_labels([2.5, 5.0]) == ["2.5", "5.0"]


def drawn_ticks(low: float, high: float, rows: int) -> list[tuple[int, str]]:
    """The y tick labels plotext draws for ``even_ticks`` on a plot area ``rows`` high,
    each with its line of the figure."""
    from textual_plotext.plot import Plot

    plt = Plot()
    bottom, top, ticks = even_ticks(low, high, rows)
    plt.plot([1, 2], [low, high], marker="•")
    plt.xlabel("x")
    plt.ylim(bottom, top)
    plt.yticks(ticks, tick_labels(ticks))
    # The frame, the x ticks and the labels' row around the plot area; sized as the app's
    # widget sizes it (textual_plotext's PlotextPlot.render).
    plt.plotsize(40, rows + 4)
    plt._set_size(40, rows + 4)
    lines = plt.uncolorize(plt.build()).splitlines()
    return [(n, line.split("┤")[0].strip()) for n, line in enumerate(lines) if "┤" in line]


@pytest.mark.parametrize("values", [(0.08, 0.20), (125.7, 2009.9), (3.93, 15.7)])
def test_plotext_draws_the_ticks_the_same_rows_apart(values):
    for rows in range(4, 21):
        drawn = drawn_ticks(*values, rows)
        lines = [n for n, _ in drawn]
        assert len(drawn) >= (3 if rows >= 7 else 2), (rows, drawn)
        assert len({b - a for a, b in itertools.pairwise(lines)}) == 1, (rows, drawn)
        _, _, ticks = even_ticks(*values, rows)
        assert [label for _, label in drawn] == tick_labels(ticks)[::-1]
