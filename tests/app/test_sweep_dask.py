"""The Sweep view on Dask (issue 15): $SPECTUI_SCHEDULER or a preset's ``scheduler`` key sends
the app's sweeps to a Dask cluster, with the rows a local sweep gives; a bad value or an
unreachable scheduler is a notification; cancel and quit stop a Dask sweep. And the view's
store of finished rows (:class:`spectui.widgets.sweep_view.SweepStore`).

The Sweep view runs in a small host app (tests/app/hosts_sweep.py: no worker processes, a
local sweep runs in a thread of the host); its ``s`` and cancel actions stand in for the
app's F6 and escape (routed to the view: tests/app/test_sweep.py). The sweeps that need *a*
scheduler run on the module's cluster, whose worker is a thread of the test process
(tests/dask_fixtures.py), at its tcp:// address; quitting starts a ``local:1`` cluster and
shuts it down (its worker a thread too: tests/dask_local.py). The sweeps are few and
small."""

from __future__ import annotations

import asyncio
import threading
import time
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

import engine.sweep.cluster
from engine.presets import load_preset
from engine.sweep.sweep import plan_sweep, run_sweep, sweep_rows
from spectui.widgets.heatmap import Heatmap
from spectui.widgets.sweep_view import SweepStore, SweepView
from tests.app.helpers import notifications, settle
from tests.app.hosts_sweep import finished, laid_out, sweep_host
from tests.app.test_sweep import expected_cells
from tests.dask_fixtures import (
    in_process_cluster,
    local_cluster_in_process,  # noqa: F401
)


async def _until(condition, seconds: float = 60.0) -> None:
    """Wait (yielding to the app) until ``condition()``; fail after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("the condition never held")
        await asyncio.sleep(0.01)


@pytest.fixture(scope="module")
def dask_cluster():
    """One worker, a thread of this process (no process to start), with a dashboard."""
    with in_process_cluster(1) as cluster:
        yield cluster


@pytest.fixture
def gated_rows(monkeypatch):
    """The sweep's thread stops at the first row it writes until the test sets
    ``gate.release`` or the sweep is cancelled (Escape, the app quitting). Dask workers run
    in processes of their own, out of a test's reach; the thread taking their rows is not."""
    from textual.worker import get_current_worker

    import engine.core.files

    gate = SimpleNamespace(reached=threading.Event(), release=threading.Event())
    write = engine.core.files.SweepWriter.write

    def gated_write(self, row):
        write(self, row)
        if not gate.reached.is_set():
            gate.reached.set()
            worker = get_current_worker()
            while not (gate.release.wait(0.01) or worker.is_cancelled):
                pass

    monkeypatch.setattr(engine.core.files.SweepWriter, "write", gated_write)
    yield gate
    gate.release.set()


def _tiny_with(tmp_path, scheduler: str):
    path = tmp_path / "tiny-dask.toml"
    path.write_text(f'scheduler = "{scheduler}"\n' + load_preset("tiny").path.read_text())
    return path


async def _sweep_matches_the_local_run(app, pilot, results, where: str) -> SweepView:
    """Run the tiny sweep (where the count line says it will run) and compare it with the
    local run."""
    view = await laid_out(pilot, app)
    assert str(app.query_one("#sweep-count").render()) == f"0/24 · not started · {where}"
    view.action_start()  # F6 in the app
    await finished(pilot, app)
    assert view.finished is not None and not view.finished.cancelled
    local = run_sweep(load_preset("tiny").sweep.configs())
    pd.testing.assert_frame_equal(view.frame, local)
    assert app.query_one(Heatmap).cells == expected_cells(local, "fixed")
    (saved,) = results.glob("*.csv")
    pd.testing.assert_frame_equal(pd.read_csv(saved), pd.read_csv(_csv(local, results)))
    assert view.runner is None  # closed with the sweep
    return view


def _csv(frame: pd.DataFrame, results) -> str:
    path = results.parent / "local.csv"
    frame.to_csv(path, index=False)
    return str(path)


async def test_a_preset_scheduler_runs_the_sweep_on_dask_with_the_local_rows(
    isolated_dirs, tmp_path, monkeypatch, dask_cluster
):
    _, results = isolated_dirs
    address = dask_cluster.scheduler_address
    app = sweep_host(str(_tiny_with(tmp_path, address)))  # the app's preset, by its path
    async with app.run_test(size=(120, 40)) as pilot:
        view = await _sweep_matches_the_local_run(app, pilot, results, f"on {address}")
        # The dashboard of the cluster, while it ran (bokeh is installed with the extra).
        assert any(m.startswith("Dask dashboard: http") for m in notifications(app))
        assert view.dashboard is None


