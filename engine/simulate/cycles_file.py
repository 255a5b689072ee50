"""Per-cycle record files (``spectui run --cycles-out FILE``): CSV, or Parquet for a
``.parquet`` name.

A file holds the record columns (:data:`engine.core.runs.RECORD_DTYPES`) and two more:
``pattern``, the cycle's accept pattern (A accepted, R rejected, . not verified; "-" for a
cycle that drafts nothing), and ``running_speedup``, the baseline's time for the sequence's
tokens so far over its time so far. A token tree's file (shape tree) holds its records'
columns (:data:`engine.simulate.tree_scenario.TREE_RECORD_DTYPES`: ``k`` the tree's draft nodes,
``accepted`` the accepted depth, ``node`` the last accepted node) and, in place of the
pattern, ``path``: the accepted nodes from the root down (``1>3>12``; "-" for none,
:meth:`engine.shapes.trees.Tree.path_texts`).

The CSV text is the text pandas' ``DataFrame.to_csv`` writes for these columns (floats as
Python's ``repr``, an empty field for NaN), built without a Python object per cycle: each
column is a table of distinct values, formatted once, and a code per row; neighbouring
columns with few value pairs share one table; the rows are assembled as a byte matrix
(one NUL-padded slot per table) whose NUL bytes are then dropped. Writing a chunk costs a
few numpy passes over its bytes.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from engine.core.config import SpecConfig
from engine.core.files import atomic_open
from engine.core.kernel import baseline_time_us
from engine.core.parts import SHAPE
from engine.core.runs import RECORD_DTYPES, accept_pattern
from engine.simulate.tree_scenario import TREE_RECORD_DTYPES, tree_of

# The pattern of a cycle that drafts nothing (k = 0, the clamp rule's last cycle): an
# empty field would read back as NaN.
CYCLES_NO_DRAFTS = "-"
PATTERN_GLYPHS = "AR."

CYCLES_COLUMNS: tuple[str, ...] = (*RECORD_DTYPES, "pattern", "running_speedup")
TREE_CYCLES_COLUMNS: tuple[str, ...] = (*TREE_RECORD_DTYPES, "path", "running_speedup")

PARQUET_SUFFIX = ".parquet"
PARQUET_INSTALL = "pip install 'spectui[parquet]'"

# Records formatted together: each column's distinct values are formatted once per such
# piece (a run's chunks are smaller: one piece each). Bounds the codes, 8 bytes a field.
CSV_PIECE_ROWS = 1 << 18
# Bytes of lines assembled at once: a block stays in the processor's cache while its
# fields are filled in and its padding dropped.
CSV_BLOCK_BYTES = 1 << 19
# Bytes of a table of joined neighbouring columns (see _fused).
FUSED_TABLE_BYTES = 1 << 22

CycleSink = Callable[[pd.DataFrame], None]


def is_parquet(path: Path) -> bool:
    """Whether ``path`` names a Parquet file (its suffix, any case); else it is CSV."""
    return Path(path).suffix.lower() == PARQUET_SUFFIX


def parquet_available() -> bool:
    """Whether pyarrow, which writes Parquet, can be imported."""
    try:
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        return False
    return True


def cycles_columns(config: SpecConfig) -> tuple[str, ...]:
    """The columns of a cycles file of ``config``: a chain's, or a token tree's."""
    return TREE_CYCLES_COLUMNS if SHAPE.of(config).tree else CYCLES_COLUMNS


def _record_dtypes(config: SpecConfig) -> dict[str, str]:
    return TREE_RECORD_DTYPES if SHAPE.of(config).tree else RECORD_DTYPES


def pattern_codes(chunk: pd.DataFrame, config: SpecConfig) -> tuple[np.ndarray, list[str]]:
    """Each record's accept pattern as (codes, patterns): record i has ``patterns[codes[i]]``.

    Only the (k, accepted) pairs the chunk holds are spelled out. For a token tree, each
    record's accepted path (the ``path`` column) instead, coded by its last node."""
    if SHAPE.of(config).tree:
        return chunk["node"].to_numpy(np.intp), list(tree_of(config).path_texts())
    key = chunk["k"].to_numpy(np.int64) * (config.k + 1) + chunk["accepted"].to_numpy(np.int64)
    codes, keys = _factorized(key)
    patterns = [
        accept_pattern(k, n, glyphs=PATTERN_GLYPHS) or CYCLES_NO_DRAFTS
        for k, n in zip(
            (keys // (config.k + 1)).tolist(), (keys % (config.k + 1)).tolist(), strict=True
        )
    ]
    return codes, patterns


def running_speedup(chunk: pd.DataFrame, config: SpecConfig) -> np.ndarray:
    """Per record: the baseline's time for the sequence's tokens so far over its time so far."""
    baseline = baseline_time_us(config, chunk["cum_tokens"].to_numpy())
    with np.errstate(divide="ignore", invalid="ignore"):  # as pandas: 0 / 0 is NaN, silently
        return np.asarray(baseline / chunk["cum_time_us"].to_numpy(), dtype=np.float64)


@contextmanager
def cycles_writer(path: Path, config: SpecConfig) -> Iterator[CycleSink]:
    """A sink for record chunks (in order) that writes them to ``path``: Parquet for a
    ``.parquet`` name (needs pyarrow; a row group per chunk), else CSV.

    The file appears, complete, only when the block ends without an exception; until then
    the records go to a temporary file beside it, removed on an exception."""
    with atomic_open(path, "wb") as handle:
        if is_parquet(path):
            with _parquet_sink(handle, config) as sink:
                yield sink
        else:
            yield _csv_sink(handle, config)


def _csv_sink(handle: Any, config: SpecConfig) -> CycleSink:
    handle.write(csv_header(config))

    def sink(chunk: pd.DataFrame) -> None:
        for block in csv_blocks(chunk, config):
            handle.write(block)

    return sink


def csv_header(config: SpecConfig | None = None) -> bytes:
    """The header line of a CSV cycles file (of a chain when no configuration is given)."""
    columns = CYCLES_COLUMNS if config is None else cycles_columns(config)
    return (",".join(columns) + os.linesep).encode()


def csv_blocks(chunk: pd.DataFrame, config: SpecConfig) -> Iterator[bytes]:
    """The CSV lines of a chunk of records (no header), as ``DataFrame.to_csv`` writes them,
    in blocks of about :data:`CSV_BLOCK_BYTES` bytes."""
    for start in range(0, len(chunk), CSV_PIECE_ROWS):
        yield from _piece_blocks(chunk.iloc[start : start + CSV_PIECE_ROWS], config)


def _piece_blocks(chunk: pd.DataFrame, config: SpecConfig) -> Iterator[bytes]:
    texts = [_formatted(chunk[name].to_numpy()) for name in _record_dtypes(config)]
    codes, patterns = pattern_codes(chunk, config)
    texts.append((codes, np.array(patterns, dtype=np.bytes_)))
    texts.append(_formatted(running_speedup(chunk, config)))
    ends = [b","] * (len(texts) - 1) + [os.linesep.encode()]
    columns = _fused(
        [(codes, _slot_table(text, end)) for (codes, text), end in zip(texts, ends, strict=True)],
        len(chunk),
    )
    # A line is a record of void fields, one per column; NUL bytes pad each field.
    names = [f"c{i}" for i in range(len(columns))]
    line = np.dtype(
        {
            "names": names,
            "formats": [table.dtype for _, table in columns],
            "offsets": np.cumsum([0] + [table.itemsize for _, table in columns[:-1]]).tolist(),
        }
    )
    rows = max(1, CSV_BLOCK_BYTES // line.itemsize)
    lines = np.empty(min(len(chunk), rows), line)
    for start in range(0, len(chunk), rows):
        block = lines[: min(rows, len(chunk) - start)]
        for name, (codes, table) in zip(names, columns, strict=True):
            block[name] = table[codes[start : start + len(block)]]
        flat = block.view(np.uint8)
        yield flat[flat != 0].tobytes()


def _fused(
    columns: list[tuple[np.ndarray, np.ndarray]], rows: int
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Neighbouring columns joined into one while the table of their value pairs has at
    most ``rows`` entries and :data:`FUSED_TABLE_BYTES` bytes: one wider field to fill per
    row instead of several narrow ones."""
    out = [columns[0]]
    for codes, table in columns[1:]:
        last_codes, last = out[-1]
        pairs = len(last) * len(table)
        if pairs > rows or pairs * (last.itemsize + table.itemsize) > FUSED_TABLE_BYTES:
            out.append((codes, table))
            continue
        pair = np.empty(
            len(last) * len(table),
            np.dtype({"names": ["a", "b"], "formats": [last.dtype, table.dtype]}),
        )
        pair["a"] = np.repeat(last, len(table))
        pair["b"] = np.tile(table, len(last))
        out[-1] = (last_codes * len(table) + codes, pair.view(f"V{pair.itemsize}"))
    return out


def _factorized(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(codes, uniques) with ``values == uniques[codes]``. Integers in a short range are
    coded by arithmetic; floats by their bits, so -0.0 and every NaN keep their own text."""
    if values.dtype.kind in "iu":
        if len(values) == 0:
            return np.zeros(0, np.intp), values[:0]
        low, high = int(values.min()), int(values.max())
        if high - low <= max(len(values), 1024):
            return (values - low).astype(np.intp), np.arange(low, high + 1, dtype=values.dtype)
        codes, uniques = pd.factorize(values)
        return codes, np.asarray(uniques)
    bits = np.ascontiguousarray(values, dtype=np.float64).view(np.int64)
    codes, uniques = pd.factorize(bits)
    return codes, np.asarray(uniques, dtype=np.int64).view(np.float64)


def _formatted(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(codes, texts) of a numeric column: row i's text is ``texts[codes[i]]``, as pandas
    writes it (``numpy.ndarray.astype(str)``, which is Python's ``repr`` for floats; NaN
    as an empty field)."""
    codes, uniques = _factorized(values)
    text = uniques.astype(np.bytes_)
    if uniques.dtype.kind == "f":
        text[np.isnan(uniques)] = b""
    return codes, text


def _slot_table(text: np.ndarray, end: bytes) -> np.ndarray:
    """Byte strings followed by ``end``, NUL-padded to one width: a 1-d array of void items."""
    width = text.dtype.itemsize
    table = np.zeros((len(text), width + len(end)), np.uint8)
    table[:, :width] = np.frombuffer(text.tobytes(), np.uint8).reshape(len(text), width)
    lengths = np.count_nonzero(table, axis=1)
    rows = np.arange(len(text))
    for j, byte in enumerate(end):
        table[rows, lengths + j] = byte
    used = np.flatnonzero(table.any(axis=0))[-1] + 1
    return np.ascontiguousarray(table[:, :used]).view(f"V{used}").reshape(-1)


@contextmanager
def _parquet_sink(handle: Any, config: SpecConfig) -> Iterator[CycleSink]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    dtypes = _record_dtypes(config)
    schema = pa.schema(
        [(name, pa.from_numpy_dtype(np.dtype(dtype))) for name, dtype in dtypes.items()]
        + [(cycles_columns(config)[-2], pa.string()), ("running_speedup", pa.float64())]
    )
    with pq.ParquetWriter(handle, schema) as writer:

        def sink(chunk: pd.DataFrame) -> None:
            codes, patterns = pattern_codes(chunk, config)
            pattern = pa.DictionaryArray.from_arrays(
                pa.array(codes.astype(np.int32)), pa.array(patterns, pa.string())
            ).cast(pa.string())
            arrays = [pa.array(chunk[name].to_numpy()) for name in dtypes]
            arrays += [pattern, pa.array(running_speedup(chunk, config))]
            writer.write_table(pa.Table.from_arrays(arrays, schema=schema))

        yield sink
