"""What every draft shape declares: :class:`ShapePart`.

A shape says what a cycle drafts: a chain of K tokens, or a token tree. It is a registered
part (:mod:`engine.core.parts`): a class in its own file in this package,
``@SHAPE.register`` above it, declaring its name, description and fields.
"""

from __future__ import annotations

from typing import ClassVar

from engine.core.parts import Part


class ShapePart(Part):
    """Base class of the draft shapes.

    What a shape supports (class attributes): ``tree``, whether a cycle drafts a token
    tree (its own simulator, exact values and records; engine.simulate.tree_scenario);
    ``own_acceptance``, whether the shape reads its own acceptance fields in place of the
    acceptance model and K (then they leave the random stream's key).
    """

    kind = "shape"
    tree: ClassVar[bool] = False
    own_acceptance: ClassVar[bool] = False
