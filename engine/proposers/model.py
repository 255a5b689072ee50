"""model: a draft model or head, one pass per draft token, priced by the cost model (the
proposer of every scenario before proposers: its results stay as they were)."""

from __future__ import annotations

from engine.core.parts import PROPOSER
from engine.proposers.base import ProposerPart


@PROPOSER.register
class Model(ProposerPart):
    name = "model"
    description = "a draft model or head: K draft passes a cycle, priced by the cost model"
    brief = "a draft model or head"
    catalog_method = None
