"""Sweep grids: a union of cartesian products of parameter lists (no numpy, no pandas)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .config import FIELD_SPECS, ConfigError, SpecConfig

Grid = Mapping[str, Sequence[Any]]


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

    def configs(self) -> list[SpecConfig]:
        """Every configuration, grid by grid in row-major order; duplicates kept once."""
        return list(self.iter_configs())

    def iter_configs(self) -> Iterator[SpecConfig]:
        """:meth:`configs` one at a time (a sweep of 100,000 need not hold them all).

        Each is ``base.replace(**point)``, built by :meth:`SpecConfig.derive`: a grid's
        values are validated once each, not once per configuration."""
        if not self.grids:
            yield self.base
            return
        memo: dict[Any, Any] = {}
        # Duplicates can only come from a second grid: remember points, not configurations.
        seen: set[SpecConfig] | None = set() if len(self.grids) > 1 else None
        for grid in self.grids:
            names = list(grid)
            for values in itertools.product(*(grid[n] for n in names)):
                config = self.base.derive(dict(zip(names, values, strict=True)), memo)
                if seen is not None:
                    if config in seen:
                        continue
                    seen.add(config)
                yield config

    def lazy(self) -> GridConfigs:
        """:meth:`configs` as a sequence that builds each configuration when asked for it:
        a sweep of 100,000 holds none of them (a second grid, whose duplicates must be
        found, costs a set of the configurations while it is indexed)."""
        return GridConfigs(self)

    def size(self) -> int:
        """How many configurations :meth:`configs` gives (without building them, for one grid)."""
        if not self.grids:
            return 1
        if len(self.grids) == 1:
            return math.prod(len(values) for values in self.grids[0].values())
        return sum(1 for _ in self.iter_configs())


class GridConfigs(Sequence[SpecConfig]):
    """The configurations of a :class:`SweepSpec`, in its order, built on demand
    (``configs[i]`` decodes i in the grid's mixed radix; iterating builds them in turn)."""

    def __init__(self, spec: SweepSpec) -> None:
        self.spec = spec
        self._memo: dict[Any, Any] = {}
        # (grid, position in it) of each configuration, when a second grid may repeat some.
        self._points: list[tuple[int, int]] | None = None
        if len(spec.grids) > 1:
            seen: set[SpecConfig] = set()
            points = []
            for number, grid in enumerate(spec.grids):
                for position in range(math.prod(len(v) for v in grid.values())):
                    config = self._at(number, position)
                    if config not in seen:
                        seen.add(config)
                        points.append((number, position))
            self._points = points
        self._size = spec.size() if self._points is None else len(self._points)

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
        number, position = (0, index) if self._points is None else self._points[index]
        return self._at(number, position)

    def _at(self, number: int, position: int) -> SpecConfig:
        grid = self.spec.grids[number]
        point: dict[str, Any] = {}
        for name in reversed(list(grid)):  # row-major: the last axis varies fastest
            values = grid[name]
            position, digit = divmod(position, len(values))
            point[name] = values[digit]
        return self.spec.base.derive(dict(reversed(point.items())), self._memo)
