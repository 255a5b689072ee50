"""Worker processes for sweeps: one pool for the CLI (``spectui sweep --workers N``) and the app.

:func:`engine.sweep.sweep.run_sweep` runs on any :class:`concurrent.futures.Executor` (a thread
pool, a process pool, anything with ``submit``); a configuration's rows do not depend on
which, since each draws from its own generator. :class:`SweepPool` is the process pool the
front ends use:

* processes are started lazily, by default with "spawn" (a fork of a process with threads,
  such as the app's, may deadlock; ``start_method=None`` takes the platform's default, fork
  on Linux, which starts in milliseconds instead of seconds: the CLI's choice, as it starts
  the pool before any thread of its own), and every one of them has imported the engine
  before :meth:`SweepPool.executor` returns, so a sweep's first batch does not pay for it;
* in a worker, Ctrl-C is ignored (the parent stops the sweep and keeps the rows finished)
  and nothing reaches the terminal (stdout and stderr go to /dev/null);
* a worker ends with the process that started it, even one killed with SIGKILL: at once
  on Linux, within :data:`PARENT_CHECK_S` elsewhere (:func:`_exit_with_parent`);
* when processes cannot be started, :meth:`SweepPool.executor` returns None (run the sweep
  in the calling thread) and :attr:`SweepPool.problem` says why;
* :meth:`SweepPool.discard` and :meth:`SweepPool.shutdown` stop the processes at once,
  batches in progress included.

:func:`batch_size` sizes the batches handed to the workers. How many workers to use is the
caller's choice (:func:`check_workers` validates it); this module never prints.
"""

from __future__ import annotations

import contextlib
import math
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from types import TracebackType
from typing import TYPE_CHECKING

from engine.core.config import WORKERS_MAX, SpecConfig

if TYPE_CHECKING:
    from engine.sweep.sweep import SweepPlan

MAX_WORKERS = WORKERS_MAX
# Simulated tokens per batch sent to a worker: roughly 50-100 ms of work. Each worker holds
# at most two batches, so a batch must outlast a busy moment of the caller (a redraw of the
# app), which also delays handing out the next one; yet stay small enough that a heatmap
# fills gradually.
BATCH_TOKENS = 2_000_000
BATCHES_PER_WORKER = 8


def usable_cores() -> int:
    """The cores this process may run on (its affinity on Linux, else the CPU count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        return os.cpu_count() or 1


def check_workers(value: int, what: str = "workers") -> int:
    """``value`` if it is a worker count in [0, :data:`MAX_WORKERS`] (0: no processes), else
    ValueError naming ``what`` and the range."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_WORKERS:
        raise ValueError(f"{what}: {value!r} is not an integer in [0, {MAX_WORKERS}]")
    return value


def batch_size(configs: Sequence[SpecConfig], workers: int) -> int:
    """Configurations per batch for ``workers`` processes (see :data:`BATCH_TOKENS`).

    A multiple of the number of K values when that fits: the sweep runs in cell order
    (:func:`engine.sweep.sweep.cell_order`, all K of a cell together), so batches tend to complete
    whole cells of the heatmap. The fast engine packs whole groups of configurations that
    share draws (a group may span cells), so its batches can be larger.
    """
    if not configs:
        return 1
    tokens = sum(c.n_sequences * c.tokens_per_seq for c in configs) / len(configs)
    return _batch_size(tokens, len(configs), len({c.k for c in configs}), workers)


def batch_size_for(plan: SweepPlan, workers: int, exact_only: bool = False) -> int:
    """:func:`batch_size` of the configurations a :class:`engine.sweep.sweep.SweepPlan` runs. An
    exact-only sweep samples nothing: its batches are sized by count alone, as large as
    progress allows (up to :data:`engine.sweep.sweep.EXACT_BATCH`; the exact program of a batch
    is computed for all its configurations at once)."""
    if exact_only:
        from engine.sweep.sweep import EXACT_BATCH, EXACT_BATCH_TOKENS

        by_progress = math.ceil(plan.remaining / (BATCHES_PER_WORKER * max(workers, 1)))
        by_length = EXACT_BATCH_TOKENS // max(plan.longest, 1)  # as in the calling thread
        return max(1, min(EXACT_BATCH, by_progress, by_length))
    return _batch_size(plan.tokens, plan.remaining, plan.k_count, workers)


