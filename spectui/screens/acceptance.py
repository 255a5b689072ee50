"""The Acceptance screen (ctrl+g): the acceptance catalog (engine.acceptance.catalog), its
rows filtered by method, target, draft and dataset, and the fit of one setup (issue #42).

Four filters on the top line (each a list of the catalog's own names, read from the
catalog), then a table of the rows that match, grouped by setup (the rows fitted together,
engine.acceptance.catalog_fit.setup_key: one source's series on one method, target,
draft, dataset, temperature, shape, engine and hardware; only K differs), numbered: each
row's method, target, draft, dataset, temperature, shape and K, the measure as printed with
its definition, M converted (:func:`~engine.acceptance.catalog.to_mean_length`, bonus
included) and its source. Under it, for the setup of the highlighted row: the fitted mean
accepted length M by K = 1..8 (engine.acceptance.catalog_fit, fitted off the app's thread)
as a chart with the measured points, the fit's line and what it assumed, its error against
each row, and each row's source and address. ``f`` sends the fit's acceptance values to
the form (the screen is dismissed with the form's scenario under them, as the Lab's ``f``
does); Escape closes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import DataTable, Select, Static

from spectui.plotting.chart_style import even_ticks, tick_labels
from spectui.widgets.common import ReportsWorkerErrors
from spectui.widgets.footer import KeysFooter
from spectui.widgets.plot import Plot

CHART_KS = 8  # the fitted curve is drawn at K = 1..8, further if a row was measured further
CHART_MAX_K = 32  # and never further than this (a row's K is unbounded in the file)
FIT_MARK = "•"  # the fitted curve's character: whole characters, told apart under NO_COLOR
ROW_MARK = "x"  # a measured row's
FIT_COLOUR = (0, 130, 200)
ROW_COLOUR = (230, 25, 75)
# What plotext draws around the plot area: the frame (a row above, a row below), the x tick
# labels and the axis labels' row (as the Load screen's chart).
FRAME_ROWS = 4
CELL_WIDTH = 24  # a table cell's text beyond this is cut (the fit pane has it whole)
FILTERS = (  # (the filter's id, the prompt a blank filter shows)
    ("method", "method: any"),
    ("target", "target: any"),
    ("draft", "draft: any"),
    ("dataset", "dataset: any"),
)


def _cut(text: str | None, width: int = CELL_WIDTH) -> str:
    if not text:
        return "-"
    return text if len(text) <= width else text[: width - 1] + "…"


def _percent(error: float) -> str:
    """A relative error as "+0.3 %" (never "-0.0 %")."""
    value = round(100 * error, 1)
    return f"{value if value else 0.0:+.1f} %"


def _temperature(row: Any) -> str:
    return "-" if row.temperature is None else f"{row.temperature:g}"


def _shape(row: Any) -> str:
    text = row.shape if row.k is None else f"{row.shape} K {row.k}"
    return text if row.tree_nodes is None else f"{text}, {row.tree_nodes} nodes"


def _definition(row: Any) -> str:
    """The row's measure in words (the command line's definitions, one list)."""
    from spectui.cli.acceptance import definition

    return str(definition(row))


# The table's columns: (header, the cell of a row of a setup). The target without its owner
# (the fit pane names it whole), long texts cut (the fit pane has them whole).
COLUMNS: tuple[tuple[str, Callable[[Any, Any], str]], ...] = (
    ("setup", lambda setup, row: str(setup.number)),
    ("method", lambda setup, row: row.method),
    ("target", lambda setup, row: _cut(row.target.rsplit("/", 1)[-1])),
    ("dataset", lambda setup, row: _cut(row.dataset)),
    ("shape", lambda setup, row: _shape(row)),
    ("M", lambda setup, row: f"{row.mean_length:.2f}"),
    ("T", lambda setup, row: _temperature(row)),
    ("draft", lambda setup, row: _cut(row.draft)),
    ("as printed", lambda setup, row: _cut(row.printed, 40)),
    ("measure", lambda setup, row: _definition(row)),
    ("source", lambda setup, row: _cut(row.source, 40)),
)


@dataclass
class Setup:
    """The rows of one setup that match the filters, numbered in the table's order."""

    number: int
    key: tuple[object, ...]
    rows: list[Any] = field(default_factory=list)


@dataclass
class Fitted:
    """A setup's fit (None if it could not be fitted, ``problem`` says why) and its curve
    (M at K = 1..len(curve))."""

    fit: Any
    curve: list[float]
    problem: str | None = None


