"""The finished rows of a sweep, kept compact (8 bytes a value), as the Sweep view needs them."""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from typing import Any


class SweepStore:
    """The finished rows of a sweep, kept as its views need them, not as dicts.

    A row's result columns (``config_id``, the metrics, the sampler) go to compact columns
    (:class:`_Column`: 8 bytes a value); its configuration columns are not kept: they are the
    planned frame's (:func:`engine.sweep.sweep.config_frame`, one row a configuration, which the
    heatmap holds anyway), looked up by ``config_id``. :meth:`frame` builds the frame of the
    rows so far, ordered by ``config_id``, with the sweep's columns: the frame
    :func:`engine.sweep.sweep.run_sweep` would return for them, in O(rows) array operations.
    """

    def __init__(self, planned: Any, columns: Sequence[str]) -> None:
        self.planned = planned
        self.columns = list(columns)
        self.config_columns = [c for c in self.columns[1:] if c in planned.columns]
        self._ids = array("q")
        self._results = {c: _Column() for c in self.columns[1:] if c not in planned.columns}

    def __len__(self) -> int:
        return len(self._ids)

    def ids_since(self, count: int) -> Any:
        """The ``config_id`` of the rows kept after the first ``count``, as a numpy array."""
        import numpy as np

        return np.frombuffer(self._ids, dtype=np.int64)[count:].copy()

    def add(self, row: dict[str, Any]) -> None:
        """Keep a finished row (a :func:`engine.sweep.sweep.sweep_rows` row)."""
        self._ids.append(row["config_id"])
        for name, column in self._results.items():
            column.append(row[name])

    def frame(self) -> Any:
        """The rows so far as a frame, ordered by ``config_id``."""
        import numpy as np
        import pandas as pd

        ids = np.array(self._ids, dtype=np.int64)
        order = np.argsort(ids, kind="stable")
        ids = ids[order]
        data: dict[str, Any] = {"config_id": ids}
        for name in self.config_columns:
            data[name] = self.planned[name].to_numpy()[ids]
        for name, column in self._results.items():
            data[name] = column.values()[order]
        return pd.DataFrame(data, columns=self.columns)


class _Column:
    """One result column: integers or floats in an :class:`array.array` (8 bytes a value),
    anything else (the sampler's few strings) as codes into its distinct values. Mixed
    values widen as pandas would widen a column of them (int and float: float; numbers
    and strings: object)."""

    def __init__(self) -> None:
        self.kind = ""  # "q" int64, "d" float64, "o" codes into self.distinct
        self.data: array[Any] = array("q")
        self.distinct: dict[tuple[type, Any], int] = {}
        self.fast: type | None = None  # int or float: the column's own values

    def append(self, value: Any) -> None:
        if type(value) is self.fast:  # the type the column began with: no question to ask
            self.data.append(value)
            return
        kind = _kind(value)
        if not self.kind:
            self.kind = kind
            self.data = array("d") if kind == "d" else array("q")
            self.fast = type(value) if type(value) in (int, float) else None
        elif kind != self.kind and self.kind != "o" and (self.kind, kind) != ("d", "q"):
            self._widen(kind)
        if self.kind == "o":
            self._append_code(value)
        else:
            self.data.append(value)

    def _widen(self, kind: str) -> None:
        self.fast = None
        if self.kind == "q" and kind == "d":
            self.data, self.kind, self.fast = array("d", self.data), "d", float
            return
        values = self.data.tolist()  # numbers, to keep as objects
        self.kind, self.data, self.distinct = "o", array("q"), {}
        for value in values:
            self._append_code(value)

    def _append_code(self, value: Any) -> None:
        # Keyed by type too: 1, 1.0 and True are one key of a dict, three values of a column.
        self.data.append(self.distinct.setdefault((type(value), value), len(self.distinct)))

    def values(self) -> Any:
        """The values as a numpy array (int64, float64 or object)."""
        import numpy as np

        if self.kind != "o":
            return np.array(self.data, dtype=np.float64 if self.kind == "d" else np.int64)
        distinct = np.empty(len(self.distinct), dtype=object)
        distinct[:] = [value for _, value in self.distinct]
        return distinct[np.array(self.data, dtype=np.int64)]


def _kind(value: Any) -> str:
    """A value's column kind (see :class:`_Column`)."""
    import numpy as np

    if isinstance(value, bool | np.bool_):
        return "o"
    if isinstance(value, int | np.integer):
        return "q"
    if isinstance(value, float | np.floating):
        return "d"
    return "o"
