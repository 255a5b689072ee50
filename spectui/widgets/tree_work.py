"""The Tree view's thread workers: the form scenario's tree and the best tree size by batch,
each posted back as a message.

:class:`TreeWorkers` is a mixin of :class:`spectui.widgets.tree_view.TreeView`; the names here
are re-exported by that module.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from textual import work
from textual.message import Message
from textual.worker import get_current_worker

from engine.core.config import SpecConfig
from engine.core.parts import SHAPE
from spectui.widgets.regime_view import map_config

if TYPE_CHECKING:
    from engine.shapes.trees import Tree
    from engine.simulate.tree_scenario import BudgetGrid


def drawn_rank_probs(config: SpecConfig) -> np.ndarray:
    """The acceptance the drawn tree is labelled and sampled with: a tree's rank
    probabilities (:func:`engine.simulate.tree_scenario.rank_probs_of`); for a chain, the draft
    model's p_1..p_K, one per depth (a (K, 1) table), so its path probabilities are the
    chain's survival P(n >= i)."""
    if not SHAPE.of(config).tree:
        from engine.acceptance.draft_models import get_model

        probs = get_model(config.draft_model).position_probs(config, config.k)
        return np.asarray(probs, dtype=np.float64).reshape(config.k, 1)
    from engine.simulate.tree_scenario import rank_probs_of

    return rank_probs_of(config)


@dataclass
class TreeReady(Message):
    """The form scenario's tree and its rank probabilities (or why there is none)."""

    config: SpecConfig
    draft: Tree | None
    rank_probs: Any
    error: str = ""


@dataclass
class BudgetsReady(Message):
    """The best tree size per batch for the form's ``config``."""

    config: SpecConfig
    grid: BudgetGrid | None
    note: str
    error: str = ""


class TreeWorkers:
    """Mixin for :class:`~spectui.widgets.tree_view.TreeView`: builds the tree and the
    budget x batch grid off the UI thread; a newer form's computation cancels the older."""

    if TYPE_CHECKING:  # provided by TreeView (a Vertical)

        def post_message(self, message: Message) -> bool: ...

    @work(thread=True, exclusive=True, group="tree", name="Tree", exit_on_error=False)
    def _build(self, config: SpecConfig) -> None:
        from engine.simulate.tree_scenario import tree_of

        worker = get_current_worker()
        try:
            rank_probs = drawn_rank_probs(config)
            tree = tree_of(config)
        except ValueError as err:  # a shape text that does not parse: say so, in one line
            self.post_message(TreeReady(config, None, None, str(err)))
            return
        if not worker.is_cancelled:
            self.post_message(TreeReady(config, tree, rank_probs))

    @work(thread=True, exclusive=True, group="budgets", name="Tree budgets", exit_on_error=False)
    def _budgets(self, config: SpecConfig) -> None:
        from engine.core.runs import RunStopped
        from engine.simulate.tree_scenario import budget_by_batch

        worker = get_current_worker()
        mapped, note = map_config(config)
        try:
            grid = budget_by_batch(mapped, should_stop=lambda: worker.is_cancelled)
        except RunStopped:
            return
        except ValueError as err:  # the scenario's rank probabilities do not parse
            self.post_message(BudgetsReady(config, None, note, f"heatmap: {err}"))
            return
        if not worker.is_cancelled:
            self.post_message(BudgetsReady(config, grid, note))
