"""What a prediction of a published measurement is (:class:`Prediction`), and the
scenario of its entry (:func:`scenario_fields`).

Below both prediction modules: engine.validate.predict (from specs and calibrated) hands
an entry measured under load to engine.validate.under_load (the serving simulator), and
both build the entry's roofline scenario and give a Prediction; predict exports both
names, as before.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine.validate.table import Entry


@dataclass(frozen=True)
class Prediction:
    """One method's prediction of an entry: the value, or why there is none."""

    value: float | None
    why_none: str = ""


def scenario_fields(entry: Entry) -> dict[str, object]:
    """The roofline scenario's fields of ``entry``: its hardware, target, draft and batch,
    and how the models run (``tp``, ``draft_tp``, ``ep``, the target's formats). A
    model-free proposer's entry names its proposer and no draft: its scenario's draft field
    names the target, but no draft is placed (the placement check counts the target's
    weights alone, engine.cost.placement) and no draft pass is priced."""
    runs = {
        f"cost.{name}": entry.values[name]
        for name in ("tp", "draft_tp", "ep", "weight_dtype", "compute_dtype")
        if name in entry.values
    }
    return {
        "cost.model": "roofline",
        "cost.gpu": entry.hardware,
        "cost.target": entry.target,
        "cost.draft": entry.draft or entry.target,
        "batch_size": entry.batch or 1,
        **runs,
        **({"proposer.name": entry.proposer} if entry.proposer else {}),
    }