def _batch_size(tokens: float, count: int, cell: int, workers: int) -> int:
    if count == 0:
        return 1
    by_work = int(BATCH_TOKENS // max(tokens, 1))
    by_progress = math.ceil(count / (BATCHES_PER_WORKER * max(workers, 1)))
    size = max(1, min(by_work, by_progress))
    return size // cell * cell if size >= cell else size


# How often a worker looks whether the process that started it is still there.
PARENT_CHECK_S = 0.5
# The signal the kernel sends a worker when its parent thread ends (Linux).
_PARENT_DEATH_SIGNAL = signal.SIGUSR1
_PR_SET_PDEATHSIG = 1


def _init_worker(parent: int) -> None:
    """In each worker: Ctrl-C is the parent's business, nothing may write on the terminal,
    and the worker ends with ``parent`` (:func:`_exit_with_parent`)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _exit_with_parent(parent)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    os.close(devnull)
    import engine.sweep.sweep  # noqa: F401  (the first batch should not pay for the imports)


def _exit_with_parent(parent: int) -> None:
    """End this process as soon as ``parent`` (the process that started it) is gone.

    A parent killed with SIGKILL cannot stop its workers, and a worker waiting on the
    parent's pipe would wait forever, under PID 1. On Linux the kernel signals the worker
    when the thread that started it ends (``PR_SET_PDEATHSIG``); that may be a thread of
    a parent that lives on (the app starts its pool from a worker thread), so the signal
    only makes the worker look: it exits if its parent process is another now (it was
    adopted). Everywhere, a thread also looks every :data:`PARENT_CHECK_S` seconds (the
    signal handler runs between two bytecodes of the main thread; and off Linux there is
    no signal)."""

    def orphaned() -> bool:
        return os.getppid() != parent

    def on_signal(signum: int, frame: object) -> None:
        if orphaned():
            os._exit(1)

    with contextlib.suppress(ValueError, OSError):  # ValueError: not the main thread
        signal.signal(_PARENT_DEATH_SIGNAL, on_signal)
        _set_parent_death_signal(_PARENT_DEATH_SIGNAL)
    if orphaned():  # the parent died before the kernel was told
        os._exit(1)

    def watch() -> None:
        with contextlib.suppress(AttributeError, OSError):  # the signal is the main thread's
            signal.pthread_sigmask(signal.SIG_BLOCK, {_PARENT_DEATH_SIGNAL})
        while not orphaned():
            time.sleep(PARENT_CHECK_S)
        os._exit(1)

    threading.Thread(target=watch, name="spectui-parent-watch", daemon=True).start()


def _set_parent_death_signal(signum: int) -> None:
    """prctl(PR_SET_PDEATHSIG, signum) on Linux; nothing elsewhere."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, int(signum), 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")


def _ready() -> int:
    return os.getpid()


@contextlib.contextmanager
def stderr_with_a_file_descriptor() -> Iterator[None]:
    """A front end may replace sys.stderr with an object whose fileno() is -1 (Textual does);
    multiprocessing hands that descriptor to its resource tracker (and Dask's nanny to the
    worker processes it spawns) and fails. Lend it /dev/null meanwhile."""
    saved = sys.stderr
    with open(os.devnull, "w") as devnull:
        sys.stderr = devnull
        try:
            yield
        finally:
            sys.stderr = saved


class SweepPool:
    """A lazily started process pool for :func:`engine.sweep.sweep.run_sweep`; thread-safe.

    ``SweepPool(0)`` never starts processes (:meth:`executor` is None: run serially). Use it
    as a context manager, or call :meth:`shutdown` when done. ``start_method``: see the
    module's notes ("spawn" unless the caller has no threads).
    """

    def __init__(self, workers: int, start_method: str | None = "spawn") -> None:
        self.workers = check_workers(workers)
        self.start_method = start_method  # None: multiprocessing's default
        self.problem: str | None = None  # why sweeps run in the calling thread, if they do
        self._executor: ProcessPoolExecutor | None = None
        self._lock = threading.Lock()
        self._closed = False

    def __enter__(self) -> SweepPool:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.shutdown()

    def executor(self) -> Executor | None:
        """The pool (started now if needed), or None: run the sweep in the calling thread.

        Returns once every process has started and imported the engine. The lock is held
        only to look at and update the pool, so a shutdown never waits for a start.
        """
        with self._lock:
            if self._closed or self.workers == 0 or self.problem is not None:
                return None
            executor = self._executor
            if executor is not None and getattr(executor, "_broken", False):
                self._executor = executor = None  # a worker died while idle
            if executor is None:
                try:
                    with stderr_with_a_file_descriptor():  # starts the resource tracker
                        executor = ProcessPoolExecutor(
                            self.workers,
                            mp_context=multiprocessing.get_context(self.start_method),
                            initializer=_init_worker,
                            initargs=(os.getpid(),),
                        )
                except Exception as err:  # no processes on this system: threads it is
                    self.problem = f"{type(err).__name__}: {err}"
                    return None
                self._executor = executor
        try:  # start every process now; each imports the engine once
            for future in [executor.submit(_ready) for _ in range(self.workers)]:
                future.result()
        except Exception as err:
            with self._lock:
                if self._closed:  # shut down meanwhile (the caller quit)
                    return None
                ours = self._executor is executor
                if ours:
                    self._executor = None
            if not ours:  # discarded meanwhile (a cancel, a broken pool): take the new one
                return self.executor()
            _stop(executor)
            if isinstance(err, BrokenProcessPool | OSError):  # could not start processes
                self.problem = f"{type(err).__name__}: {err}"
                return None
            raise
        return executor

    def warm(self) -> None:
        """Start the processes ahead of the first sweep (call from a worker thread)."""
        self.executor()

    def discard(self) -> None:
        """Stop the pool's processes (work in progress is dropped); the next sweep starts a
        fresh pool. For a pool that broke, or after a cancel: heavy batches still running
        would otherwise delay the next sweep."""
        with self._lock:
            executor, self._executor = self._executor, None
        _stop(executor)

    def shutdown(self) -> None:
        """Stop the processes for good: :meth:`executor` returns None from now on."""
        with self._lock:
            self._closed = True
            executor, self._executor = self._executor, None
        _stop(executor)


def _stop(executor: ProcessPoolExecutor | None) -> None:
    if executor is None:
        return
    processes = list(getattr(executor, "_processes", {}).values())
    executor.shutdown(wait=False, cancel_futures=True)
    for process in processes:  # do not wait for a batch in progress
        with contextlib.suppress(Exception):
            process.terminate()
