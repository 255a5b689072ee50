"""The ``table`` cost model: measured latencies, interpolated (docs/model.md, "Cost models").

A table gives ``verify_us`` (and optionally ``draft_us``) at grid points
``(batch_size, tokens)``, ``tokens`` being the tokens per sequence in the verify pass
(``w = k + 1``). Between grid points the time is interpolated linearly in both (bilinear);
outside the grid it is clamped to the nearest edge, and the object records a warning in
``TableCost.warnings`` (the engine never prints). Context length is ignored.

Two readers:

- :func:`read_table_csv`, a plain CSV with header ``batch_size,tokens,verify_us[,draft_us]``
  (microseconds; ``draft_us`` is the time to draft the cycle's ``tokens - 1`` tokens, all
  draft passes). Without ``draft_us`` drafting costs nothing extra: ``verify_us`` is then
  the whole cycle.
- :func:`read_vllm_profile`, the JSON that vLLM's dynamic speculative decoding profiling
  writes (``DynamicSpeculativeConfig``: ``batch_stats`` maps batch size -> number of
  drafts K -> median inter-token latency in milliseconds, K = 0 being plain decoding).
  Each figure is a whole step (draft and verify), so it becomes ``verify_us`` at
  ``tokens = K + 1`` and ``draft_us`` is 0.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from engine.core.config import FIELD_SPECS
from engine.core.files import TABLE_MAX_BYTES, read_input_text, shown_cell, shown_value
from engine.cost.base import Times, as_float, scalar_or_array

FloatArray = npt.NDArray[np.float64]
CSV_COLUMNS = ("batch_size", "tokens", "verify_us", "draft_us")
CSV_HEADER = "batch_size,tokens,verify_us[,draft_us]"


class TableError(ValueError):
    """A latency table is malformed; the message is one line naming file, row and field."""


def _axis_weights(
    grid: FloatArray, values: FloatArray
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp], FloatArray]:
    """Lower index, upper index and weight of the upper one, for values inside ``grid``."""
    if grid.size == 1:
        zeros = np.zeros(values.shape, dtype=np.intp)
        return zeros, zeros, np.zeros(values.shape)
    lower = np.clip(np.searchsorted(grid, values, side="right") - 1, 0, grid.size - 2)
    upper = lower + 1
    weight = (values - grid[lower]) / (grid[upper] - grid[lower])
    return lower, upper, weight


class TableCost:
    """Measured cycle latencies by (batch size, tokens per sequence), bilinear, clamped.

    ``batch_sizes`` and ``tokens`` are strictly increasing grid axes; ``verify_us`` (and
    ``draft_us`` if given) has shape ``(len(batch_sizes), len(tokens))``, in microseconds.
    ``origin`` names where the table came from, for messages."""

    def __init__(
        self,
        batch_sizes: Sequence[float],
        tokens: Sequence[float],
        verify_us: npt.ArrayLike,
        draft_us: npt.ArrayLike | None = None,
        origin: str = "table",
    ) -> None:
        self.batch_sizes = np.asarray(batch_sizes, dtype=np.float64)
        self.tokens = np.asarray(tokens, dtype=np.float64)
        self.origin = origin
        for name, axis in (("batch_size", self.batch_sizes), ("tokens", self.tokens)):
            if axis.ndim != 1 or axis.size == 0 or np.any(axis < 1) or np.any(np.diff(axis) <= 0):
                raise TableError(f"{origin}: {name} values must be >= 1 and strictly increasing")
        shape = (self.batch_sizes.size, self.tokens.size)
        self.verify_table = self._grid("verify_us", verify_us, shape, "verify_cost_us")
        self.draft_table = (
            None if draft_us is None else self._grid("draft_us", draft_us, shape, "draft_cost_us")
        )
        self._clamped: dict[tuple[str, str], str] = {}

    def _grid(
        self, name: str, values: npt.ArrayLike, shape: tuple[int, int], like: str
    ) -> FloatArray:
        """The grid of ``name``, in the range of the linear model's field ``like`` (so that
        every accepted table has finite metrics)."""
        spec = FIELD_SPECS[like]
        low, high = float(spec.low or 0.0), float(spec.high or 0.0)
        grid = np.asarray(values, dtype=np.float64)
        if grid.shape != shape:
            raise TableError(f"{self.origin}: {name} has shape {grid.shape}, expected {shape}")
        bad = ~np.isfinite(grid) | (grid < low) | (grid > high)
        if np.any(bad):
            i, j = np.argwhere(bad)[0]
            raise TableError(
                f"{self.origin}: {name} at batch_size {self.batch_sizes[i]:g}, tokens "
                f"{self.tokens[j]:g} must be {spec.allowed()}, got {float(grid[i, j])!r}"
            )
        return grid

    @property
    def warnings(self) -> tuple[str, ...]:
        """One message per axis and side on which a query fell outside the table."""
        return tuple(self._clamped.values())

    def _clamp(self, axis_name: str, grid: FloatArray, values: FloatArray) -> FloatArray:
        low, high = grid[0], grid[-1]
        for side, outside, edge in (
            ("below", values < low, low),
            ("above", values > high, high),
        ):
            if np.any(outside):
                extreme = values[outside].min() if side == "below" else values[outside].max()
                self._clamped[(axis_name, side)] = (
                    f"{self.origin}: {axis_name} {extreme:g} is outside the table's "
                    f"{low:g}..{high:g}; used the time at {axis_name} {edge:g}"
                )
        return np.clip(values, low, high)

    def _interpolate(self, table: FloatArray, w: FloatArray, b: FloatArray) -> FloatArray:
        w, b = np.broadcast_arrays(w, b)
        b_lo, b_hi, b_weight = _axis_weights(
            self.batch_sizes, self._clamp("batch_size", self.batch_sizes, b)
        )
        w_lo, w_hi, w_weight = _axis_weights(self.tokens, self._clamp("tokens", self.tokens, w))
        low_row = table[b_lo, w_lo] * (1 - w_weight) + table[b_lo, w_hi] * w_weight
        high_row = table[b_hi, w_lo] * (1 - w_weight) + table[b_hi, w_hi] * w_weight
        return np.asarray(low_row * (1 - b_weight) + high_row * b_weight)

    def verify_us(self, w: npt.ArrayLike, B: npt.ArrayLike, L: npt.ArrayLike = 0) -> Times:
        """Microseconds of a verify pass checking ``w >= 1`` tokens per sequence at batch
        size ``B >= 1``; context ``L`` is ignored. Outside the table: clamped, with a warning."""
        w_arr, b_arr = as_float("w", w, 1.0), as_float("batch", B, 1.0)
        shape = np.broadcast_shapes(w_arr.shape, b_arr.shape, np.shape(L))
        times = self._interpolate(self.verify_table, w_arr, b_arr)
        return scalar_or_array(np.broadcast_to(times, shape).copy())

    def draft_us(self, k: npt.ArrayLike, B: npt.ArrayLike, L: npt.ArrayLike = 0) -> Times:
        """Microseconds to draft ``k >= 0`` tokens per sequence: the table's ``draft_us`` at
        ``tokens = k + 1``, 0 when ``k = 0`` or the table has no draft times."""
        k_arr, b_arr = as_float("k", k, 0.0), as_float("batch", B, 1.0)
        shape = np.broadcast_shapes(k_arr.shape, b_arr.shape, np.shape(L))
        if self.draft_table is None:
            return scalar_or_array(np.zeros(shape))
        times = self._interpolate(self.draft_table, k_arr + 1.0, b_arr)
        return scalar_or_array(np.broadcast_to(np.where(k_arr > 0, times, 0.0), shape).copy())

    @classmethod
    def from_points(
        cls,
        points: Iterable[tuple[float, float, float, float | None]],
        origin: str = "table",
    ) -> TableCost:
        """A table from ``(batch_size, tokens, verify_us, draft_us or None)`` points that
        cover a full grid (every batch size with every tokens value)."""
        verify: dict[tuple[float, float], float] = {}
        draft: dict[tuple[float, float], float | None] = {}
        for batch_size, tokens, verify_us, draft_us in points:
            key = (batch_size, tokens)
            if key in verify:
                raise TableError(
                    f"{origin}: batch_size {batch_size:g}, tokens {tokens:g} given twice"
                )
            verify[key], draft[key] = verify_us, draft_us
        if not verify:
            raise TableError(f"{origin}: no rows")
        batch_sizes = sorted({b for b, _ in verify})
        token_counts = sorted({t for _, t in verify})
        for b in batch_sizes:
            for t in token_counts:
                if (b, t) not in verify:
                    raise TableError(
                        f"{origin}: missing batch_size {b:g}, tokens {t:g} (a table must give "
                        "every batch size with every tokens value)"
                    )
        has_draft = {d is not None for d in draft.values()}
        if len(has_draft) > 1:
            raise TableError(f"{origin}: draft_us must be given for every row or for none")
        verify_grid = [[verify[(b, t)] for t in token_counts] for b in batch_sizes]
        draft_grid = (
            [[float(draft[(b, t)] or 0.0) for t in token_counts] for b in batch_sizes]
            if has_draft == {True}
            else None
        )
        return cls(batch_sizes, token_counts, verify_grid, draft_grid, origin)


def _number(
    where: str, field: str, text: Any, whole: bool, minimum: float, open_low: bool
) -> float:
    try:
        if isinstance(text, bool):
            raise ValueError
        value = float(text)
    except (TypeError, ValueError):
        value = math.nan
    ok = math.isfinite(value) and (value > minimum if open_low else value >= minimum)
    if ok and whole:
        ok = value.is_integer()
    if not ok:
        kind = "a whole number" if whole else "a number"
        shown = shown_cell(text) if isinstance(text, str) else shown_value(text)
        rule = f"> {minimum:g}" if open_low else f">= {minimum:g}"
        raise TableError(f"{where}: field '{field}' must be {kind} {rule}, got {shown}")
    return value


def _read(path: str | Path) -> str:
    """A table file's text: a regular file of at most :data:`engine.core.files.TABLE_MAX_BYTES`."""
    try:
        return read_input_text(path, TABLE_MAX_BYTES, "a cost table")
    except UnicodeDecodeError:
        raise TableError(f"{path}: not a text file (UTF-8 expected)") from None
    except OSError as error:
        raise TableError(f"{path}: cannot read: {error.strerror or error}") from None


