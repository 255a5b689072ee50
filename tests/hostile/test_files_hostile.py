"""Hostile files (issue 23, items 2, 8 and 10): what spectui reads never leaks a file's text
into an error, never blocks on a FIFO, never reads a device or a huge file whole, streams a
log of any size, and takes TOML nested 100,000 deep as one line naming the file.

A FIFO is opened by the code under test only if it is about to wait on it: each FIFO test
keeps a writer (:func:`watched_fifo`) ready to release such a reader (it then reads an empty
file), so that a regression fails the test instead of hanging it."""

from __future__ import annotations

import contextlib
import json
import os
import re
import threading
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.calibrate import logs
from engine.calibrate.fit import calibrate, fixed_from_mean
from engine.cost.specs import SpecError, load_hardware
from tests.test_cli import spectui

SECRET = "root:*:20228:0:99999:7:::"
LOGS = Path(__file__).resolve().parent.parent / "fixtures" / "logs"


def one_error_line(ran) -> str:
    """The single line a refused command prints (exit 2, nothing on stdout, no traceback)."""
    assert ran.returncode == 2, (ran.returncode, ran.stdout, ran.stderr)
    lines = ran.stderr.strip().splitlines()
    assert len(lines) == 1, ran.stderr
    assert "Traceback" not in ran.stderr
    return lines[0]


# ----------------------------------------------------------------- item 2: no leaked text


def test_a_cost_table_that_is_not_one_is_named_not_echoed(tmp_path):
    """The issue's case: a preset's cost.table names /etc/shadow; the error gave its text."""
    (tmp_path / "shadow").write_text(f"{SECRET}\ndaemon:*:20228:0:99999:7:::\n")
    (tmp_path / "p.toml").write_text('[config]\n"cost.model" = "table"\n"cost.table" = "shadow"\n')
    line = one_error_line(spectui("run", "--preset", "p.toml", check=False))
    assert "shadow:1: expected the header batch_size,tokens,verify_us" in line
    assert "20228" not in line


def test_a_cost_table_cell_of_text_is_not_echoed(tmp_path):
    (tmp_path / "t.csv").write_text(f"batch_size,tokens,verify_us\n1,1,100\n1,2,{SECRET}\n")
    line = one_error_line(spectui("run", "--cost", "table", "--cost-table", "t.csv", check=False))
    assert "t.csv:3: field 'verify_us' must be a number > 0, got text that is not a number" in line
    assert "20228" not in line


def test_a_vllm_profile_key_of_text_is_not_echoed(tmp_path):
    (tmp_path / "p.json").write_text('{"batch_stats": {"' + SECRET + '": {"0": 1.0}}}')
    line = one_error_line(spectui("run", "--cost", "table", "--cost-table", "p.json", check=False))
    assert "batch_stats[?]: field 'batch size' must be a whole number" in line
    assert "20228" not in line


def test_a_preset_value_of_the_wrong_type_is_named_not_echoed(tmp_path):
    (tmp_path / "p.toml").write_text(f'[config]\nk = "{SECRET}"\n')
    line = one_error_line(spectui("run", "--preset", "p.toml", check=False))
    assert "p.toml: config.k: expected an integer, got a string" in line
    assert "20228" not in line


@pytest.mark.parametrize(
    ("column", "expected"),
    [("k", "k: not a number"), ("draft_model", "draft_model: not allowed; expected one of")],
)
def test_a_sweep_file_cell_of_text_is_not_echoed(tmp_path, column, expected):
    from engine.core.config import SpecConfig
    from engine.sweep.sweep import run_sweep

    frame = run_sweep([SpecConfig(k=k, n_sequences=10, tokens_per_seq=8) for k in (1, 2)])
    frame[column] = frame[column].astype(object)
    frame.loc[1, column] = SECRET
    frame.to_csv(tmp_path / "s.csv", index=False)
    line = one_error_line(spectui("analyze", "s.csv", check=False))
    assert f"s.csv: row 3: {expected}" in line
    assert "20228" not in line


def test_a_spec_file_entry_that_is_not_a_table_is_not_echoed(tmp_path):
    (tmp_path / "hardware.toml").write_text(f'gpu = "{SECRET}"\n')
    with pytest.raises(SpecError) as caught:
        load_hardware(tmp_path)
    assert "[gpu]: expected a table of fields, got a string" in str(caught.value)
    assert "20228" not in str(caught.value)


