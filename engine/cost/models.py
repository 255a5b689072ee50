"""The cost models by name: a scenario's ``cost.model`` and its fields, built into a
:class:`~engine.cost.base.CostModel` (docs/model.md, "Cost models").

Adding a cost model: its fields in :class:`engine.config.SpecConfig` (with ``part`` naming
it), its implementation in this package, and one entry in :data:`BUILDERS`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import lru_cache

from engine.config import ConfigError, SpecConfig
from engine.cost.base import CostModel
from engine.cost.linear import LinearCost
from engine.cost.roofline import RooflineCost, RooflineMaxCost
from engine.cost.specs import HardwareSpec, ModelSpec, SpecError, get_hardware, get_model
from engine.cost.table import TableCost, TableError, read_table


def _linear(config: SpecConfig) -> LinearCost:
    return LinearCost(
        config.draft_cost_us, config.verify_cost_us, config.verify_token_us, config.draft_fixed_us
    )


def _specs(config: SpecConfig) -> tuple[HardwareSpec, ModelSpec, ModelSpec]:
    """The hardware, target and draft a roofline reads; an unknown id names its field."""
    try:
        hardware = get_hardware(config.gpu)
    except SpecError as err:
        raise ConfigError("cost.gpu", str(err)) from None
    models = []
    for key, spec_id in (("cost.target", config.target), ("cost.draft", config.draft)):
        try:
            models.append(get_model(spec_id))
        except SpecError as err:
            raise ConfigError(key, str(err)) from None
    return hardware, models[0], models[1]


def _roofline(config: SpecConfig) -> RooflineCost:
    return RooflineCost(
        *_specs(config),
        eta_w=config.eta_w,
        eta_kv=config.eta_kv,
        eta_f=config.eta_f,
        t0_us=config.t0_us,
        bytes_per_kv=config.bytes_per_kv,
    )


def _roofline_max(config: SpecConfig) -> RooflineMaxCost:
    return RooflineMaxCost(
        *_specs(config),
        eta_f=config.max_eta_f,
        eta_bw=config.max_eta_bw,
        t0_us=config.t0_us,
        bytes_per_kv=config.bytes_per_kv,
    )


@lru_cache(maxsize=16)
def _read_table(path: str, stamp: float) -> TableCost:
    return read_table(path)


def _table(config: SpecConfig) -> TableCost:
    path = config.cost_table
    try:
        stamp = os.stat(path).st_mtime
    except OSError as err:
        raise ConfigError("cost.table", f"{path}: {err.strerror or err}") from None
    try:
        return _read_table(path, stamp)
    except (TableError, OSError) as err:
        raise ConfigError("cost.table", str(err)) from None


BUILDERS: dict[str, Callable[[SpecConfig], CostModel]] = {
    "linear": _linear,
    "roofline": _roofline,
    "roofline_max": _roofline_max,
    "table": _table,
}


def build_cost(config: SpecConfig) -> CostModel:
    """The cost model ``config`` chooses, from its fields. Raises :class:`ConfigError`
    naming the field when a spec id is unknown or a table cannot be read."""
    return BUILDERS[config.cost_model](config)