def _key(key: str) -> str:
    """A profile's key for a message: itself if a number, else not repeated."""
    shown = shown_cell(key)
    return shown if shown == key.strip() else "?"


def read_table_csv(path: str | Path) -> TableCost:
    """A :class:`TableCost` from a CSV with header ``batch_size,tokens,verify_us[,draft_us]``
    (times in microseconds). Raises TableError naming file, line and field."""
    origin = str(path)
    text = _read(path)
    try:
        rows = list(csv.reader(io.StringIO(text, newline="")))
    except csv.Error:  # a NUL byte, an unclosed quote at the end: not a table
        raise TableError(f"{origin}: not a CSV file; expected {CSV_HEADER}") from None
    if not rows:
        raise TableError(f"{origin}: empty file; expected header batch_size,tokens,verify_us")
    header = [name.strip() for name in rows[0]]
    if header not in (list(CSV_COLUMNS[:3]), list(CSV_COLUMNS)):
        # Not echoed: a file that is not a table may be anything (a secret).
        raise TableError(f"{origin}:1: expected the header {CSV_HEADER}")
    points: list[tuple[float, float, float, float | None]] = []
    for line_number, row in enumerate(rows[1:], start=2):
        if not any(cell.strip() for cell in row):
            continue
        where = f"{origin}:{line_number}"
        if len(row) != len(header):
            raise TableError(f"{where}: expected {len(header)} fields, got {len(row)}")
        cells = dict(zip(header, (cell.strip() for cell in row), strict=True))
        points.append(
            (
                _number(where, "batch_size", cells["batch_size"], True, 1, False),
                _number(where, "tokens", cells["tokens"], True, 1, False),
                _number(where, "verify_us", cells["verify_us"], False, 0, True),
                _number(where, "draft_us", cells["draft_us"], False, 0, False)
                if "draft_us" in cells
                else None,
            )
        )
    return TableCost.from_points(points, origin)