async def test_spectui_scheduler_wins_over_the_preset(
    isolated_dirs, tmp_path, monkeypatch, dask_cluster
):
    _, results = isolated_dirs
    address = dask_cluster.scheduler_address
    monkeypatch.setenv("SPECTUI_SCHEDULER", address)
    # The preset's own scheduler cannot be reached: the sweep runs on the variable's.
    app = sweep_host(str(_tiny_with(tmp_path, "tcp://127.0.0.1:9")))
    async with app.run_test(size=(120, 40)) as pilot:
        await _sweep_matches_the_local_run(app, pilot, results, f"on {address}")
        assert not [m for m in notifications(app) if "failed" in m]


async def test_a_bad_spectui_scheduler_is_notified_and_nothing_runs(isolated_dirs, monkeypatch):
    _, results = isolated_dirs
    monkeypatch.setenv("SPECTUI_SCHEDULER", "my-cluster:8786")
    app = sweep_host("tiny")
    async with app.run_test(size=(120, 40)) as pilot:
        view = await laid_out(pilot, app)
        count = app.query_one("#sweep-count")
        assert str(count.render()) == "0/24 · not started · SPECTUI_SCHEDULER invalid"
        view.action_start()  # F6 in the app
        await settle(pilot, app)
        (message,) = [m for m in notifications(app) if "SPECTUI_SCHEDULER" in m]
        assert "'my-cluster:8786'" in message and "\n" not in message
        assert "tcp://HOST:PORT" in message and "local:N" in message
        assert str(app.query_one("#sweep-count").render()) == (
            "not started: SPECTUI_SCHEDULER is not a scheduler"
        )
        assert view.sweep_worker is None and view.finished is None
        assert app.is_running and not list(results.glob("*"))


async def test_an_unreachable_scheduler_is_one_notification_and_the_app_goes_on(
    isolated_dirs, monkeypatch
):
    _, results = isolated_dirs
    monkeypatch.setattr(engine.sweep.cluster, "CONNECT_TIMEOUT_S", 0.2)  # nothing listens there
    monkeypatch.setenv("SPECTUI_SCHEDULER", "tcp://127.0.0.1:9")
    app = sweep_host("tiny")  # the next sweep: in the host's thread
    async with app.run_test(size=(120, 40)) as pilot:
        view = await laid_out(pilot, app)
        view.action_start()  # F6 in the app
        # Not settle() at once: waiting on a worker that then fails raises in the test.
        await _until(lambda: view.sweep_worker is not None and view.sweep_worker.is_finished)
        await settle(pilot, app)
        failures = [m for m in notifications(app) if "failed" in m]
        assert len(failures) == 1 and "\n" not in failures[0]
        assert failures[0].startswith(
            "Sweep failed: DaskUnavailable: cannot reach tcp://127.0.0.1:9"
        )
        count = str(app.query_one("#sweep-count").render())
        assert count == "not run: Dask cannot run it (see notification)"
        assert view.finished is None and not view.running
        assert not list(results.glob("*"))  # no file for a sweep that never ran
        # The app goes on: the next sweep, on this machine, runs.
        monkeypatch.delenv("SPECTUI_SCHEDULER")
        view.action_start()
        await finished(pilot, app)
        assert view.finished is not None and view.finished.done == 24


async def test_cancel_during_a_dask_sweep_keeps_the_finished_rows(
    isolated_dirs, monkeypatch, gated_rows, dask_cluster
):
    _, results = isolated_dirs
    address = dask_cluster.scheduler_address
    monkeypatch.setenv("SPECTUI_SCHEDULER", address)
    # One heatmap cell a task (8 K values): 72 tasks, at most 4 in flight.
    monkeypatch.setattr(engine.sweep.cluster, "task_size", lambda plan, exact_only, workers: 8)
    app = sweep_host("seed-576")
    async with app.run_test(size=(120, 40)) as pilot:
        view = await laid_out(pilot, app)
        view.action_start()  # F6 in the app
        await _until(gated_rows.reached.is_set)
        count = app.query_one("#sweep-count")
        await _until(lambda: "worker" in str(count.render()))
        first, dashboard = str(count.render()).splitlines()
        assert first.endswith(f"/576 · on {address} · 1 worker")
        assert dashboard.startswith("dashboard http://")
        runner = view.runner
        assert runner is not None and runner.client is not None
        view.action_cancel()  # escape in the app: the gate opens, the thread sees the cancel
        # Not settle(): a cancelled worker counts as complete while its thread still runs.
        await _until(lambda: view.finished is not None)
        await settle(pilot, app)
        finished = view.finished
        assert finished is not None and finished.cancelled
        assert 8 <= finished.done <= 5 * 8 and finished.total == 576
        # Disconnected (a local:N cluster is shut down: see the quitting test).
        assert runner.client is None and runner.cluster is None
        (saved,) = results.glob("sweep-seed-576-*.csv")
        assert len(pd.read_csv(saved)) == finished.done
        # The rows kept are the local sweep's rows of the same configurations.
        local = run_sweep(load_preset("seed-576").sweep.configs())
        kept = local[local["config_id"].isin(finished.frame["config_id"])]
        pd.testing.assert_frame_equal(finished.frame, kept.reset_index(drop=True))
        assert app.query_one(Heatmap).cells == expected_cells(finished.frame, "fixed")
        assert any("partial results saved" in m for m in notifications(app))


