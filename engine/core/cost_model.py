"""What every cost model answers (the kernel prices cycles with it; the cost models
themselves are registered parts in engine.cost.models)."""

from __future__ import annotations

from typing import Protocol

import numpy as np
import numpy.typing as npt

# A number or an array of numbers; results broadcast like numpy.
Times = float | npt.NDArray[np.float64]


class CostModel(Protocol):
    """The time of one cycle's parts, in microseconds (docs/model.md, "Cost models").

    ``k`` drafted tokens per sequence, ``w = k + 1`` tokens per sequence in the verify pass,
    ``B`` sequences in the batch, ``L`` tokens of context at the start of the cycle. Every
    argument may be an array; results broadcast like numpy."""

    def draft_us(self, k: npt.ArrayLike, B: npt.ArrayLike, L: npt.ArrayLike) -> Times: ...

    def verify_us(self, w: npt.ArrayLike, B: npt.ArrayLike, L: npt.ArrayLike) -> Times: ...
