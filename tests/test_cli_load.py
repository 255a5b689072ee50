"""``spectui load`` as a user runs it: the table and its verdicts, the schedule it emits,
its files, and hostile values refused in one line."""

from __future__ import annotations

import csv
import itertools
import json
import re
import shlex
from pathlib import Path

import pytest

FAST = ("--cost", "roofline", "--requests", "60", "--replications", "2", "--k", "4")


def test_the_table_verdicts_and_schedules(cli):
    status, out, err = cli("load", *FAST, "--rate", "2,40", "--policies", "off,fixed")
    assert status == 0, err
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["req/s", "policy", "tok/s"]
    rows = [line.split() for line in lines[1:5]]
    assert [(r[0], r[1]) for r in rows] == [
        ("2", "off"),
        ("2", "fixed"),
        ("40", "off"),
        ("40", "fixed"),
    ]
    # TPOT p50 (the 7th cell, after "tok/s ±ci" and TTFT p50/p99): speculation halves it.
    tpot = {(r[0], r[1]): float(r[6]) for r in rows}
    assert tpot[("2", "fixed")] < 0.7 * tpot[("2", "off")]
    assert re.search(r"^speculation (pays|stops paying) in throughput", out, re.M)
    assert re.search(r"^best policy by level: 2: \w+, 40: \w+$", out, re.M)
    # The paired gain: every policy served the same requests with the same draws.
    gain = re.search(r"^  rate 40: fixed ([+-]\d+\.\d) % ±(\d+\.\d)$", out, re.M)
    assert gain is not None, out
    vllm = next(line for line in lines if line.startswith("vLLM: "))
    flag, value = shlex.split(vllm[len("vLLM: ") :])
    assert flag == "--speculative-config"
    config = json.loads(value)
    ranges = config["num_speculative_tokens_per_batch_size"]
    assert ranges[0][0] == 1 and ranges[-1][1] == 256
    assert all(a[1] + 1 == b[0] for a, b in itertools.pairwise(ranges))
    assert config["num_speculative_tokens"] == max(k for _, _, k in ranges)
    assert "draft_len_schedule: {" in out and "SGLang (batch 1): --speculative-num-steps" in out
    # By batch size and context: five-item entries, shell-quoted as well.
    wide = next(line for line in lines if line.startswith("vLLM by batch size and context"))
    flag, value = shlex.split(wide.split("): ", 1)[1])
    entries = json.loads(value)["num_speculative_tokens_per_batch_size"]
    assert flag == "--speculative-config" and {len(e) for e in entries} == {5}
    assert entries[0][:4] == [1, entries[0][1], 0, 1023]


def test_csv_json_and_records(cli, tmp_path):
    table, records = tmp_path / "load.csv", tmp_path / "requests.csv"
    status, out, err = cli(
        "load", *FAST, "--concurrency", "4", "--policies", "off,fixed,budget",
        "--csv", str(table), "--records", str(records), "--json",
    )  # fmt: skip
    assert status == 0, err
    payload = json.loads(out)
    assert {c["policy"] for c in payload["cells"]} == {"off", "fixed", "budget"}
    with table.open() as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 3 and float(rows[0]["level"]) == 4.0 and "tpot_p99_ms_ci95" in rows[0]
    with records.open() as handle:
        finished = list(csv.DictReader(handle))
    assert len(finished) == 3 * 2 * 60  # every request of every run, streamed
    assert all(float(r["first_token_s"]) <= float(r["last_token_s"]) for r in finished)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (("--rate", "0"), "rate: must be numbers in (0, 10000] requests/s"),
        (("--rate", "nan"), "rate: must be numbers in (0, 10000]"),
        (("--rate", "1,x"), "--rate: expected numbers"),
        (("--concurrency", "0"), "concurrency: must be whole numbers in [1, 4096]"),
        (("--rate", "1", "--policies", "off,magic"), "policies: unknown magic (known: off,"),
        (("--rate", "1", "--slo-tpot-ms", "-3"), "--slo-tpot-ms: must be a number in (0,"),
        (("--rate", "1", "--cv", "0"), "cv: must be a number in (0, 10]"),
        (
            ("--rate", "1", "--replications", "0"),
            "--replications: must be a whole number in [1, 100]",
        ),
        (
            ("--rate", "1", "--max-num-batched-tokens", "8"),
            "--max-num-batched-tokens: must be at least",
        ),
        (("--rate", "1", "--target", "llama-3.1-405b"), "cost.target: llama-3.1-405b and"),
        (("--rate", "1", "--gpu-memory-utilization", "2"), "--gpu-memory-utilization: must be"),
    ],
)
def test_hostile_values_are_one_line_and_exit_2(cli, flags, message):
    status, out, err = cli("load", *FAST, *flags)
    assert status == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and message in err, err


def test_a_cancelled_run_keeps_its_finished_levels_and_leaves_no_records(
    cli, tmp_path, monkeypatch
):
    import engine.serve.load as load

    table, records = tmp_path / "load.csv", tmp_path / "requests.csv"
    real = load.simulate_load
    calls = []

    def interrupted(*args, **kwargs):
        calls.append(1)
        if len(calls) > 4:  # the first level's two policies, two replications each
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(load, "simulate_load", interrupted)
    status, out, err = cli(
        "load", *FAST, "--rate", "2,4", "--csv", str(table), "--records", str(records)
    )
    assert status == 130 and "interrupted" in err
    assert [line.split()[:2] for line in out.splitlines()[1:]] == [["2", "off"], ["2", "fixed"]]
    with table.open() as handle:
        assert [(r["level"], r["policy"]) for r in csv.DictReader(handle)] == [
            ("2.0", "off"),
            ("2.0", "fixed"),
        ]
    assert not records.exists()


