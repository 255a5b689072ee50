"""table: measured latencies by batch size and tokens (a CSV, or vLLM's profile)."""

from __future__ import annotations

import os
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from engine.core.config import ConfigError, SpecConfig, field
from engine.core.parts import COST
from engine.cost.part import CostPart

if TYPE_CHECKING:
    from engine.cost.table import TableCost


@lru_cache(maxsize=16)
def _read_table(path: str, stamp: float) -> TableCost:
    from engine.cost.table import read_table

    return read_table(path)


def _table(config: SpecConfig) -> TableCost:
    path = config.cost_table
    try:
        stamp = os.stat(path).st_mtime
    except OSError as err:
        raise ConfigError("cost.table", f"{path}: {err.strerror or err}") from None
    from engine.cost.table import TableError

    try:
        return _read_table(path, stamp)
    except (TableError, OSError) as err:
        raise ConfigError("cost.table", str(err)) from None


@COST.register
class Table(CostPart):
    name = "table"
    description = "measured latencies, interpolated by batch size and tokens per pass"
    brief = "measured latencies"
    context_dependent = False
    fields = (
        field(
            "cost.table",
            "",
            attr="cost_table",
            label="table",
            kind="path",
            flag="--cost-table",
            help="table: measured latencies, CSV (batch_size,tokens,verify_us[,draft_us]) or "
            "vLLM's dynamic speculative decoding profile (JSON)",
        ),
    )

    def build(self, config: Any) -> Any:
        return _table(config)

    def label(self, config: Any) -> str:
        return f"table {config.cost_table}, batch {config.batch_size}, prompt {config.prompt_len}"
