"""tree: token trees (Medusa, EAGLE, Sequoia), verified in one pass (engine.shapes.trees)."""

from __future__ import annotations

from typing import Any

from engine.core.config import ConfigError, field, rates_of
from engine.core.parts import POLICY, SHAPE
from engine.shapes.base import ShapePart


@SHAPE.register
class Tree(ShapePart):
    name = "tree"
    description = "a token tree drafted per cycle, its accepted path verified in one pass"
    brief = "token trees: Medusa, EAGLE, Sequoia; shape.tree and shape.rank_probs"
    tree = True
    own_acceptance = True
    fields = (
        field(
            "shape.tree",
            "eagle",
            label="tree",
            kind="tree",
            help="tree: chain:K, kary:k,d (Medusa-style), eagle[:total,depth,top_k] (EAGLE-2 "
            "rule), sequoia:budget,depth (Sequoia-optimal) or parents=0,0,1,... ranks=1,2,1,...",
            seed_key=True,
        ),
        field(
            "shape.rank_probs",
            "0.6,0.15,0.06,0.03,0.02",
            label="rank p",
            kind="probs",
            help="tree: P(the rank-c child is accepted | its parent was), c = 1, 2, ... (sum <= 1)",
            seed_key=True,
        ),
    )

    def check(self, config: Any) -> None:
        if sum(rates_of(config.rank_probs)) > 1.0 + 1e-9:
            raise ConfigError(
                "shape.rank_probs",
                f"{config.rank_probs} sums to more than 1: at most one child of a node is accepted",
            )
        if POLICY.of(config).stepwise:
            raise ConfigError(
                "policy.name", f"{config.policy} runs on chains; a tree runs as drafted"
            )
        if config.tail != "full":
            raise ConfigError("tail", "clamp is for chains; a tree's last cycle is drafted whole")

    def label(self, config: Any) -> str:
        return f"tree {config.tree}"
