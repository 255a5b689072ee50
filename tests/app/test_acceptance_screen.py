"""The Acceptance screen in a small host app: the catalog's rows narrowed by the filters (the
counts read from the catalog here), a setup's fit line, curve, errors and source, ``f``
sending the fit's acceptance to the form, escape closing, at 80x24 without colour."""

from __future__ import annotations

import pytest
from textual.app import App
from textual.widgets import DataTable, Select

from engine.acceptance.catalog import CatalogError, load_catalog, parse_catalog
from engine.core.config import SpecConfig
from spectui.screens.acceptance import AcceptanceScreen
from tests.app.helpers import APP_CSS, until
from tests.app.screen import screen_text

# Two setups, worked by hand. "one": M = 3.00 at K = 3 with the bonus token, one point: a
# fixed rate a with 1 + a + a^2 + a^3 = 3, a = 0.8105 (0.8105: 2.99984), so M by K is
# 1.81, 2.47, 3.00, 3.43 (3 + a^4) at K = 1..4. "half": M = 1.75 at K = 2 and 1.9375 at
# K = 4, both 1 + 0.5 + ... + 0.5^K: a fixed rate 0.5 with no error, M(1) = 1.5, M(3) = 1.875.
SMALL = """
[[row]]
id = "one"
method = "EAGLE-3"
target = "org/Target-8B"
draft = "org/Head-8B"
dataset = "MT-Bench"
temperature = 0.0
shape = "chain"
k = 3
measure = "mean_length"
value = 3.0
bonus = true
printed = "tau 3.00"
source = "Paper One, Table 2"
url = "https://example.org/one"
read = "2026-12-08"

[[series]]
id = "half-series"
method = "draft model"
target = "org/Other-70B"
dataset = "GSM8K"
shape = "chain"
measure = "mean_length"
bonus = true
source = "Paper Two, Figure 3"
url = "https://example.org/two"
read = "2026-12-08"

[[row]]
id = "half-2"
series = "half-series"
k = 2
value = 1.75
printed = "1.75 at K=2"

[[row]]
id = "half-4"
series = "half-series"
k = 4
value = 1.9375
printed = "1.9375 at K=4"
"""


class AcceptanceHost(App[None]):
    CSS_PATH = APP_CSS

    def __init__(self, config, catalog=None) -> None:
        super().__init__()
        self.config = config
        self.catalog = catalog
        self.sent = []

    def on_mount(self) -> None:
        self.push_screen(AcceptanceScreen(self.config, self.catalog), self.sent.append)


def _table(app) -> DataTable:
    return app.screen.query_one(DataTable)


def _fit(app) -> str:
    """The fit pane's text (as it wraps on screen, unwrapped)."""
    return app.screen.query_one("#acc-fit").content.plain


def _column(app, header: str) -> list[str]:
    table = _table(app)
    return [str(value) for value in table.get_column(header)]


async def _choose(pilot, app, name: str, value: str) -> None:
    """Choose ``value`` in the filter ``name`` from the keyboard: focus it, open its list,
    down to the option (the blank "any" first), enter."""
    select = app.screen.query_one(f"#acc-{name}", Select)
    values = [None, *app.screen.labels[name]]
    select.focus()
    await pilot.press("enter")
    for _ in range(values.index(value)):
        await pilot.press("down")
    await pilot.press("enter")
    await until(pilot, lambda: select.value == value)


