"""spectui sweep --scheduler and --resume: the same bytes locally and on Dask, with any
number of workers, in one go or resumed."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

import engine.core.files
from tests.dask_fixtures import (
    in_process_cluster,
    local_cluster_in_process,  # noqa: F401
)

# A small grid with newer fields (roofline costs by batch size) and a K policy beside it.
PRESET = """description = "dask test grid"
[config]
n_sequences = 60
tokens_per_seq = 64
"cost.model" = "roofline"
[[grid]]
"workload.batch_size" = [1, 32]
acceptance_rate = [0.6, 0.9]
k = [1, 2, 3, 4]
[[grid]]
"policy.name" = ["hf_heuristic"]
acceptance_rate = [0.7]
"""


@pytest.fixture(scope="module")
def dask_cluster():
    """Two workers in this process (tests/dask_fixtures.py), at a tcp:// address: the tests
    that need a scheduler share it; ``local:N`` (worker processes) is started where the
    test is about it."""
    with in_process_cluster(2) as cluster:
        yield cluster


@pytest.fixture
def preset(tmp_path: Path) -> Path:
    path = tmp_path / "grid.toml"
    path.write_text(PRESET)
    return path


def _sweep(cli, preset: Path, out: Path, *flags: str) -> tuple[int, str, str]:
    return cli("sweep", "--preset", str(preset), "--out", str(out), *flags)


@pytest.mark.usefixtures("local_cluster_in_process")
def test_the_same_bytes_on_one_or_two_processes_and_one_or_two_dask_workers(
    cli, preset, tmp_path, dask_cluster
):
    """One Dask worker: a cluster the CLI starts (local:1, its worker a thread here:
    tests/dask_local.py); two: a running scheduler's (the module's cluster, by its
    address). One or two processes: --workers."""
    address = dask_cluster.scheduler_address
    files = {}
    for name, flags in {
        "workers-1": ("--workers", "1"),
        "workers-2": ("--workers", "2"),
        "dask-1": ("--scheduler", "local:1"),
        "dask-2": ("--scheduler", address),
    }.items():
        out = tmp_path / f"{name}.csv"
        status, _, err = _sweep(cli, preset, out, *flags)
        assert status == 0, err
        assert "17 configurations in" in err
        files[name] = out.read_bytes()
        if name == "dask-1":
            assert "local:1: 1 Dask worker; dashboard http://" in err
        if name == "dask-2":
            assert f"{address}: 2 Dask workers; dashboard http://" in err
    assert len(set(files.values())) == 1
    lines = files["workers-1"].decode().splitlines()
    assert len(lines) == 18 and "workload.batch_size" in lines[0]


def test_resume_after_a_crash_runs_only_the_rest_and_gives_the_same_file(
    cli, preset, tmp_path, dask_cluster
):
    full = tmp_path / "full.csv"
    assert _sweep(cli, preset, full)[0] == 0
    header, *rows = full.read_text().splitlines(keepends=True)
    # A crash: 6 rows written in the order they finished, the 7th cut short.
    out = tmp_path / "r.csv"
    partial = tmp_path / "r.csv.partial"
    partial.write_text(header + "".join(rows[i] for i in (5, 0, 9, 3, 16, 2)) + rows[7][:20])
    status, _, err = _sweep(cli, preset, out)
    assert status == 2
    assert err.strip().endswith("add --resume to go on with it, or remove it to start again")
    address = dask_cluster.scheduler_address
    status, _, err = _sweep(cli, preset, out, "--resume", "--scheduler", address)
    assert status == 0, err
    assert "resuming: 6 of 17 configurations in" in err and "running the other 11" in err
    assert out.read_bytes() == full.read_bytes()
    assert not partial.exists()


def test_resume_after_ctrl_c_gives_the_uninterrupted_file(cli, preset, tmp_path, monkeypatch):
    full = tmp_path / "full.csv"
    assert _sweep(cli, preset, full)[0] == 0
    out = tmp_path / "r.csv"
    write = engine.core.files.SweepWriter.write
    written: list[int] = []

    def write_then_interrupt(self, row):  # Ctrl-C after the fifth row
        write(self, row)
        written.append(row["config_id"])
        if len(written) == 5:
            os.kill(os.getpid(), signal.SIGINT)

    monkeypatch.setattr(engine.core.files.SweepWriter, "write", write_then_interrupt)
    status, _, err = _sweep(cli, preset, out)
    assert status == 130
    kept = len(out.read_text().splitlines()) - 1
    assert 5 <= kept < 17
    assert f"stopped: {kept} of 17 configurations finished" in err
    assert f"--resume runs the other {17 - kept}" in err
    monkeypatch.setattr(engine.core.files.SweepWriter, "write", write)
    status, _, err = _sweep(cli, preset, out, "--resume", "--workers", "2")
    assert status == 0, err
    assert f"resuming: {kept} of 17 configurations in {out}" in err
    assert out.read_bytes() == full.read_bytes()


def test_resume_refuses_another_sweeps_rows(cli, preset, tmp_path):
    out = tmp_path / "r.csv"
    assert _sweep(cli, preset, out)[0] == 0
    preset.write_text(PRESET.replace("[0.6, 0.9]", "[0.6, 0.95]"))
    status, _, err = _sweep(cli, preset, out, "--resume")
    assert status == 2
    assert "--resume:" in err and "another sweep's" in err and "acceptance_rate 0.9" in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "flags, message",
    [
        (("--scheduler", "local:0"), "--scheduler: 'local:0': local:N needs a worker count N"),
        (("--scheduler", "10.0.0.5"), "--scheduler: '10.0.0.5' is not a scheduler address"),
        (("--scheduler", "local:2", "--workers", "2"), "--workers and --scheduler: give one"),
    ],
)
def test_bad_scheduler_flags_are_one_line(cli, preset, tmp_path, flags, message):
    status, out, err = _sweep(cli, preset, tmp_path / "x.csv", *flags)
    assert status == 2 and out == ""
    assert message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "x.csv.partial").exists()


def test_an_unreachable_scheduler_is_one_line(cli, preset, tmp_path, monkeypatch):
    monkeypatch.setattr("engine.sweep.cluster.CONNECT_TIMEOUT_S", 0.2)  # nothing listens there
    status, _, err = _sweep(cli, preset, tmp_path / "x.csv", "--scheduler", "tcp://127.0.0.1:9")
    assert status == 2
    assert "--scheduler: cannot reach tcp://127.0.0.1:9" in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "x.csv.partial").exists()  # nothing to resume, nothing left


def test_a_lost_scheduler_keeps_the_rows_for_resume(cli, preset, tmp_path, monkeypatch):
    """The scheduler goes away mid-sweep: one line, exit status 1, the finished rows stay in
    the partial file, and --resume (here without Dask) completes the same file."""
    full = tmp_path / "full.csv"
    assert _sweep(cli, preset, full)[0] == 0
    # Also the reconnect wait, once the scheduler has gone; the first connection may take
    # twice this (at 2.0, 4 s were once not enough for it on a loaded machine).
    monkeypatch.setattr("engine.sweep.cluster.CONNECT_TIMEOUT_S", 5.0)
    write = engine.core.files.SweepWriter.write
    written: list[int] = []
    out = tmp_path / "r.csv"
    # A cluster of this test's own (its scheduler goes), its worker in this process.
    with in_process_cluster(1, dashboard=False) as cluster:

        def write_then_lose_the_scheduler(self, row):
            write(self, row)
            written.append(row["config_id"])
            if len(written) == 1:
                cluster.close()

        monkeypatch.setattr(engine.core.files.SweepWriter, "write", write_then_lose_the_scheduler)
        status, _, err = _sweep(cli, preset, out, "--scheduler", cluster.scheduler_address)
    assert status == 1, err
    last = err.strip().splitlines()[-1]
    assert last.startswith("the Dask cluster failed (")
    assert last.endswith(
        f"{len(written)} of 17 configurations kept in {out}.partial: --resume goes on"
    )
    assert 1 <= len(written) < 17
    monkeypatch.setattr(engine.core.files.SweepWriter, "write", write)
    status, _, err = _sweep(cli, preset, out, "--resume")
    assert status == 0, err
    assert f"resuming: {len(written)} of 17 configurations" in err
    assert out.read_bytes() == full.read_bytes()


def test_resume_refuses_rows_of_another_engine_or_exact_only(cli, preset, tmp_path):
    out = tmp_path / "r.csv"
    assert _sweep(cli, preset, out, "--exact-only")[0] == 0
    status, _, err = _sweep(cli, preset, out, "--resume")
    assert status == 2 and len(err.strip().splitlines()) == 1
    assert "another sweep's (config 0: sampler none where this sweep has prefix/2)" in err
    status, _, err = _sweep(cli, preset, out, "--resume", "--exact-only")
    assert status == 0 and "resuming: 17 of 17 configurations" in err


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda text: text.replace("\n", "\r\n"), "has Windows line endings (CRLF)"),
        (lambda text: text + "\n", "line 19 is not a row of this sweep"),
        (lambda text: text + "3,\udcff\n", "line 19 is not a row of this sweep"),  # not UTF-8
    ],
)
def test_resume_refuses_a_damaged_file_in_one_line(cli, preset, tmp_path, damage, message):
    out = tmp_path / "r.csv"
    assert _sweep(cli, preset, out)[0] == 0
    out.write_bytes(damage(out.read_text()).encode("utf-8", "surrogateescape"))
    status, _, err = _sweep(cli, preset, out, "--resume")
    assert status == 2 and message in err and len(err.strip().splitlines()) == 1


BIG_TREE = """description = "a tree too large, refused where it is built"
[config]
n_sequences = 20
tokens_per_seq = 32
[[grid]]
"shape.name" = ["tree"]
"shape.tree" = ["kary:2,2", "kary:8,6"]
"""


SHARED = "the module's cluster"  # --scheduler: its address, once it runs


@pytest.mark.parametrize("flags", [("--workers", "2"), ("--scheduler", SHARED)])
def test_a_configuration_refused_on_a_worker_is_one_line(cli, tmp_path, flags, request):
    """The refusal happens where the tree is built: in a worker process or on a Dask worker.
    It comes back whole (one line, exit 2), it is not retried, and nothing else is printed."""
    if SHARED in flags:
        flags = ("--scheduler", request.getfixturevalue("dask_cluster").scheduler_address)
    preset = tmp_path / "big.toml"
    preset.write_text(BIG_TREE)
    status, out, err = cli("sweep", "--preset", str(preset), "--out", "x.csv", *flags)
    assert status == 2 and out == ""
    lines = [line for line in err.splitlines() if "error" in line or "Traceback" in line]
    assert lines == [lines[-1]] and "shape.tree" in lines[-1] and "4096 nodes" in lines[-1]
    assert "Traceback" not in err and "Compute Failed" not in err


@pytest.mark.parametrize(
    "damage",
    [
        lambda text: text.replace("\n3,", "\n03,"),  # a config_id spectui would not write
        lambda text: text.replace("\n3,", "\n 3,"),
        lambda text: text.replace("\n3,", "\r\n3,"),  # one row with a CRLF ending
    ],
)
def test_resume_keeps_only_rows_as_spectui_writes_them(cli, preset, tmp_path, damage):
    out = tmp_path / "r.csv"
    assert _sweep(cli, preset, out)[0] == 0
    out.write_text(damage(out.read_text()))
    status, _, err = _sweep(cli, preset, out, "--resume")
    assert status == 2 and "is not a row of this sweep" in err
