"""Sweeps started in the app run in worker processes, or in a thread when they cannot."""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures.process import BrokenProcessPool
from multiprocessing.connection import wait

import pandas as pd
import pytest

import engine.sweep.pool
from engine.presets import load_preset
from engine.sweep.sweep import run_sweep
from spectui import workers as pool_module
from spectui.app import create_app
from spectui.errors import UsageError
from spectui.widgets.sweep_view import SweepView
from spectui.workers import worker_count
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
    monkeypatch.setattr(engine.sweep.pool, "usable_cores", lambda: 4)
    assert worker_count() == 3
    monkeypatch.setattr(engine.sweep.pool, "usable_cores", lambda: 1)
    assert worker_count() == 1
    monkeypatch.setattr(engine.sweep.pool, "usable_cores", lambda: 96)
    assert worker_count() == pool_module.DEFAULT_MAX_WORKERS
    monkeypatch.setenv("SPECTUI_SWEEP_WORKERS", "0")
    assert worker_count() == 0


@pytest.mark.parametrize("text", ["abc", "-1", "65", "1.5", "٢"])  # ٢: an Arabic-Indic 2
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


async def _tiny_sweep(app, pilot) -> SweepView:
    await settle(pilot, app)
    await pilot.press("f6")
    await settle(pilot, app, rounds=6)
    return app.query_one(SweepView)


async def test_app_sweep_in_a_thread_matches_the_engine(monkeypatch):
    """SPECTUI_SWEEP_WORKERS=0: the sweep runs in a thread of the app (in processes: the
    test of a broken pool below)."""
    monkeypatch.setenv("SPECTUI_SWEEP_WORKERS", "0")
    app = create_app("tiny")
    async with app.run_test(size=(120, 40)) as pilot:
        view = await _tiny_sweep(app, pilot)
        assert view.finished is not None and not view.finished.cancelled
        pd.testing.assert_frame_equal(view.frame, run_sweep(load_preset("tiny").sweep.configs()))
        # No processes (inside Textual, whose stderr has no fd), from the engine's pool.
        assert isinstance(app.pool, engine.sweep.pool.SweepPool)
        assert app.pool.problem is None
        assert app.pool._executor is None
    assert app.pool._executor is None  # shut down with the app


async def test_no_processes_means_a_thread_and_a_warning(monkeypatch):
    def refuse(*args, **kwargs):
        raise OSError("no semaphores here")

    monkeypatch.setenv("SPECTUI_SWEEP_WORKERS", "1")
    monkeypatch.setattr(engine.sweep.pool, "ProcessPoolExecutor", refuse)
    app = create_app("tiny")
    async with app.run_test(size=(120, 40)) as pilot:
        view = await _tiny_sweep(app, pilot)
        assert view.finished is not None and view.finished.done == 24
        assert "no semaphores here" in (app.pool.problem or "")
        assert any("no worker processes" in m for m in notifications(app))


async def test_app_sweep_in_processes_matches_the_engine_and_a_broken_pool_is_replaced(
    monkeypatch,
):
    """SPECTUI_SWEEP_WORKERS=1: the sweep runs in a worker process, as the engine computes
    it. A pool broken in a sweep is discarded, its processes stopped, and the next sweep
    gets a new one."""
    import engine.sweep.sweep

    def broken(*args, **kwargs):
        raise BrokenProcessPool("a worker died")

    working = engine.sweep.sweep.sweep_rows

    monkeypatch.setenv("SPECTUI_SWEEP_WORKERS", "1")
    app = create_app("tiny")
    async with app.run_test(size=(120, 40)) as pilot:
        view = await _tiny_sweep(app, pilot)
        assert view.finished is not None and not view.finished.cancelled
        pd.testing.assert_frame_equal(view.frame, run_sweep(load_preset("tiny").sweep.configs()))
        # Processes were used (inside Textual, whose stderr has no fd), from the engine's
        # pool, the one the CLI uses too.
        assert isinstance(app.pool, engine.sweep.pool.SweepPool)
        assert app.pool.problem is None
        assert app.pool._executor is not None
        # A worker dies in the next sweep.
        first = app.pool.executor()
        assert first is not None
        first_processes = list(first._processes.values())
        monkeypatch.setattr(engine.sweep.sweep, "sweep_rows", broken)
        view = await _tiny_sweep(app, pilot)
        assert view.finished is None
        assert any("a worker died" in m for m in notifications(app))
        assert app.pool._executor is not first  # discarded (a warm-up may start another)
        for process in first_processes:  # stopped, not left running
            assert _exits(process)
        monkeypatch.setattr(engine.sweep.sweep, "sweep_rows", working)
        view = await _tiny_sweep(app, pilot)
        assert view.finished is not None and view.finished.done == 24
        assert app.pool._executor not in (None, first)
    assert app.pool._executor is None  # shut down with the app
