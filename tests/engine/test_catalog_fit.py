"""From catalog rows to a registered acceptance model (engine.acceptance.catalog_fit):
hand-worked fits, the rule that picks the model, the assumed K, and the shipped catalog."""

from __future__ import annotations

import math
from itertools import pairwise

import pytest

import engine  # noqa: F401  (registers the parts)
from engine.acceptance.catalog import Row, load_catalog
from engine.acceptance.catalog_fit import FIT_TOLERANCE, fit_rows, row_k, setups
from engine.core.config import FIELD_SPECS, SpecConfig


def _row(row_id: str, k: int | None, value: float | None = None, **extra: object) -> Row:
    fields: dict[str, object] = {
        "id": row_id,
        "method": "EAGLE",
        "target": "t",
        "dataset": "d",
        "shape": "chain",
        "measure": "mean_length",
        "printed": "as printed",
        "source": "a source",
        "url": "https://example.org",
        "read": "2026-12-08",
        "series": "s",
        "k": k,
        "value": value,
        "bonus": True,
    }
    fields.update(extra)
    return Row(**fields)  # type: ignore[arg-type]


def test_one_row_at_one_k_is_a_fixed_rate_exact_there() -> None:
    # M = 3.0 at K = 3: 1 + a + a^2 + a^3 = 3. By hand: a = 0.8105 gives
    # 0.8105 + 0.65691 + 0.53243 = 1.99984 and a = 0.8106 gives 2.00046, so a = 0.8105(4).
    fit = fit_rows([_row("one", 3, 3.0)])
    assert fit.model == "fixed"
    assert fit.values["draft_model"] == "fixed"
    assert fit.values["acceptance_rate"] == pytest.approx(0.81054, abs=1e-5)
    assert fit.mean_length(3) == pytest.approx(3.0, abs=1e-5)
    (error,) = fit.errors
    assert (error.row_id, error.k, error.measured) == ("one", 3, 3.0)
    assert error.error == pytest.approx(0.0, abs=1e-5)
    assert fit.assumed == "exact at one point (K = 3): M at other K is the model's"
    assert fit.describe() == (
        "fixed rate 0.811, fitted to 1 row of one (max error 0.0 %); "
        "exact at one point (K = 3): M at other K is the model's"
    )
    # The values are a scenario: the M at K = 1 is 1 + a.
    assert SpecConfig().replace(**fit.values, k=1).acceptance_rate == fit.values["acceptance_rate"]
    assert fit.mean_length(1) == pytest.approx(1.81054, abs=1e-5)


def test_a_saturating_series_is_position_decay() -> None:
    # p_i = 0.8 * 0.9^(i-1): M(1) = 1.8, M(2) = 1.8 + 0.8^2 * 0.9 = 2.376,
    # M(3) = 2.376 + 0.8^3 * 0.9^3 = 2.749248, M(4) = 2.749248 + 0.8^4 * 0.9^6 = 2.966926;
    # printed to three decimals. No constant rate is within 1 % of all four (M(1) = 1.8
    # needs a = 0.8, whose M(4) = 3.3616 is 13 % high).
    series = [(1, 1.8), (2, 2.376), (3, 2.749), (4, 2.967)]
    fit = fit_rows([_row(f"k{k}", k, m) for k, m in series])
    assert fit.model == "position_decay"
    assert fit.parameters == 2
    assert fit.values["decay_base"] == pytest.approx(0.8, abs=2e-3)
    assert fit.values["decay_factor"] == pytest.approx(0.9, abs=2e-3)
    assert fit.max_error < 1e-3
    assert [e.row_id for e in fit.errors] == ["k1", "k2", "k3", "k4"]
    assert fit.describe().startswith("position_decay base 0.8 factor 0.9, fitted to 4 rows of s")
    # Saturates: it rises ever less.
    gains = [fit.mean_length(k + 1) - fit.mean_length(k) for k in range(1, 8)]
    assert all(b < a for a, b in pairwise(gains))


def test_a_falling_series_is_depth_rates_with_its_error_shown() -> None:
    # M rises to K = 3 and falls beyond (a drafter trained for depth 3): no position model
    # can fall. depth_rates takes at each K the constant rate with that M: at K = 2,
    # 1 + a + a^2 = 2.5, a = (-1 + sqrt(7)) / 2 = 0.822876; at K = 4, M = 2.2 between.
    series = [(2, 2.5), (3, 2.8), (4, 2.2)]
    fit = fit_rows([_row(f"k{k}", k, m) for k, m in series])
    assert fit.model == "depth_rates"
    rates = [float(x) for x in fit.values["acceptance.depth_rates"].split(",")]
    assert len(rates) == 4  # K = 1..4; K = 1 takes K = 2's rate
    assert rates[0] == rates[1] == pytest.approx((math.sqrt(7) - 1) / 2, abs=1e-6)
    assert [round(fit.mean_length(k), 4) for k in (2, 3, 4)] == [2.5, 2.8, 2.2]
    assert [e.error for e in fit.errors] == pytest.approx([0, 0, 0], abs=1e-5)
    assert fit.mean_length(4) < fit.mean_length(3)
    assert "depth_rates" in fit.describe() and "(max error 0.0 %)" in fit.describe()
    assert fit.assumed == "3 parameters for 3 points: M between and beyond them is the model's"


