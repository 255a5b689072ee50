"""The command line as a user runs it: in this process through ``main([...])``
(:func:`spectui`), and each subcommand once in a real subprocess (:func:`spectui_process`:
the entry point, the exit status and the streams of a separate program)."""

import contextlib
import io
import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from unittest import mock

import pandas as pd
import pytest

from engine.core.config import SpecConfig
from engine.simulate.cycles_file import CYCLES_NO_DRAFTS
from engine.simulate.simulator import simulate

ORIGINAL_EXAMPLE = [
    "--draft-model",
    "fixed",
    "--k",
    "5",
    "--acceptance-rate",
    "0.8",
    "--draft-cost-us",
    "20",
    "--n-sequences",
    "500",
    "--tokens-per-seq",
    "128",
]


@dataclass
class Ran:
    returncode: int
    stdout: str
    stderr: str


def spectui(*args: str, cwd=None, check=True) -> Ran:
    """``spectui ARGS`` in this process, as the program would run them: without colour, at
    120 columns, in ``cwd``; argparse's exits are statuses too."""
    from spectui.cli import main

    out, err = io.StringIO(), io.StringIO()
    with (
        mock.patch.dict(os.environ, {"NO_COLOR": "1", "COLUMNS": "120"}),
        contextlib.chdir(cwd or os.getcwd()),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        try:
            status = main(list(args))
        except SystemExit as exit_:
            status = int(exit_.code or 0)
    ran = Ran(int(status or 0), out.getvalue(), err.getvalue())
    if check:
        assert ran.returncode == 0, ran.stderr
    return ran


def spectui_process(*args, cwd=None, check=True, **kwargs):
    """``python -m spectui ARGS`` in a subprocess (a smoke test of a subcommand)."""
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "120"}
    out = subprocess.run(
        [sys.executable, "-m", "spectui", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=300,
        **kwargs,
    )
    if check:
        assert out.returncode == 0, out.stderr
    return out


def test_run_with_the_original_example_prints_mc_and_exact():
    out = spectui_process("run", *ORIGINAL_EXAMPLE)
    m = simulate(SpecConfig()).metrics
    assert "speedup (Monte Carlo)" in out.stdout and "speedup (exact)" in out.stdout
    assert f"{m['speedup']:.3f} ± {m['speedup_ci95']:.3f}" in out.stdout
    assert f"{m['speedup_exact']:.3f}" in out.stdout


def test_run_json_holds_config_and_every_metric():
    out = spectui("run", "--json", "--k", "3", "--tail", "clamp", "--draft-model", "entropy_aware")
    payload = json.loads(out.stdout)
    config = SpecConfig(k=3, tail="clamp", draft_model="entropy_aware")
    assert payload["config"] == config.to_dict()
    expected = simulate(config).metrics
    assert set(payload["metrics"]) == set(expected)
    assert payload["metrics"]["speedup"] == expected["speedup"]
    assert payload["sampler"] == "prefix/2"  # which sampler made the Monte Carlo numbers
    ref = json.loads(
        spectui("run", "--json", "--engine", "reference", "--n-sequences", "50").stdout
    )
    assert ref["engine"] == "reference"
    assert ref["sampler"] == "token/reference"


def test_preset_then_flags_override(tmp_path):
    out = spectui("run", "--json", "--preset", "decaying-draft", "--k", "2")
    payload = json.loads(out.stdout)
    assert payload["config"]["draft_model"] == "position_decay"
    assert payload["config"]["k"] == 2


def test_summary_out_appends_and_cycles_out_streams(tmp_path):
    summary, cycles = tmp_path / "s.csv", tmp_path / "c.csv"
    spectui(
        "run", "--n-sequences", "30", "--summary-out", str(summary), "--cycles-out", str(cycles)
    )
    spectui("run", "--n-sequences", "30", "--k", "2", "--summary-out", str(summary))
    rows = pd.read_csv(summary)
    assert rows["k"].tolist() == [5, 2]
    assert summary.read_text().count("speedup_exact") == 1
    records = pd.read_csv(cycles)
    expected = simulate(SpecConfig(n_sequences=30), records=True)
    assert len(records) == expected.metrics["cycles"]
    assert records["accepted"].tolist() == expected.cycles["accepted"].tolist()
    first = records.iloc[0]
    assert first["pattern"] == "A" * first["accepted"] + (
        "R" if first["accepted"] < 5 else ""
    ) + "." * max(0, 5 - first["accepted"] - 1)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "--k", "0"], "--k: 0 is not allowed; expected an integer in [1, 1024]"),
        (["run", "--acceptance-rate", "1.5"], "--acceptance-rate: 1.5 is not allowed"),
        (["run", "--draft-cost-us", "inf"], "--draft-cost-us: inf is not allowed"),
        (["run", "--n-sequences", "many"], "'many' is not an integer"),
        (["run", "--draft-model", "huge"], "invalid choice: 'huge'"),
        (["run", "--preset", "nope"], "preset 'nope': not found"),
        (
            ["run", "--summary-out", "/nonexistent-dir/x.csv", "--n-sequences", "5"],
            "/nonexistent-dir/x.csv",
        ),
        (["sweep", "--workers", "0"], "--workers: '0' is not allowed"),
        (["sweep", "--workers", "65"], "expected an integer in [1, 64]"),
        (["sweep", "--out", ""], "--out: an empty path is not a file name"),
        (["serve", "--port", "99999"], "expected an integer in [1, 65535]"),
        (["run", "--tokens-per-seq", "2000000"], "expected an integer in [1, 1000000]"),
        (
            ["run", "--draft-cost-us", "1e12"],
            "1e12 is not allowed; expected a number in [0, 1e9]",
        ),
        (["run", "--verify-cost-us", "5e-324"], "expected a number in [0.001, 1e9]"),
        (
            ["run", "--k", "٣"],
            "--k: '٣' is not an integer (ASCII digits only); expected an integer in [1, 1024]",
        ),
        (["analyze", "/nonexistent.csv"], "no such file"),
        (["plot"], "give --out DIR"),
    ],
)
def test_usage_errors_are_one_line_exit_2(args, message):
    out = spectui(*args, check=False)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert message in lines[0]
    assert "Traceback" not in out.stderr


