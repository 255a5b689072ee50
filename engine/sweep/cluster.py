"""Sweeps on a Dask cluster: the optional extra ``spectui[dask]``.

:class:`DaskRunner` is a :class:`engine.sweep.sweep.BatchRunner`:
:func:`engine.sweep.sweep.run_sweep`
and :func:`engine.sweep.sweep.sweep_rows` send it their batches as they send them to a process
pool. It connects to a running scheduler (``tcp://HOST:8786``, started with
``dask scheduler``; workers join it with ``dask worker tcp://HOST:8786``) or starts a
:class:`distributed.LocalCluster` of N worker processes (``local:N``).

* A task is a batch of configurations worth about :data:`TASK_SECONDS` of work
  (:func:`task_size`): a Dask task costs milliseconds of overhead, a configuration can cost
  less. Tasks go out a few per worker thread at a time and their rows come back with
  :class:`distributed.as_completed`.
* Each configuration draws from its own generator (:func:`engine.core.runs.config_rng`), so
  its row is the same on any worker, in any batch, run any number of times.
* A task whose worker dies is run again elsewhere (Dask reschedules the work of a lost
  worker); one that raises stops the sweep with its error (a configuration's error would
  come again on every try).
* A ``local:N`` cluster's workers ignore Ctrl-C (the caller stops the sweep) and are
  started without Dask's ``MALLOC_TRIM_THRESHOLD_`` (distributed.nanny.pre-spawn-environ):
  with it glibc maps every large numpy array afresh, and the sampler runs about 2x slower.
* Stopping cancels the tasks in flight; a :class:`~distributed.LocalCluster` is shut down
  with the runner.

Workers import this package to run a task: install the same version of spectui on every
worker (:meth:`DaskRunner.start` checks). This module imports Dask only when a runner
starts, and never prints.
"""

from __future__ import annotations

import contextlib
import logging
import math
import re
import signal
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import Any

from engine.core.config import WORKERS_MAX, ConfigError
from engine.sweep.sweep import Batch, BatchRows, BatchRunner, Flight, SweepPlan

__all__ = [
    "RETRIES",
    "SCHEDULER_ENV",
    "TASK_SECONDS",
    "DaskRunner",
    "DaskUnavailable",
    "parse_scheduler",
    "task_size",
]

SCHEDULER_ENV = "SPECTUI_SCHEDULER"  # the app's Sweep view: a scheduler for its sweeps
TASK_SECONDS = 1.0
# Rough single-core rates (benchmarks/bench_sweep_scale.py measures them): simulated tokens
# a second for Monte Carlo runs, configurations a second for exact-only ones. A task's size
# only balances overhead against progress: it never changes a row.
MC_TOKENS_PER_S = 50e6  # the fast engine (shared draws: more; a K policy's runs: ~8e6)
REFERENCE_TOKENS_PER_S = 0.4e6  # the reference engine's per-token loop
EXACT_CONFIGS_PER_S = 2500.0
TASKS_PER_WORKER = 4  # at least, so that the work spreads and progress shows
# A task that raises is not run again: a configuration's error is the same on every try.
# (A task on a worker that dies is not an error: Dask runs it again elsewhere.)
RETRIES = 0
CONNECT_TIMEOUT_S = 10.0
INSTALL_HINT = "pip install 'spectui[dask]'"

_ADDRESS = re.compile(r"(tcp|tls|ucx|ws|wss|inproc)://\S+")


class DaskUnavailable(RuntimeError):
    """Dask cannot run the sweep: not installed, no scheduler at the address, workers
    without spectui. The message is one line for the user."""


def parse_scheduler(text: str, field: str = "--scheduler") -> tuple[str, Any]:
    """``("address", "tcp://HOST:PORT")`` or ``("local", N)``; :class:`ConfigError` on
    ``field`` otherwise."""
    value = text.strip()
    if value.startswith("local:"):
        count = value.removeprefix("local:")
        if count.isascii() and count.isdigit() and 1 <= int(count) <= WORKERS_MAX:
            return "local", int(count)
        raise ConfigError(field, f"{text!r}: local:N needs a worker count N in [1, {WORKERS_MAX}]")
    if _ADDRESS.fullmatch(value):
        return "address", value
    raise ConfigError(field, f"{text!r} is not a scheduler address (tcp://HOST:PORT) or local:N")