def test_a_k_between_measured_ones_is_interpolated() -> None:
    # Measured at K = 2 (a_2 = 0.822876) and K = 4 (1 + a + ... + a^4 = 2.2; by hand
    # a = 0.5737 gives 1 + .5737 + .32913 + .18882 + .10833 = 2.19998): a_3 halfway.
    fit = fit_rows([_row("k2", 2, 2.5), _row("k4", 4, 2.2)])
    assert fit.model == "depth_rates"
    a1, a2, a3, a4 = (float(x) for x in fit.values["acceptance.depth_rates"].split(","))
    assert a4 == pytest.approx(0.5737, abs=1e-4)
    assert a1 == a2 == pytest.approx(0.822876, abs=1e-6)
    assert a3 == pytest.approx((a2 + a4) / 2, abs=1e-6)


def test_per_position_rates_are_judged_at_every_prefix() -> None:
    # Cumulative rates r = 0.5, 0.45, 0.405 (an n-gram's: a first token often wrong, the
    # rest of a match right): M of the prefixes 1.5, 1.95, 2.355. The conditional rates
    # 0.5, 0.9, 0.9 rise, which neither a constant nor a decay can, so per_position (three
    # parameters) gives them back exactly.
    rates = (0.5, 0.45, 0.405)
    row = _row("rates", 3, None, measure="cumulative_rates", rates=rates, bonus=None)
    fit = fit_rows([row])
    assert [(p.positions, round(p.measured, 6)) for p in fit.points] == [
        (1, 1.5),
        (2, 1.95),
        (3, 2.355),
    ]
    assert fit.model == "per_position"
    assert fit.values["acceptance.rates"] == "0.5,0.9,0.9"
    assert fit.mean_length(3) == pytest.approx(2.355, abs=1e-9)
    assert [e.positions for e in fit.errors] == [3]


def test_a_row_without_k_says_the_k_it_assumed() -> None:
    default = FIELD_SPECS["k"].default
    fit = fit_rows([_row("nok", None, 3.57, shape="tree")])
    assert row_k(fit.rows[0]) == (default, True)
    assert fit.assumed is not None and f"K = {default} assumed" in fit.assumed
    assert f"K = {default} assumed" in fit.describe()
    assert "a tree fitted as a chain of its depth" in fit.describe()
    # M = 6.42 needs more than a chain of 5 can give (6): K = floor(6.42) = 6.
    assert row_k(_row("big", None, 6.42)) == (6, True)
    assert fit_rows([_row("big", None, 6.42)]).mean_length(6) == pytest.approx(6.42, abs=1e-5)


def test_the_rule_prefers_fewer_parameters_within_the_tolerance() -> None:
    # Two points a constant rate 0.7 gives (M(2) = 2.19, M(4) = 2.7731, to 4 decimals):
    # fixed is within the tolerance, so neither position_decay nor depth_rates is chosen.
    fit = fit_rows([_row("k2", 2, 2.19), _row("k4", 4, 2.7731)])
    assert fit.model == "fixed"
    assert fit.values["acceptance_rate"] == pytest.approx(0.7, abs=1e-4)
    assert fit.max_error <= FIT_TOLERANCE


def test_no_rows_is_refused() -> None:
    with pytest.raises(ValueError, match="no catalog rows"):
        fit_rows([])


def test_every_setup_of_the_shipped_catalog_fits() -> None:
    catalog = load_catalog()
    groups = setups(catalog.rows)
    assert sum(len(g) for g in groups) == len(catalog.rows)
    for group in groups:
        fit = fit_rows(group)
        assert fit.model in {"fixed", "position_decay", "per_position", "depth_rates"}
        assert math.isfinite(fit.max_error)
        assert len(fit.errors) == len(group)
        for k in range(1, 9):
            assert 1.0 <= fit.mean_length(k) <= k + 1
        if any(row.k is None for row in group):
            assert fit.assumed is not None and "assumed" in fit.assumed


def test_the_vllm_20780_eagle1_rows_saturate_under_position_decay() -> None:
    # AL 2.1, 2.29, 2.39, 2.43, 2.45, 2.47 at K = 2..7 (vLLM issue 20780): they rise ever
    # less; a decay fits every one within 1 %.
    rows = [row for row in load_catalog().rows if row.series == "vllm-20780-eagle1"]
    fit = fit_rows(rows)
    assert fit.model == "position_decay"
    assert fit.max_error < FIT_TOLERANCE
    assert [round(e.measured, 2) for e in fit.errors] == [2.1, 2.29, 2.39, 2.43, 2.45, 2.47]


def test_rows_that_disagree_are_not_called_exact() -> None:
    # M = 2.0 and 2.4 at K = 3 (one point, two measurements): the least squares of the
    # relative errors puts M at (2/4 + 2.4/5.76) / (1/4 + 1/5.76) = 2.16393, +8.2 % and
    # -9.8 %; no candidate can do better at one point, so the fewest parameters win.
    fit = fit_rows([_row("a", 3, 2.0), _row("b", 3, 2.4)])
    assert fit.model == "fixed"
    assert fit.mean_length(3) == pytest.approx(2.16393, abs=1e-4)
    assert [round(100 * e.error, 1) for e in fit.errors] == [8.2, -9.8]
    assert fit.assumed is None
    assert fit.describe().endswith("fitted to 2 rows of s (max error 9.8 %)")


def test_a_k_beyond_a_scenarios_is_refused() -> None:
    from engine.core.config import K_MAX

    with pytest.raises(ValueError, match=f"row deep: K = {K_MAX + 1} is beyond"):
        fit_rows([_row("deep", K_MAX + 1, 3.0)])
