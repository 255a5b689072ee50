"""The cost models by name: a scenario's ``cost.model`` and its fields, built into a
:class:`~engine.cost.base.CostModel` (docs/model.md, "Cost models").

Adding a cost model: its fields in :class:`engine.core.config.SpecConfig` (with ``part`` naming
it), its implementation in this package, and one entry in :data:`BUILDERS`.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from functools import lru_cache

import numpy as np

from engine.core.config import BATCH_MAX, PROMPT_MAX, TOKENS_MAX, ConfigError, SpecConfig
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


# The slowest pass a roofline may price, in microseconds: an H100 at the lowest efficiency
# (1e-6) over the largest batch and context the fields allow takes about 1e19; beyond 1e30
# (hardware or model numbers of a spec file far from any device) totals could overflow.
PASS_MAX_US = 1e30
_WIDEST = 4097  # tokens per sequence of the widest pass: a tree of NODES_MAX, and its root


@lru_cache(maxsize=64)
def _slowest(cost: RooflineCost | RooflineMaxCost) -> tuple[float, float]:
    """The target's and the draft's slowest pass (see :func:`_bounded`), once per cost."""
    context = PROMPT_MAX + TOKENS_MAX
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        return (
            float(cost._pass_us(cost.target, _WIDEST, BATCH_MAX, context)),
            float(cost._pass_us(cost.draft, _WIDEST, BATCH_MAX, context)),
        )


def _bounded(cost: RooflineCost | RooflineMaxCost, config: SpecConfig) -> None:
    """ConfigError naming the model's field unless its slowest pass (the largest batch,
    context and width the fields allow) is finite and at most :data:`PASS_MAX_US`, so that
    every accepted configuration has finite metrics."""
    context = PROMPT_MAX + TOKENS_MAX
    for key, slowest in zip(("cost.target", "cost.draft"), _slowest(cost), strict=True):
        if not (math.isfinite(slowest) and slowest <= PASS_MAX_US):
            raise ConfigError(
                key,
                f"{config.get(key)} on {config.gpu}: a pass at batch {BATCH_MAX:,} and context "
                f"{context:,} would take {slowest:.3g} us; a roofline pass must stay under "
                "1e30 us (check the spec files' numbers)",
            )


def _roofline(config: SpecConfig) -> RooflineCost:
    cost = RooflineCost(
        *_specs(config),
        eta_w=config.eta_w,
        eta_kv=config.eta_kv,
        eta_f=config.eta_f,
        t0_us=config.t0_us,
        bytes_per_kv=config.bytes_per_kv,
    )
    _bounded(cost, config)
    return cost


def _roofline_max(config: SpecConfig) -> RooflineMaxCost:
    cost = RooflineMaxCost(
        *_specs(config),
        eta_f=config.max_eta_f,
        eta_bw=config.max_eta_bw,
        t0_us=config.t0_us,
        bytes_per_kv=config.bytes_per_kv,
    )
    _bounded(cost, config)
    return cost


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
