"""Exact figures of the form's configuration, recomputed on every valid change."""

from __future__ import annotations

from typing import Any

from rich.table import Table
from textual.widgets import Static

from engine.core.config import SpecConfig, part_fields
from spectui.widgets.common import fmt

# Where a configuration's cost model cannot be built (an unreadable cost table): the field
# and the reason, in place of the figures.
ERROR_FIELD, ERROR_REASON = "error_field", "error"
TIMES_HELP = (
    "Times per cycle, in microseconds, at the prompt's context, for a full cycle (K drafts): "
    "draft: the K draft passes; verify: the target's pass over K+1 tokens per sequence "
    "(bound: whether it is memory- or compute-bound); step: one plain decoding step, "
    "what the baseline pays per token. cost ratio: one draft pass / one decoding step. "
    "A tree: its draft nodes and depth; draft: one pass per level, as wide as the level; "
    "verify: one pass over nodes+1 tokens per sequence."
)


def exact_figures(config: SpecConfig) -> dict[str, Any]:
    """Every figure the panel shows (run off the UI thread: it loads the engine).

    :func:`engine.simulate.exact.exact_metrics`, and from :func:`engine.core.kernel.cycle_costs` the
    times of a full cycle at the prompt's context (``limit_draft_us``, ``limit_verify_us``,
    ``limit_step_us``), the cost ratio and the verify pass's ``bound``; for a token tree the
    tree's own cycle (:func:`engine.simulate.tree_scenario.tree_cycle`, as ``spectui run`` shows it)
    and its ``tree_nodes`` and ``tree_depth``. When the cost model (or the tree) cannot be
    built, only :data:`ERROR_FIELD` and :data:`ERROR_REASON`.
    """
    from engine.core.config import ConfigError
    from engine.simulate.exact import exact_metrics
    from engine.simulate.tree_scenario import full_cycle

    try:
        costs, tree = full_cycle(config)
        figures = {
            **exact_metrics(config),
            "limit_draft_us": costs.limit_draft_us,
            "limit_verify_us": costs.limit_verify_us,
            "limit_step_us": costs.limit_step_us,
            "cost_ratio": costs.cost_ratio,
            "bound": costs.bound,
        }
        if tree is not None:
            figures.update(tree_nodes=tree.nodes, tree_depth=tree.depth)
    except ConfigError as err:
        return {ERROR_FIELD: err.field, ERROR_REASON: str(err).split(": ", 1)[-1]}
    return figures


class ExactPanel(Static):
    """Shows :func:`exact_figures` of the current configuration, and under them, when
    given (:meth:`set_provenance`), where its acceptance comes from."""

    provenance: str | None = None
    _table: Table | None = None

    def set_provenance(self, text: str | None) -> None:
        """Show ``text`` (one line: the catalog rows the acceptance was fitted to, or that
        an edit replaced them; spectui.widgets.method_fields) under the figures."""
        self.provenance = text
        if self._table is not None:
            self._show(self._table)

    def _show(self, table: Table) -> None:
        self._table = table
        if self.provenance is None:
            self.update(table)
        else:
            from rich.console import Group
            from rich.text import Text

            self.update(Group(table, Text(self.provenance, style="dim")))

    def on_mount(self) -> None:
        self.border_title = "Exact"
        self.tooltip = TIMES_HELP

    def show_invalid(self) -> None:
        self._table = None
        self.update("form invalid: fix the marked fields")

    def show_figures(self, config: SpecConfig, figures: dict[str, Any]) -> None:
        if ERROR_FIELD in figures:
            self.show_failed(f"{figures[ERROR_FIELD]}: {figures[ERROR_REASON]}")
            return
        # 21 columns inside the side panel: labels of at most 11, a space, fmt()'s 9.
        table = Table.grid(padding=(0, 1))
        table.add_column(style="bold", no_wrap=True)
        table.add_column(justify="right", no_wrap=True)
        table.add_row("speedup", fmt(figures["speedup_exact"], speedup=True))
        table.add_row("speedup T→∞", fmt(figures["speedup_limit"], speedup=True))
        table.add_row("tokens/cyc", fmt(figures["tokens_per_cycle_exact"]))
        table.add_row("cost ratio", fmt(figures["cost_ratio"]))
        if "tree_nodes" in figures:  # a tree has no break-even K-draft ratio
            table.add_row("nodes/depth", f"{figures['tree_nodes']}/{figures['tree_depth']}")
        elif "draft_cost_us" in part_fields("cost.model", config.cost_model):
            # a ratio of the draft pass's and the verify pass's own costs (linear)
            table.add_row("breakeven c", fmt(figures["breakeven_cost_ratio"]))
        # Per cycle (the form's draft us is per token): the cycle's drafting, its verify.
        table.add_row("per cycle:", "")
        table.add_row(" draft us", fmt(figures["limit_draft_us"]))
        table.add_row(" verify us", fmt(figures["limit_verify_us"]))
        if figures["bound"] != "-":  # the cost model says what bounds the verify pass
            table.add_row("  bound", figures["bound"])
        table.add_row("step us", fmt(figures["limit_step_us"]))
        self._show(table)

    def show_failed(self, reason: str) -> None:
        """The figures could not be computed (the reason is also in a notification)."""
        self._table = None
        self.update(f"✗ not computed: {reason}")
