"""Sweeps: a union of cartesian grids, run serially or over any Executor.

:func:`run_sweep` takes any :class:`concurrent.futures.Executor`: a
:class:`~concurrent.futures.ThreadPoolExecutor`, a process pool (the front ends use
:class:`engine.pool.SweepPool`), or None to run in the calling thread. Every configuration
draws from its own generator (see :func:`engine.simulator.config_rng`), so a sweep's rows do
not depend on the executor, the worker count, the order, or the rest of the grid.

A sweep may vary any field of :class:`engine.config.SpecConfig`, newer ones included
(``workload.batch_size``, ``cost.gpu``). Its columns (:func:`sweep_columns`) are
``config_id``, the original's 14 fields, each newer field that some configuration of the
sweep sets away from its default, then the metrics: a sweep of the original's fields has
exactly the original's columns.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import FIRST_COMPLETED, Executor, Future, wait
from typing import Any

import pandas as pd

from .config import CONFIG_FIELDS, DEFAULTS, SCENARIO_FIELDS, SpecConfig
from .draft_models import inert_parameters
from .exact import exact_metrics_many
from .grid import Grid, SweepSpec
from .kernel import cycle_costs
from .reference import simulate_reference
from .simulator import METRIC_NAMES, SAMPLER, RunStopped, draw_key, simulate_shared

__all__ = [
    "ENGINES",
    "SWEEP_COLUMNS",
    "Grid",
    "SweepSpec",
    "cell_key",
    "cell_order",
    "config_frame",
    "draw_groups",
    "evaluate",
    "evaluate_many",
    "run_sweep",
    "sampler_name",
    "scenario_columns",
    "sweep_columns",
]

ENGINES = ("fast", "reference")
# The columns of a sweep of the original's fields only (see :func:`sweep_columns`).
SWEEP_COLUMNS: tuple[str, ...] = ("config_id", *CONFIG_FIELDS, *METRIC_NAMES, "sampler")
# The ``sampler`` column of a row the reference loop made, and of an exact-only row.
REFERENCE_SAMPLER = "token/reference"
EXACT_ONLY_SAMPLER = "none"
# A token tree's rows: each cycle's accepted path sampled node by node (engine.tree_scenario).
TREE_SAMPLER = "tree/1"


def scenario_columns(
    configs: Iterable[SpecConfig], records: Iterable[dict[str, Any]] | None = None
) -> tuple[str, ...]:
    """The newer fields (dotted keys) that some configuration sets away from its default,
    in table order: the ones :meth:`SpecConfig.to_dict` writes for it (``records``: those
    records, when the caller has them)."""
    original = set(CONFIG_FIELDS)
    found = {
        key
        for record in (records if records is not None else (c.to_dict() for c in configs))
        for key in record
        if key not in original
    }
    return tuple(key for key in SCENARIO_FIELDS if key in found)


def sweep_columns(configs: Iterable[SpecConfig]) -> tuple[str, ...]:
    """A sweep's CSV columns: ``config_id``, the original's 14 fields, the newer fields of
    :func:`scenario_columns`, then the metrics."""
    return ("config_id", *CONFIG_FIELDS, *scenario_columns(configs), *METRIC_NAMES, "sampler")


def config_frame(configs: Sequence[SpecConfig]) -> pd.DataFrame:
    """The configurations of a sweep (before any result), one row each, with the sweep's
    configuration columns (the original's 14 and those of :func:`scenario_columns`)."""
    columns = (*CONFIG_FIELDS, *scenario_columns(configs))
    return pd.DataFrame([[c.get(key) for key in columns] for c in configs], columns=columns)


def sampler_name(
    engine: str = "fast", exact_only: bool = False, config: SpecConfig | None = None
) -> str:
    """What made a sweep row's Monte Carlo values (its ``sampler`` column): the fast engine's
    sampler (:data:`engine.simulator.SAMPLER`; for ``config`` with a K policy or markov
    acceptance the stepwise engine's, :data:`engine.policies.STEPWISE_SAMPLER`), the
    reference loop's per-token tests, or nothing (an exact-only row)."""
    if exact_only:
        return EXACT_ONLY_SAMPLER
    if engine != "fast":
        return REFERENCE_SAMPLER
    if config is not None:
        from .policies import STEPWISE_SAMPLER, needs_stepwise

        if config.shape == "tree":
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
    true they raise :class:`engine.simulator.RunStopped`.

    The fast engine draws once for configurations that share their draws
    (:func:`engine.simulator.draw_key`: they differ only in cost) and prices the draws for
    each (:func:`engine.simulator.simulate_shared`); every row equals the configuration's
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
    (:func:`engine.simulator.draw_key`), each group where its first member comes. A
    configuration of the stepwise engine (a K policy, markov acceptance) runs alone: its
    cycles depend on its policy, which the draw key leaves out."""
    from .policies import needs_stepwise

    groups: dict[tuple[Any, ...], list[int]] = {}
    for index in order:
        if needs_stepwise(configs[index]) or configs[index].shape == "tree":
            groups[("alone", index)] = [index]
            continue
        seed, key = draw_key(configs[index])
        groups.setdefault((seed, *key), []).append(index)
    return list(groups.values())


def cell_key(config: SpecConfig, record: dict[str, Any] | None = None) -> tuple[Any, ...]:
    """The optimal-K cell of a configuration: every field but ``k`` and its model's inert ones
    (``record``: its :meth:`SpecConfig.to_dict`, when the caller has it)."""
    inert = set(inert_parameters(config.draft_model))
    items = (config.to_dict() if record is None else record).items()
    return tuple(None if name in inert else value for name, value in items if name != "k")


def cell_order(
    configs: Sequence[SpecConfig], records: Sequence[dict[str, Any]] | None = None
) -> list[int]:
    """Indices of ``configs`` with every K of a cell together, cells in order of first appearance.

    A sweep run in this order completes its optimal-K cells one after another (a heatmap fills
    as it goes) instead of finishing every cell at once near the end, as a grid listing K as
    its outer axis would. Within a cell the grid's own order is kept.
    """
    cells: dict[tuple[Any, ...], list[int]] = {}
    for index, config in enumerate(configs):
        record = None if records is None else records[index]
        cells.setdefault(cell_key(config, record), []).append(index)
    return [index for members in cells.values() for index in members]


def _evaluate_batch(
    batch: list[tuple[int, SpecConfig]],
    engine: str,
    exact_only: bool,
    should_stop: Callable[[], bool] | None = None,
) -> list[tuple[int, dict[str, Any]]]:
    """(config_id, metrics and sampler) of each configuration of a batch; the caller adds
    the configuration's fields (it has them already: less to send back from a worker)."""
    configs = [c for _, c in batch]
    rows = evaluate_many(configs, engine, exact_only, fields=False, should_stop=should_stop)
    return [(i, row) for (i, _), row in zip(batch, rows, strict=True)]


ResultCallback = Callable[[dict[str, Any], int, int], None]


def run_sweep(
    configs: Sequence[SpecConfig],
    *,
    engine: str = "fast",
    exact_only: bool = False,
    executor: Executor | None = None,
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
    ``executor``: any :class:`concurrent.futures.Executor` (batches are submitted to it), or
    None to run in the calling thread; the rows are the same either way.
    Every row holds every column of :func:`sweep_columns` (a newer field a configuration
    leaves at its default holds the default).
    ``on_result(row, done, total)`` is called in the caller's thread as each row finishes.
    When ``should_stop()`` turns true the sweep stops early: rows already finished are
    returned, work not yet started is cancelled; in the calling thread a group's runs stop
    where they are (its rows are dropped, none half-made).
    """
    total = len(configs)
    records = [config.to_dict() for config in configs]
    # In the calling thread: one group of shared draws (or one exact batch) at a time.
    batches = _batches(configs, records, engine, exact_only, batch_size, executor is None)
    rows: list[dict[str, Any]] = []
    newer = scenario_columns(configs, records)
    columns = ("config_id", *CONFIG_FIELDS, *newer, *METRIC_NAMES, "sampler")
    defaults = {key: DEFAULTS[key] for key in newer}

    def stopped() -> bool:
        return should_stop is not None and should_stop()

    def collect(batch_rows: Iterable[tuple[int, dict[str, Any]]]) -> None:
        for index, metrics in batch_rows:
            row = {"config_id": index, **records[index], **metrics}
            for key, value in defaults.items():
                row.setdefault(key, value)
            rows.append(row)
            if on_result is not None:
                on_result(row, len(rows), total)

    if executor is None:
        for batch in batches:
            if stopped():
                break
            try:
                collect(_evaluate_batch(batch, engine, exact_only, stopped))
            except RunStopped:
                break
        return _frame(rows, columns)

    pending: set[Future[list[tuple[int, dict[str, Any]]]]] = {
        executor.submit(_evaluate_batch, batch, engine, exact_only) for batch in batches
    }
    try:
        while pending:
            if stopped():
                break
            done, pending = wait(pending, timeout=0.1, return_when=FIRST_COMPLETED)
            for future in done:
                collect(future.result())
    finally:
        for future in pending:
            future.cancel()
    return _frame(rows, columns)


# Exact-only configurations evaluated together in the calling thread: at most EXACT_BATCH,
# and at most EXACT_BATCH_TOKENS tokens of sequence between them (the batched program's
# time grows with the longest T; between batches a sweep can stop and report progress).
EXACT_BATCH = 4096
EXACT_BATCH_TOKENS = 1 << 20


def _batches(
    configs: Sequence[SpecConfig],
    records: Sequence[dict[str, Any]],
    engine: str,
    exact_only: bool,
    batch_size: int,
    serial: bool,
) -> list[list[tuple[int, SpecConfig]]]:
    """The sweep's work, in cell order (:func:`cell_order`). The fast engine's groups of
    configurations that share draws stay whole (:func:`draw_groups`), packed into batches of
    at least ``batch_size`` configurations (in the calling thread, ``serial``: one group a
    batch); the reference engine takes ``batch_size`` configurations a batch (one when
    serial); an exact-only sweep in the calling thread takes up to :data:`EXACT_BATCH`
    configurations of :data:`EXACT_BATCH_TOKENS` tokens in all."""
    order = cell_order(configs, records)
    if serial:
        batch_size = 1
    if exact_only:
        if serial:
            longest = max((c.tokens_per_seq for c in configs), default=1)
            size = max(1, min(EXACT_BATCH, EXACT_BATCH_TOKENS // longest))
        else:
            size = batch_size
        units = [order[i : i + size] for i in range(0, len(order), size)]
    elif engine == "fast":
        units = draw_groups(configs, order)
    else:
        units = [[i] for i in order]
    batches: list[list[tuple[int, SpecConfig]]] = []
    current: list[tuple[int, SpecConfig]] = []
    for unit in units:
        current.extend((i, configs[i]) for i in unit)
        if len(current) >= batch_size:
            batches.append(current)
            current = []
    if current:
        batches.append(current)
    return batches


def _frame(rows: list[dict[str, Any]], columns: Sequence[str]) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=list(columns))
    return frame.sort_values("config_id", kind="stable").reset_index(drop=True)
