"""``spectui load`` against hostile input (issue #41): numbers in ASCII digits only, rates
and work bounded before a run starts, files checked before they are read, and ``--csv``
as safe as ``sweep --out`` (a lock, levels streamed as they finish, nothing left half
written by SIGTERM, workers gone with their parent). Each test asserts what the user sees."""

from __future__ import annotations

import contextlib
import csv
import json
import math
import os
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

FAST = ("--cost", "roofline", "--requests", "60", "--replications", "2", "--k", "4")
REPO = Path(__file__).resolve().parent.parent
TRACE = str(REPO / "tests/fixtures/traces/azure_conv_2023_head.csv")


def _one_line(status: int, out: str, err: str) -> str:
    assert (status, out) == (2, ""), err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


# ------------------------------------------------------------ 1. ASCII numbers everywhere

# Every numeric flag of load, and what it is (a list of numbers, a whole number, a number).
LISTS = ("--rate", "--concurrency", "--speeds")
WHOLE = (
    "--requests", "--max-num-seqs", "--max-num-batched-tokens", "--verify-budget",
    "--replications", "--workers",
)  # fmt: skip
NUMBERS = (
    "--cv", "--warmup", "--gpu-memory-utilization", "--slo-ttft-ms", "--slo-tpot-ms",
    "--usd-per-gpu-hour",
)  # fmt: skip


@pytest.mark.parametrize("text", ["١٢", "５", "1_0"])
@pytest.mark.parametrize("flag", LISTS + WHOLE + NUMBERS)
def test_a_number_not_in_ascii_digits_is_one_line_naming_the_flag(cli, flag, text):
    level = () if flag in ("--rate", "--concurrency") else ("--rate", "1")
    line = _one_line(*cli("load", *FAST, *level, flag, text))
    if flag in LISTS:
        what = "whole numbers" if flag == "--concurrency" else "numbers"
        expected = (
            f"argument {flag}: expected {what} in ASCII digits, comma-separated; got {text!r}"
        )
    else:
        what = "an integer" if flag in WHOLE else "a number"
        expected = f"argument {flag}: {text!r} is not {what} in ASCII digits"
    assert line == f"spectui load: error: {expected}"


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (("--slo-tpot-ms", "-3"), "--slo-tpot-ms: must be a number in (0, 1e+07] ms"),
        (("--usd-per-gpu-hour", "inf"), "--usd-per-gpu-hour: must be a number in [0, 10000]"),
        (("--cv", "nan"), "--cv: must be a number in (0, 10]"),
        (("--max-num-seqs", "0"), "--max-num-seqs: must be a whole number in [1, 4096]"),
        (("--requests", "0"), "--requests: must be a whole number in [1, 1,000,000]"),
        (("--verify-budget", "-1"), "--verify-budget: must be a whole number in [0, 1,000,000]"),
        (("--replications", "101"), "--replications: must be a whole number in [1, 100]"),
        (("--speeds", "0"), "--speeds: must be numbers in (0, 1000]"),
    ],
)
def test_a_value_out_of_range_names_the_flag_and_the_range(cli, flags, message):
    level = ("--trace", TRACE) if flags[0] == "--speeds" else ("--rate", "1")
    assert _one_line(*cli("load", *FAST, *level, *flags)) == f"spectui load: error: {message}"


def test_a_concurrency_out_of_range_names_the_flag_and_the_range(cli):
    assert _one_line(*cli("load", *FAST, "--concurrency", "8,5000")) == (
        "spectui load: error: --concurrency: must be whole numbers in [1, 4096]"
    )


@pytest.mark.parametrize("row", ["٠,١٠,١٠", "0,５,10", "0,10,1_0"])
def test_a_trace_row_not_in_ascii_digits_is_one_line_naming_the_line(cli, tmp_path, row):
    trace = tmp_path / "trace.csv"
    trace.write_text(f"arrival_s,prompt_tokens,output_tokens\n0,10,10\n{row}\n", encoding="utf-8")
    line = _one_line(*cli("load", *FAST, "--trace", str(trace)))
    assert line == (
        f"spectui load: error: --trace: {trace}: line 3 must be three numbers in ASCII "
        "digits: seconds, tokens, tokens"
    )


# ----------------------------------------------------------- 2. rates and work bounded