@pytest.mark.usefixtures("local_cluster_in_process")
async def test_quitting_during_a_dask_sweep_stops_it_and_shuts_the_cluster(
    isolated_dirs, monkeypatch, gated_rows
):
    _, results = isolated_dirs
    monkeypatch.setenv("SPECTUI_SCHEDULER", "local:1")
    monkeypatch.setattr(engine.sweep.cluster, "task_size", lambda plan, exact_only, workers: 8)
    app = sweep_host("seed-576")
    async with app.run_test(size=(120, 40)) as pilot:
        view = await laid_out(pilot, app)
        view.action_start()  # F6 in the app
        await _until(gated_rows.reached.is_set)
        runner = view.runner
        assert runner is not None and runner.cluster is not None  # local:1, started
        app.exit()  # cancels the sweep's worker: the gate opens
    # The sweep's thread stops taking rows, closes the cluster and saves what it had.
    await _until(lambda: runner.client is None and runner.cluster is None)
    await _until(lambda: view.sweep_worker is not None and view.sweep_worker.is_finished)
    assert not list(results.glob("sweep-seed-576-*.csv"))  # quitting leaves it partial
    (saved,) = results.glob("sweep-seed-576-*.csv.partial")
    assert 8 <= len(pd.read_csv(saved)) <= 5 * 8


async def test_cancel_while_the_cluster_starts_does_not_wait_for_it(monkeypatch):
    """A cluster slow to start (here: one that never does) does not hold a cancelled sweep:
    the view hands its stop to the start (DaskRunner.start returns False, without waiting:
    tests/engine/test_cluster.py), and the sweep ends at once, nothing saved."""
    started, asked = threading.Event(), threading.Event()

    class SlowRunner:
        workers, dashboard = 1, None

        def __init__(self, scheduler, **kwargs):
            pass

        def start(self, should_stop):
            started.set()
            while not should_stop():
                time.sleep(0.01)
            asked.set()
            return False

        def close(self):
            raise AssertionError("an abandoned start closes its runner itself")

    monkeypatch.setattr(engine.sweep.cluster, "DaskRunner", SlowRunner)
    monkeypatch.setenv("SPECTUI_SCHEDULER", "tcp://example.invalid:8786")
    app = sweep_host("tiny")
    async with app.run_test(size=(120, 40)) as pilot:
        view = await laid_out(pilot, app)
        view.action_start()  # F6 in the app
        await _until(started.is_set)
        count = str(app.query_one("#sweep-count").render())
        assert count == "0/24 · connecting to tcp://example.invalid:8786…"
        view.action_cancel()  # escape in the app
        await _until(lambda: view.finished is not None)
        await pilot.pause()
        assert asked.is_set()
        assert view.finished.cancelled
        assert view.finished.done == 0 and view.finished.path is None
        assert "Sweep cancelled before it started: nothing saved" in notifications(app)


@pytest.mark.parametrize("name", ["tiny", "batch-size", "decaying-draft", "mixed-entropy"])
def test_store_frame_is_the_frame_of_the_rows(name):
    """Rows in any order give the frame run_sweep gathers: the same columns, dtypes and values
    (exact-only rows: NaN Monte Carlo columns; the fast engine's ints and floats)."""
    from engine.sweep.sweep import config_frame

    configs = load_preset(name).sweep.configs()
    plan = plan_sweep(configs, exact_only=True)
    rows = list(sweep_rows(configs, exact_only=True, plan=plan))
    rows.reverse()
    store = SweepStore(config_frame(configs), plan.columns)
    for row in rows[:5]:
        store.add(row)
    expected = pd.DataFrame(rows[:5], columns=list(plan.columns))
    expected = expected.sort_values("config_id").reset_index(drop=True)
    pd.testing.assert_frame_equal(store.frame(), expected)
    for row in rows[5:]:
        store.add(row)
    assert len(store) == len(configs)
    pd.testing.assert_frame_equal(
        store.frame(), run_sweep(configs, exact_only=True), check_exact=True
    )


def test_store_columns_widen_as_pandas_would():
    planned = pd.DataFrame({"k": [1, 2, 3, 4]})
    columns = ["config_id", "k", "cycles", "speedup", "sampler", "mixed"]
    rows = [
        {"config_id": 2, "cycles": 5, "speedup": 1, "sampler": "a", "mixed": 1.5},
        {"config_id": 0, "cycles": 6.5, "speedup": np.float64(2.0), "sampler": "b", "mixed": "x"},
        {"config_id": 3, "cycles": np.int64(7), "speedup": 3.0, "sampler": "a", "mixed": 2},
    ]
    store = SweepStore(planned, columns)
    for row in rows:
        store.add(row)
    expected = pd.DataFrame(
        [{**row, "k": row["config_id"] + 1} for row in rows], columns=columns
    ).sort_values("config_id")
    pd.testing.assert_frame_equal(store.frame(), expected.reset_index(drop=True))
