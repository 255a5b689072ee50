"""What every cost model declares and answers: :class:`CostPart`.

A cost model is a registered part (:mod:`engine.core.parts`): a class in its own file in
``engine/cost/models/``, ``@COST.register`` above it, declaring its name, description and
fields, and building a :class:`~engine.cost.base.CostModel` (``draft_us(k, B, L)``,
``verify_us(w, B, L)``) from a scenario's fields.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from engine.core.parts import Part

if TYPE_CHECKING:
    from engine.cost.base import CostModel


class CostPart(Part):
    """Base class of the cost models.

    What a model supports (class attributes): ``context_dependent``, whether a pass's time
    depends on the context length (then a sequence's cycles are priced one by one, else
    once); ``batch_dependent``, whether it depends on the batch size (a regime map or a
    tree sized for a batch needs one that does); ``batch_default``, the model a command
    that needs batch dependence takes when the scenario's does not have it (one model).
    """

    kind = "cost"
    context_dependent: ClassVar[bool] = True
    batch_dependent: ClassVar[bool] = True
    batch_default: ClassVar[bool] = False

    def build(self, config: Any) -> CostModel:
        """The cost model of ``config``, from its fields; ConfigError names a field that
        cannot be used (an unknown spec id, a table that cannot be read)."""
        raise NotImplementedError

    def label(self, config: Any) -> str:
        """The cost model and workload in words, for titles."""
        return f"{self.name}, batch {config.batch_size}, prompt {config.prompt_len}"
