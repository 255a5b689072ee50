"""Sweeps on Dask (engine.sweep.cluster): the rows a LocalCluster gives are the local rows, a killed
worker's batches run again, a stop cancels, a bad address is one line."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time

import pandas as pd
import pytest

from engine.core.config import ConfigError, SpecConfig
from engine.presets import load_preset
from engine.sweep.cluster import DaskRunner, DaskUnavailable, parse_scheduler, task_size
from engine.sweep.grid import SweepSpec
from engine.sweep.sweep import plan_sweep, run_sweep
from tests.dask_fixtures import batch_keys, in_process_cluster


@pytest.fixture(scope="module")
def dask_cluster():
    """Two workers in this process (tests/dask_fixtures.py): for the tests that need a
    scheduler, not worker processes (a killed worker and a local:N start have their own)."""
    with in_process_cluster(2, dashboard=False) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def cluster(dask_cluster):
    with DaskRunner(dask_cluster.scheduler_address) as runner:
        assert runner.workers == 2
        yield runner


def _mixed_configs() -> list[SpecConfig]:
    """Shared draws (tiny), a K policy (stepwise engine), markov acceptance and a tree."""
    configs = load_preset("tiny").sweep.configs()
    base = SpecConfig(n_sequences=40, tokens_per_seq=64)
    configs.append(base.replace(**{"policy.name": "hf_heuristic"}))
    configs.append(base.replace(draft_model="markov"))
    configs.append(base.replace(**{"shape.name": "tree", "shape.tree": "kary:2,3"}))
    return configs


@pytest.mark.parametrize(
    "text, parsed",
    [("local:2", ("local", 2)), (" tcp://10.0.0.5:8786 ", ("address", "tcp://10.0.0.5:8786"))],
)
def test_scheduler_forms(text, parsed):
    assert parse_scheduler(text) == parsed


@pytest.mark.parametrize("text", ["local:0", "local:65", "local:x", "10.0.0.5:8786", "", "tcp://"])
def test_bad_schedulers_name_the_field_and_the_forms(text):
    with pytest.raises(ConfigError, match=r"^--scheduler: .*(local:N|\[1, 64\])"):
        parse_scheduler(text)


def test_a_task_is_about_a_second_of_work_and_whole_cells():
    spec = load_preset("seed-576").sweep
    heavy = [c.replace(n_sequences=20_000) for c in spec.configs()]
    plan = plan_sweep(heavy)
    size = task_size(plan, False, workers=2)
    assert size % plan.k_count == 0  # whole optimal-K cells (8 values of K)
    # 20,000 x 128 tokens a configuration at the assumed rate: about 19 a second.
    assert size == 16
    # Few configurations: at least four tasks a worker, whatever the work.
    assert task_size(plan_sweep(spec.configs()[:16]), False, workers=2) == 2
    # The reference engine's per-token loop: one configuration (2.56 M tokens) is 6 s.
    assert task_size(plan, False, workers=2, engine="reference") == 1
    exact = task_size(plan_sweep(spec.configs()), True, workers=1)
    assert exact == 144  # 576 / 4 tasks: the progress bound, a multiple of 8


def test_a_local_cluster_gives_the_local_rows(cluster):
    configs = _mixed_configs()
    local = run_sweep(configs)
    for batch in (1, 5):
        on_dask = run_sweep(configs, executor=cluster, batch_size=batch)
        pd.testing.assert_frame_equal(on_dask, local)
    exact = run_sweep(configs, exact_only=True, executor=cluster, batch_size=4)
    pd.testing.assert_frame_equal(exact, run_sweep(configs, exact_only=True))


class _NoDescriptor:
    """The app's stderr (Textual's): no file descriptor."""

    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        pass

    def fileno(self) -> int:
        return -1


def test_a_killed_workers_batches_run_again(monkeypatch):
    """SIGKILL the worker process while it runs a batch: Dask runs the batch again on the
    process its nanny starts, and every row comes back, the same as locally.

    Its local cluster starts under a stderr without a file descriptor, as the app's is
    (Textual's): Dask's nanny hands stderr to the worker processes it spawns; the runner
    lends it one while the cluster starts (one cluster of one process for both)."""
    monkeypatch.setattr("sys.stderr", _NoDescriptor())
    # Batches of about 0.15 s each (the reference engine's per-token loop): after the first
    # row, the worker is still busy with the next ones when it is killed.
    spec = SweepSpec(SpecConfig(n_sequences=600, tokens_per_seq=64), ({"k": [1, 2, 3, 4]},))
    configs = spec.configs()
    local = run_sweep(configs, engine="reference")
    with DaskRunner("local:1") as runner:
        assert runner.workers == 1
        (victim,) = runner.client.run(os.getpid).values()
        killed: list[int] = []

        def on_result(row, done, total):
            if not killed:  # after the first row: the other batches are in flight
                os.kill(victim, signal.SIGKILL)
                killed.append(victim)

        frame = run_sweep(
            configs, engine="reference", executor=runner, batch_size=1, on_result=on_result
        )
        pd.testing.assert_frame_equal(frame, local)
        runner.client.wait_for_workers(1, timeout=60)
        after = set(runner.client.run(os.getpid).values())
        assert killed == [victim] and victim not in after  # it died and was replaced


def test_a_stop_cancels_the_tasks_in_flight(dask_cluster, cluster):
    before = batch_keys(dask_cluster)  # another test's, not yet released
    configs = [c.replace(n_sequences=200) for c in load_preset("seed-576").sweep.configs()]
    seen: list[int] = []
    frame = run_sweep(
        configs,
        engine="reference",
        executor=cluster,
        batch_size=1,
        on_result=lambda row, done, total: seen.append(done),
        should_stop=lambda: len(seen) >= 2,
    )
    assert 2 <= len(frame) < len(configs)
    assert frame["speedup"].notna().all()

    # Nothing of this sweep is left on the cluster (the scheduler cancels as told, soon).
    def ours() -> set[str]:
        return batch_keys(dask_cluster) - before

    deadline = time.monotonic() + 30
    while ours() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not ours()


def test_an_unreachable_scheduler_is_one_line():
    runner = DaskRunner("tcp://127.0.0.1:9", connect_timeout=0.2)
    with pytest.raises(DaskUnavailable, match=r"^cannot reach tcp://127\.0\.0\.1:9: ") as info:
        runner.start()
    assert "\n" not in str(info.value)
    runner.close()


@pytest.fixture
def silent_server():
    """A TCP port that accepts connections and never says a word (not a Dask scheduler)."""
    import socket

    server = socket.create_server(("127.0.0.1", 0))
    server.listen()
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            with contextlib.suppress(OSError):
                accepted.append(server.accept()[0])

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"tcp://127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    thread.join()
    for connection in accepted:
        connection.close()
    server.close()


def test_an_address_that_never_answers_as_dask_is_refused_after_a_deadline(silent_server):
    runner = DaskRunner(silent_server, connect_timeout=0.25)
    with pytest.raises(DaskUnavailable, match=r"no Dask scheduler answered in 0\.5 s"):
        runner.start()


def test_a_stop_while_connecting_returns_at_once(silent_server):
    """The connect never finishes here (a silent port holds Dask's handshake); a stop
    returns False without waiting for it (else the deadline would raise). The abandoned
    connect closes its runner if it ever returns."""
    runner = DaskRunner(silent_server, connect_timeout=3)
    asked: list[int] = []

    def should_stop() -> bool:
        asked.append(1)
        return len(asked) > 2

    assert runner.start(should_stop) is False
    assert len(asked) == 3
    assert runner.client is None