async def test_the_filters_narrow_the_rows_to_those_the_catalog_has(monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    catalog = load_catalog()
    method = "EAGLE-3"
    with_method = [row for row in catalog.rows if row.method == method]
    target = with_method[-1].target
    with_both = [row for row in with_method if row.target == target]
    assert len(catalog.rows) > len(with_method) > len(with_both) > 0
    app = AcceptanceHost(SpecConfig())
    async with app.run_test(size=(80, 24)) as pilot:
        await until(
            pilot, lambda: f"{len(catalog.rows)} of {len(catalog.rows)} rows" in screen_text(app)
        )
        assert _table(app).row_count == len(catalog.rows)
        await _choose(pilot, app, "method", method)
        await until(
            pilot, lambda: f"{len(with_method)} of {len(catalog.rows)} rows" in screen_text(app)
        )
        assert _table(app).row_count == len(with_method)
        assert set(_column(app, "method")) == {method}
        await _choose(pilot, app, "target", target)
        await until(
            pilot, lambda: f"{len(with_both)} of {len(catalog.rows)} rows" in screen_text(app)
        )
        shown = [k.value for k in _table(app).rows]  # grouped by setup, each row once
        assert len(shown) == len(with_both) and set(shown) == {row.id for row in with_both}
        # The first matching row's setup is shown: its method, its full target, its source.
        await until(pilot, lambda: "fit: " in screen_text(app))
        assert app.screen.current.rows[0].id == with_both[0].id
        await pilot.press("c")  # every filter cleared: every row again
        await until(pilot, lambda: _table(app).row_count == len(catalog.rows))


async def test_a_setup_shows_its_fit_curve_errors_and_source_and_f_sends_it(monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    form = SpecConfig().replace(k=7, draft_cost_us=123.0)
    app = AcceptanceHost(form, parse_catalog(SMALL, "small.toml"))
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: "fitted M by K: 1 1.81  2 2.47  3 3.00  4 3.43" in _fit(app))
        text = screen_text(app)
        assert "3 of 3 rows, 2 setups" in text
        assert "fixed rate 0.81" in _fit(app) and "fitted to 1 row of one" in _fit(app)
        assert [int(v) for v in _column(app, "setup")] == [1, 2, 2]
        assert _column(app, "M") == ["3.00", "1.75", "1.94"]
        # The second setup: two rows, a rate of one half with no error against either.
        await pilot.press("down")
        await until(pilot, lambda: "fitted M by K: 1 1.50  2 1.75  3 1.88  4 1.94" in _fit(app))
        fit_text = _fit(app)
        assert "fixed rate 0.5, fitted to 2 rows of half-series" in fit_text
        assert "K 2: measured 1.75, fitted 1.75 (+0.0 %) · half-2" in fit_text
        assert "K 4: measured 1.94, fitted 1.94 (+0.0 %) · half-4" in fit_text
        assert "source: Paper Two, Figure 3" in fit_text and "https://example.org/two" in fit_text
        assert "1.9375 at K=4 (mean accepted length, bonus included; M 1.94)" in fit_text
        # The chart's measured points: an x at K 2 and K 4 (the fit's line is of dots).
        chart = app.screen.query_one("#acc-chart").render().plain
        assert chart.count("x") == 2 and "•" in chart
        await pilot.press("up")  # back to the first setup, fitted already
        await until(pilot, lambda: "fitted to 1 row of one" in _fit(app))
        await pilot.press("f")
        await until(pilot, lambda: app.sent)
    sent = app.sent[0]
    assert sent.draft_model == "fixed" and sent.acceptance_rate == pytest.approx(0.8105, abs=5e-5)
    assert sent.k == 7 and sent.draft_cost_us == 123.0  # the rest of the form is kept


async def test_escape_closes_and_f_without_a_valid_form_says_why(monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    app = AcceptanceHost(None, parse_catalog(SMALL, "small.toml"))
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: "fitted M by K" in screen_text(app))
        text = screen_text(app)
        for key in ("esc Close", "f Fit to the form", "c Clear filters"):
            assert key in text  # the keys, at 80x24
        await pilot.press("f")
        await until(pilot, lambda: "the form has an invalid field" in screen_text(app))
        assert app.sent == []
        await pilot.press("escape")
        await until(pilot, lambda: app.sent)
        assert app.sent == [None] and not isinstance(app.screen, AcceptanceScreen)


async def test_filters_with_no_common_row_and_an_unreadable_catalog_say_so(monkeypatch):
    app = AcceptanceHost(SpecConfig(), parse_catalog(SMALL, "small.toml"))
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: "fitted M by K" in screen_text(app))
        await _choose(pilot, app, "method", "EAGLE-3")
        await _choose(pilot, app, "dataset", "gsm8k")
        await until(pilot, lambda: "no row has method EAGLE-3, dataset GSM8K" in screen_text(app))
        assert _table(app).row_count == 0
        await pilot.press("f")  # nothing to send
        await until(pilot, lambda: "no fit to send" in screen_text(app))

    def broken(path=None):
        raise CatalogError("catalog.toml: row x: field 'value' must be in [1, K + 1]")

    monkeypatch.setattr("engine.acceptance.catalog.load_catalog", broken)
    app = AcceptanceHost(SpecConfig())
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: "the catalog cannot be read (below)" in screen_text(app))
        shown = " ".join(line.strip() for line in screen_text(app).splitlines())
        assert "catalog.toml: row x: field 'value' must be in [1, K + 1]" in shown


async def test_a_setup_that_cannot_be_fitted_says_why_and_an_error_keeps_its_sign(monkeypatch):
    """The screen shows what the fit gives: a setup no model fits (fit_rows raises) is one
    line, and f has nothing to send; a fitted M 5 % above the measured one is "+5.0 %"."""
    from engine.acceptance import catalog_fit

    def fit_rows(rows):
        rows = tuple(rows)
        if rows[0].id == "one":
            raise ValueError("no model fits these rows")
        point = catalog_fit.FitPoint("half-2", 2, 2, 1.75, 1.75 * 1.05)
        values = {"draft_model": "fixed", "acceptance_rate": 0.5}
        return catalog_fit.CatalogFit("fixed", values, 1, rows, (point,), None, "half-series")

    monkeypatch.setattr(catalog_fit, "fit_rows", fit_rows)
    app = AcceptanceHost(SpecConfig(), parse_catalog(SMALL, "small.toml"))
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: "no fit: no model fits these rows" in _fit(app))
        await pilot.press("f")
        await until(pilot, lambda: "no fit to send" in screen_text(app))
        await pilot.press("down")
        await until(pilot, lambda: "K 2: measured 1.75, fitted 1.84 (+5.0 %) · half-2" in _fit(app))
    assert app.sent == []
