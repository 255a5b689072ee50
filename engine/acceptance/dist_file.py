"""Target and draft distributions from a file, for the ``distribution`` acceptance model
(``acceptance.dist_file``; docs/model.md): what a user dumps from real models.

Two formats, each at most :data:`FILE_MAX_BYTES`, read only from a regular file:

- NPY (``.npy``): a float array of shape (positions, contexts, 2, vocabulary): at each
  draft position and context, the target's probabilities ``[..., 0, :]`` and the draft's
  ``[..., 1, :]``;
- CSV: a header line ``position,context,side,...`` then one row per position, context and
  side (``target`` or ``draft``): the position and context (whole numbers from 1), the side,
  and the vocabulary's probabilities. Every position has the same contexts, each with both
  sides.

Each distribution must hold no negative or NaN value and sum to 1 within 1e-6; a file that
breaks a rule is refused in one line naming the rule and, for a distribution, its position,
context and side (never the file's contents). Positions beyond the file's use its last.
"""

from __future__ import annotations

import io
import os
from functools import lru_cache
from pathlib import Path

import numpy as np

from engine.core.fields import ConfigError

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
    try:
        array = np.load(io.BytesIO(data), allow_pickle=False)
    except (ValueError, OSError, EOFError):
        raise ConfigError(FIELD, f"{path}: not an NPY array file") from None
    if array.dtype.kind not in "fiu" or array.ndim != 4 or array.shape[2] != 2:
        raise ConfigError(
            FIELD,
            f"{path}: must be a number array of shape (positions, contexts, 2, vocabulary)",
        )
    return np.asarray(array, dtype=np.float64)


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
    rows: dict[tuple[int, int, int], np.ndarray] = {}
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        cells = line.split(",")
        try:
            if len(cells) != width or cells[2].strip() not in SIDES:
                raise ValueError
            position, context = int(cells[0]), int(cells[1])
            probs = np.array([float(c) for c in cells[3:]])
        except ValueError:
            raise ConfigError(
                FIELD,
                f"{path}: line {number} must be a position, a context, target or draft and "
                f"{width - 3} probabilities",
            ) from None
        if not (1 <= position <= POSITIONS_MAX and context >= 1):
            raise ConfigError(
                FIELD, f"{path}: line {number}: positions in [1, {POSITIONS_MAX}], contexts from 1"
            )
        key = (position, context, SIDES.index(cells[2].strip()))
        if key in rows:
            raise ConfigError(FIELD, f"{path}: line {number} repeats an earlier row's key")
        rows[key] = probs
        if len(rows) * (width - 3) > ENTRIES_MAX:
            raise ConfigError(FIELD, f"{path}: more than {ENTRIES_MAX:,} probabilities")
    if not rows:
        raise ConfigError(FIELD, f"{path}: no distributions after the header")
    positions = max(k[0] for k in rows)
    contexts = max(k[1] for k in rows)
    array = np.empty((positions, contexts, 2, width - 3))
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


def _check(path: str, array: np.ndarray) -> None:
    positions, contexts, _, vocab = array.shape
    if not (1 <= positions <= POSITIONS_MAX and contexts >= 1 and vocab >= 2):
        raise ConfigError(
            FIELD, f"{path}: 1 to {POSITIONS_MAX} positions, a context at least, 2 tokens at least"
        )
    if array.size > ENTRIES_MAX:
        raise ConfigError(FIELD, f"{path}: more than {ENTRIES_MAX:,} probabilities")
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
