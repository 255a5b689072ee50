"""The cost models by name: a scenario's ``cost.model`` and its fields, built into a
:class:`~engine.cost.base.CostModel` (docs/model.md, "Cost models").

Each cost model is a registered part in its own file of this package
(:class:`engine.cost.part.CostPart`); importing the package registers the built-in ones:
linear, roofline, roofline_max, table.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from engine.core.parts import COST

# The built-in cost models, each a file of this package that registers itself; imported in
# this order, the order every list shows them.
BUILT_IN = ("linear", "roofline", "roofline_max", "table")
for _module in BUILT_IN:
    importlib.import_module(f"{__name__}.{_module}")

if TYPE_CHECKING:
    from engine.core.config import SpecConfig
    from engine.cost.base import CostModel


def build_cost(config: SpecConfig) -> CostModel:
    """The cost model ``config`` chooses, from its fields. Raises :class:`ConfigError`
    naming the field when a spec id is unknown or a table cannot be read."""
    return COST[config.cost_model].build(config)