def read_vllm_profile(path: str | Path) -> TableCost:
    """A :class:`TableCost` from vLLM's dynamic speculative decoding profile (JSON whose
    ``batch_stats`` maps batch size -> drafts K -> median inter-token latency in ms).

    Each latency is a whole step, so it becomes ``verify_us`` (x 1000) at ``tokens = K + 1``
    and drafting costs nothing extra. Raises TableError naming file and entry."""
    origin = str(path)
    text = _read(path)
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:  # its message gives the place, not the text
        raise TableError(f"{origin}: not valid JSON: {error}") from None
    except RecursionError:
        raise TableError(f"{origin}: not valid JSON: nested too deeply") from None
    stats = document.get("batch_stats") if isinstance(document, dict) else None
    if not isinstance(stats, dict) or not stats:
        raise TableError(
            f"{origin}: expected an object with 'batch_stats' "
            "(batch size -> number of drafts -> inter-token latency in ms)"
        )
    points: list[tuple[float, float, float, float | None]] = []
    for batch_key, by_drafts in stats.items():
        where = f"{origin}: batch_stats[{_key(batch_key)}]"
        batch_size = _number(where, "batch size", batch_key, True, 1, False)
        if not isinstance(by_drafts, dict) or not by_drafts:
            raise TableError(f"{where}: expected an object of drafts -> latency in ms")
        for drafts_key, itl_ms in by_drafts.items():
            entry = f"{where}[{_key(drafts_key)}]"
            drafts = _number(entry, "number of drafts", drafts_key, True, 0, False)
            latency_ms = _number(entry, "latency_ms", itl_ms, False, 0, True)
            points.append((batch_size, drafts + 1, latency_ms * 1000.0, None))
    return TableCost.from_points(points, origin)


def read_table(path: str | Path) -> TableCost:
    """:func:`read_vllm_profile` for a ``.json`` file, else :func:`read_table_csv`."""
    if Path(path).suffix.lower() == ".json":
        return read_vllm_profile(path)
    return read_table_csv(path)