def test_a_summary_file_that_is_not_one_is_named_not_echoed(tmp_path):
    (tmp_path / "key").write_text(f"{SECRET}\nmore\n")
    args = ("run", "--n-sequences", "2", "--tokens-per-seq", "4", "--summary-out", "key")
    line = one_error_line(spectui(*args, check=False))
    assert "key: line 1 is not a header of these columns" in line
    assert "20228" not in line
    assert (tmp_path / "key").read_text() == f"{SECRET}\nmore\n"


# ------------------------------------------- item 8: regular files only, bounded, streamed


@contextlib.contextmanager
def watched_fifo(path: Path) -> Iterator[threading.Event]:
    """A FIFO at ``path``; the event is set if anything opened it to read or wrote to it (a
    writer, then a reader, open and close it in turn, so that code waiting there to read
    gets an empty file, or to write a broken pipe: a failure, not a hang)."""
    os.mkfifo(path)
    opened, done = threading.Event(), threading.Event()

    def release() -> None:
        while not done.wait(0.05):
            try:  # succeeds only when a reader has the FIFO open
                os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
                opened.set()
            except OSError:
                pass
            reader = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # lets a waiting writer on
            try:
                if os.read(reader, 1 << 16):
                    opened.set()
            except BlockingIOError:
                pass
            finally:
                os.close(reader)

    writer = threading.Thread(target=release, daemon=True)
    writer.start()
    try:
        yield opened
    finally:
        done.set()
        writer.join()


FIFO_COMMANDS = {
    "--preset": ("run", "--preset", "{fifo}", "--n-sequences", "2", "--tokens-per-seq", "4"),
    "--cost-table": ("run", "--cost", "table", "--cost-table", "{fifo}", "--n-sequences", "2"),
    "analyze": ("analyze", "{fifo}"),
    "plot --terminal": ("plot", "--terminal", "{fifo}"),
    "calibrate": ("calibrate", "{fifo}"),
    "calibrate --cost-points": (
        "calibrate",
        str(LOGS / "vllm_v1_mean_length.log"),
        "--cost-points",
        "{fifo}",
    ),
}


@pytest.mark.parametrize("case", list(FIFO_COMMANDS))
def test_a_fifo_is_refused_without_waiting_on_it(tmp_path, case):
    fifo = tmp_path / "f.toml"
    with watched_fifo(fifo) as opened:
        args = [a.format(fifo=fifo) for a in FIFO_COMMANDS[case]]
        ran = spectui(*args, check=False)
    assert not opened.is_set(), "the FIFO was opened for reading"
    line = one_error_line(ran)
    assert f"{fifo}: cannot read: a FIFO (named pipe), not a regular file" in line


def test_a_fifo_in_place_of_a_sweeps_partial_file_is_refused_without_waiting(tmp_path):
    fifo = tmp_path / "out.csv.partial"
    for resume in ((), ("--resume",)):
        with watched_fifo(fifo) as opened:
            ran = spectui("sweep", "--preset", "tiny", "--out", "out.csv", *resume, check=False)
        assert not opened.is_set()
        assert f"{fifo.name}: not a regular file" in one_error_line(ran)
        fifo.unlink()


def test_a_preset_key_naming_a_fifo_is_refused_without_waiting(tmp_path):
    fifo = tmp_path / "table.csv"
    (tmp_path / "p.toml").write_text(f'[config]\n"cost.model" = "table"\n"cost.table" = "{fifo}"\n')
    with watched_fifo(fifo) as opened:
        ran = spectui("run", "--preset", "p.toml", check=False)
    assert not opened.is_set()
    assert "a FIFO (named pipe), not a regular file" in one_error_line(ran)


@pytest.mark.parametrize("device", ["/dev/null", "/dev/zero"])
def test_a_device_is_refused_as_a_preset_a_table_and_a_log(tmp_path, device):
    for args in (
        ("run", "--preset", device),
        ("run", "--cost", "table", "--cost-table", device),
        ("calibrate", device),
        ("analyze", device),
    ):
        line = one_error_line(spectui(*args, check=False))
        assert f"{device}: cannot read: a device, not a regular file" in line, args