@pytest.mark.parametrize("rate", ["5e-324", "1e-300", "5.9e-8"])
def test_a_rate_too_low_for_its_requests_is_one_line_with_the_minimum(cli, monkeypatch, rate):
    import engine.serve.load as load

    monkeypatch.setattr(load, "simulate_load", _never)
    # 60 requests must arrive within 1e9 s: a rate of at least 60 / 1e9 = 6e-08.
    assert _one_line(*cli("load", *FAST, "--rate", f"2,{rate}")) == (
        "spectui load: error: --rate: must be numbers in [6e-08, 10000] requests/s with 60 "
        "requests: they must arrive within 1e9 s of simulated time (requests / rate; a "
        "float64 clock then still resolves a step)"
    )


def test_the_lowest_rate_accepted_gives_finite_metrics(cli):
    status, out, err = cli("load", *FAST, "--rate", "6e-8", "--policies", "off", "--json")
    assert status == 0, err
    (cell,) = json.loads(out)["cells"]
    for figure in ("throughput_tok_s", "ttft_p99_ms", "tpot_p99_ms", "usd_per_m_tokens"):
        assert math.isfinite(float(cell[figure])), (figure, cell[figure])
    # Each request alone on the server: the 54 measured (60 less a warm-up of 10 %) give 128
    # tokens each over about 53 gaps of 1 / 6e-8 s (two replications: within 30 %).
    throughput = 54 * 128 * 6e-8 / 53
    assert float(cell["throughput_tok_s"]) == pytest.approx(throughput, rel=0.3)
    # One GPU at $2 an hour: 2 / 3600 / throughput * 1e6 dollars a million tokens.
    assert float(cell["usd_per_m_tokens"]) == pytest.approx(2 / 3600 / throughput * 1e6, rel=0.4)


def _never(*args, **kwargs):  # type: ignore[no-untyped-def]
    raise AssertionError("a refused study ran")


def test_a_study_beyond_the_work_bound_is_refused_before_it_starts(cli, monkeypatch):
    import engine.serve.load as load

    monkeypatch.setattr(load, "simulate_load", _never)
    status, out, err = cli(
        "load", "--cost", "roofline", "--rate", "0.0001", "--requests", "100000",
        "--tokens-per-seq", "1000000",
    )  # fmt: skip
    # 100,000 requests x (1 prompt chunk + 1,000,000 output tokens) x 1 level x 2 policies
    # (off, fixed) x 3 replications = 6.00006e11 request-steps.
    assert _one_line(status, out, err) == (
        "spectui load: error: --requests: this study is about 6e11 simulated request-steps "
        "(requests x (prompt chunks + output tokens) x levels x policies x replications), "
        "beyond the bound of 1e10 (about an hour of CPU): give fewer requests, shorter "
        "outputs, or fewer levels, policies or replications"
    )


def test_a_long_study_shows_its_progress_on_a_terminal_only(cli, monkeypatch):
    import spectui.cli.progress as progress

    monkeypatch.setattr(progress, "RUN_PROGRESS_AFTER_S", 0.0)  # no need to wait a second
    status, _, err = cli("load", *FAST, "--rate", "4", "--policies", "off")
    assert status == 0 and "load: requests" not in err  # not a terminal: no bar
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    status, _, err = cli("load", *FAST, "--rate", "4", "--policies", "off")
    assert status == 0 and "load: requests" in err and "120/120" in err  # 2 x 60 requests


# ------------------------------------------------------ 3. files checked before memory


OTHER_COLUMNS = "has other columns than this run; use a new --csv, or drop --resume to start again"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\x89PNG\r\n\x1a\n\x00\xff\xfe\xfd", "is not a text file (UTF-8 expected)"),
        (b"level,policy\n\x00\x01,\x02\n", OTHER_COLUMNS),
        (b"x,y\n1,2\n", "is not a spectui load CSV (no level, policy)"),
    ],
)
def test_a_file_that_is_not_a_load_csv_given_to_resume_is_one_line(cli, tmp_path, data, message):
    path = tmp_path / "load.csv"
    path.write_bytes(data)
    line = _one_line(*cli("load", *FAST, "--rate", "2", "--csv", str(path), "--resume"))
    assert line == f"spectui load: error: --resume: {path} {message}"
    assert path.read_bytes() == data  # left as it was


def test_a_row_of_another_kind_given_to_resume_names_its_line(cli, tmp_path):
    path = tmp_path / "load.csv"
    assert cli("load", *FAST, "--rate", "2", "--policies", "off", "--csv", str(path))[0] == 0
    header, row = path.read_text().splitlines()
    path.write_text(f"{header}\n{row}\n{row.replace('2.0,', '２,', 1)}\n", encoding="utf-8")
    line = _one_line(*cli("load", *FAST, "--rate", "2", "--policies", "off", "--csv",
                          str(path), "--resume"))  # fmt: skip
    assert (
        line == f"spectui load: error: --resume: {path} line 3 is not a row of a spectui load CSV"
    )