@dataclass
class FitDone(Message):
    """The fit of the setup ``key`` finished."""

    key: tuple[object, ...]
    fitted: Fitted


class AcceptanceChart(Plot):
    """The fitted M by K (a line of :data:`FIT_MARK`) and the measured rows (:data:`ROW_MARK`
    at the K each was fitted at)."""

    def draw(self, curve: Sequence[float], measured: Sequence[tuple[int, float]]) -> None:
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        plt.xlabel("K (drafts per step)")
        plt.ylabel("M")
        values = [v for v in curve if math.isfinite(v)] + [m for _, m in measured]
        if values:
            ks = list(range(1, len(curve) + 1))
            low, high, ticks = even_ticks(min(values), max(values), self.size.height - FRAME_ROWS)
            plt.ylim(low, high)
            plt.yticks(ticks, tick_labels(ticks))
            plt.xlim(0.5, len(curve) + 0.5)
            plt.xticks([float(k) for k in ks], [str(k) for k in ks])
            plt.plot(ks, list(curve), marker=FIT_MARK, color=self._colour(FIT_COLOUR))
            if measured:
                plt.scatter(
                    [k for k, _ in measured],
                    [m for _, m in measured],
                    marker=ROW_MARK,
                    color=self._colour(ROW_COLOUR),
                )
        self.refresh()

    def _colour(self, colour: Any) -> Any:
        return None if self.app.no_color else colour

    def on_resize(self) -> None:
        screen = self.screen
        if isinstance(screen, AcceptanceScreen):
            screen.draw_chart()


