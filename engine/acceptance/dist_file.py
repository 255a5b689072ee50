"""Target and draft distributions from a file, for the ``distribution`` acceptance model
(``acceptance.dist_file``; docs/model.md): what a user dumps from real models.

Two formats, each at most :data:`FILE_MAX_BYTES`, read only from a regular file:

- NPY (``.npy``): a float array of shape (positions, contexts, 2, vocabulary): at each
  draft position and context, the target's probabilities ``[..., 0, :]`` and the draft's
  ``[..., 1, :]``;
- CSV: a header line ``position,context,side,...`` then one row per position, context and
  side (``target`` or ``draft``): the position and context (whole numbers from 1), the side,
  and the vocabulary's probabilities, every number in ASCII digits. Every position has the
  same contexts, each with both sides.

Each distribution must hold no negative or NaN value and sum to 1 within 1e-6; a file that
breaks a rule is refused in one line naming the rule and its line and column, or for a
distribution, its position, context and side (never the file's contents). The size a file
implies (an NPY header's shape, a CSV's largest position and context) is checked against
:data:`ENTRIES_MAX` and the bytes there are before anything that size is allocated.
Positions beyond the file's use its last.
"""

from __future__ import annotations

import io
import math
import os
import tokenize
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from engine.core.fields import ConfigError, ascii_number

FILE_MAX_BYTES = 256 * 2**20
ENTRIES_MAX = 1 << 26  # positions x contexts x 2 x vocabulary
POSITIONS_MAX = 64
SUM_TOLERANCE = 1e-6
FIELD = "acceptance.dist_file"
SIDES = ("target", "draft")


def read_distributions(path: str) -> np.ndarray:
    """The file's distributions, (positions, contexts, 2, vocabulary) float64, read once
    while the file stays the same (module docstring)."""
    try:
        info = os.stat(path)
    except OSError as error:
        raise ConfigError(FIELD, f"{path}: cannot read: {error.strerror or error}") from None
    return _cached(path, info.st_mtime_ns, info.st_size, info.st_ino)


@lru_cache(maxsize=2)
def _cached(path: str, *stamp: int) -> np.ndarray:
    from engine.core.inputs import read_input

    try:
        data = read_input(path, FILE_MAX_BYTES, "distributions file")
    except OSError as error:
        raise ConfigError(FIELD, f"{path}: cannot read: {error.strerror or error}") from None
    array = _npy(path, data) if Path(path).suffix.lower() == ".npy" else _csv(path, data)
    _check(path, array)
    array.setflags(write=False)
    return array


def _npy(path: str, data: bytes) -> np.ndarray:
    """The array of an NPY file's bytes. Its header is read and checked first (the shape
    against the bounds, the data it implies against the bytes there are), so that a header
    that lies allocates nothing (np.load would allocate what it says before reading)."""
    from numpy.lib import format as npy

    stream = io.BytesIO(data)
    try:
        version = npy.read_magic(stream)
        header = {(1, 0): npy.read_array_header_1_0, (2, 0): npy.read_array_header_2_0}
        if version not in header:
            raise ValueError(version)
        shape, fortran, dtype = header[version](stream)
        if not all(type(n) is int for n in shape):  # bool is an int to numpy's check
            raise ValueError(shape)
    except (ValueError, TypeError, OSError, EOFError, SyntaxError, tokenize.TokenError):
        raise ConfigError(FIELD, f"{path}: not an NPY array file") from None
    if dtype.kind not in "fiu" or dtype.hasobject or len(shape) != 4 or shape[2] != 2:
        raise ConfigError(
            FIELD,
            f"{path}: must be a number array of shape (positions, contexts, 2, vocabulary)",
        )
    _check_shape(path, shape)
    count = math.prod(shape)
    offset = stream.tell()
    if len(data) - offset != count * dtype.itemsize:
        raise ConfigError(
            FIELD,
            f"{path}: its header's shape {shape} needs {count * dtype.itemsize:,} bytes of "
            f"data; the file holds {len(data) - offset:,}",
        )
    array = np.frombuffer(data, dtype=dtype, count=count, offset=offset)
    return np.asarray(array.reshape(shape, order="F" if fortran else "C"), dtype=np.float64)