def test_presets_lists_the_others_and_marks_a_fifo_a_device_and_a_folder(isolated_dirs, tmp_path):
    presets, _ = isolated_dirs
    presets.mkdir()
    fifo = tmp_path / "elsewhere.fifo"
    (presets / "zero.toml").symlink_to("/dev/zero")
    (presets / "folder.toml").mkdir()
    with watched_fifo(fifo) as opened:
        (presets / "pipe.toml").symlink_to(fifo)
        ran = spectui("presets")
    assert not opened.is_set()
    assert "default" in ran.stdout  # a shipped preset, still listed
    rows = {line.split("│")[1].strip(): line for line in ran.stdout.splitlines() if "│" in line}
    flat = re.sub(r"[│\s]+", " ", ran.stdout)
    for name, what in (("zero", "a device"), ("folder", "a directory"), ("pipe", "a FIFO")):
        assert name in rows and "unreadable" in rows[name], ran.stdout
        assert f"cannot read: {what}" in flat


def test_a_preset_larger_than_its_cap_is_refused_unread(tmp_path):
    big = tmp_path / "big.toml"
    with big.open("wb") as handle:  # sparse: no disk, no time
        handle.truncate(2 << 20)
    line = one_error_line(spectui("run", "--preset", str(big), check=False))
    assert f"{big}: cannot read: larger than the 1 MiB a preset may be" in line


def test_a_cost_table_larger_than_its_cap_is_refused_unread(tmp_path):
    big = tmp_path / "big.csv"
    big.write_text("batch_size,tokens,verify_us\n" + "1,1,100\n" * 200_000)  # 1.6 MB
    line = one_error_line(spectui("run", "--cost", "table", "--cost-table", str(big), check=False))
    assert "larger than the 1 MiB a cost table may be" in line


def test_a_sweep_file_larger_than_its_cap_is_refused_unread(tmp_path):
    big = tmp_path / "big.csv"
    with big.open("wb") as handle:
        handle.truncate(257 << 20)
    for args in (("analyze", str(big)), ("plot", "--terminal", str(big))):
        line = one_error_line(spectui(*args, check=False))
        assert "larger than the 256 MiB a sweep file may be" in line


V1_LINE = (
    "INFO 06-06 14:20:34 [metrics.py:86] SpecDecoding metrics: Draft acceptance rate: 38.8%, "
    "Mean acceptance length: 2.16, Accepted: 150 tokens, Drafted: 387 tokens, Per-position "
    "acceptance rate: 0.543, 0.357, 0.264\n"
)
NOISE = 'INFO:     127.0.0.1:52144 - "POST /v1/completions HTTP/1.1" 200 OK\n'


def traced_peak(read):
    """``read()`` and the peak of the memory Python allocated meanwhile, in bytes."""
    tracemalloc.start()
    try:
        result = read()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, peak


def test_a_log_is_streamed_not_read_whole(tmp_path):
    """2 MB of log (1 MB of it without a newline) is read holding under 1 MB: the reader
    held the whole text and a list of its lines (about 2.5x the file)."""
    path = tmp_path / "big.log"
    with path.open("w") as handle:
        handle.write((NOISE * 400 + V1_LINE) * 40)
        handle.write("x" * (1 << 20) + "\n")
        handle.write(V1_LINE)
    assert path.stat().st_size > 2_000_000
    parsed, peak = traced_peak(lambda: logs.parse_log_file(path))
    assert peak < 1_000_000, peak
    assert len(parsed.windows) == 41 and parsed.skipped == 16_001


def v1_line(drafts: int, counts: tuple[int, int, int]) -> str:
    """A consistent vLLM V1 metrics line: K = 3, ``counts`` drafts accepting position i."""
    accepted = sum(counts)
    rates = ", ".join(f"{c / drafts:.3f}" for c in counts)
    return (
        f"SpecDecoding metrics: Draft acceptance rate: {100 * accepted / (3 * drafts):.1f}%, "
        f"Mean acceptance length: {1 + accepted / drafts:.2f}, Accepted: {accepted} tokens, "
        f"Drafted: {3 * drafts} tokens, Per-position acceptance rate: {rates}\n"
    )


