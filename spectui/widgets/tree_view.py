"""Tree view: the form scenario's draft tree, a sampled cycle's accepted path, and the best
tree size by batch.

Left, the tree (:func:`engine.simulate.tree_scenario.tree_of`) drawn with Textual's ``Tree``: the
root is the last accepted token, every draft node reads ``r<rank> <path probability>`` (the
product of the rank acceptance probabilities from the root down, as
:func:`engine.shapes.trees.path_probs`). ``s`` samples one verify cycle
(:func:`engine.shapes.trees.sample_cycles`) and marks the nodes it accepted, root to last, in bold
reverse video with a ``✓`` (the glyph reads without colour).

Right, the budget x batch heatmap (:func:`engine.simulate.tree_scenario.budget_by_batch`, computed
in
a thread worker and redone when the form changes): a row per batch size, the best Sequoia
budget and its speedup, the chain's best K and its speedup, then the speedup of the best tree
of each budget, on the speedup colour scale of the Regime view. Every figure is exact. Under
the ``linear`` cost model nothing depends on batch: the heatmap then uses the ``roofline``
model, and its title says so; its trees (and its chain) accept by the scenario's rank
probabilities, which a chain form does not use: the title says that too, so that its chain
K* is not mistaken for the form's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import DataTable, Static
from textual.widgets import Tree as TextualTree
from textual.worker import Worker

from engine.analysis.formatting import LOSE_MARK, speedup_text
from engine.core.config import SpecConfig
from engine.core.parts import SHAPE
from spectui.colours import heat_style
from spectui.widgets.common import ReportsWorkerErrors
from spectui.widgets.heatmap import Heatmap
from spectui.widgets.regime_view import titled
from spectui.widgets.table_hint import ColumnsHint, HidesColumnsHint
from spectui.widgets.tree_work import (  # re-exported: the workers' messages
    BudgetsReady,
    TreeReady,
    TreeWorkers,
    drawn_rank_probs,
)

if TYPE_CHECKING:
    from textual.widgets.tree import TreeNode

    from engine.shapes.trees import Tree
    from engine.simulate.tree_scenario import BudgetGrid

__all__ = [
    "ACCEPTED_MARK",
    "ACCEPTED_STYLE",
    "BUSY_GRID",
    "BUSY_TREE",
    "CELL_WIDTH",
    "GRID_TITLE",
    "INVALID_TEXT",
    "LEGEND",
    "SAMPLE_HINT",
    "SUMMARY_WIDTH",
    "BudgetTable",
    "BudgetsReady",
    "DrawnTree",
    "TreeReady",
    "TreeView",
    "acceptance_note",
    "drawn_rank_probs",
    "node_label",
    "path_to",
    "prob_text",
    "root_label",
    "summary_cell",
    "tree_summary",
]

ACCEPTED_MARK = "✓"
ACCEPTED_STYLE = "bold reverse"
BUSY_TREE = "building the tree…"
BUSY_GRID = "computing the best tree per batch…"
SAMPLE_HINT = "s: sample another cycle"
# " 128 2.41✗": a budget (or K) and its speedup, ✗ when it loses; then " 2.41" per budget
# (speedup_text never rounds a loss up to 1.00). 80 columns without the form show the two
# summary columns and the first budgets; the cursor scrolls to the others.
SUMMARY_WIDTH = 10
CELL_WIDTH = 5
GRID_TITLE = "Best tree by batch, exact"
LEGEND = "n*: best tree · K*: best chain · then by budget"
INVALID_TEXT = "form invalid: no tree to draw"


def prob_text(p: float) -> str:
    """A path probability for a node's label: two decimals, small ones in e-notation."""
    return f"{p:.2f}" if p >= 0.005 or p == 0 else f"{p:.0e}"


def node_label(rank: int, prob: float, accepted: bool = False) -> Text:
    """A draft node's label, ``r1 0.72``; with ``accepted``, ``✓ r1 0.72`` in bold reverse."""
    text = f"r{rank} {prob_text(prob)}"
    if accepted:
        return Text(f"{ACCEPTED_MARK} {text}", style=ACCEPTED_STYLE)
    return Text(text)