class AcceptanceScreen(ReportsWorkerErrors, ModalScreen[Any]):
    """The catalog and one setup's fit on the form's scenario ``config`` (None when the form
    has an invalid field: the catalog is shown, ``f`` says why it cannot send); dismissed
    with the scenario under the fit's values (``f``) or None (Escape)."""

    DEFAULT_CSS = """
    AcceptanceScreen {
        background: $background;
    }
    AcceptanceScreen #acc-title {
        height: 1;
        padding: 0 1;
        text-style: bold;
    }
    AcceptanceScreen #acc-filters {
        height: 1;
    }
    AcceptanceScreen #acc-filters Select {
        width: 1fr;
    }
    AcceptanceScreen #acc-table {
        height: 1fr;
        min-height: 4;
    }
    AcceptanceScreen #acc-detail {
        height: 1fr;
        min-height: 8;
    }
    AcceptanceScreen #acc-chart-box {
        width: 1fr;
        min-width: 30;
    }
    AcceptanceScreen AcceptanceChart {
        height: 1fr;
    }
    AcceptanceScreen #acc-legend {
        height: 1;
        padding: 0 1;
    }
    AcceptanceScreen #acc-fit-box {
        width: 1fr;
        padding: 0 1;
    }
    """
    BINDINGS = [
        Binding("escape", "dismiss(None)", "Close"),
        Binding("f", "send", "Fit to the form"),
        Binding("c", "clear_filters", "Clear filters"),
    ]

    def __init__(self, config: Any = None, catalog: Any = None) -> None:
        """``catalog``: the rows to show (engine.acceptance.catalog.Catalog); the shipped
        catalog when None."""
        super().__init__()
        self.config = config
        self.catalog = catalog
        self.problem: str | None = None
        self.setups: list[Setup] = []
        self.setup_by_row: dict[str, Setup] = {}
        self.current: Setup | None = None
        self.fits: dict[tuple[object, ...], Fitted] = {}
        self.labels: dict[str, dict[str, str]] = {}  # by filter: its options' labels by value

    def compose(self) -> ComposeResult:
        yield Static("Acceptance catalog", id="acc-title")
        with Horizontal(id="acc-filters"):
            for name, prompt in FILTERS:
                yield Select((), prompt=prompt, compact=True, id=f"acc-{name}")
        yield DataTable(id="acc-table", cursor_type="row", zebra_stripes=False)
        with Horizontal(id="acc-detail"):
            with Vertical(id="acc-chart-box"):
                yield AcceptanceChart(id="acc-chart")
                yield Static("", id="acc-legend")
            with VerticalScroll(id="acc-fit-box"):
                yield Static("", id="acc-fit")
        yield KeysFooter()

    def on_mount(self) -> None:
        from engine.acceptance.catalog import CatalogError, load_catalog

        if self.catalog is None:
            try:
                self.catalog = load_catalog()
            except (CatalogError, OSError) as error:
                self.problem = f"the acceptance catalog cannot be read: {error}"
                self._title("Acceptance · the catalog cannot be read (below) · esc: close")
                self.query_one("#acc-fit", Static).update(Text(self.problem))
                for empty in ("#acc-filters", "#acc-table", "#acc-chart-box"):
                    self.query_one(empty).display = False  # the problem, the width of the screen
                return
        for name, _ in FILTERS:
            choices = self._choices(name)
            self.labels[name] = {value: label for label, value in choices}
            self.query_one(f"#acc-{name}", Select).set_options(choices)
        table = self.query_one(DataTable)
        for header, _ in COLUMNS:
            table.add_column(header, key=header)
        self._fill()
        table.focus()

    # ------------------------------------------------------------------ filters and rows

    def _choices(self, name: str) -> list[tuple[str, str]]:
        """The filter ``name``'s options: the catalog's names for it, each once."""
        from engine.acceptance.nearest import dataset_key, dataset_names

        rows = self.catalog.rows
        if name == "dataset":
            return [(shown, dataset_key(shown)) for shown in dataset_names(self.catalog)]
        if name == "method":
            return [(method, method) for method in self.catalog.methods]
        if name == "target":
            return [(target, target) for target in self.catalog.targets]
        drafts = sorted({row.draft for row in rows if row.draft is not None})
        return [(draft, draft) for draft in drafts]

    def _chosen(self) -> dict[str, str]:
        """The filters set: {filter: the value its rows must have}."""
        chosen = {}
        for name, _ in FILTERS:
            value = self.query_one(f"#acc-{name}", Select).value
            if isinstance(value, str):
                chosen[name] = value
        return chosen

    def _shown(self, name: str) -> str:
        """The option chosen in the filter ``name``, as its list shows it."""
        return self.labels[name][str(self.query_one(f"#acc-{name}", Select).value)]

    def matching(self) -> list[Any]:
        """The catalog's rows that every filter set allows, in the catalog's order."""
        from engine.acceptance.nearest import dataset_key

        chosen = self._chosen()

        def allowed(row: Any) -> bool:
            return all(
                (dataset_key(row.dataset) if name == "dataset" else getattr(row, name)) == value
                for name, value in chosen.items()
            )

        return [row for row in self.catalog.rows if allowed(row)]

    def _fill(self) -> None:
        """The table of the matching rows, a setup's rows together (setups in the order of
        their first row in the catalog), and the first row's setup selected."""
        from engine.acceptance.catalog_fit import setup_key, setups

        rows = self.matching()
        self.setups = [
            Setup(number, setup_key(group[0]), list(group))
            for number, group in enumerate(setups(rows), start=1)
        ]
        self.setup_by_row = {row.id: s for s in self.setups for row in s.rows}
        table = self.query_one(DataTable)
        table.clear()
        for setup in self.setups:
            for row in setup.rows:
                table.add_row(*(cell(setup, row) for _, cell in COLUMNS), key=row.id)
        count = f"{len(rows)} of {len(self.catalog.rows)} rows, {len(self.setups)} setups"
        if rows:
            self._title(f"Acceptance · {count} · ↑↓ setup · f: fit to form")
            table.move_cursor(row=0)
            self.select(self.setups[0])
        else:
            chosen = ", ".join(f"{name} {self._shown(name)}" for name in self._chosen())
            self._title(f"Acceptance · no row has {chosen} · c: clear filters")
            self.current = None
            self.query_one("#acc-fit", Static).update(Text(""))
            self.draw_chart()

    def _title(self, text: str) -> None:
        self.query_one("#acc-title", Static).update(Text(text))

    @on(Select.Changed)
    def _filter_changed(self, event: Select.Changed) -> None:
        event.stop()
        if self.catalog is not None and self.problem is None:
            self._fill()

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        setup = self.setup_by_row.get(str(event.row_key.value))
        if setup is not None and setup is not self.current:
            self.select(setup)

    # ------------------------------------------------------------------ the fit

    def select(self, setup: Setup) -> None:
        """Show ``setup``: its fit when done, else fit it (off the app's thread)."""
        self.current = setup
        if setup.key in self.fits:
            self.show_fit()
            return
        self.query_one("#acc-fit", Static).update(Text(self._heading(setup) + "\nfitting…"))
        self._fit(setup)

    @work(thread=True, exclusive=True, group="acceptance-fit", exit_on_error=False)
    def _fit(self, setup: Setup) -> None:
        from engine.acceptance.catalog_fit import fit_rows

        try:
            fit = fit_rows(setup.rows)
            # K = 1..8, or to the largest K a row was fitted at (its own, or assumed)
            last = min(CHART_MAX_K, max([CHART_KS, *(point.k for point in fit.errors)]))
            curve = [float(fit.mean_length(k)) for k in range(1, last + 1)]
        except ValueError as error:  # a setup no model fits: said, not raised
            self.post_message(FitDone(setup.key, Fitted(None, [], str(error))))
            return
        self.post_message(FitDone(setup.key, Fitted(fit, curve)))

    def worker_failed(self, worker: Any) -> None:
        if self.current is not None and self.current.key not in self.fits:
            self.query_one("#acc-fit", Static).update(
                Text(self._heading(self.current) + "\ncould not fit (see the notification)")
            )

    def on_fit_done(self, message: FitDone) -> None:
        message.stop()
        self.fits[message.key] = message.fitted
        if self.current is not None and self.current.key == message.key:
            self.show_fit()

    def _heading(self, setup: Setup) -> str:
        row = setup.rows[0]
        draft = f" · draft {row.draft}" if row.draft else ""
        temperature = "T not stated" if row.temperature is None else f"T {row.temperature:g}"
        rows = f"{len(setup.rows)} row{'s' if len(setup.rows) != 1 else ''}"
        return (
            f"setup {setup.number} of {len(self.setups)} ({rows}): {row.method} · "
            f"{row.target}{draft} · {row.dataset} · {temperature} · {row.shape}"
        )

    def show_fit(self) -> None:
        """The current setup's fit, its errors and its rows' sources, and its chart."""
        setup = self.current
        if setup is None:
            return
        fitted = self.fits[setup.key]
        text = Text(self._heading(setup) + "\n")
        if fitted.fit is None:
            text.append(f"no fit: {fitted.problem}\n")
        else:
            fit = fitted.fit
            text.append(f"fit: {fit.describe()}\n", style="bold")
            text.append(
                "fitted M by K: "
                + "  ".join(f"{k} {m:.2f}" for k, m in enumerate(fitted.curve, start=1))
                + "\n"
            )
            text.append("the fit against each row:\n")
            for point in fit.errors:
                text.append(
                    f"  K {point.k}: measured {point.measured:.2f}, fitted {point.fitted:.2f} "
                    f"({_percent(point.error)}) · {point.row_id}\n"
                )
        text.append("rows as printed:\n")
        for row in setup.rows:
            text.append(
                f"  {row.id}: {row.printed} ({_definition(row)}; M {row.mean_length:.2f})\n"
            )
        for source, url in dict.fromkeys((row.source, row.url) for row in setup.rows):
            text.append(f"source: {source}\n  {url}\n")
        text.append(
            "f: this fit's acceptance to the form · c: clear the filters · shift+tab: the "
            "filters (enter opens one) · tab: this text · esc: close"
        )
        self.query_one("#acc-fit", Static).update(text)
        self.query_one("#acc-fit-box").scroll_home(animate=False)
        self.draw_chart()

    def draw_chart(self) -> None:
        """The current setup's fitted curve and measured rows (an empty chart without)."""
        setup = self.current
        fitted = None if setup is None else self.fits.get(setup.key)
        chart = self.query_one(AcceptanceChart)
        legend = self.query_one("#acc-legend", Static)
        if fitted is None or fitted.fit is None:
            chart.draw([], [])
            legend.update(Text(""))
            return
        measured = [
            (point.k, point.measured)
            for point in fitted.fit.errors
            if 1 <= point.k <= len(fitted.curve)
        ]
        chart.draw(fitted.curve, measured)
        legend.update(Text(f"{FIT_MARK} fit ({fitted.fit.model})  {ROW_MARK} a row at its K"))

    # ------------------------------------------------------------------ keys

    def action_send(self) -> None:
        setup = self.current
        fitted = None if setup is None else self.fits.get(setup.key)
        if fitted is None or fitted.fit is None:
            self._title("no fit to send: choose a setup that has one")
            return
        if self.config is None:
            self._title("the form has an invalid field: fix it, then f here again")
            return
        from engine.core.config import ConfigError

        try:
            config = self.config.replace(**fitted.fit.values)
        except ConfigError as error:
            self._title(f"cannot send this fit: {error}")
            return
        self.app.notify(f"acceptance from the catalog: {fitted.fit.describe()}")
        self.dismiss(config)

    def action_clear_filters(self) -> None:
        for name, _ in FILTERS:
            self.query_one(f"#acc-{name}", Select).clear()