def _csv(path: str, data: bytes) -> np.ndarray:
    try:
        lines = data.decode("utf-8").splitlines()
    except UnicodeDecodeError:
        raise ConfigError(FIELD, f"{path}: not a text file (UTF-8 expected)") from None
    if not lines or [c.strip() for c in lines[0].split(",")[:3]] != ["position", "context", "side"]:
        raise ConfigError(FIELD, f"{path}: line 1 must be the header position,context,side,...")
    width = len(lines[0].split(","))
    if width < 5:
        raise ConfigError(FIELD, f"{path}: a vocabulary of 2 tokens at least (line 1)")
    vocab = width - 3
    contexts_max = ENTRIES_MAX // (2 * vocab)  # what one position may hold, at most
    expected = f"a position, a context, target or draft and {vocab} probabilities"
    rows: dict[tuple[int, int, int], np.ndarray] = {}
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        cells = line.split(",")
        if len(cells) != width or cells[2].strip() not in SIDES:
            raise ConfigError(FIELD, f"{path}: line {number} must be {expected}")
        position = _cell(path, number, cells, 0, f"{expected}: column 1 (position)")
        context = _cell(path, number, cells, 1, f"{expected}: column 2 (context)")
        probs = np.array(
            [_cell(path, number, cells, c, f"{expected}: column {c + 1}") for c in range(3, width)]
        )
        if not 1 <= position <= POSITIONS_MAX:
            raise ConfigError(
                FIELD, f"{path}: line {number}, column 1: positions in [1, {POSITIONS_MAX}]"
            )
        if not 1 <= context <= contexts_max:
            raise ConfigError(
                FIELD,
                f"{path}: line {number}, column 2: contexts in [1, {contexts_max:,}] (at most "
                f"{ENTRIES_MAX:,} probabilities in all, {vocab} to a distribution)",
            )
        key = (position, context, SIDES.index(cells[2].strip()))
        if key in rows:
            raise ConfigError(FIELD, f"{path}: line {number} repeats an earlier row's key")
        rows[key] = probs
        if len(rows) * vocab > ENTRIES_MAX:
            raise ConfigError(FIELD, f"{path}: more than {ENTRIES_MAX:,} probabilities")
    if not rows:
        raise ConfigError(FIELD, f"{path}: no distributions after the header")
    positions = max(k[0] for k in rows)
    contexts = max(k[1] for k in rows)
    _check_shape(path, (positions, contexts, 2, vocab))  # before the array is allocated
    array = np.empty((positions, contexts, 2, vocab))
    for position in range(1, positions + 1):
        for context in range(1, contexts + 1):
            for side in range(2):
                found = rows.get((position, context, side))
                if found is None:
                    raise ConfigError(
                        FIELD,
                        f"{path}: position {position}, context {context} has no {SIDES[side]} row",
                    )
                array[position - 1, context - 1, side] = found
    return array


def _cell(path: str, number: int, cells: list[str], column: int, what: str) -> Any:
    """Cell ``column`` (0-based) of line ``number``: the position and context whole numbers,
    a probability a number, each in ASCII digits (:func:`ascii_number`; never the cell's
    text in the message, which may not be what the file should hold)."""
    integer = column < 2
    try:
        return ascii_number(cells[column], integer=integer)
    except ValueError:
        noun = "a whole number" if integer else "a number"
        raise ConfigError(
            FIELD, f"{path}: line {number} must be {what} is not {noun} in ASCII digits"
        ) from None


def _check_shape(path: str, shape: tuple[int, ...]) -> None:
    """The bounds on an array's shape (positions, contexts, 2, vocabulary), checked before
    the array is allocated (whole numbers of any size: the product is Python's)."""
    positions, contexts, _, vocab = shape
    if not (1 <= positions <= POSITIONS_MAX and contexts >= 1 and vocab >= 2):
        raise ConfigError(
            FIELD, f"{path}: 1 to {POSITIONS_MAX} positions, a context at least, 2 tokens at least"
        )
    if math.prod(shape) > ENTRIES_MAX:
        raise ConfigError(FIELD, f"{path}: more than {ENTRIES_MAX:,} probabilities")


def _check(path: str, array: np.ndarray) -> None:
    bad = ~np.isfinite(array) | (array < 0)
    sums = array.sum(axis=3)
    off = np.abs(sums - 1.0) > SUM_TOLERANCE
    for mask, what in ((bad.any(axis=3), "holds a negative, infinite or NaN value"),
                       (off, f"does not sum to 1 within {SUM_TOLERANCE:g}")):  # fmt: skip
        if mask.any():
            position, context, side = (int(i) for i in np.argwhere(mask)[0])
            raise ConfigError(
                FIELD,
                f"{path}: position {position + 1}, context {context + 1}, {SIDES[side]}: {what}",
            )


def logits(probs: np.ndarray) -> np.ndarray:
    """Logits of probabilities (``-inf`` where a probability is 0)."""
    with np.errstate(divide="ignore"):
        return np.log(probs)


def position_of(array: np.ndarray, position: int) -> int:
    """The file's index of draft ``position`` (1-based): positions beyond it use its last."""
    return min(position, array.shape[0]) - 1


def vocabulary(array: np.ndarray) -> int:
    return int(array.shape[3])
