"""The engine's sweep pool (engine/sweep/pool.py) and run_sweep on any Executor.

The pool is the one the CLI (``spectui sweep --workers N``) and the app share; the app's own
part (how many workers, from SPECTUI_SWEEP_WORKERS) is tested in tests/app/test_workers.py.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from multiprocessing.connection import wait

import pandas as pd
import pytest

import engine.sweep.pool as pool_module
from engine.presets import load_preset
from engine.sweep.pool import MAX_WORKERS, SweepPool, batch_size, check_workers
from engine.sweep.sweep import run_sweep


def _exits(process, timeout: float = 10.0) -> bool:
    """Whether ``process`` exits within ``timeout`` seconds (its sentinel, whoever reaps it;
    see tests/app/test_workers.py)."""
    return bool(wait([process.sentinel], timeout))


def _configs():
    return load_preset("tiny").sweep.configs()


# The app's (spawn: one process, each one imports the engine: seconds), the CLI's (fork:
# two processes, which start in milliseconds).
@pytest.mark.parametrize("start_method, workers", [("spawn", 1), (None, 2)])
def test_run_sweep_on_threads_and_on_the_engine_pool_equals_serial(start_method, workers):
    configs = _configs()
    serial = run_sweep(configs)
    with ThreadPoolExecutor(2) as threads:
        threaded = run_sweep(configs, executor=threads, batch_size=5)
    with SweepPool(workers, start_method) as pool:
        executor = pool.executor()
        assert executor is not None, pool.problem
        assert len(executor._processes) == workers
        pooled = run_sweep(configs, executor=executor, batch_size=batch_size(configs, workers))
    pd.testing.assert_frame_equal(threaded, serial)
    pd.testing.assert_frame_equal(pooled, serial)
    assert list(serial["config_id"]) == list(range(len(configs)))


def test_a_pool_of_no_workers_runs_nothing_in_processes():
    with SweepPool(0) as pool:
        assert pool.executor() is None and pool.problem is None


@pytest.mark.parametrize("value", [-1, MAX_WORKERS + 1, 1.5, True, "2"])
def test_bad_worker_count_is_a_one_line_value_error(value):
    with pytest.raises(ValueError, match=r"^workers: .* is not an integer in \[0, 64\]$"):
        SweepPool(value)
    with pytest.raises(ValueError, match=r"^--workers: "):
        check_workers(value, "--workers")


def test_the_engine_pool_needs_neither_numpy_nor_pandas_to_load():
    # The app imports it at start-up (tests/engine/test_purity.py checks the front ends).
    import subprocess
    import sys

    code = "import sys, engine.sweep.pool; print('pandas' in sys.modules, 'numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False False"


# The worker's set-up is the same whatever starts it: fork, which starts in milliseconds
# (spawn: test_run_sweep_on_threads_and_on_the_engine_pool_equals_serial).
def test_workers_cannot_write_on_the_terminal():
    pool = SweepPool(1, None)
    try:
        executor = pool.executor()
        assert executor is not None, pool.problem
        for fd in (1, 2):
            assert executor.submit(os.readlink, f"/proc/self/fd/{fd}").result() == os.devnull
    finally:
        pool.shutdown()
    assert pool.executor() is None  # closed for good


def test_batches_hold_about_the_same_work_and_keep_progress_gradual():
    from engine.sweep.pool import BATCH_TOKENS

    seed = load_preset("seed-576").sweep.configs()  # 500 x 128 tokens each
    size = batch_size(seed, 1)
    assert size == BATCH_TOKENS // (500 * 128) // 8 * 8  # whole cells: 8 K each (31 -> 24)
    assert batch_size(seed, 16) == 5  # 576 / (8 batches x 16 workers), rounded up
    heavy = [c.replace(n_sequences=20_000) for c in seed[:10]]
    assert batch_size(heavy, 1) == 1
    assert batch_size([], 1) == 1


def test_shutdown_stops_a_batch_in_progress():
    pool = SweepPool(1, None)  # fork: see test_workers_cannot_write_on_the_terminal
    executor = pool.executor()
    assert executor is not None, pool.problem
    processes = list(executor._processes.values())
    batch = executor.submit(time.sleep, 30)
    # Handed to the worker (running), so a shutdown cannot just cancel it: only stopping
    # the process ends it before 30 s.
    deadline = time.monotonic() + 10
    while not batch.running():
        assert time.monotonic() < deadline
        time.sleep(0.01)
    pool.shutdown()
    for process in processes:
        assert _exits(process)


def test_a_pool_discarded_while_starting_is_not_a_reason_to_give_up(monkeypatch):
    """A warm-up waiting for its processes when a cancel discards them takes a new pool."""
    import threading
    from concurrent.futures import Future

    made: list = []

    class FakeExecutor:  # processes that start only when the test says so
        def __init__(self, *args, **kwargs):
            self._processes: dict = {}
            self.futures: list[Future] = []
            made.append(self)

        def submit(self, fn, *args):
            future: Future = Future()
            self.futures.append(future)
            return future

        def shutdown(self, wait=True, cancel_futures=False):
            for future in self.futures:
                if not future.done():
                    future.set_exception(BrokenProcessPool("stopped"))

    def wait_for(n: int) -> None:
        deadline = time.monotonic() + 10
        while len(made) < n or not made[n - 1].futures:
            assert time.monotonic() < deadline
            time.sleep(0.01)

    monkeypatch.setattr(pool_module, "ProcessPoolExecutor", FakeExecutor)
    pool = SweepPool(1)
    got: list = []
    thread = threading.Thread(target=lambda: got.append(pool.executor()))
    thread.start()
    wait_for(1)
    pool.discard()  # a cancel, while the warm-up waits for the first pool
    wait_for(2)
    made[1].futures[0].set_result(1234)
    thread.join(timeout=10)
    assert got == [made[1]]
    assert pool.problem is None and pool._executor is made[1]
