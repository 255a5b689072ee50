"""chain: one token per draft pass, K of them, verified together (the original's)."""

from __future__ import annotations

from engine.core.parts import SHAPE
from engine.shapes.base import ShapePart


@SHAPE.register
class Chain(ShapePart):
    name = "chain"
    description = "a chain of K draft tokens, one per draft pass"
    brief = "one token per draft pass"
