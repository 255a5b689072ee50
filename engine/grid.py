"""Sweep grids: a union of cartesian products of parameter lists (no numpy, no pandas)."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
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
        seen: dict[SpecConfig, None] = {}
        for grid in self.grids:
            names = list(grid)
            for values in itertools.product(*(grid[n] for n in names)):
                seen.setdefault(self.base.replace(**dict(zip(names, values, strict=True))))
        if not self.grids:
            seen[self.base] = None
        return list(seen)
