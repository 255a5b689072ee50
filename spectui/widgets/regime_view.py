"""Regime view: the optimal K and its speedup over batch size x context length.

The map of :func:`engine.analysis.regime.regime_map` for the form's configuration, computed in a
thread worker (cancelled when the form changes again), drawn like the optimal-K heatmap: a
row per batch size, a column per context length, each cell K* and its exact speedup on the
speedup colour scale, ``✗`` where no K pays. The line under the map says where speculation
should turn off; moving the cursor describes the cell under it.

Under a cost model without batch dependence (``linear``) the view maps the same scenario
under the batch-default model (``roofline``, engine.cost.part.CostPart), and its title line
says so ("roofline h100 (form is linear)"), so that its K* is not mistaken for the form's.
Every figure is exact.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.css.scalar import Scalar
from textual.message import Message
from textual.widget import Widget
from textual.widgets import DataTable, Static
from textual.worker import Worker, get_current_worker

from engine.analysis.formatting import speedup_text
from engine.core.config import SpecConfig
from engine.core.parts import COST
from spectui.colours import heat_style
from spectui.widgets.common import ReportsWorkerErrors
from spectui.widgets.heatmap import Heatmap
from spectui.widgets.table_hint import ColumnsHint, HidesColumnsHint

if TYPE_CHECKING:
    from engine.analysis.regime import RegimeMap

BUSY_TEXT = "computing the map…"
# " 4 2.03": K* and its speedup, right-aligned; marks (≈ ✗) take one more character each.
# No cell padding: the leading spaces part the columns, and an 80-column terminal without
# the form (ctrl+b) shows all 8 default contexts.
CELL_WIDTH = 8
TITLE = "Regime map, exact"  # exact figures (engine.analysis.regime), no Monte Carlo


def map_config(config: SpecConfig) -> tuple[SpecConfig, str]:
    """The scenario mapped over batch and context for the form's ``config``, and how it
    differs from the form's ("" if it does not): a cost without batch dependence (linear)
    would make every row alike, so the map (and the Tree view's heatmap) uses the
    batch-default model (the roofline of the form's gpu) instead."""
    if not COST.of(config).batch_dependent:
        default = COST.where(lambda model: model.batch_default)[0]
        return (
            config.replace(cost_model=default),
            f"{default} {config.gpu} (form is {config.cost_model})",
        )
    return config, ""


def titled(title: str, note: str) -> str:
    """A view's title line, with how its scenario differs from the form's when it does."""
    return f"{title} · {note}" if note else title


@dataclass
class RegimeReady(Message):
    """A regime map computed off the UI thread for the form's ``config``."""

    config: SpecConfig
    regime: RegimeMap
    note: str


@dataclass
class RegimeProgress(Message):
    """``done`` of ``total`` steps of the map being computed."""

    done: int
    total: int

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, RegimeProgress)


class RegimeMapTable(HidesColumnsHint, Heatmap):
    """The map: a row per batch size, a column per context length (a Heatmap's cursor and
    cell styles; cells from :meth:`engine.analysis.regime.RegimeMap.cell_text`)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(cell_padding=0, **kwargs)
        self.regime: RegimeMap | None = None

    def show_map(self, regime: RegimeMap) -> None:
        from engine.analysis.regime import context_label

        self.regime = regime
        no_color = bool(getattr(self.app, "no_color", False))
        shape = (
            tuple(str(b) for b in regime.batch_sizes),
            tuple(float(c) for c in regime.contexts),
        )

        def cell(i: int, j: int) -> Text:
            return Text(
                regime.cell_text(i, j).rjust(CELL_WIDTH),
                style=heat_style(float(regime.speedup_opt[i, j]), no_color),
            )

        if shape == self._shape:
            # Same axes (the usual case when the form changes): update the cells in place. A
            # rebuild here could lose the row labels' width to the table's deferred layout.
            for i, batch in enumerate(regime.batch_sizes):
                for j, context in enumerate(regime.contexts):
                    self.update_cell(str(batch), str(context), cell(i, j))
            return
        self.clear(columns=True)
        for context in regime.contexts:
            label = Text(context_label(context).rjust(CELL_WIDTH), style="bold")
            self.add_column(label, key=str(context), width=CELL_WIDTH)
        for i, batch in enumerate(regime.batch_sizes):
            cells = [cell(i, j) for j in range(len(regime.contexts))]
            label = Text(str(batch).rjust(len(str(regime.batch_sizes[-1]))), style="bold")
            self.add_row(*cells, key=str(batch), label=label)
        self._shape = shape  # type: ignore[assignment]
        # The labels' width, now: DataTable measures row labels in a deferred pass, and in
        # about one map in five (Textual 8.2, cause not pinned down) the label column came
        # out zero columns wide and the batch sizes vanished.
        width = max(len(str(b)) for b in regime.batch_sizes)
        self._label_column.content_width = max(self._label_column.content_width, width)
        # A new map starts at its first cell, scrolled home.
        self.move_cursor(row=0, column=0, animate=False)
        self.scroll_to(x=0, y=0, animate=False, immediate=True)
        self.fit_whole_columns()

    def fit_whole_columns(self) -> None:
        """Be as wide as the row labels and the whole columns that fit in the view beside
        them (when every column fits: the view's width). A column cut at the right edge
        showed its first figures under no heading (a heading is right-aligned: it was the
        part cut away); the columns out of sight are named by the hint under the map."""
        offered = self.parent.size.width if isinstance(self.parent, Widget) else 0
        bar = self.styles.scrollbar_size_vertical if self.show_vertical_scrollbar else 0
        # Every row has a label: their column's width, before DataTable's deferred pass
        # has seen them (show_map sets it).
        width = self._label_column.get_render_width(self) + bar
        widths = [column.get_render_width(self) for column in self.ordered_columns]
        fit = 0
        while fit < len(widths) and width + widths[fit] <= offered:
            width += widths[fit]
            fit += 1
        wanted = width if 0 < fit < len(widths) else None
        if self.styles.max_width != (None if wanted is None else Scalar.from_number(wanted)):
            self.styles.max_width = wanted

    def watch_show_vertical_scrollbar(self) -> None:
        # The scrollbar takes columns of its own from the table's width.
        self.fit_whole_columns()

    def describe(self, i: int, j: int) -> str:
        """The cell (i, j) in words: where, K*, speedup, verify pass, whether K pays."""
        from engine.analysis.regime import context_label

        regime = self.regime
        if regime is None:
            return ""
        batch, context = regime.batch_sizes[i], regime.contexts[j]
        k = int(regime.k_opt[i, j])
        text = (
            f"batch {batch} · {context_label(context)}: K*={k} "
            f"{speedup_text(float(regime.speedup_opt[i, j]))}, verify "
            f"{regime.verify_ratio[i, j]:.2f} steps"
        )
        if regime.tie[i, j]:
            text += " (tie)"
        if not regime.pays[i, j]:
            text += " · off"
        return text


class RegimeView(ReportsWorkerErrors, Vertical):
    """Recomputes (in a thread worker) when the form changes, while it is shown."""

    DEFAULT_CSS = """
    RegimeView > Static {
        height: auto;
        padding: 0 1;
    }
    RegimeView #regime-title {
        text-style: bold;
    }
    RegimeView RegimeMapTable {
        height: auto;
        max-height: 1fr;
        scrollbar-size-horizontal: 0;  /* the line under it says which columns are hidden */
    }
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.config: SpecConfig | None = None
        self.shown: RegimeMap | None = None
        self.dirty = True

    def compose(self) -> ComposeResult:
        yield Static(TITLE, id="regime-title")
        yield Static("", id="regime-scenario")
        yield RegimeMapTable(id="regime-map", classes="main-view")
        yield ColumnsHint(id="regime-more")
        yield Static("", id="regime-legend")
        yield Static("", id="regime-off")
        yield Static("", id="regime-status")

    def on_resize(self) -> None:
        # The map's width follows the view's (the form shown or hidden: ctrl+b).
        self.query_one(RegimeMapTable).fit_whole_columns()

    def on_mount(self) -> None:
        from engine.analysis.regime import SHORT_LEGEND

        self.query_one("#regime-legend", Static).update(Text(SHORT_LEGEND))
        self.refresh_map()

    def set_config(self, config: SpecConfig | None) -> None:
        """Map ``config`` (the form's; None when the form is invalid), now if shown."""
        self.config = config
        self.dirty = True
        if self.display and self.parent is not None and self.parent.display:
            self.refresh_map()

    def _status(self, text: str) -> None:
        self.query_one("#regime-status", Static).update(Text(text))

    def refresh_map(self) -> None:
        if not self.query("#regime-status"):
            return  # not composed yet: on_mount draws it
        if self.config is None:
            self.workers.cancel_group(self, "regime")
            self._status("form invalid: nothing to map")
            return
        self.dirty = False
        self._status(BUSY_TEXT)
        self._compute(self.config)

    @work(thread=True, exclusive=True, group="regime", name="Regime map", exit_on_error=False)
    def _compute(self, config: SpecConfig) -> None:
        from engine.analysis.regime import regime_map
        from engine.core.runs import RunStopped

        worker = get_current_worker()
        mapped, note = map_config(config)
        try:
            regime = regime_map(
                mapped,
                should_stop=lambda: worker.is_cancelled,
                on_progress=lambda done, total: self.post_message(RegimeProgress(done, total)),
            )
        except RunStopped:
            return
        if not worker.is_cancelled:
            self.post_message(RegimeReady(config, regime, note))

    def on_regime_progress(self, message: RegimeProgress) -> None:
        message.stop()
        if message.done < message.total:
            self._status(f"{BUSY_TEXT} {message.done}/{message.total}")

    def on_regime_ready(self, message: RegimeReady) -> None:
        message.stop()
        if message.config != self.config:
            return  # a map of an older form
        regime = message.regime
        self.shown = regime
        length, acceptance, cost = regime.legend_lines()
        ks = f"K {regime.ks[0]}..{regime.ks[-1]}"
        # The title says how the map's scenario differs from the form's, else its axes.
        axes = f"{ks}, {length}"
        title = titled(TITLE, message.note or axes)
        self.query_one("#regime-title", Static).update(Text(title))
        scenario = f"{axes} · {acceptance}\n{cost}" if message.note else f"{acceptance}\n{cost}"
        self.query_one("#regime-scenario", Static).update(Text(scenario))
        table = self.query_one(RegimeMapTable)
        table.show_map(regime)
        self.query_one("#regime-off", Static).update(Text(regime.off_text()))
        warnings = "".join(f" · warning: {w}" for w in regime.warnings)
        self._status(table.describe(*self._cursor()) + warnings)

    def _cursor(self) -> tuple[int, int]:
        table = self.query_one(RegimeMapTable)
        return max(table.cursor_row, 0), max(table.cursor_column, 0)

    def on_data_table_cell_highlighted(self, event: DataTable.CellHighlighted) -> None:
        event.stop()
        table = self.query_one(RegimeMapTable)
        if table.regime is not None:
            self._status(table.describe(event.coordinate.row, event.coordinate.column))

    def worker_failed(self, worker: Worker[Any]) -> None:
        """The map raised (a cost model that cannot be built): leave the busy state."""
        if worker.group == "regime":
            self._status("could not compute the map (see the notification)")
