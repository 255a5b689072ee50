"""The app's sweep workers: how many, from the environment.

The pool is the engine's (:class:`engine.sweep.pool.SweepPool`, also used by
``spectui sweep --workers N``); this module only counts its processes. A sweep run in a
thread of the app shares one interpreter lock with the UI: every redraw slows the sweep and
every batch of simulation delays a key. In worker processes the two run side by side. The
app starts the pool (``warm``) shortly after its first screen, so a sweep does not wait for
numpy and pandas to import, and shuts it down when it quits.

``SPECTUI_SWEEP_WORKERS`` sets the number of processes (0: run sweeps in a thread of the
app); the default leaves one core to the UI, up to :data:`DEFAULT_MAX_WORKERS`. If
processes cannot be started, sweeps run in a thread and :attr:`SweepPool.problem` says why.
"""

from __future__ import annotations

import os

from engine.core.config import ascii_int
from engine.sweep import pool as engine_pool
from engine.sweep.pool import MAX_WORKERS
from spectui.errors import UsageError

__all__ = ["DEFAULT_MAX_WORKERS", "WORKERS_ENV", "worker_count"]

WORKERS_ENV = "SPECTUI_SWEEP_WORKERS"
DEFAULT_MAX_WORKERS = 8  # each holds numpy and pandas (about 70 MB)


def worker_count() -> int:
    """Processes for app sweeps: $SPECTUI_SWEEP_WORKERS, else the usable cores but one, at
    least 1 and at most :data:`DEFAULT_MAX_WORKERS`."""
    text = os.environ.get(WORKERS_ENV, "").strip()
    if not text:
        return max(1, min(DEFAULT_MAX_WORKERS, engine_pool.usable_cores() - 1))
    try:
        return engine_pool.check_workers(ascii_int(text), WORKERS_ENV)
    except ValueError:
        raise UsageError(
            f"{WORKERS_ENV}: {text!r} is not an integer in [0, {MAX_WORKERS}]"
        ) from None
