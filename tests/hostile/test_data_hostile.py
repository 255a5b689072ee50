"""Hostile cases for the files spectui writes and the processes it starts (issue 23, items
5, 6, 7 and 14): a full disk under ``--summary-out``, two sweeps on one ``--out``, a sweep
killed with SIGKILL, a scheduler address that is no scheduler."""

from __future__ import annotations

import contextlib
import errno
import gc
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from tests.test_cli import _children, _running, spectui

RUN = ("run", "--n-sequences", "5")


# -- item 5: a full disk never tears --summary-out ------------------------------------------


def _fake_disk_full(monkeypatch: pytest.MonkeyPatch, path: Path, how: str) -> None:
    """os.write on ``path`` takes a few bytes for real, then comes short or fails."""
    real_write = os.write

    def ours(fd: int) -> bool:
        try:
            return os.path.samestat(os.fstat(fd), os.stat(path))
        except OSError:
            return False

    def write(fd: int, data: bytes) -> int:
        if not ours(fd):
            return real_write(fd, data)
        taken = real_write(fd, bytes(data)[:7])
        if how == "short":
            return taken
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "write", write)


@pytest.mark.parametrize("how", ["short", "raise"])
def test_a_full_disk_leaves_the_summary_as_it_was_and_names_it(tmp_path, monkeypatch, how):
    summary = tmp_path / "s.csv"
    spectui(*RUN, "--summary-out", str(summary))
    before = summary.read_bytes()
    with monkeypatch.context() as patch:
        _fake_disk_full(patch, summary, how)
        out = spectui(*RUN, "--k", "2", "--summary-out", str(summary), check=False)
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1
    assert out.stderr.startswith(f"spectui run: error: {summary}: No space left on device")
    assert summary.read_bytes() == before
    spectui(*RUN, "--k", "3", "--summary-out", str(summary))  # space again: a whole row
    frame = pd.read_csv(summary)
    assert frame["k"].tolist() == [5, 3] and not frame.isna().any().any()


def test_a_full_disk_leaves_no_new_summary_file(tmp_path, monkeypatch):
    summary = tmp_path / "new.csv"
    _fake_disk_full(monkeypatch, summary, "short")
    out = spectui(*RUN, "--summary-out", str(summary), check=False)
    assert out.returncode == 2 and f"{summary}: No space left on device" in out.stderr
    assert not summary.exists()


def test_a_summary_whose_last_row_was_cut_short_is_refused(tmp_path):
    summary = tmp_path / "s.csv"
    spectui(*RUN, "--summary-out", str(summary))
    torn = summary.read_bytes() + b"5,0.8,prefix"  # a row cut short by a full disk
    summary.write_bytes(torn)
    out = spectui(*RUN, "--summary-out", str(summary), check=False)
    assert out.returncode == 2
    assert out.stderr == (
        f"spectui run: error: --summary-out: {summary} line 3 is incomplete (no line ending: "
        "a write cut short); remove that line, or use a new file\n"
    )
    assert summary.read_bytes() == torn  # not glued on, and refused before the run


@pytest.fixture
def tiny_disk(tmp_path):
    """A 1 MiB tmpfs (needs root and mount(8); skipped otherwise), unmounted after."""
    mount = tmp_path / "disk"
    mount.mkdir()
    if shutil.which("mount") is None or os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root and mount(8)")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True, check=False)


def _fill(path: Path) -> None:
    with path.open("wb", buffering=0) as handle, contextlib.suppress(OSError):
        while handle.write(b"x" * 4096):
            pass


