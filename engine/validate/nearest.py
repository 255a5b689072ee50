"""The validated entry nearest a scenario: the app's Speedup view names it and its error, so
that a person sees how far to trust the curve (docs/validation.md)."""

from __future__ import annotations

import math
from functools import cache
from typing import Any

from engine.validate.report import Row, percent, rows_of
from engine.validate.table import shipped_table


@cache
def validated_rows() -> tuple[Row, ...]:
    """The shipped table's speedups predicted from specs (computed once a process)."""
    return tuple(
        r
        for r in rows_of(shipped_table())
        if r.entry.quantity == "speedup" and r.predictions["specs"].value is not None
    )


def nearest(config: Any) -> Row | None:
    """The entry on the scenario's hardware, target and draft (a cost model that reads
    them) nearest its batch, then its K; None if no entry has that setup."""
    from engine.core.config import part_fields

    if "cost.gpu" not in part_fields("cost.model", config.cost_model):
        return None
    setup = (config.get("cost.gpu"), config.get("cost.target"), config.get("cost.draft"))
    same = [
        r for r in validated_rows() if (r.entry.hardware, r.entry.target, r.entry.draft) == setup
    ]
    if not same:
        return None

    def distance(row: Row) -> tuple[float, float, str]:
        e = row.entry
        batch = abs(math.log2(config.batch_size / (e.batch or 1)))
        k = abs(config.k - e.k) if e.k is not None else math.inf
        return batch, k, e.id

    return min(same, key=distance)


def nearest_text(config: Any) -> str | None:
    """``nearest validated: vllm-20780-eagle1-k3 (K=3, batch 1): default roofline +6.9 %
    (within 10 %)``: the prediction from specs (the roofline with today's defaults, whatever
    the form's efficiencies) against that measurement; or None."""
    row = nearest(config)
    if row is None:
        return None
    e = row.entry
    return (
        f"nearest validated: {e.id} ({e.shape_text}, {e.batch_text}): default roofline "
        f"{percent(row.error('specs'), signed=True)} ({row.verdict('specs')})"
    )
