"""Per-request records of a load study, streamed to a file: CSV, or Parquet for a
``.parquet`` name (docs/model.md, "Serving under load").

A row per finished request: the level of load, the policy, the replication and the
simulator's record (:data:`engine.serve.sim.RECORD_FIELDS`). Rows are written as runs
finish them, a block at a time (memory holds at most :data:`BLOCK_ROWS`); the file appears,
whole, only when the study ends without an exception.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from engine.serve.sim import RECORD_FIELDS

COLUMNS = ("level", "policy", "replication", *RECORD_FIELDS)
BLOCK_ROWS = 65_536
RecordSink = Callable[[float, str, int, np.ndarray], None]


@contextmanager
def records_writer(path: Path) -> Iterator[RecordSink]:
    """A sink ``(level, policy, replication, rows)`` writing to ``path`` (module docstring)."""
    from engine.core.files import atomic_open
    from engine.simulate.cycles_file import is_parquet

    with atomic_open(Path(path), "wb") as handle:
        if is_parquet(Path(path)):
            with _parquet(handle) as sink:
                yield sink
        else:
            text = io.TextIOWrapper(handle, encoding="utf-8", newline="")
            writer = csv.writer(text)
            writer.writerow(COLUMNS)

            def write_csv(level: float, policy: str, replication: int, rows: np.ndarray) -> None:
                for row in rows.tolist():
                    writer.writerow(
                        (f"{level:g}", policy, replication, int(row[0]), *row[1:4],
                         int(row[4]), int(row[5]))
                    )  # fmt: skip

            yield write_csv
            text.flush()
            text.detach()


@contextmanager
def _parquet(handle: Any) -> Iterator[RecordSink]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema(
        [
            ("level", pa.float64()),
            ("policy", pa.string()),
            ("replication", pa.int64()),
            ("request", pa.int64()),
            ("arrival_s", pa.float64()),
            ("first_token_s", pa.float64()),
            ("last_token_s", pa.float64()),
            ("output", pa.int64()),
            ("chunks", pa.int64()),
        ]
    )
    pending: list[tuple[float, str, int, np.ndarray]] = []
    count = [0]
    with pq.ParquetWriter(handle, schema) as writer:

        def flush() -> None:
            if not pending:
                return
            rows = np.concatenate([r for *_, r in pending])
            columns = {
                "level": np.concatenate([np.full(len(r), lv) for lv, _, _, r in pending]),
                "policy": [p for _, p, _, r in pending for _ in range(len(r))],
                "replication": np.concatenate([np.full(len(r), rep) for _, _, rep, r in pending]),
                "request": rows[:, 0].astype(np.int64),
                "arrival_s": rows[:, 1],
                "first_token_s": rows[:, 2],
                "last_token_s": rows[:, 3],
                "output": rows[:, 4].astype(np.int64),
                "chunks": rows[:, 5].astype(np.int64),
            }
            writer.write_table(pa.table(columns, schema=schema))
            pending.clear()
            count[0] = 0

        def sink(level: float, policy: str, replication: int, rows: np.ndarray) -> None:
            pending.append((level, policy, replication, rows))
            count[0] += len(rows)
            if count[0] >= BLOCK_ROWS:
                flush()

        yield sink
        flush()
