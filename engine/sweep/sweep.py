"""Sweeps: a union of cartesian grids, run serially or over any Executor.

:func:`run_sweep` takes any :class:`concurrent.futures.Executor`: a
:class:`~concurrent.futures.ThreadPoolExecutor`, a process pool (the front ends use
:class:`engine.sweep.pool.SweepPool`), or None to run in the calling thread. Every configuration
draws from its own generator (see :func:`engine.core.runs.config_rng`), so a sweep's rows do
not depend on the executor, the worker count, the order, or the rest of the grid.

A sweep may vary any field of :class:`engine.core.config.SpecConfig`, newer ones included
(``workload.batch_size``, ``cost.gpu``). Its columns (:func:`sweep_columns`) are
``config_id``, the original's 14 fields, each newer field that some configuration of the
sweep sets away from its default, then the metrics: a sweep of the original's fields has
exactly the original's columns.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from array import array
from collections.abc import Callable, Container, Iterable, Iterator, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any

import pandas as pd

from engine.acceptance.draft_models import inert_parameters
from engine.core.config import CONFIG_FIELDS, DEFAULTS, FIELD_SPECS, SCENARIO_FIELDS, SpecConfig
from engine.core.kernel import cycle_costs
from engine.core.parts import PROPOSER, SHAPE
from engine.core.runs import RunStopped
from engine.simulate.exact import exact_metrics_many
from engine.simulate.reference import simulate_reference
from engine.simulate.simulator import METRIC_NAMES, SAMPLER, draw_key, simulate_shared
from engine.sweep.grid import Grid, SweepSpec
from engine.sweep.runners import Batch, BatchRows, BatchRunner, ExecutorRunner, Flight

__all__ = [
    "ENGINES",
    "SWEEP_COLUMNS",
    "Batch",
    "BatchRows",
    "BatchRunner",
    "ExecutorRunner",
    "Flight",
    "Grid",
    "SweepPlan",
    "SweepSpec",
    "cell_key",
    "cell_order",
    "config_frame",
    "draw_groups",
    "evaluate",
    "evaluate_many",
    "plan_sweep",
    "run_sweep",
    "sampler_name",
    "scenario_columns",
    "sweep_columns",
    "sweep_rows",
]

ENGINES = ("fast", "reference")
# The columns of a sweep of the original's fields only (see :func:`sweep_columns`).
SWEEP_COLUMNS: tuple[str, ...] = ("config_id", *CONFIG_FIELDS, *METRIC_NAMES, "sampler")
# The ``sampler`` column of a row the reference loop made, and of an exact-only row.
REFERENCE_SAMPLER = "token/reference"
EXACT_ONLY_SAMPLER = "none"
# A token tree's rows: each cycle's accepted path sampled node by node
# (engine.simulate.tree_scenario).
TREE_SAMPLER = "tree/1"


def scenario_columns(
    configs: Iterable[SpecConfig], records: Iterable[dict[str, Any]] | None = None
) -> tuple[str, ...]:
    """The newer fields (dotted keys) that some configuration sets away from its default,
    in table order: the ones :meth:`SpecConfig.to_dict` writes for it (``records``: those
    records, when the caller has them)."""
    found = {
        key
        for record in (records if records is not None else (c.to_dict() for c in configs))
        for key in record
    }
    return tuple(key for key in SCENARIO_FIELDS if key in found)


def sweep_columns(configs: Iterable[SpecConfig]) -> tuple[str, ...]:
    """A sweep's CSV columns: ``config_id``, the original's 14 fields, the newer fields of
    :func:`scenario_columns`, then the metrics."""
    return _columns(scenario_columns(configs))


def _columns(newer: Sequence[str]) -> tuple[str, ...]:
    """The CSV columns of a sweep whose configurations set the newer fields ``newer``."""
    return ("config_id", *CONFIG_FIELDS, *newer, *METRIC_NAMES, "sampler")


def config_frame(configs: Sequence[SpecConfig]) -> pd.DataFrame:
    """The configurations of a sweep (before any result), one row each, with the sweep's
    configuration columns (the original's 14 and those of :func:`scenario_columns`)."""
    fields = [(spec.key, spec.attr) for spec in FIELD_SPECS.values()]
    found: dict[str, list[Any]] = {key: [] for key, _ in fields}
    for config in configs:  # one pass: a lazy grid builds each configuration once
        for key, attr in fields:
            found[key].append(getattr(config, attr))
    newer = [key for key in SCENARIO_FIELDS if any(value != DEFAULTS[key] for value in found[key])]
    columns = (*CONFIG_FIELDS, *newer)
    return pd.DataFrame({key: found[key] for key in columns}, columns=list(columns))


def sampler_name(
    engine: str = "fast", exact_only: bool = False, config: SpecConfig | None = None
) -> str:
    """What made a sweep row's Monte Carlo values (its ``sampler`` column): the fast engine's
    sampler (:data:`engine.simulate.simulator.SAMPLER`; for ``config`` with a model-free
    proposer that engine's, :data:`engine.simulate.model_free_run.SAMPLER`; with a K policy or
    markov acceptance the stepwise engine's, :data:`engine.simulate.policies.STEPWISE_SAMPLER`), the
    reference loop's per-token tests, or nothing (an exact-only row)."""
    if exact_only:
        return EXACT_ONLY_SAMPLER
    if engine != "fast":
        return REFERENCE_SAMPLER
    if config is not None:
        from engine.simulate.policies import STEPWISE_SAMPLER, needs_stepwise

        if PROPOSER.of(config).model_free:
            from engine.simulate.model_free_run import SAMPLER as MODEL_FREE_SAMPLER

            return MODEL_FREE_SAMPLER
        if SHAPE.of(config).tree:
            return TREE_SAMPLER
        if needs_stepwise(config):
            return STEPWISE_SAMPLER
    return SAMPLER


def _exact_many(configs: Sequence[SpecConfig]) -> list[dict[str, float]]:
    """Every configuration's exact figures, computed for all of them at once."""
    columns = {name: values.tolist() for name, values in exact_metrics_many(configs).items()}
    return [dict(zip(columns, row, strict=True)) for row in zip(*columns.values(), strict=True)]


def evaluate_many(
    configs: Sequence[SpecConfig],
    engine: str = "fast",
    exact_only: bool = False,
    *,
    fields: bool = True,
    should_stop: Callable[[], bool] | None = None,
) -> list[dict[str, Any]]:
    """Sweep rows of ``configs`` (their fields unless ``fields`` is false, every metric, the
    sampler), in order. ``should_stop``: asked as the fast engine's runs go; when it turns
    true they raise :class:`engine.core.runs.RunStopped`.

    The fast engine draws once for configurations that share their draws
    (:func:`engine.simulate.simulator.draw_key`: they differ only in cost) and prices the draws for
    each (:func:`engine.simulate.simulator.simulate_shared`); every row equals the configuration's
    own run. Exact values come for all of them at once. NaN for the Monte Carlo metrics
    when ``exact_only``.
    """
    if engine not in ENGINES:
        raise ValueError(f"engine: {engine!r} is not one of {', '.join(ENGINES)}")
    # The reference engine's runs compute their own (one configuration each).
    exact = _exact_many(configs) if exact_only or engine == "fast" else []
    metrics: list[dict[str, float]] = []
    if exact_only:
        for config, values in zip(configs, exact, strict=True):
            row = dict.fromkeys(METRIC_NAMES, math.nan)
            row.update(values)
            row["cost_ratio"] = cycle_costs(config).cost_ratio
            metrics.append(row)
    elif engine == "reference":
        metrics = [simulate_reference(c).metrics for c in configs]
    else:
        found: dict[int, dict[str, float]] = {}
        for members in draw_groups(configs, range(len(configs))):
            runs = simulate_shared(
                [configs[i] for i in members],
                exact=[exact[i] for i in members],
                should_stop=should_stop,
            )
            found.update(zip(members, (run.metrics for run in runs), strict=True))
        metrics = [found[i] for i in range(len(configs))]
    samplers = [sampler_name(engine, exact_only, c) for c in configs]
    if not fields:
        return [{**values, "sampler": s} for values, s in zip(metrics, samplers, strict=True)]
    return [
        {**config.to_dict(), **values, "sampler": s}
        for config, values, s in zip(configs, metrics, samplers, strict=True)
    ]


def evaluate(config: SpecConfig, engine: str = "fast", exact_only: bool = False) -> dict[str, Any]:
    """One sweep row: the configuration's fields and every metric (NaN for MC if exact_only)."""
    return evaluate_many([config], engine, exact_only)[0]


def draw_groups(configs: Sequence[SpecConfig], order: Sequence[int]) -> list[list[int]]:
    """Indices of ``configs`` in ``order``, gathered into groups that share their draws
    (:func:`engine.simulate.simulator.draw_key`), each group where its first member comes. A
    configuration of the stepwise engine (a K policy, markov acceptance) runs alone: its
    cycles depend on its policy, which the draw key leaves out."""
    groups: dict[tuple[Any, ...], list[int]] = {}
    for index in order:
        key = _shared_draws(configs[index])
        groups.setdefault(("alone", index) if key is None else key, []).append(index)
    return list(groups.values())


def _shared_draws(config: SpecConfig) -> tuple[Any, ...] | None:
    """The key of the draws ``config`` shares with others
    (:func:`engine.simulate.simulator.draw_key`),
    or None: a configuration of the stepwise engine (a K policy, markov acceptance) or a
    token tree runs alone, its cycles depending on more than the key holds."""
    from engine.simulate.policies import needs_stepwise

    if needs_stepwise(config) or SHAPE.of(config).tree:
        return None
    seed, key = draw_key(config)
    return (seed, *key)


def cell_key(config: SpecConfig, record: dict[str, Any] | None = None) -> tuple[Any, ...]:
    """The optimal-K cell of a configuration: every field but ``k`` and its model's inert ones
    (``record``: its :meth:`SpecConfig.to_dict`, when the caller has it)."""
    inert = set(inert_parameters(config.draft_model))
    items = (config.to_dict() if record is None else record).items()
    return tuple(None if name in inert else value for name, value in items if name != "k")


def cell_order(configs: Iterable[SpecConfig]) -> list[int]:
    """Indices of ``configs`` with every K of a cell together, cells in order of first appearance.

    A sweep run in this order completes its optimal-K cells one after another (a heatmap fills
    as it goes) instead of finishing every cell at once near the end, as a grid listing K as
    its outer axis would. Within a cell the grid's own order is kept. (The order of
    :func:`plan_sweep`, which runs a sweep in it.)
    """
    return list(plan_sweep(configs, exact_only=True).units)  # type: ignore[arg-type]


def _evaluate_batch(
    batch: list[tuple[int, SpecConfig]],
    engine: str,
    exact_only: bool,
    should_stop: Callable[[], bool] | None = None,
) -> list[tuple[int, dict[str, Any]]]:
    """(config_id, row) of each configuration of a batch: its fields, metrics and sampler.
    Runs wherever the batch is sent (a worker process, a Dask worker): the caller keeps no
    record of the configurations in flight."""
    configs = [c for _, c in batch]
    rows = evaluate_many(configs, engine, exact_only, should_stop=should_stop)
    return [(i, row) for (i, _), row in zip(batch, rows, strict=True)]


ResultCallback = Callable[[dict[str, Any], int, int], None]


@dataclass(frozen=True)
class SweepPlan:
    """What a sweep will run, from one pass over its configurations (none of them kept).

    ``newer``: the newer fields some configuration sets (:func:`scenario_columns`, of
    every configuration, the ones skipped included: a resumed sweep writes the same
    header), and :attr:`columns` the CSV's; ``units``: indices of the
    configurations to run, in cell order (:func:`cell_order`), grouped as they must run
    together (the fast engine's configurations that share draws, :func:`draw_groups`; an
    index alone where nothing is shared: an array of 8 bytes a configuration);
    ``total``: every configuration; ``tokens``: the mean simulated tokens
    (``n_sequences * tokens_per_seq``) and ``longest`` the longest sequence of those to run;
    ``k_count``: how many values of K."""

    total: int
    newer: tuple[str, ...]
    units: Sequence[int | list[int]]
    tokens: float
    longest: int
    k_count: int

    @property
    def columns(self) -> tuple[str, ...]:
        return _columns(self.newer)

    @property
    def remaining(self) -> int:
        return sum(1 if isinstance(unit, int) else len(unit) for unit in self.units)

    def without(self, skip: Container[int]) -> SweepPlan:
        """The plan of the configurations not in ``skip`` (those a resumed sweep has)."""
        if isinstance(self.units, array):
            return dataclasses.replace(
                self, units=array("q", (i for i in self.units if i not in skip))
            )
        units: list[int | list[int]] = []
        for unit in self.units:
            if isinstance(unit, int):
                if unit not in skip:
                    units.append(unit)
            elif rest := [i for i in unit if i not in skip]:
                units.append(rest)
        return dataclasses.replace(self, units=units)


PLAN_PROGRESS_EVERY = 10_000


def plan_sweep(
    configs: Iterable[SpecConfig],
    engine: str = "fast",
    exact_only: bool = False,
    skip: Container[int] = (),
    on_planned: Callable[[int], None] | None = None,
) -> SweepPlan:
    """The :class:`SweepPlan` of ``configs`` (an iterable: a grid's lazy sequence is built
    once, one configuration at a time), leaving out the indices in ``skip`` (those a
    resumed sweep has). ``on_planned(count)``: every :data:`PLAN_PROGRESS_EVERY`
    configurations and at the end (10 million take minutes)."""
    cells: dict[tuple[Any, ...], array[int]] = {}  # 8 bytes a configuration
    group_ids: dict[tuple[Any, ...], int] = {}  # draw key -> group number
    group_of: dict[int, int] = {}  # index -> group number (fast engine)
    found: set[str] = set()
    total = tokens = longest = 0
    k_values: set[int] = set()
    shared = not exact_only and engine == "fast"
    for index, config in enumerate(configs):
        total += 1
        if on_planned is not None and total % PLAN_PROGRESS_EVERY == 0:
            on_planned(total)
        record = config.to_dict()
        found.update(record)
        if index in skip:
            continue
        cells.setdefault(cell_key(config, record), array("q")).append(index)
        tokens += config.n_sequences * config.tokens_per_seq
        longest = max(longest, config.tokens_per_seq)
        k_values.add(config.k)
        if shared and (key := _shared_draws(config)) is not None:
            group_of[index] = group_ids.setdefault(key, len(group_ids))
    order = array("q", (index for members in cells.values() for index in members))
    cells.clear()
    if not shared:
        units: Sequence[int | list[int]] = order
    else:  # as draw_groups: each group where its first member comes in cell order
        grouped: dict[Any, list[int]] = {}
        for index in order:
            grouped.setdefault(group_of.get(index, ("alone", index)), []).append(index)
        # A group of one is its index alone (no list of its own: a sweep of 100,000).
        units = [members[0] if len(members) == 1 else members for members in grouped.values()]
    if on_planned is not None:
        on_planned(total)
    newer = tuple(key for key in SCENARIO_FIELDS if key in found)
    remaining = len(order)
    return SweepPlan(
        total, newer, units, tokens / remaining if remaining else 0.0, longest, len(k_values)
    )


def sweep_rows(
    configs: Sequence[SpecConfig],
    *,
    engine: str = "fast",
    exact_only: bool = False,
    executor: Executor | BatchRunner | None = None,
    should_stop: Callable[[], bool] | None = None,
    batch_size: int = 8,
    plan: SweepPlan | None = None,
    skip: Container[int] = (),
) -> Iterator[dict[str, Any]]:
    """The rows of a sweep as they finish (in no set order; none kept: a caller streams them
    to a file). See :func:`run_sweep`, which gathers them. ``skip``: indices not to run (a
    resumed sweep's); ``plan``: :func:`plan_sweep` of the same configurations and ``skip``,
    if the caller has it. ``configs`` may be a grid's lazy sequence
    (:meth:`engine.sweep.grid.SweepSpec.lazy`): configurations are built as their batches go."""
    if engine not in ENGINES:
        raise ValueError(f"engine: {engine!r} is not one of {', '.join(ENGINES)}")
    if plan is None:
        plan = plan_sweep(configs, engine, exact_only, skip)
    defaults = {key: DEFAULTS[key] for key in plan.newer}

    def stopped() -> bool:
        return should_stop is not None and should_stop()

    def finish(batch_rows: BatchRows) -> Iterator[dict[str, Any]]:
        for index, values in batch_rows:
            row = {"config_id": index, **values}
            for key, value in defaults.items():
                row.setdefault(key, value)
            yield row

    serial = executor is None
    size = _batch_limit(plan, engine, exact_only, batch_size, serial)
    batches = ([(i, configs[i]) for i in indices] for indices in _pack(plan.units, size))
    if serial:
        for batch in batches:
            if stopped():
                return
            try:
                batch_rows = _evaluate_batch(batch, engine, exact_only, stopped)
            except RunStopped:
                return
            yield from finish(batch_rows)
        return
    assert executor is not None
    runner = executor if isinstance(executor, BatchRunner) else ExecutorRunner(executor)
    function = functools.partial(_evaluate_batch, engine=engine, exact_only=exact_only)
    for batch_rows in runner.map_unordered(function, batches, stopped):
        yield from finish(batch_rows)


def run_sweep(
    configs: Sequence[SpecConfig],
    *,
    engine: str = "fast",
    exact_only: bool = False,
    executor: Executor | BatchRunner | None = None,
    on_result: ResultCallback | None = None,
    should_stop: Callable[[], bool] | None = None,
    batch_size: int = 8,
) -> pd.DataFrame:
    """Run every configuration; return the finished rows ordered by ``config_id``.

    Configurations run in cell order (:func:`cell_order`: all K of an optimal-K cell
    together), the fast engine's groups of configurations that share draws whole
    (:func:`draw_groups`: a group may span cells, such as the draft costs of one
    acceptance), in batches of at least ``batch_size``; ``config_id`` is the index in
    ``configs``, so the result (and a CSV of it) stays in grid order, and every row is the
    same whatever the order (each configuration's draws depend on it alone).
    ``executor``: any :class:`concurrent.futures.Executor` (batches are submitted to it, a
    few per worker at a time), a :class:`BatchRunner` (a Dask cluster), or None to run in
    the calling thread; the rows are the same either way.
    Every row holds every column of :func:`sweep_columns` (a newer field a configuration
    leaves at its default holds the default).
    ``on_result(row, done, total)`` is called in the caller's thread as each row finishes.
    When ``should_stop()`` turns true the sweep stops early: rows already finished are
    returned, work not yet started is cancelled; in the calling thread a group's runs stop
    where they are (its rows are dropped, none half-made). :func:`sweep_rows` gives the
    rows without keeping them.
    """
    plan = plan_sweep(configs, engine, exact_only)
    rows: list[dict[str, Any]] = []
    for row in sweep_rows(
        configs,
        engine=engine,
        exact_only=exact_only,
        executor=executor,
        should_stop=should_stop,
        batch_size=batch_size,
        plan=plan,
    ):
        rows.append(row)
        if on_result is not None:
            on_result(row, len(rows), plan.total)
    return _frame(rows, plan.columns)


# Exact-only configurations evaluated together in the calling thread: at most EXACT_BATCH,
# and at most EXACT_BATCH_TOKENS tokens of sequence between them (the batched program's
# time grows with the longest T; between batches a sweep can stop and report progress).
EXACT_BATCH = 4096
EXACT_BATCH_TOKENS = 1 << 20


def _batch_limit(
    plan: SweepPlan, engine: str, exact_only: bool, batch_size: int, serial: bool
) -> int:
    """Configurations a batch holds at least (whole units: see :func:`_pack`)."""
    if serial and exact_only:
        return max(1, min(EXACT_BATCH, EXACT_BATCH_TOKENS // max(plan.longest, 1)))
    return 1 if serial else max(1, batch_size)


def _pack(units: Sequence[int | list[int]], size: int) -> Iterator[list[int]]:
    """The sweep's work in batches, in cell order: units (the fast engine's groups of
    configurations that share draws, else single configurations) stay whole, packed until
    a batch holds at least ``size`` configurations."""
    current: list[int] = []
    for unit in units:
        if isinstance(unit, int):
            current.append(unit)
        else:
            current.extend(unit)
        if len(current) >= size:
            yield current
            current = []
    if current:
        yield current


def _frame(rows: list[dict[str, Any]], columns: Sequence[str]) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=list(columns))
    return frame.sort_values("config_id", kind="stable").reset_index(drop=True)
