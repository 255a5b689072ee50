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
from .exact import exact_metrics
from .grid import Grid, SweepSpec
from .kernel import cycle_costs
from .reference import simulate_reference
from .simulator import METRIC_NAMES, simulate

__all__ = [
    "ENGINES",
    "SWEEP_COLUMNS",
    "Grid",
    "SweepSpec",
    "cell_key",
    "cell_order",
    "config_frame",
    "evaluate",
    "run_sweep",
    "scenario_columns",
    "sweep_columns",
]

ENGINES = ("fast", "reference")
# The columns of a sweep of the original's fields only (see :func:`sweep_columns`).
SWEEP_COLUMNS: tuple[str, ...] = ("config_id", *CONFIG_FIELDS, *METRIC_NAMES)


def scenario_columns(configs: Iterable[SpecConfig]) -> tuple[str, ...]:
    """The newer fields (dotted keys) that some configuration sets away from its default,
    in table order: the ones :meth:`SpecConfig.to_dict` writes for it."""
    found = {
        key for config in configs for key in SCENARIO_FIELDS if config.get(key) != DEFAULTS[key]
    }
    return tuple(key for key in SCENARIO_FIELDS if key in found)


def sweep_columns(configs: Iterable[SpecConfig]) -> tuple[str, ...]:
    """A sweep's CSV columns: ``config_id``, the original's 14 fields, the newer fields of
    :func:`scenario_columns`, then the metrics."""
    return ("config_id", *CONFIG_FIELDS, *scenario_columns(configs), *METRIC_NAMES)


def config_frame(configs: Sequence[SpecConfig]) -> pd.DataFrame:
    """The configurations of a sweep (before any result), one row each, with the sweep's
    configuration columns (the original's 14 and those of :func:`scenario_columns`)."""
    columns = (*CONFIG_FIELDS, *scenario_columns(configs))
    return pd.DataFrame([[c.get(key) for key in columns] for c in configs], columns=columns)


def evaluate(config: SpecConfig, engine: str = "fast", exact_only: bool = False) -> dict[str, Any]:
    """One sweep row: the configuration's fields and every metric (NaN for MC if exact_only)."""
    if engine not in ENGINES:
        raise ValueError(f"engine: {engine!r} is not one of {', '.join(ENGINES)}")
    if exact_only:
        metrics: dict[str, float] = dict.fromkeys(METRIC_NAMES, math.nan)
        metrics.update(exact_metrics(config))
        metrics["cost_ratio"] = cycle_costs(config).cost_ratio
    else:
        run = simulate if engine == "fast" else simulate_reference
        metrics = run(config).metrics
    return {**config.to_dict(), **metrics}


def cell_key(config: SpecConfig) -> tuple[Any, ...]:
    """The optimal-K cell of a configuration: every field but ``k`` and its model's inert ones."""
    inert = set(inert_parameters(config.draft_model))
    return tuple(
        None if name in inert else value for name, value in config.to_dict().items() if name != "k"
    )


def cell_order(configs: Sequence[SpecConfig]) -> list[int]:
    """Indices of ``configs`` with every K of a cell together, cells in order of first appearance.

    A sweep run in this order completes its optimal-K cells one after another (a heatmap fills
    as it goes) instead of finishing every cell at once near the end, as a grid listing K as
    its outer axis would. Within a cell the grid's own order is kept.
    """
    cells: dict[tuple[Any, ...], list[int]] = {}
    for index, config in enumerate(configs):
        cells.setdefault(cell_key(config), []).append(index)
    return [index for members in cells.values() for index in members]


def _evaluate_batch(
    batch: list[tuple[int, SpecConfig]], engine: str, exact_only: bool
) -> list[dict[str, Any]]:
    return [{"config_id": i, **evaluate(c, engine, exact_only)} for i, c in batch]


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

    Configurations run cell by cell (:func:`cell_order`: all K of an optimal-K cell together,
    in batches of ``batch_size``); ``config_id`` is the index in ``configs``, so the result
    (and a CSV of it) stays in grid order, and every row is the same whatever the order
    (each configuration has its own generator).
    ``executor``: any :class:`concurrent.futures.Executor` (batches are submitted to it), or
    None to run in the calling thread; the rows are the same either way.
    Every row holds every column of :func:`sweep_columns` (a newer field a configuration
    leaves at its default holds the default).
    ``on_result(row, done, total)`` is called in the caller's thread as each row finishes.
    When ``should_stop()`` turns true the sweep stops early: rows already finished are
    returned, work not yet started is cancelled.
    """
    total = len(configs)
    indexed = [(i, configs[i]) for i in cell_order(configs)]
    batches = [indexed[i : i + batch_size] for i in range(0, total, batch_size)]
    rows: list[dict[str, Any]] = []
    newer = scenario_columns(configs)
    columns = ("config_id", *CONFIG_FIELDS, *newer, *METRIC_NAMES)
    defaults = {key: DEFAULTS[key] for key in newer}

    def stopped() -> bool:
        return should_stop is not None and should_stop()

    def collect(batch_rows: Iterable[dict[str, Any]]) -> None:
        for row in batch_rows:
            for key, value in defaults.items():
                row.setdefault(key, value)
            rows.append(row)
            if on_result is not None:
                on_result(row, len(rows), total)

    if executor is None:
        for batch in batches:
            for item in batch:
                if stopped():
                    return _frame(rows, columns)
                collect(_evaluate_batch([item], engine, exact_only))
        return _frame(rows, columns)

    pending: set[Future[list[dict[str, Any]]]] = {
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


def _frame(rows: list[dict[str, Any]], columns: Sequence[str]) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=list(columns))
    return frame.sort_values("config_id", kind="stable").reset_index(drop=True)
