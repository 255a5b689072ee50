"""Exact figures of the form's configuration, recomputed on every valid change."""

from __future__ import annotations

from rich.table import Table
from textual.widgets import Static

from engine.config import SpecConfig
from spectui.widgets.common import fmt


class ExactPanel(Static):
    """Shows :func:`engine.exact.exact_metrics` of the current configuration."""

    def on_mount(self) -> None:
        self.border_title = "Exact"

    def show_invalid(self) -> None:
        self.update("form invalid: fix the marked fields")

    def show_figures(self, config: SpecConfig, figures: dict[str, float]) -> None:
        # 21 columns inside the side panel: labels of at most 11, a space, fmt()'s 9.
        table = Table.grid(padding=(0, 1))
        table.add_column(style="bold", no_wrap=True)
        table.add_column(justify="right", no_wrap=True)
        table.add_row("speedup", fmt(figures["speedup_exact"], speedup=True))
        table.add_row("speedup T→∞", fmt(figures["speedup_limit"], speedup=True))
        table.add_row("tokens/cyc", fmt(figures["tokens_per_cycle_exact"]))
        table.add_row("cost ratio", fmt(config.cost_ratio))
        table.add_row("breakeven c", fmt(figures["breakeven_cost_ratio"]))
        self.update(table)

    def show_failed(self, reason: str) -> None:
        """The figures could not be computed (the reason is also in a notification)."""
        self.update(f"✗ not computed: {reason}")