# ---------------------------------------------------------------- 4. --csv as safe as sweep


def test_a_second_writer_of_the_same_csv_is_refused_naming_the_lock(cli, tmp_path):
    from engine.core.files import sweep_lock

    path = tmp_path / "load.csv"
    with sweep_lock(path, field="--csv"):  # what a first `load --csv` holds while it runs
        line = _one_line(*cli("load", *FAST, "--rate", "2", "--csv", str(path), "--resume"))
    assert line == (
        f"spectui load: error: --csv: {path} is being written by another spectui load (it "
        f"holds {path}.lock); wait for it to end, or use another --csv"
    )
    assert not path.exists()


def test_each_level_is_in_the_partial_file_as_it_finishes_and_resume_goes_on(
    cli, tmp_path, monkeypatch
):
    import engine.serve.load as load

    full = tmp_path / "full.csv"
    flags = (*FAST, "--rate", "2,4,8")
    assert cli("load", *flags, "--csv", str(full))[0] == 0
    out = tmp_path / "load.csv"
    partial = tmp_path / "load.csv.partial"
    real, seen = load.run_cell, {}

    def spying(config, plan, level, policy, **kwargs):  # type: ignore[no-untyped-def]
        # What a kill -9 would leave when this cell starts: the levels finished so far.
        seen.setdefault(level, partial.read_text())
        return real(config, plan, level, policy, **kwargs)

    monkeypatch.setattr(load, "run_cell", spying)
    assert cli("load", *flags, "--csv", str(out))[0] == 0
    lines = full.read_text().splitlines(keepends=True)
    assert seen[2.0] == lines[0]  # the header alone
    assert seen[4.0] == "".join(lines[:3])  # level 2's two policies
    assert seen[8.0] == "".join(lines[:5])
    assert not partial.exists() and not (tmp_path / "load.csv.lock").exists()
    # Killed while level 8 ran: --resume keeps levels 2 and 4 and runs level 8 only.
    out.unlink()
    partial.write_text("".join(lines[:5]) + lines[5][:40])  # and half a row of level 8
    monkeypatch.setattr(load, "run_cell", real)
    status, shown, err = cli("load", *flags, "--csv", str(out), "--resume")
    assert status == 0, err
    assert "kept 4 rows of" in shown
    assert out.read_bytes() == full.read_bytes() and not partial.exists()


def test_a_partial_file_is_not_overwritten_without_resume(cli, tmp_path):
    out = tmp_path / "load.csv"
    partial = tmp_path / "load.csv.partial"
    partial.write_text("level,policy\n2.0,off\n")
    line = _one_line(*cli("load", *FAST, "--rate", "2", "--csv", str(out)))
    assert line == (
        f"spectui load: error: --csv: {partial} holds the levels of an interrupted load; "
        "add --resume to go on with it, or remove it to start again"
    )
    assert partial.read_text() == "level,policy\n2.0,off\n"


# A first level that is quick (full batches: 1.2e6 request-steps in ~0.05 s), then eight
# that are not (one request at a time: ~0.5 s each): the signal comes while they run.
SLOW = ",".join(f"{0.1 * (9 - i):.1f}" for i in range(8))
STUDY = (
    "--cost", "roofline", "--k", "4", "--requests", "1000", "--tokens-per-seq", "300",
    "--replications", "2", "--rate", f"10000,{SLOW}",
)  # fmt: skip
DEADLINE_S = 60.0  # a bound on waiting for the first level (a loaded machine), never a pause


def _start(tmp_path: Path, *flags: str) -> tuple[subprocess.Popen[str], list[str]]:
    """The study in a process of its own, returned once its first level's rows are shown."""
    child = subprocess.Popen(
        [sys.executable, "-m", "spectui", "load", *STUDY, *flags],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    shown: list[str] = []
    done = threading.Event()

    def read() -> None:
        assert child.stdout is not None
        for line in child.stdout:
            shown.append(line)
            if len(shown) == 3:  # the header and the first level's two rows
                done.set()
        done.set()

    threading.Thread(target=read, daemon=True).start()
    if not done.wait(DEADLINE_S) or child.poll() is not None:
        child.kill()
        raise AssertionError(
            f"no first level: {shown} {child.stderr.read() if child.stderr else ''}"
        )
    return child, shown


def _gone_within(pids: list[int], seconds: float) -> list[int]:
    """The processes of ``pids`` still running ``seconds`` from now (waited on their exit,
    through pidfds: no polling)."""
    fds = {}
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):  # gone already
            fds[os.pidfd_open(pid)] = pid
    end = time.monotonic() + seconds
    try:
        while fds and (left := end - time.monotonic()) > 0:
            ready, _, _ = select.select(list(fds), [], [], left)
            for fd in ready:
                os.close(fd)
                del fds[fd]
    finally:
        for fd in fds:
            os.close(fd)
    return list(fds.values())