def test_millions_of_windows_are_pooled_to_what_calibration_uses(monkeypatch):
    """A log of windows only (the 1 GB case in miniature, POOL_AFTER made small): the windows
    held stay few, and the calibration is the one from every window held one by one."""
    text = "".join(
        v1_line(100 + 7 * i, (60 + i, 35 + i // 2, 20 + i // 3)) + NOISE for i in range(40)
    )
    whole = logs.parse_log(text)
    monkeypatch.setattr(logs, "POOL_AFTER", 5)
    pooled = logs.parse_log(text)
    assert len(whole.windows) == 40 and not whole.rejected
    assert pooled.used == 40 and len(pooled.windows) <= 6 and pooled.skipped == 40
    one, other = calibrate(whole.windows), calibrate(pooled.windows)
    assert (other.chosen.name, other.k) == (one.chosen.name, one.k)
    assert other.drafts == pytest.approx(one.drafts)
    for a, b in zip(one.positions, other.positions, strict=True):
        assert (b.reached, b.accepted) == pytest.approx((a.reached, a.accepted))
    for a, b in zip(one.models, other.models, strict=True):
        numbers = {k: v for k, v in a.values.items() if isinstance(v, float)}
        assert {k: b.values[k] for k in numbers} == pytest.approx(numbers)


def sglang_line(mean: float) -> str:
    return f"Decode batch. #running-req: 1, accept len: {mean:.2f}\n"


def test_windows_of_every_kind_are_pooled_and_rejected_ones_counted(monkeypatch):
    """Past POOL_AFTER, SGLang's accept len (M only), llama.cpp's per-request lines and
    rejected windows no longer pile up (they grew with the log: 5.5x a 100 MB SGLang log):
    the usable ones merge into one window a kind, rejected ones past the first POOL_AFTER are
    counted, and the calibration is the one from every window held one by one."""
    bad = v1_line(100, (60, 35, 20)).replace("Accepted: 115", "Accepted: 116")
    text = "".join(sglang_line(2 + i / 100) + bad for i in range(30))
    whole = logs.parse_log(text)
    monkeypatch.setattr(logs, "POOL_AFTER", 5)
    pooled = logs.parse_log(text)
    assert whole.used == pooled.used == 30
    assert len(pooled.windows) == 1 and pooled.windows[0].windows == 30
    assert len(pooled.rejected) == 5 and pooled.rejected_unlisted == 25
    assert pooled.rejected_count == whole.rejected_count == len(whole.rejected) == 30
    assert [w.line for w in pooled.rejected] == [2, 4, 6, 8, 10]  # the first ones, in order
    one = calibrate(whole.windows, k=3)
    other = calibrate(pooled.windows, k=3)
    mean = sum(2 + i / 100 for i in range(30)) / 30  # unweighted: SGLang gives no drafts
    assert other.chosen.values["acceptance_rate"] == pytest.approx(fixed_from_mean(mean, 3))
    assert other.chosen.values == pytest.approx(one.chosen.values)
    assert other.windows == one.windows == 30
    assert other.notes == one.notes


def test_a_log_that_begins_with_rejected_windows_lists_only_the_first_ones(monkeypatch):
    bad = v1_line(100, (60, 35, 20)).replace("Accepted: 115", "Accepted: 116")
    monkeypatch.setattr(logs, "POOL_AFTER", 5)
    parsed = logs.parse_log(bad * 12 + v1_line(100, (60, 35, 20)))
    assert (len(parsed.rejected), parsed.rejected_unlisted, parsed.used) == (5, 7, 1)


def test_calibrate_lists_twenty_rejected_windows_and_counts_the_rest(tmp_path, monkeypatch):
    """A log of many bad windows does not flood the terminal: the first 20 are listed, the
    rest counted (all of those kept are in --json, with the count of those not kept)."""
    bad = v1_line(100, (60, 35, 20)).replace("Accepted: 115", "Accepted: 116")
    log = tmp_path / "bad.log"
    log.write_text(v1_line(100, (60, 35, 20)) + bad * 30)
    out = spectui("calibrate", str(log), "--calibrate-k-max", "4").stdout  # K is not the point
    assert "31 windows" not in out and "30 rejected" in out
    assert out.count("rejected line") == 20
    assert "rejected line 21:" in out and "rejected line 22:" not in out
    assert "and 10 more rejected windows (--json lists them)" in out
    monkeypatch.setattr(logs, "POOL_AFTER", 5)
    payload = json.loads(spectui("calibrate", str(log), "--json", "--calibrate-k-max", "4").stdout)
    assert len(payload["rejected"]) == 5 and payload["rejected_not_listed"] == 25


def test_mean_only_windows_pool_by_drafts_and_keep_their_notes(monkeypatch):
    """vLLM lines with M and counts but no per-position rates, at two K, one with M above
    K + 1: pooled, the fit, its interval and every note are those of the windows one by one."""

    def line(drafts: int, accepted: int, k: int) -> str:
        mean = 1 + accepted / drafts
        return (
            f"SpecDecoding metrics: Draft acceptance rate: {100 * accepted / (k * drafts):.1f}%, "
            f"Mean acceptance length: {mean:.2f}, Accepted: {accepted} tokens, "
            f"Drafted: {k * drafts} tokens\n"
        )

    text = "".join(line(100 + i, 150 + 3 * i, 3) for i in range(20))
    text += "".join(line(50, 60 + i, 2) for i in range(4))
    whole = logs.parse_log(text)
    monkeypatch.setattr(logs, "POOL_AFTER", 3)
    pooled = logs.parse_log(text)
    assert pooled.used == whole.used == 24 and len(pooled.windows) <= 3
    one, other = calibrate(whole.windows), calibrate(pooled.windows)
    assert other.chosen.values == pytest.approx(one.chosen.values)
    assert other.chosen.interval == pytest.approx(one.chosen.interval)
    assert (other.k, other.windows, other.drafts) == (one.k, one.windows, one.drafts)
    assert other.notes == one.notes


def test_a_log_of_any_format_is_read_in_memory_that_does_not_grow_with_it(monkeypatch):
    """The held windows are bounded by POOL_AFTER whatever the format: four times the lines
    of SGLang, llama.cpp per-request and rejected windows take about the same peak."""
    monkeypatch.setattr(logs, "POOL_AFTER", 200)
    bad = v1_line(100, (60, 35, 20)).replace("Accepted: 115", "Accepted: 116")
    llama = "draft acceptance rate = 0.57534 (  420 accepted /   730 generated)\n"

    def peak(n: int) -> int:
        lines = (
            (sglang_line(2 + (i % 50) / 100), bad, llama)[i % 3].rstrip("\n") for i in range(n)
        )
        parsed, top = traced_peak(lambda: logs.parse_log_lines(lines))
        assert parsed.used + parsed.rejected_count == n
        return top

    small, large = peak(3_000), peak(12_000)
    assert large < 1.3 * small, (small, large)


# ---------------------------------------------------------- item 10: TOML nested deeply


DEEP = {
    "100,000 nested arrays": "[config]\nk = " + "[" * 100_000 + "]" * 100_000 + "\n",
    "5,000 nested inline tables": "[config]\nk = " + "{a = " * 5_000 + "1" + "}" * 5_000 + "\n",
    "40 nested tables": "[config]\n" + "".join(f"[config{'.x' * i}]\n" for i in range(1, 41)),
}


@pytest.mark.parametrize("case", list(DEEP))
def test_a_deeply_nested_preset_is_one_line_naming_the_file(tmp_path, case):
    (tmp_path / "deep.toml").write_text(DEEP[case])
    line = one_error_line(spectui("run", "--preset", "deep.toml", check=False))
    assert "deep.toml: not valid TOML: arrays or tables nested more than 32 levels deep" in line


def test_presets_lists_the_others_and_marks_a_deeply_nested_one(isolated_dirs):
    presets, _ = isolated_dirs
    presets.mkdir()
    (presets / "deep.toml").write_text(DEEP["100,000 nested arrays"])
    (presets / "mine.toml").write_text('description = "fine"\n[config]\nk = 3\n')
    ran = spectui("presets")
    rows = {line.split("│")[1].strip(): line for line in ran.stdout.splitlines() if "│" in line}
    assert "default" in rows and "mine" in rows and "unreadable" not in rows["mine"]
    assert "unreadable" in rows["deep"] and "nested" in ran.stdout


def test_a_deeply_nested_spec_file_is_one_line(tmp_path):
    (tmp_path / "hardware.toml").write_text("x = " + "[" * 100_000 + "]" * 100_000 + "\n")
    with pytest.raises(SpecError, match="hardware.toml: not valid TOML: arrays or tables nested"):
        load_hardware(tmp_path)