def test_sweep_into_a_directory_fails_before_any_work(tmp_path):
    out = spectui("sweep", "--preset", "seed-576", "--out", str(tmp_path), check=False)
    assert out.returncode == 2
    assert out.stderr.strip() == f"spectui sweep: error: {tmp_path}: is a directory"
    assert list(tmp_path.iterdir()) == []


def test_malformed_preset_names_file_and_key(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[config]\nk = 'five'\n")
    out = spectui("run", "--preset", str(bad), check=False)
    assert out.returncode == 2
    assert f"{bad}: config.k: expected an integer" in out.stderr


def test_sweep_then_analyze(tmp_path):
    out = spectui("sweep", "--preset", "tiny", cwd=tmp_path)
    csv = tmp_path / "results" / "sweep_summary.csv"
    frame = pd.read_csv(csv)
    assert len(frame) == 24
    assert frame["config_id"].tolist() == list(range(24))
    assert "24 configurations" in out.stderr
    parallel = tmp_path / "par.csv"
    spectui("sweep", "--preset", "tiny", "--workers", "2", "--out", str(parallel), cwd=tmp_path)
    pd.testing.assert_frame_equal(frame, pd.read_csv(parallel))
    exact = tmp_path / "exact.csv"
    spectui("sweep", "--preset", "tiny", "--exact-only", "--out", str(exact))
    assert pd.read_csv(exact)["speedup"].isna().all()

    report = tmp_path / "report" / "findings.md"
    shown = spectui("analyze", str(csv), "--markdown", str(report))
    assert "Best configuration" in shown.stdout and "Optimal K, fixed" in shown.stdout
    assert report.read_text().startswith("# Findings")
    assert "Best configuration" in spectui("analyze", str(exact)).stdout

    bad = tmp_path / "notasweep.csv"
    bad.write_text("x,y\n1,2\n")
    out = spectui_process("analyze", str(bad), check=False)
    assert out.returncode == 2 and "missing columns" in out.stderr


# The Ctrl-C tests' sweep: a subprocess (the signal is the point) whose batches run only when
# the test lets them (a controllable engine): each batch starts once it has read a byte from
# the pipe whose read end is SPECTUI_TEST_GATE, and every batch goes on once the test closes
# the write end. The rest is `python -m spectui` as it is; the pool's workers are forked from
# it (the CLI's pool, on Linux), so they wait at the same gate.
GATED_SPECTUI = """
import os, runpy
import engine.sweep.sweep

evaluate = engine.sweep.sweep._evaluate_batch
gate = int(os.environ["SPECTUI_TEST_GATE"])

def _evaluate_batch(*args, **kwargs):
    os.read(gate, 1)  # a byte from the test: this batch; end of file: every batch
    return evaluate(*args, **kwargs)

_evaluate_batch.__module__ = "engine.sweep.sweep"  # pickled by name for the workers: this one
engine.sweep.sweep._evaluate_batch = _evaluate_batch
runpy.run_module("spectui", run_name="__main__", alter_sys=True)  # as `python -m spectui`
"""


def short_576(tmp_path):
    """seed-576's grid (576 configurations) with runs of 20 x 16 tokens: cheap batches."""
    from engine.presets import SHIPPED_DIR

    text = (SHIPPED_DIR / "seed-576.toml").read_text()
    short = text.replace("n_sequences = 500", "n_sequences = 20")
    short = short.replace("tokens_per_seq = 128", "tokens_per_seq = 16")
    assert short.count(" = 20\n") == 1 and short.count(" = 16\n") == 1
    preset = tmp_path / "short-576.toml"
    preset.write_text(short)
    return preset


def rows_in(partial) -> int:
    """Rows a sweep has written to its partial file so far."""
    try:
        return max(0, len(partial.read_bytes().splitlines()) - 1)  # less the header
    except FileNotFoundError:
        return 0


def wait_until(condition, what: str, timeout: float = 60.0) -> None:
    """Poll ``condition`` (the state of another process) until it holds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


class Gate:
    """The write end of the gate: :meth:`let_one_through` lets one more batch run,
    :meth:`open` lets every batch run from now on."""

    def __init__(self, write: int) -> None:
        self.write: int | None = write

    def let_one_through(self) -> None:
        assert self.write is not None, "the gate is open"
        os.write(self.write, b"x")

    def open(self) -> None:
        if self.write is not None:
            os.close(self.write)
            self.write = None


@contextlib.contextmanager
def gated_sweep(*args: str, **popen):
    """``spectui sweep ARGS`` in a subprocess whose batches wait at the gate; yields (the
    process, its :class:`Gate`). On leaving, the gate opens; on an error, the process is
    killed first."""
    read, write = os.pipe()
    proc = subprocess.Popen(
        [sys.executable, "-c", GATED_SPECTUI, "sweep", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "NO_COLOR": "1", "SPECTUI_TEST_GATE": str(read)},
        pass_fds=(read,),
        **popen,
    )
    os.close(read)
    gate = Gate(write)
    try:
        yield proc, gate
    except BaseException:
        proc.kill()
        proc.communicate()
        raise
    finally:
        gate.open()


def let_rows_through(gate: Gate, partial, rows: int) -> None:
    """Let batches through one at a time until the sweep has written ``rows`` rows."""
    while (before := rows_in(partial)) < rows:
        gate.let_one_through()
        wait_until(lambda: rows_in(partial) > before, "a batch let through wrote no row")


def test_ctrl_c_keeps_finished_rows(tmp_path):
    out = tmp_path / "s.csv"
    partial = tmp_path / "s.csv.partial"
    args = ("--preset", str(short_576(tmp_path)), "--engine", "reference", "--out", str(out))
    with gated_sweep(*args) as (proc, gate):
        let_rows_through(gate, partial, 3)
        proc.send_signal(signal.SIGINT)  # while the next batch waits at the gate
        # One batch at a time until the sweep ends: it stops at the first batch that starts
        # after it has taken the signal (without the stop, all 576 would run: exit 0).
        while proc.poll() is None:
            before = rows_in(partial)
            with contextlib.suppress(BrokenPipeError):  # it has just ended
                gate.let_one_through()
            wait_until(
                lambda before=before: proc.poll() is not None or rows_in(partial) > before,
                "a batch let through wrote no row",
            )
        _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert "Traceback" not in stderr
    frame = pd.read_csv(out)
    assert 3 <= len(frame) < 576
    assert frame["speedup"].notna().all()
    assert f"{len(frame)} of 576 configurations finished" in stderr
    assert not partial.exists()


def _stat(pid: int) -> list[str] | None:
    """State, parent pid, ... of a process from /proc (None once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()
    except OSError:
        return None


def _children(pid: int) -> set[int]:
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat(int(entry))
            if fields is not None and int(fields[1]) == pid:
                found.add(int(entry))
    return found


def _ignores_sigint(pid: int) -> bool:
    """Whether a process ignores SIGINT (its SigIgn mask in /proc)."""
    with open(f"/proc/{pid}/status") as handle:
        (mask,) = [line.split()[1] for line in handle if line.startswith("SigIgn:")]
    return bool(int(mask, 16) & (1 << (signal.SIGINT - 1)))


def _running(pid: int) -> bool:
    fields = _stat(pid)
    return fields is not None and fields[0] != "Z"  # a zombie has exited, unreaped


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads /proc")
def test_ctrl_c_with_workers_keeps_finished_rows_and_stops_the_workers(tmp_path):
    """--workers N runs on the engine's pool: workers ignore Ctrl-C, the parent writes the
    rows finished, exits with 130 and leaves no worker behind."""
    out = tmp_path / "s.csv"
    partial = tmp_path / "s.csv.partial"
    args = ("--preset", str(short_576(tmp_path)), "--engine", "reference", "--workers", "2")
    # its own process group, as a terminal's foreground job
    with gated_sweep(*args, "--out", str(out), start_new_session=True) as (proc, gate):
        let_rows_through(gate, partial, 3)
        workers = _children(proc.pid)
        assert len(workers) >= 2, "the pool's two workers"
        assert all(_ignores_sigint(pid) for pid in workers), "a worker takes Ctrl-C"
        # Ctrl-C reaches the whole group, workers included (waiting at the gate: busy)
        os.killpg(proc.pid, signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)  # the gate still closed: the workers wait
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr
    frame = pd.read_csv(out)
    assert 3 <= len(frame) < 576
    assert f"{len(frame)} of 576 configurations finished" in stderr
    deadline = time.monotonic() + 30
    while any(_running(pid) for pid in workers):
        assert time.monotonic() < deadline, "a worker outlived the sweep"
        time.sleep(0.1)


def test_sweep_over_batch_sizes_writes_their_column_and_analyze_shows_k_star_per_batch(
    tmp_path,
):
    out = tmp_path / "batch.csv"
    spectui("sweep", "--preset", "batch-size", "--exact-only", "--out", str(out))
    header = out.read_text().splitlines()[0].split(",")
    assert "workload.batch_size" in header and "cost.model" in header
    frame = pd.read_csv(out)
    assert sorted(frame["workload.batch_size"].unique()) == [1, 8, 32, 128]
    assert (frame["cost.model"] == "roofline").all()
    assert frame["speedup"].isna().all() and frame["speedup_exact"].notna().all()
    shown = spectui("analyze", str(out)).stdout
    assert "rows: workload.batch_size;" in shown
    # The linear draft cost is inert under a roofline: the column names the cost model.
    assert "columns: cost model;" in shown and "20 us" not in shown
    assert re.search(r"batch_size ┃ roofline ┃", shown)
    for batch in (1, 8, 32, 128):  # one K* per batch size, with the value computed here
        rows = frame[frame["workload.batch_size"] == batch]
        best = rows.loc[rows["speedup_exact"].idxmax()]
        cell = rf"batch={batch} │\s+{int(best['k'])} {best['speedup_exact']:.2f}\s"
        assert re.search(cell, shown), cell


def test_presets_lists_shipped_presets():
    out = spectui_process("presets")
    for name in ("default", "seed-576", "tiny"):
        assert name in out.stdout
    assert "sweep of 576" in out.stdout


def test_help_lists_every_subcommand():
    out = spectui_process("--help")
    for command in ("run", "sweep", "analyze", "plot", "presets", "serve", "regime"):
        assert command in out.stdout


@pytest.mark.parametrize(
    ("args", "shown"),
    [
        (["regime", "--batch-sizes", "1,64", "--contexts", "0,1k", "--ks", "1,2,4"], "K*"),
        (["arena", "--n-sequences", "50", "--tokens-per-seq", "32"], "fixed"),
        (
            ["calibrate", "tests/fixtures/logs/vllm_v1_mean_length.log", "--calibrate-k-max", "4"],
            "acceptance",
        ),
        (["tree", "--cost", "linear", "--tokens-per-seq", "32", "--kary", "2,2"], "2-ary depth 2"),
    ],
    ids=["regime", "arena", "calibrate", "tree"],
)
def test_the_other_subcommands_run_as_a_program(args, shown):
    # The rest of each one's behaviour is tested in process (tests/test_cli_<command>.py).
    from pathlib import Path

    repo = Path(__file__).resolve().parent.parent
    args = [str(repo / a) if a.startswith("tests/") else a for a in args]
    out = spectui_process(*args)
    assert shown in out.stdout and "Traceback" not in out.stderr


# `serve` as a program: tests/hostile/test_serve_hostile.py (the page, its token, its address)
# and tests/test_serve.py (no process left behind).


def test_plot_writes_the_six_pngs_and_draws_in_the_terminal(tmp_path):
    csv = tmp_path / "s.csv"
    spectui("sweep", "--preset", "tiny", "--out", str(csv))
    out_dir = tmp_path / "plots"
    out = spectui("plot", str(csv), "--out", str(out_dir))
    names = sorted(p.name for p in out_dir.iterdir())
    assert names == [
        "01_speedup_vs_k_fixed.png",
        "02_acceptance_vs_k_by_model.png",
        "03_waste_vs_k.png",
        "04_speedup_vs_cost_ratio.png",
        "05_pareto_speedup_vs_overhead.png",
        "06_optimal_k_heatmap.png",
    ]
    for path in out_dir.iterdir():
        data = path.read_bytes()
        assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 10_000
    assert out.stderr.count("wrote ") == 6
    shown = spectui_process("plot", str(csv), "--terminal").stdout
    for number in range(1, 7):
        assert f"Plot {number}/6" in shown


@pytest.mark.parametrize("engine", ["fast", "reference"])
def test_cycles_out_writes_a_visible_pattern_for_cycles_without_drafts(tmp_path, engine):
    # With --tail clamp the last cycle of a sequence may draft nothing (k = 0); its empty
    # pattern was read back by pandas as NaN.
    cycles = tmp_path / "c.csv"
    spectui(
        "run", "--tail", "clamp", "--n-sequences", "20", "--engine", engine,
        "--cycles-out", str(cycles),
    )  # fmt: skip
    records = pd.read_csv(cycles)
    no_drafts = records[records["k"] == 0]
    assert len(no_drafts) > 0
    assert records["pattern"].notna().all()
    assert set(no_drafts["pattern"]) == {CYCLES_NO_DRAFTS}


@pytest.mark.parametrize("command", ["run", "sweep"])
def test_engine_help_says_the_engines_differ_per_seed(command):
    text = " ".join(spectui(command, "--help").stdout.split())
    assert "for the same seed they give different Monte Carlo numbers" in text
    assert "equal in distribution" in text


def test_run_shows_the_exact_tokens_per_cycle_of_its_own_tail_rule():
    from engine.simulate.exact import tokens_per_cycle, tokens_per_cycle_at_length

    out = spectui("run", "--tail", "clamp", "--tokens-per-seq", "8", "--n-sequences", "50")
    config = SpecConfig(tail="clamp", tokens_per_seq=8, n_sequences=50)
    (line,) = [row for row in out.stdout.splitlines() if "tokens per cycle" in row]
    assert f"exact {tokens_per_cycle_at_length(config):.3f} at this length" in line
    assert f"{tokens_per_cycle(config):.3f}" not in line


def test_summary_rows_name_their_sampler_and_keep_an_older_files_columns(tmp_path):
    summary = tmp_path / "s.csv"
    spectui("run", "--n-sequences", "20", "--summary-out", str(summary))
    assert pd.read_csv(summary)["sampler"].tolist() == ["prefix/2"]
    # A file begun before the sampler column: rows go on under its header, without it.
    old = tmp_path / "old.csv"
    frame = pd.read_csv(summary).drop(columns="sampler")
    frame.to_csv(old, index=False)
    spectui("run", "--n-sequences", "20", "--k", "2", "--summary-out", str(old))
    rows = pd.read_csv(old)
    assert list(rows.columns) == list(frame.columns) and rows["k"].tolist() == [5, 2]
    # Other columns (a newer field this run sets): refused before the run, one line, status 2.
    cycles = tmp_path / "cycles.csv"
    out = spectui(
        *("run", "--n-sequences", "20", "--batch-size", "8", "--summary-out", str(old)),
        *("--cycles-out", str(cycles)),
        check=False,
    )
    assert out.returncode == 2
    assert not cycles.exists()  # the run never started
    assert out.stderr.strip().startswith("spectui run: error: --summary-out: ")
    assert "not in the file: workload.batch_size" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    assert pd.read_csv(old)["k"].tolist() == [5, 2]  # nothing written
