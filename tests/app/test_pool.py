"""Sweeps started in the app run in worker processes, or in a thread when they cannot."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from concurrent.futures.process import BrokenProcessPool
from multiprocessing.connection import wait

import pandas as pd
import pytest

from engine.presets import load_preset
from engine.sweep import run_sweep
from spectui import pool as pool_module
from spectui.app import create_app
from spectui.errors import UsageError
from spectui.pool import SweepPool, worker_count
from spectui.widgets.sweep_view import SweepView
from tests.app.helpers import notifications, settle


def _exits(process, timeout: float = 10.0) -> bool:
    """Whether ``process`` exits within ``timeout`` seconds.

    Not ``join()`` then ``is_alive()``: the executor's own thread reaps its workers too.
    When it wins that race, waitpid() fails here and ``is_alive()`` calls a dead process
    alive until that thread has stored the exit code (the flaky test of issue 9). The
    sentinel becomes readable when the process ends, whoever reaps it.
    """
    return bool(wait([process.sentinel], timeout))


def test_worker_count_default_leaves_a_core_to_the_ui(monkeypatch):
    monkeypatch.delenv("SPECTUI_SWEEP_WORKERS", raising=False)
    monkeypatch.setattr(pool_module, "_usable_cores", lambda: 4)
    assert worker_count() == 3
    monkeypatch.setattr(pool_module, "_usable_cores", lambda: 1)
    assert worker_count() == 1
    monkeypatch.setattr(pool_module, "_usable_cores", lambda: 96)
    assert worker_count() == pool_module.DEFAULT_MAX_WORKERS
    monkeypatch.setenv("SPECTUI_SWEEP_WORKERS", "0")
    assert worker_count() == 0


@pytest.mark.parametrize("text", ["abc", "-1", "65", "1.5"])
def test_bad_worker_count_names_the_variable_and_range(monkeypatch, text):
    monkeypatch.setenv("SPECTUI_SWEEP_WORKERS", text)
    with pytest.raises(UsageError, match=r"SPECTUI_SWEEP_WORKERS: .* integer in \[0, 64\]"):
        worker_count()


def test_bad_worker_count_is_a_one_line_cli_error():
    env = {**os.environ, "SPECTUI_SWEEP_WORKERS": "many"}
    out = subprocess.run(
        [sys.executable, "-m", "spectui"], capture_output=True, text=True, env=env, timeout=60
    )
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "SPECTUI_SWEEP_WORKERS" in lines[0]
    assert "Traceback" not in out.stderr


def test_workers_cannot_write_on_the_terminal():
    pool = SweepPool(1)
    try:
        executor = pool.executor()
        assert executor is not None, pool.problem
        for fd in (1, 2):
            assert executor.submit(os.readlink, f"/proc/self/fd/{fd}").result() == os.devnull
    finally:
        pool.shutdown()
    assert pool.executor() is None  # closed for good


async def _tiny_sweep(app, pilot) -> SweepView:
    await settle(pilot, app)
    await pilot.press("f6")
    await settle(pilot, app, rounds=6)
    return app.query_one(SweepView)


@pytest.mark.parametrize("workers", ["1", "0"])
async def test_app_sweep_in_processes_or_thread_matches_the_engine(monkeypatch, workers):
    monkeypatch.setenv("SPECTUI_SWEEP_WORKERS", workers)
    app = create_app("tiny")
    async with app.run_test(size=(120, 40)) as pilot:
        view = await _tiny_sweep(app, pilot)
        assert view.finished is not None and not view.finished.cancelled
        pd.testing.assert_frame_equal(view.frame, run_sweep(load_preset("tiny").sweep.configs()))
        # Processes were used exactly when asked for (inside Textual, whose stderr has no fd).
        assert app.pool.problem is None
        assert (app.pool._executor is not None) == (workers == "1")
    assert app.pool._executor is None  # shut down with the app


async def test_no_processes_means_a_thread_and_a_warning(monkeypatch):
    def refuse(*args, **kwargs):
        raise OSError("no semaphores here")

    monkeypatch.setenv("SPECTUI_SWEEP_WORKERS", "1")
    monkeypatch.setattr(pool_module, "ProcessPoolExecutor", refuse)
    app = create_app("tiny")
    async with app.run_test(size=(120, 40)) as pilot:
        view = await _tiny_sweep(app, pilot)
        assert view.finished is not None and view.finished.done == 24
        assert "no semaphores here" in (app.pool.problem or "")
        assert any("no worker processes" in m for m in notifications(app))


async def test_a_broken_pool_is_replaced_for_the_next_sweep(monkeypatch):
    import engine.sweep

    def broken(*args, **kwargs):
        raise BrokenProcessPool("a worker died")

    working = engine.sweep.run_sweep

    monkeypatch.setenv("SPECTUI_SWEEP_WORKERS", "1")
    app = create_app("tiny")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        first = app.pool.executor()
        assert first is not None
        first_processes = list(first._processes.values())
        monkeypatch.setattr(engine.sweep, "run_sweep", broken)
        view = await _tiny_sweep(app, pilot)
        assert view.finished is None
        assert any("a worker died" in m for m in notifications(app))
        assert app.pool._executor is not first  # discarded (a warm-up may start another)
        for process in first_processes:  # stopped, not left running
            assert _exits(process)
        monkeypatch.setattr(engine.sweep, "run_sweep", working)
        view = await _tiny_sweep(app, pilot)
        assert view.finished is not None and view.finished.done == 24
        assert app.pool._executor not in (None, first)


def test_batches_hold_about_the_same_work_and_keep_progress_gradual():
    from spectui.pool import BATCH_TOKENS, batch_size

    seed = load_preset("seed-576").sweep.configs()  # 500 x 128 tokens each
    size = batch_size(seed, 1)
    assert size == BATCH_TOKENS // (500 * 128) // 8 * 8  # whole cells: 8 K each (31 -> 24)
    assert batch_size(seed, 16) == 5  # 576 / (8 batches x 16 workers), rounded up
    heavy = [c.replace(n_sequences=20_000) for c in seed[:10]]
    assert batch_size(heavy, 1) == 1
    assert batch_size([], 1) == 1


def test_shutdown_stops_a_batch_in_progress():
    pool = SweepPool(1)
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