def task_size(plan: SweepPlan, exact_only: bool, workers: int, engine: str = "fast") -> int:
    """Configurations a task holds: about :data:`TASK_SECONDS` of work, yet at least
    :data:`TASKS_PER_WORKER` tasks a worker; a multiple of the number of K values when
    that fits (tasks then tend to complete whole cells of the heatmap)."""
    remaining = plan.remaining
    if remaining == 0:
        return 1
    if exact_only:  # the rate is at 128 tokens a sequence; the program grows with T
        by_work = EXACT_CONFIGS_PER_S * TASK_SECONDS * 128 / max(plan.longest, 128)
    else:
        rate = REFERENCE_TOKENS_PER_S if engine == "reference" else MC_TOKENS_PER_S
        by_work = rate * TASK_SECONDS / max(plan.tokens, 1.0)
    by_progress = math.ceil(remaining / (TASKS_PER_WORKER * max(workers, 1)))
    size = max(1, min(int(by_work), by_progress))
    cell = plan.k_count
    return size // cell * cell if cell and size >= cell else size


@contextlib.contextmanager
def _local_worker_settings() -> Iterator[None]:
    """While a LocalCluster starts its worker processes: they inherit an ignored SIGINT (a
    terminal's Ctrl-C reaches the whole process group; the caller stops the sweep, the
    workers must not die of it with a traceback), Dask's pre-spawn environment without
    MALLOC_TRIM_THRESHOLD_ (see the module's notes), and a stderr with a file descriptor."""
    import dask

    environ = dict(dask.config.get("distributed.nanny.pre-spawn-environ", {}))
    environ.pop("MALLOC_TRIM_THRESHOLD_", None)
    from engine.sweep.pool import stderr_with_a_file_descriptor

    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
    try:
        with (
            dask.config.set({"distributed.nanny.pre-spawn-environ": environ}),
            stderr_with_a_file_descriptor(),  # the app's stderr has none (Textual)
        ):
            yield
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


def _close_failed(client: Any) -> None:
    """Close a :class:`distributed.Client` whose start raised, at once."""
    with contextlib.suppress(Exception):
        client.close(timeout=1)
    client.status = "closed"  # its __del__ has nothing left to do


def _spectui_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("spectui")
    except PackageNotFoundError:
        return "unknown"


