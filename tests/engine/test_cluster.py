"""Sweeps on Dask (engine.cluster): the rows a LocalCluster gives are the local rows, a killed
worker's batches run again, a stop cancels, a bad address is one line."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time

import pandas as pd
import pytest

from engine.cluster import DaskRunner, DaskUnavailable, parse_scheduler, task_size
from engine.config import ConfigError, SpecConfig
from engine.grid import SweepSpec
from engine.presets import load_preset
from engine.sweep import plan_sweep, run_sweep


@pytest.fixture(scope="module")
def cluster():
    with DaskRunner("local:2") as runner:
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


def test_a_killed_workers_batches_run_again(cluster):
    """SIGKILL one worker process while batches are in flight: Dask reschedules its work
    (its nanny starts a new process) and every row comes back, the same as locally."""
    spec = SweepSpec(
        SpecConfig(n_sequences=60, tokens_per_seq=64),
        ({"k": [1, 2, 3, 4, 5, 6], "acceptance_rate": [0.6, 0.9]},),
    )
    configs = spec.configs()
    local = run_sweep(configs, engine="reference")
    before = cluster.client.run(os.getpid)
    killed: list[int] = []

    def on_result(row, done, total):
        if not killed:  # after the first row: the other batches are in flight
            victim = sorted(before.values())[0]
            os.kill(victim, signal.SIGKILL)
            killed.append(victim)

    frame = run_sweep(
        configs, engine="reference", executor=cluster, batch_size=1, on_result=on_result
    )
    pd.testing.assert_frame_equal(frame, local)
    cluster.client.wait_for_workers(2, timeout=60)
    after = set(cluster.client.run(os.getpid).values())
    assert killed and killed[0] not in after  # the process really died and was replaced


def test_a_stop_cancels_the_tasks_in_flight(cluster):
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
    def ours() -> list[str]:
        tasks = cluster.client.run_on_scheduler(lambda dask_scheduler: list(dask_scheduler.tasks))
        return [key for key in tasks if str(key).startswith("spectui-batch-")]

    deadline = time.monotonic() + 30
    while ours() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not ours()


def test_an_unreachable_scheduler_is_one_line():
    runner = DaskRunner("tcp://127.0.0.1:9", connect_timeout=1)
    with pytest.raises(DaskUnavailable, match=r"^cannot reach tcp://127\.0\.0\.1:9: ") as info:
        runner.start()
    assert "\n" not in str(info.value)
    runner.close()


def test_a_local_cluster_starts_under_a_stderr_without_a_descriptor(monkeypatch):
    """The app's stderr (Textual's) has no file descriptor; Dask's nanny hands stderr to the
    worker processes it spawns. The runner lends it one while the cluster starts."""

    class NoDescriptor:
        def write(self, text: str) -> int:
            return len(text)

        def flush(self) -> None:
            pass

        def fileno(self) -> int:
            return -1

    monkeypatch.setattr("sys.stderr", NoDescriptor())
    with DaskRunner("local:1") as runner:
        assert runner.workers == 1


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
    runner = DaskRunner(silent_server, connect_timeout=0.5)
    with pytest.raises(DaskUnavailable, match=r"no Dask scheduler answered in 1 s"):
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