def test_a_real_full_disk_leaves_the_summary_whole(tiny_disk):
    """The issue's case: rows up to a little short of a 4 KiB page, the disk full, one more
    run (its row would cross into a page the disk does not have)."""
    summary = tiny_disk / "s.csv"
    spectui(*RUN, "--summary-out", str(summary))
    header, row = summary.read_bytes().splitlines(keepends=True)
    body = header + row * ((4096 - len(header)) // len(row))
    summary.write_bytes(body)
    assert 4096 - len(row) < len(body) < 4096
    _fill(tiny_disk / "filler")
    out = spectui(*RUN, "--summary-out", str(summary), check=False)
    assert out.returncode == 2
    assert out.stderr.startswith(f"spectui run: error: {summary}: No space left on device")
    assert summary.read_bytes() == body
    (tiny_disk / "filler").unlink()
    spectui(*RUN, "--summary-out", str(summary))
    frame = pd.read_csv(summary)
    assert len(frame) == body.count(b"\n") and not frame.isna().any().any()


@pytest.mark.parametrize(("pages", "file"), [(2, "s.csv.partial"), (3, "s.csv")])
def test_a_sweep_on_a_full_disk_names_the_file_it_could_not_write(tiny_disk, pages, file):
    """With 2 pages free the rows do not fit; with 3 they do, but not the final file."""
    out = tiny_disk / "s.csv"
    (tiny_disk / "filler").write_bytes(b"x" * (1024 * 1024 - pages * 4096))
    full = spectui("sweep", "--preset", "tiny", "--out", str(out), check=False)
    assert full.returncode == 2
    assert full.stderr.splitlines()[-1] == (
        f"spectui sweep: error: {tiny_disk / file}: No space left on device"
    )
    (tiny_disk / "filler").unlink()
    resumed = spectui("sweep", "--preset", "tiny", "--out", str(out), "--resume")
    assert "resuming: " in resumed.stderr and len(pd.read_csv(out)) == 24


# -- item 6: two sweeps on one --out ---------------------------------------------------------


@contextlib.contextmanager
def _running_sweep(out: Path, pid: int):
    """What a running sweep on ``out`` holds: the flock of ``<out>.lock``, its pid inside."""
    import fcntl

    with open(out.with_name(out.name + ".lock"), "w") as lock:
        lock.write(f"{pid}\n")
        lock.flush()
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        yield


@pytest.mark.parametrize("resume", [False, True])
def test_a_second_sweep_on_the_same_out_is_refused_naming_the_first(tmp_path, resume):
    out = tmp_path / "s.csv"
    partial = tmp_path / "s.csv.partial"
    spectui("sweep", "--preset", "tiny", "--out", str(out))
    rows = out.read_text()
    partial.write_text(rows[: rows.index("\n", rows.index("\n") + 1) + 1])  # one row so far
    before = partial.read_bytes()
    with _running_sweep(out, 4242):
        args = ["sweep", "--preset", "tiny", "--out", str(out)] + ["--resume"] * resume
        refused = spectui(*args, check=False)
    assert refused.returncode == 2
    assert refused.stderr == (
        f"spectui sweep: error: --out: {out} is being written by another sweep (pid 4242); "
        "wait for it to end, or use another --out\n"
    )
    assert partial.read_bytes() == before and out.read_text() == rows
    # Once the first has ended, its lock file (left by a kill -9, say) is no obstacle.
    spectui("sweep", "--preset", "tiny", "--out", str(out), "--resume")
    assert out.read_text() == rows
    assert not partial.exists() and not out.with_name("s.csv.lock").exists()


# -- item 7: workers end with their parent ---------------------------------------------------


def _wait_until(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def _start(command: list[str], **kwargs) -> subprocess.Popen:
    return subprocess.Popen(
        command,
        env={**os.environ, "NO_COLOR": "1"},
        start_new_session=True,  # our signals are not its, nor its ours
        **kwargs,
    )


def _killed_parent_leaves_no_child(proc: subprocess.Popen, children: set[int]) -> None:
    """SIGKILL ``proc``; its ``children`` (adopted by PID 1 or a subreaper) must end."""
    assert children
    proc.kill()
    proc.wait(timeout=30)
    try:
        _wait_until(
            lambda: not any(_running(pid) for pid in children),
            10,
            f"workers {sorted(p for p in children if _running(p))} outlived their parent",
        )
    finally:  # a failure leaves no orphan behind
        for pid in [pid for pid in children if _running(pid)]:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads /proc")
def test_sweep_workers_end_when_the_sweep_is_killed(tmp_path):
    """The CLI's pool (forked workers): kill -9 of the sweep ends its two workers."""
    command = [sys.executable, "-m", "spectui", "sweep", "--preset", "seed-576"]
    command += ["--engine", "reference", "--workers", "2", "--out", str(tmp_path / "s.csv")]
    proc = _start(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_until(lambda: len(_children(proc.pid)) >= 2, 60, "the pool's two workers")
        _killed_parent_leaves_no_child(proc, _children(proc.pid))
    finally:
        proc.kill()


APP_POOL = """
import os, sys, threading
from engine.sweep.pool import SweepPool
pool = SweepPool(1)  # the app's: spawned workers, started from a thread that then ends
thread = threading.Thread(target=pool.warm)
thread.start()
thread.join()
while str(thread.native_id) in os.listdir("/proc/self/task"):
    pass
print(pool.executor().submit(os.getpid).result(), flush=True)  # it outlived that thread
sys.stdin.read()
"""


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads /proc")
def test_app_pool_workers_outlive_its_threads_and_end_with_it():
    proc = _start(
        [sys.executable, "-c", APP_POOL], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        worker = int(proc.stdout.readline())
        assert worker in _children(proc.pid)
        _killed_parent_leaves_no_child(proc, {worker})
    finally:
        proc.kill()


# -- item 14: a scheduler address Dask cannot use ----------------------------------------------


@pytest.mark.parametrize("address", ["tcp://127.0.0.1:notaport", "inproc://x", "tls://127.0.0.1:1"])
def test_an_address_dask_cannot_use_is_one_line_and_leaves_no_client_to_close(address):
    """Dask's Client raises in its start and is left half made: collected later, its __del__
    closed it on a loop that was gone (20 s, then "Exception ignored ... TimeoutError")."""
    distributed = pytest.importorskip("distributed")
    gc.disable()  # the half-made client stays where this test can see it
    try:
        out = spectui("sweep", "--preset", "tiny", "--scheduler", address, check=False)
        clients = [o for o in gc.get_objects() if isinstance(o, distributed.Client)]
        left = [client for client in clients if client.status != "closed"]
        for client in left:  # (before the fix) spare the test run its 20 s __del__
            client.status = "closed"
    finally:
        gc.enable()
    assert out.returncode == 2
    assert out.stderr.startswith(f"spectui sweep: error: --scheduler: cannot reach {address}: ")
    assert out.stderr.count("\n") == 1
    assert left == []


def test_validate_on_a_full_disk_leaves_the_report_as_it_was(tiny_disk, cli):
    """`spectui validate --markdown` writes whole or not at all (issue #25's report)."""
    report = tiny_disk / "validation.md"
    assert cli("validate", "--markdown", str(report))[0] == 0
    before = report.read_bytes()
    report.write_bytes(before[: len(before) // 2])  # a shorter report, then no space left
    half = report.read_bytes()
    _fill(tiny_disk / "filler")
    status, _, err = cli("validate", "--markdown", str(report))
    assert status == 2 and err == f"spectui validate: error: {report}: No space left on device\n"
    assert report.read_bytes() == half
    assert sorted(p.name for p in tiny_disk.iterdir()) == ["filler", "validation.md"]