class DaskRunner(BatchRunner):
    """Batches of a sweep on a Dask cluster (see the module's notes). Use it as a context
    manager, or call :meth:`start` and :meth:`close`."""

    def __init__(self, scheduler: str, *, connect_timeout: float | None = None) -> None:
        self.scheduler = scheduler
        self.kind, self.target = parse_scheduler(scheduler)
        self.connect_timeout = CONNECT_TIMEOUT_S if connect_timeout is None else connect_timeout
        self.client: Any = None
        self.cluster: Any = None
        self._lock = threading.Lock()

    def __enter__(self) -> DaskRunner:
        self.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()

    def start(self, should_stop: Callable[[], bool] | None = None) -> bool:
        """Connect (or start the local cluster) and check the workers' spectui; True once
        ready, False if ``should_stop()`` turned true meanwhile (without waiting for the start:
        the runner closes itself once its start returns).
        :class:`DaskUnavailable` if Dask cannot run the sweep: not installed, nothing that
        answers as a Dask scheduler at the address within :attr:`connect_timeout` (and as
        long again for the workers to answer), workers without spectui."""
        try:
            import distributed
        except ImportError:
            raise DaskUnavailable(f"Dask is not installed: {INSTALL_HINT}") from None
        if self.client is not None:
            return True
        main = threading.current_thread() is threading.main_thread()
        if self.kind == "local" and (main or should_stop is None):
            # In this thread: from the main thread, its ignored SIGINT reaches the workers.
            self._start(distributed)
            return True
        # Aside, so that a stop need not wait for the start (a local cluster's seconds, in
        # the app's thread); and for an address with a deadline: whatever answers there may
        # never finish a Dask handshake (an HTTP server, a worker that hangs).
        outcome: dict[str, BaseException | None] = {}

        def start() -> None:
            try:
                self._start(distributed)
                outcome["error"] = None
            except BaseException as err:
                outcome["error"] = err

        thread = threading.Thread(target=start, name="spectui-dask-connect", daemon=True)
        thread.start()
        limit = 2 * self.connect_timeout if self.kind == "address" else math.inf
        deadline = time.monotonic() + limit
        while thread.is_alive():
            thread.join(0.05)
            if should_stop is not None and should_stop() and thread.is_alive():
                threading.Thread(target=self._close_when_done, args=(thread,), daemon=True).start()
                return False
            if time.monotonic() > deadline and thread.is_alive():
                threading.Thread(target=self._close_when_done, args=(thread,), daemon=True).start()
                raise DaskUnavailable(
                    f"cannot reach {self.target}: no Dask scheduler answered in "
                    f"{2 * self.connect_timeout:g} s (is it a Dask scheduler's address?)"
                )
        error = outcome.get("error")
        if error is not None:
            raise error
        return True

    def _close_when_done(self, thread: threading.Thread) -> None:
        thread.join()
        self.close()

    def _start(self, distributed: Any) -> None:
        with self._lock:
            try:
                if self.kind == "local":
                    with _local_worker_settings():
                        self.cluster = distributed.LocalCluster(
                            n_workers=self.target,
                            threads_per_worker=1,
                            processes=True,
                            dashboard_address=":0",  # any free port: several may run at once
                            silence_logs=logging.CRITICAL,  # errors reach the caller
                        )
                    self.client = distributed.Client(self.cluster)
                else:
                    # Made, then started: if its start fails (an address Dask cannot parse,
                    # tls:// without certificates) the client is still ours to close, while
                    # its event loop runs. Left to the garbage collector, its __del__ closes
                    # it on a loop that is gone: 20 s, then "Exception ignored ... TimeoutError".
                    client = distributed.Client.__new__(distributed.Client)
                    try:
                        client.__init__(
                            self.target, timeout=self.connect_timeout, set_as_default=False
                        )
                    except BaseException:
                        _close_failed(client)
                        raise
                    self.client = client
            except Exception as err:  # refused, timed out, or not Dask speaking at all
                self._close_locked()
                where = self.target if self.kind == "address" else "a local cluster"
                reason = str(err).strip().splitlines()[0] if str(err).strip() else ""
                raise DaskUnavailable(
                    f"cannot reach {where}: {type(err).__name__}: {reason}".rstrip(": ")
                ) from None
        self._check_versions()

    def _check_versions(self) -> None:
        ours = _spectui_version()
        try:
            theirs = self.client.run(_spectui_version)
        except Exception as err:  # a worker without spectui (Dask re-raises it as Exception)
            self.close()
            reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise DaskUnavailable(
                f"Dask workers cannot run spectui ({reason}): {INSTALL_HINT} on every worker"
            ) from None
        for worker, version in sorted(theirs.items()):
            if version != ours:
                self.close()
                raise DaskUnavailable(
                    f"Dask worker {worker} runs spectui {version}, this is {ours}: install "
                    "the same version on every worker"
                )

    @property
    def dashboard(self) -> str | None:
        """The cluster's dashboard address, if it has one (bokeh installed where the
        scheduler runs)."""
        if self.client is None:
            return None
        try:
            info = self.client.scheduler_info()
        except Exception:
            return None
        if "dashboard" not in info.get("services", {}):
            return None
        with contextlib.suppress(Exception):
            return str(self.client.dashboard_link)
        return None

    @property
    def workers(self) -> int:
        """Worker threads the cluster has now (tasks run one a thread)."""
        if self.client is None:
            return 0
        try:
            workers = self.client.scheduler_info()["workers"].values()
        except Exception:
            return 0
        return sum(int(w.get("nthreads", 1)) for w in workers)

    def _window(self) -> int:
        return max(4, 3 * self.workers)

    def _flight(self, function: Callable[[Batch], BatchRows]) -> Flight:
        from distributed import as_completed

        client = self.client
        if client is None:
            raise RuntimeError("DaskRunner.map_unordered before start()")
        # This client's queue of finished futures: it need not be the default client.
        return _DaskFlight(client, function, as_completed(loop=client.loop))

    def close(self) -> None:
        """Disconnect; shut the local cluster down."""
        with self._lock:
            self._close_locked()

    def _close_locked(self) -> None:
        client, cluster = self.client, self.cluster
        self.client = self.cluster = None
        if client is not None:
            with contextlib.suppress(Exception):
                client.close()
        if cluster is not None:
            with contextlib.suppress(Exception):
                cluster.close()


class _DaskFlight(Flight):
    """Batches as Dask tasks, keyed ``spectui-batch-<call>-<n>``, retried :data:`RETRIES`
    times on a lost worker."""

    def __init__(self, client: Any, function: Callable[[Batch], BatchRows], completed: Any):
        self.client = client
        self.function = function
        self.completed = completed
        self.prefix = f"spectui-batch-{uuid.uuid4().hex[:8]}"
        self.number = 0
        self.pause = threading.Event()  # only waited on: the pause between looks at the queue

    def submit(self, batch: Batch) -> Any:
        future = self.client.submit(
            self.function, batch, key=f"{self.prefix}-{self.number}", pure=False, retries=RETRIES
        )
        self.number += 1
        self.completed.add(future)
        return future

    def finished(self, in_flight: set[Any]) -> list[Any]:
        ready = self.completed.next_batch(block=False)
        if not ready:
            self.pause.wait(0.05)
        return list(ready)

    def rows(self, future: Any) -> BatchRows:
        rows: BatchRows = future.result()
        future.release()
        return rows

    def cancel(self, in_flight: set[Any]) -> None:
        self.completed.clear()
        if in_flight:
            with contextlib.suppress(Exception):
                self.client.cancel(list(in_flight))