def root_label(accepted: bool) -> Text:
    """The root's label: the last accepted token, accepted in every cycle."""
    if accepted:
        return Text(f"{ACCEPTED_MARK} root", style=ACCEPTED_STYLE)
    return Text("root")


def path_to(tree: Tree, node: int) -> list[int]:
    """The nodes from the root (0) down to ``node`` (0 for the root alone)."""
    path = [node]
    while node != 0:
        node = tree.parents[node - 1]
        path.append(node)
    return path[::-1]


def tree_summary(tree: Tree, expected: float) -> str:
    """The tree in one line: its size, depth, level (draft pass) widths, verify width (the
    nodes and the root) and expected tokens per cycle E[n + 1]."""
    widths = ",".join(str(w) for w in tree.level_sizes)
    return (
        f"{tree.nodes} nodes, depth {tree.depth} (widths {widths}) · verify "
        f"{tree.nodes + 1} · exact {expected:.3f} tokens/cycle"
    )


def acceptance_note(config: SpecConfig) -> str:
    """How the heatmap's trees accept: by the scenario's rank probabilities; for a chain form,
    also the acceptance its own chain uses (which the heatmap does not)."""
    text = f"rank p {config.rank_probs}"
    if not SHAPE.of(config).tree:
        from engine.analysis.formatting import acceptance_text

        text += f" · the form's chain: {acceptance_text(config)}"
    return text


def summary_cell(size: int, speedup: float) -> str:
    """A budget (or K) and its speedup, right-aligned; ``✗`` when it loses."""
    mark = LOSE_MARK if speedup < 1.0 else " "  # a column of its own: the figures align
    return f"{size} {speedup_text(speedup, unit='')}{mark}".rjust(SUMMARY_WIDTH)


class DrawnTree(TextualTree[int]):
    """The draft tree: each node's data is its index (0 the root)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(root_label(False), data=0, **kwargs)
        self.show_root = True
        self.guide_depth = 3
        self.draft: Tree | None = None
        self.probs: np.ndarray = np.zeros(0)
        self.accepted: frozenset[int] = frozenset()
        self.node_of: dict[int, TreeNode[int]] = {}

    def draw(self, tree: Tree, probs: np.ndarray) -> None:
        """Draw ``tree`` with each node's path probability ``probs[i - 1]``, none accepted."""
        self.draft, self.probs, self.accepted = tree, probs, frozenset()
        self.clear()
        self.root.set_label(root_label(False))
        self.node_of = {0: self.root}
        inner = set(tree.parents)  # nodes with children: the others are leaves
        for i, (parent, rank) in enumerate(zip(tree.parents, tree.ranks, strict=True), 1):
            label = node_label(rank, float(probs[i - 1]))
            parent_node = self.node_of[parent]
            self.node_of[i] = parent_node.add(label, data=i, allow_expand=i in inner)
        self.root.expand_all()
        self.move_cursor(self.root, animate=False)

    def mark(self, accepted: frozenset[int]) -> None:
        """Mark the ``accepted`` nodes (0 the root) and unmark the others."""
        tree = self.draft
        if tree is None:
            return
        for i in self.accepted ^ accepted:
            node = self.node_of[i]
            if i == 0:
                node.set_label(root_label(i in accepted))
            else:
                rank, prob = tree.ranks[i - 1], float(self.probs[i - 1])
                node.set_label(node_label(rank, prob, i in accepted))
        self.accepted = accepted


