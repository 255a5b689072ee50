"""Where the Sweep view's sweeps run: the Dask scheduler that applies (:func:`sweep_scheduler`),
and :class:`SweepExecutor`, which starts that cluster or takes the app's worker processes
(:mod:`spectui.workers`), and closes or discards them when the sweep ends."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from spectui.messages import SweepRunsOn

SCHEDULER_FORMS = "tcp://HOST:PORT or local:N (unset: this machine)"


def sweep_scheduler(preset: Any) -> str | None:
    """The Dask scheduler the app's sweeps of ``preset`` run on: $SPECTUI_SCHEDULER when set
    (for every sweep), else the preset's ``scheduler`` key; None: on this machine.
    :class:`engine.core.config.ConfigError` naming SPECTUI_SCHEDULER when its value is not a
    scheduler (:func:`engine.sweep.cluster.parse_scheduler`)."""
    from engine.sweep.cluster import SCHEDULER_ENV, parse_scheduler

    text = os.environ.get(SCHEDULER_ENV, "").strip()
    if text:
        parse_scheduler(text, field=SCHEDULER_ENV)
        return text
    return getattr(preset, "scheduler", None)


class SweepExecutor:
    """What one sweep of ``view`` computes its rows on, from the sweep's thread: a Dask
    cluster (``scheduler``), else the app's worker processes (``app.pool``), else the thread
    itself (:attr:`executor` None); with the batch size that suits it."""

    def __init__(self, view: Any, scheduler: str | None) -> None:
        self.view, self.scheduler = view, scheduler
        self.executor: Any = None  # for engine.sweep.sweep.sweep_rows
        self.batch = 1
        self.pool: Any = None  # the app's processes (engine.sweep.pool.SweepPool), if used
        self.runner: Any = None  # the Dask runner (the view's ``runner`` too) until closed

    def open(self, plan: Any, stopped: Callable[[], bool]) -> bool:
        """Start the cluster, or take the app's processes; False: nothing runs (cancelled,
        or the app quit, while the cluster started)."""
        view = self.view
        if self.scheduler is not None:
            from engine.sweep.cluster import DaskRunner, task_size

            runner = self.runner = view.runner = DaskRunner(self.scheduler)
            if not runner.start(stopped):  # cancelled, or the app quit
                # Not closed here (close waits for start): its start thread closes it.
                self.runner = view.runner = None
                return False
            self.executor = runner
            workers = runner.workers
            self.batch = task_size(plan, False, workers)
            view.post_message(SweepRunsOn(self.scheduler, workers, runner.dashboard))
            return True
        from engine.sweep.pool import batch_size_for

        pool = self.pool = getattr(view.app, "pool", None)
        executor = self.executor = pool.executor() if pool is not None else None
        if pool is not None and executor is None and pool.problem and pool.workers:
            view.app.call_from_thread(
                view.notify,
                f"Sweep runs in the app's own process (no worker processes: {pool.problem})",
                severity="warning",
            )
        # Serially (no executor) each group of configurations that share draws (or a
        # slice of an exact-only sweep) is one step; batches are for workers.
        self.batch = batch_size_for(plan, pool.workers) if pool is not None and executor else 1
        return True

    def broken(self) -> None:
        """A worker process died: the next sweep gets new processes."""
        if self.pool is not None:
            self.pool.discard()

    def close(self) -> None:
        """The sweep's rows are all in, or it stopped: a local cluster is shut down."""
        if self.runner is not None:
            self.runner.close()
            self.runner = self.view.runner = None

    def cancelled(self) -> None:
        """The sweep was cancelled: stop the batches in flight (the next sweep starts fresh
        processes)."""
        if self.executor is not None and self.pool is not None:
            self.pool.discard()