def test_a_presets_load_table_runs_and_flags_override_it(cli):
    status, out, err = cli(
        "load", "--preset", "sglang-eagle3-8b", "--concurrency", "2,64", "--requests", "40",
        "--replications", "1",
    )  # fmt: skip
    assert status == 0, err
    rows = [line.split()[:2] for line in out.splitlines()[1:5]]
    assert rows == [["2", "off"], ["2", "fixed"], ["64", "off"], ["64", "fixed"]]


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ("rate = [1]\nmagic = 3\n", "load.magic: unknown load setting (known: rate,"),
        ("rate = [0]\n", "load.rate: must be numbers in (0, 10000]"),
        ("rate = [1]\nconcurrency = [2]\n", "load.rate: give a rate (open loop), a concurrency"),
        ('rate = [1]\npolicies = ["off", "nope"]\n', "load.policies: unknown nope"),
        ('rate = ["fast"]\n', "load.rate: expected numbers"),
        ('rate = [1]\nlengths = "sharegpt"\n', "load.lengths: must be one of fixed, uniform"),
    ],
)
def test_a_bad_load_table_is_one_line_naming_the_file(tmp_path, table, message):
    from engine.presets import PresetError, load_preset

    path = tmp_path / "mine.toml"
    path.write_text(f'description = "x"\n[config]\nk = 3\n[load]\n{table}')
    with pytest.raises(PresetError) as caught:
        load_preset(str(path))
    text = str(caught.value)
    assert str(path) in text and message in text and "\n" not in text


def test_records_to_parquet(cli, tmp_path):
    import pyarrow.parquet as pq

    path = tmp_path / "requests.parquet"
    status, _, err = cli("load", *FAST, "--rate", "3", "--records", str(path))
    assert status == 0, err
    table = pq.read_table(path).to_pydict()
    assert len(table["request"]) == 2 * 2 * 60  # two policies, two replications
    assert set(table["policy"]) == {"off", "fixed"} and set(table["level"]) == {3.0}
    assert all(a <= f <= last for a, f, last in zip(
        table["arrival_s"], table["first_token_s"], table["last_token_s"], strict=True
    ))  # fmt: skip


TRACE = "tests/fixtures/traces/azure_conv_2023_head.csv"
REPO = Path(__file__).resolve().parent.parent


def test_a_real_trace_served_faster_and_faster(cli):
    trace = REPO / TRACE
    status, out, err = cli(
        "load", "--cost", "roofline", "--trace", str(trace), "--speeds", "1,8",
        "--requests", "120", "--replications", "1",
    )  # fmt: skip
    assert status == 0, err
    rows = [line.split() for line in out.splitlines()[1:5]]
    assert out.splitlines()[0].split()[0] == "speed"
    assert [(r[0], r[1]) for r in rows] == [
        ("1", "off"),
        ("1", "fixed"),
        ("8", "off"),
        ("8", "fixed"),
    ]
    # Eight times the arrival rate: more tokens a second, and a slower TPOT.
    assert float(rows[2][2]) > 4 * float(rows[0][2]) and float(rows[2][6]) > float(rows[0][6])


def test_a_trace_that_is_not_a_regular_file_is_refused_without_blocking(cli, tmp_path):
    import os

    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)  # a reader that would never end
    for path, message in ((fifo, "not a regular file"), (tmp_path, "not a regular file")):
        status, out, err = cli("load", *FAST, "--trace", str(path))
        assert (status, out) == (2, "") and message in err and len(err.splitlines()) == 1


def test_a_trace_too_large_is_refused_unread(cli, tmp_path, monkeypatch):
    import engine.serve.workload as workload

    monkeypatch.setattr(workload, "TRACE_MAX_BYTES", 64)
    path = tmp_path / "big.csv"
    path.write_text("arrival_s,prompt_tokens,output_tokens\n" + "1,2,3\n" * 100)
    status, _, err = cli("load", *FAST, "--trace", str(path))
    assert status == 2 and "larger than the 64 bytes trace may be" in err


def test_a_trace_with_a_rate_is_one_line(cli):
    status, _, err = cli("load", *FAST, "--rate", "2", "--trace", TRACE)
    assert status == 2 and "give a rate (open loop), a concurrency (closed loop) or a trace" in err


def test_a_trace_is_read_once_for_every_level_policy_and_replication(cli, monkeypatch):
    import engine.serve.workload as workload

    reads = []
    real = workload.read_trace
    monkeypatch.setattr(workload, "read_trace", lambda *a: reads.append(a) or real(*a))
    status, _, err = cli(
        "load", "--cost", "roofline", "--trace", str(REPO / TRACE), "--speeds", "1,2",
        "--requests", "30",
        "--replications", "2",
    )  # fmt: skip
    assert status == 0, err
    assert len(reads) == 1  # 2 speeds x 2 policies x 2 replications served it


def test_building_the_command_line_imports_no_numpy():
    # Every start (a subcommand or the app) builds every subcommand's parser, load's too.
    import subprocess
    import sys

    code = (
        "import sys; from spectui.cli.parser import build_parser; build_parser(); "
        "print(sorted(m for m in ('numpy', 'pandas') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