class BudgetTable(HidesColumnsHint, Heatmap):
    """The best tree size per batch: a row per batch size; the best budget, the chain's
    best K, then the speedup of the best tree of each budget (a Heatmap's cursor)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(cell_padding=0, **kwargs)
        self.budgets: BudgetGrid | None = None

    def show_grid(self, grid: BudgetGrid) -> None:
        self.budgets = grid
        no_color = bool(getattr(self.app, "no_color", False))
        self.clear(columns=True)
        for heading in ("tree n* ", "chain K* "):
            self.add_column(Text(heading.rjust(SUMMARY_WIDTH), style="bold"), width=SUMMARY_WIDTH)
        for budget in grid.budgets:
            self.add_column(Text(str(budget).rjust(CELL_WIDTH), style="bold"), width=CELL_WIDTH)
        label_width = len(str(grid.batch_sizes[-1]))
        for b, batch in enumerate(grid.batch_sizes):
            best = float(grid.best_speedup[b])
            chain = float(grid.chain_speedup[b])
            tree_cell = summary_cell(int(grid.best_budget[b]), best)
            chain_cell = summary_cell(int(grid.chain_k[b]), chain)
            cells = [
                Text(tree_cell, style=heat_style(best, no_color)),
                Text(chain_cell, style=heat_style(chain, no_color)),
            ]
            for j in range(len(grid.budgets)):
                value = float(grid.speedup[b, j])
                text = speedup_text(value, unit="").rjust(CELL_WIDTH)
                cells.append(Text(text, style=heat_style(value, no_color)))
            label = Text(str(batch).rjust(label_width), style="bold")
            self.add_row(*cells, key=str(batch), label=label)
        self._label_column.content_width = max(self._label_column.content_width, label_width)
        self.move_cursor(row=0, column=0, animate=False)
        # Its rows' height at most (1fr of the side otherwise): the lines under it follow it,
        # and where the side is short (80x24 beside the form) it scrolls.
        self.styles.max_height = len(grid.batch_sizes) + 1

    def describe(self, b: int, j: int) -> str:
        """The cell (b, j) in words."""
        grid = self.budgets
        if grid is None:
            return ""
        batch = grid.batch_sizes[b]
        if j == 0:
            return (
                f"batch {batch}: best tree {int(grid.best_budget[b])} nodes "
                f"{speedup_text(float(grid.best_speedup[b]))}"
            )
        if j == 1:
            return (
                f"batch {batch}: best chain K={int(grid.chain_k[b])} "
                f"{speedup_text(float(grid.chain_speedup[b]))}"
            )
        budget = grid.budgets[j - 2]
        return (
            f"batch {batch}: the best tree of {budget} nodes "
            f"{speedup_text(float(grid.speedup[b, j - 2]))}"
        )


class TreeView(TreeWorkers, ReportsWorkerErrors, Vertical):
    """Redraws (in thread workers) when the form changes, while it is shown."""

    BINDINGS = [Binding("s", "sample", "Sample a cycle")]

    DEFAULT_CSS = """
    TreeView > Static {
        height: auto;
        padding: 0 1;
    }
    TreeView #tree-title {
        text-style: bold;
    }
    TreeView #tree-body {
        height: 1fr;
    }
    TreeView DrawnTree {
        width: auto;
        max-width: 50%;
        height: 1fr;
        scrollbar-size: 1 1;
    }
    TreeView #tree-side {
        width: 1fr;
        height: 1fr;
    }
    TreeView BudgetTable {
        width: 100%;
        height: 1fr;
        scrollbar-size-horizontal: 0;  /* the line under it says which columns are hidden */
    }
    TreeView #tree-side > Static {
        height: auto;
        width: 100%;
        padding: 0 1;
    }
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.config: SpecConfig | None = None
        self.draft: Tree | None = None
        self.rank_probs: Any = None
        self.grid: BudgetGrid | None = None
        self.cycles = 0
        self.rng = np.random.default_rng(0)
        self.dirty = True
        self.error = ""  # why the form's tree cannot be drawn: kept on the status line

    def compose(self) -> ComposeResult:
        yield Static("Tree", id="tree-title")
        with Horizontal(id="tree-body"):
            yield DrawnTree(id="tree-nodes", classes="main-view")
            with Vertical(id="tree-side"):
                yield Static("", id="tree-grid-title")
                yield BudgetTable(id="tree-budgets")
                yield ColumnsHint(id="tree-more")
                yield Static(Text(LEGEND), id="tree-legend")
        yield Static("", id="tree-cycle")
        yield Static("", id="tree-status")

    def on_mount(self) -> None:
        self.refresh_view()

    def set_config(self, config: SpecConfig | None) -> None:
        """Show ``config`` (the form's; None when the form is invalid), now if shown."""
        self.config = config
        self.dirty = True
        if self.display and self.parent is not None and self.parent.display:
            self.refresh_view()

    def _status(self, text: str) -> None:
        """One line under the view: what is computing, what failed, the cell under the
        heatmap's cursor."""
        self.query_one("#tree-status", Static).update(Text(text.splitlines()[0] if text else ""))

    def refresh_view(self) -> None:
        if not self.query("#tree-status"):
            return  # not composed yet: on_mount draws it
        if self.config is None:
            self.workers.cancel_group(self, "tree")
            self.workers.cancel_group(self, "budgets")
            self._status(self._invalid_text())
            return
        self.dirty = False
        self.error = ""
        self._status(BUSY_TREE)
        self._build(self.config)
        self._budgets(self.config)

    def _invalid_text(self) -> str:
        """Why there is nothing to draw: the form's first invalid field and its reason."""
        errors: dict[str, str] = getattr(getattr(self.app, "form", None), "errors", {}) or {}
        for key, reason in errors.items():
            return f"form invalid: {key}: {reason}"
        return INVALID_TEXT

    def on_tree_ready(self, message: TreeReady) -> None:
        message.stop()
        if message.config != self.config:
            return  # an older form's tree
        drawn = self.query_one(DrawnTree)
        if message.draft is None:
            self.draft = None
            drawn.clear()
            drawn.draft = None
            self.query_one("#tree-title", Static).update("Tree")
            self.query_one("#tree-cycle", Static).update("")
            self.error = message.error
            self._status(message.error)
            return
        from engine.shapes.trees import expected_tokens, path_probs

        self.draft, self.rank_probs = message.draft, message.rank_probs
        probs = np.asarray(path_probs(self.draft, self.rank_probs), dtype=float)
        expected = float(expected_tokens(self.draft, self.rank_probs))
        title = tree_summary(self.draft, expected)
        self.query_one("#tree-title", Static).update(Text(title))
        drawn.draw(self.draft, probs)
        self.rng = np.random.default_rng(message.config.seed)
        self.cycles = 0
        self.action_sample()
        self._status(BUSY_GRID if self.grid is None else self._cell_text())

    def action_sample(self) -> None:
        """Sample the next verify cycle and mark its accepted path."""
        tree = self.draft
        if tree is None:
            return
        from engine.shapes.trees import sample_cycles

        depths, last = sample_cycles(tree, self.rank_probs, self.rng, 1)
        node = int(last[0])
        path = path_to(tree, node)
        drawn = self.query_one(DrawnTree)
        drawn.mark(frozenset(path))
        self.cycles += 1
        accepted = int(depths[0])
        ranks = " → ".join(f"r{tree.ranks[i - 1]}" for i in path[1:]) or "none"
        self.query_one("#tree-cycle", Static).update(
            Text(
                f"cycle {self.cycles}: {accepted} drafts accepted ({ranks}), "
                f"{accepted + 1} tokens · {SAMPLE_HINT}"
            )
        )
        drawn.move_cursor(drawn.node_of[node], animate=False)

    def on_budgets_ready(self, message: BudgetsReady) -> None:
        message.stop()
        if message.config != self.config:
            return  # an older form's heatmap
        if message.grid is None:
            self.error = self.error or message.error
            self._status(self.error)
            return
        self.grid = message.grid
        title = f"{titled(GRID_TITLE, message.note)}\n{acceptance_note(message.config)}"
        self.query_one("#tree-grid-title", Static).update(Text(title))
        self.query_one(BudgetTable).show_grid(message.grid)
        if self.draft is not None and not self.error:
            self._status(self._cell_text())

    def _cell_text(self) -> str:
        table = self.query_one(BudgetTable)
        return table.describe(max(table.cursor_row, 0), max(table.cursor_column, 0))

    def on_data_table_cell_highlighted(self, event: DataTable.CellHighlighted) -> None:
        event.stop()
        table = self.query_one(BudgetTable)
        if table.budgets is not None and not self.error:
            self._status(table.describe(event.coordinate.row, event.coordinate.column))

    def worker_failed(self, worker: Worker[Any]) -> None:
        """A computation raised (a cost model that cannot be built): leave the busy state."""
        if worker.group in ("tree", "budgets"):
            self._status("could not compute the tree view (see the notification)")
