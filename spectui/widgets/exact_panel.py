"""Exact figures of the form's configuration, recomputed on every valid change."""

from __future__ import annotations

from rich.table import Table
from textual.widgets import Static

from engine.config import SpecConfig


class ExactPanel(Static):
    """Shows :func:`engine.exact.exact_metrics` of the current configuration."""

    def on_mount(self) -> None:
        self.border_title = "Exact"

    def show_invalid(self) -> None:
        self.update("form invalid: fix the marked fields")

    def show_figures(self, config: SpecConfig, figures: dict[str, float]) -> None:
        table = Table.grid(padding=(0, 1))
        table.add_column(style="bold")
        table.add_column(justify="right")
        table.add_row("speedup", f"{figures['speedup_exact']:.3f}")
        table.add_row("speedup T→∞", f"{figures['speedup_limit']:.3f}")
        table.add_row("tokens/cycle", f"{figures['tokens_per_cycle_exact']:.3f}")
        table.add_row("cost ratio", f"{config.cost_ratio:.3f}")
        table.add_row("break-even c", f"{figures['breakeven_cost_ratio']:.3f}")
        self.update(table)
