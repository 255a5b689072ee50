"""Sweep grids: a union of cartesian products of parameter lists (no numpy, no pandas)."""

from __future__ import annotations

import itertools
import math
from array import array
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from engine.core.config import FIELD_SPECS, ConfigError, SpecConfig

Grid = Mapping[str, Sequence[Any]]
# The most values one grid axis may list: each is checked and kept while the sweep is
# planned (a 2-million-value axis reached 1.2 GB); a sweep of more configurations is a
# product of axes, which streams.
AXIS_VALUES_MAX = 100_000


@dataclass(frozen=True)
class SweepSpec:
    """A union of grids over a base configuration. Unlisted parameters take the base's value.

    An axis may be any field, by its key (the original's ``k``, a newer ``workload.batch_size``).
    """

    base: SpecConfig
    grids: tuple[Grid, ...]

    def __post_init__(self) -> None:
        for grid in self.grids:
            for name, values in grid.items():
                if name not in FIELD_SPECS:
                    raise ConfigError(
                        name, "unknown parameter in grid; known: " + ", ".join(FIELD_SPECS)
                    )
                if isinstance(values, str) or not isinstance(values, Sequence) or not values:
                    raise ConfigError(name, "a grid axis must be a non-empty list of values")
                if len(values) > AXIS_VALUES_MAX:
                    raise ConfigError(
                        name,
                        f"a grid axis of {len(values):,} values; at most {AXIS_VALUES_MAX:,} "
                        "(a larger sweep is a product of axes)",
                    )

    def configs(self) -> list[SpecConfig]:
        """Every configuration, grid by grid in row-major order; duplicates kept once."""
        return list(self.iter_configs())

    def iter_configs(self) -> Iterator[SpecConfig]:
        """:meth:`configs` one at a time (a sweep of 100,000 need not hold them all).

        Each is ``base.replace(**point)``, built by :meth:`SpecConfig.derive`: a grid's
        values are validated once each, not once per configuration. Duplicates are dropped
        as :meth:`configs` always has: within a grid by its axes' values (two values that
        check to equal ones, such as "0.9,0.8" and "0.9, 0.8", are one), across grids by
        the values of every grid's axes (a tuple a configuration, only while a later grid
        may repeat it)."""
        if not self.grids:
            yield self.base
            return
        memo: dict[Any, Any] = {}
        axes = _union_axes(self.grids)
        seen: set[tuple[Any, ...]] = set()
        for number, grid in enumerate(self.grids):
            last = number == len(self.grids) - 1
            names = list(grid)
            for values in itertools.product(*_distinct_values(grid, memo).values()):
                config = self.base.derive(dict(zip(names, values, strict=True)), memo)
                if len(self.grids) > 1:
                    point = tuple(config.get(key) for key in axes)
                    if point in seen:
                        continue
                    if not last:
                        seen.add(point)
                yield config

    def lazy(self) -> GridConfigs:
        """:meth:`configs` as a sequence that builds each configuration when asked for it:
        a sweep of 100,000 holds none of them (a second grid, whose duplicates must be
        found, costs a set of the configurations while it is indexed)."""
        return GridConfigs(self)

    def size_bound(self) -> int:
        """At least :meth:`size`, without building a configuration: each grid's product
        (what a later grid repeats of an earlier one counted again)."""
        if not self.grids:
            return 1
        memo: dict[Any, Any] = {}
        return sum(
            math.prod(len(v) for v in _distinct_values(grid, memo).values()) for grid in self.grids
        )

    def size(self) -> int:
        """How many configurations :meth:`configs` gives (without building them, for one grid)."""
        if not self.grids:
            return 1
        if len(self.grids) == 1:
            memo: dict[Any, Any] = {}
            return math.prod(len(v) for v in _distinct_values(self.grids[0], memo).values())
        return sum(1 for _ in self.iter_configs())


def _distinct_values(grid: Grid, memo: dict[Any, Any]) -> dict[str, list[Any]]:
    """Each axis's values, the first of those that check to equal values only (a product of
    these has no duplicates). A value that does not check is kept: building its
    configuration raises, naming it."""
    axes: dict[str, list[Any]] = {}
    for name, values in grid.items():
        kept: list[Any] = []
        seen: set[Any] = set()  # checked values, as configurations compare them (0.0 == -0.0)
        unhashable: list[Any] = []
        for value in values:
            try:
                checked = SpecConfig.check_field(name, value, memo)
            except ConfigError:
                kept.append(value)
                continue
            try:
                if (type(checked), checked) in seen:
                    continue
                seen.add((type(checked), checked))
            except TypeError:
                if checked in unhashable:
                    continue
                unhashable.append(checked)
            kept.append(value)
        axes[name] = kept
    return axes


def _union_axes(grids: Sequence[Grid]) -> tuple[str, ...]:
    """Every grid's axes, by field key, in order of first appearance."""
    return tuple(dict.fromkeys(name for grid in grids for name in grid))


class GridConfigs(Sequence[SpecConfig]):
    """The configurations of a :class:`SweepSpec`, in its order, built on demand
    (``configs[i]`` decodes i in the grid's mixed radix; iterating builds them in turn)."""

    def __init__(self, spec: SweepSpec) -> None:
        self.spec = spec
        self._memo: dict[Any, Any] = {}
        self._axes = [_distinct_values(grid, self._memo) for grid in spec.grids]
        # (grid, position in it) of each configuration, when a second grid may repeat some:
        # two arrays of 8 bytes a configuration.
        self._grid: array[int] | None = None
        self._position: array[int] | None = None
        if len(spec.grids) > 1:
            self._grid, self._position = array("q"), array("q")
            axes = _union_axes(spec.grids)
            seen: set[tuple[Any, ...]] = set()
            for number, grid in enumerate(self._axes):
                for position in range(math.prod(len(v) for v in grid.values())):
                    config = self._at(number, position)
                    point = tuple(config.get(key) for key in axes)
                    if point not in seen:
                        seen.add(point)
                        self._grid.append(number)
                        self._position.append(position)
        if self._grid is not None:
            self._size = len(self._grid)
        elif self._axes:
            self._size = math.prod(len(v) for v in self._axes[0].values())
        else:
            self._size = 1

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[SpecConfig]:
        return self.spec.iter_configs()

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self._size))]
        if index < 0:
            index += self._size
        if not 0 <= index < self._size:
            raise IndexError(index)
        if not self.spec.grids:
            return self.spec.base
        if self._grid is None or self._position is None:
            return self._at(0, index)
        return self._at(self._grid[index], self._position[index])

    def _at(self, number: int, position: int) -> SpecConfig:
        grid = self._axes[number]
        point: dict[str, Any] = {}
        for name in reversed(list(grid)):  # row-major: the last axis varies fastest
            values = grid[name]
            position, digit = divmod(position, len(values))
            point[name] = values[digit]
        return self.spec.base.derive(dict(reversed(point.items())), self._memo)