def _children(pid: int) -> list[int]:
    import psutil

    return [p.pid for p in psutil.Process(pid).children(recursive=True)]


def test_sigterm_keeps_the_finished_level_and_leaves_no_temporary_file(cli, tmp_path):
    child, shown = _start(tmp_path, "--csv", "load.csv", "--records", "requests.csv")
    assert any(p.name.startswith(".requests.csv.") for p in tmp_path.iterdir())  # streaming
    child.send_signal(signal.SIGTERM)
    assert child.wait(DEADLINE_S) == 128 + signal.SIGTERM
    assert child.stderr is not None and child.stderr.read() == "terminated\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["load.csv"]  # no .tmp, no records
    with (tmp_path / "load.csv").open() as handle:
        rows = [(r["level"], r["policy"]) for r in csv.DictReader(handle)]
    # The first level at least (on a loaded machine a cell of the next may have finished).
    assert rows[:2] == [("10000.0", "off"), ("10000.0", "fixed")]
    assert [line.split()[:2] for line in shown[1:3]] == [["10000", "off"], ["10000", "fixed"]]


def test_kill_9_keeps_the_finished_level_for_resume_and_its_workers_end(cli, tmp_path):
    child, _ = _start(tmp_path, "--csv", "load.csv", "--workers", "2")
    workers = _children(child.pid)
    assert len(workers) >= 2
    child.kill()
    child.wait(DEADLINE_S)
    alive = _gone_within(workers, 1.0)
    for pid in alive:  # left by a failure: not by the run that follows
        os.kill(pid, signal.SIGKILL)
    assert alive == []
    partial = tmp_path / "load.csv.partial"
    lines = partial.read_text().splitlines()
    kept = [line.split(",")[:2] for line in lines[1:]]
    # Whole levels only, the first one at least (the next may have finished meanwhile).
    assert kept[:2] == [["10000.0", "off"], ["10000.0", "fixed"]]
    assert kept[::2] == [[level, "off"] for level, _ in kept[::2]]
    assert kept[1::2] == [[level, "fixed"] for level, _ in kept[::2]]
    # --resume picks them up (the dead process's lock holds nothing): here the levels kept
    # alone, so that nothing is left to run.
    levels = ",".join(level for level, _ in kept[::2])
    first = [a if a != f"10000,{SLOW}" else levels for a in STUDY]
    status, shown, err = cli("load", *first, "--csv", str(tmp_path / "load.csv"), "--resume")
    assert status == 0, err
    assert f"kept {len(kept)} rows of" in shown
    assert (tmp_path / "load.csv").read_text().splitlines() == lines
    assert sorted(p.name for p in tmp_path.iterdir()) == ["load.csv"]


def test_a_worker_forked_under_the_sigterm_handler_still_ends_on_sigterm():
    # Pool workers are forked while load's handler is installed, and the pool stops them
    # with SIGTERM: they must end by it, not raise SystemExit into the pool's loop.
    from spectui.cli.load import _sigterm_as_exit

    ready, told = os.pipe()
    with _sigterm_as_exit():
        pid = os.fork()
        if pid == 0:  # the worker
            try:
                # Ready once forked: a signal before Python's after-fork step would be lost.
                os.write(told, b"!")
                signal.pause()
            finally:
                os._exit(7)  # a SystemExit raised by the handler lands here
        os.close(told)
        assert os.read(ready, 1) == b"!"
        os.close(ready)
        os.kill(pid, signal.SIGTERM)
        if _gone_within([pid], DEADLINE_S):  # never waited on forever
            os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGTERM


def test_kill_9_of_a_study_on_a_local_dask_cluster_leaves_no_worker(tmp_path):
    """A `local:N` cluster's scheduler, nannies and workers end with the process that
    started them (Dask's nannies watch their parent), within a second of a kill -9."""
    child, _ = _start(tmp_path, "--csv", "load.csv", "--scheduler", "local:2")
    workers = _children(child.pid)
    assert len(workers) >= 2  # two nannies at least, each with its worker
    child.kill()
    child.wait(DEADLINE_S)
    alive = _gone_within(workers, 1.0)
    for pid in alive:  # left by a failure: not by the run that follows
        os.kill(pid, signal.SIGKILL)
    assert alive == []
