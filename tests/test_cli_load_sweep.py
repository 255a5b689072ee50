"""Load sweeps: a preset's grid of scenarios (K here) times levels and policies, the same
bytes in one process, on two worker processes and on Dask, and resumable after Ctrl-C."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.dask_fixtures import in_process_cluster

PRESET = """
description = "a load sweep over K"
[config]
"cost.model" = "roofline"
acceptance_rate = 0.75
tokens_per_seq = 64
"workload.prompt_len" = 256
[[grid]]
k = [2, 4]
[load]
rate = [2, 12]
policies = ["off", "fixed"]
requests = 40
replications = 2
"""


@pytest.fixture
def preset(tmp_path: Path) -> Path:
    path = tmp_path / "load-grid.toml"
    path.write_text(PRESET)
    return path


def test_the_same_bytes_in_one_process_on_two_and_on_dask(cli, preset, tmp_path):
    files = {}
    with in_process_cluster(2, dashboard=False) as cluster:
        for name, flags in {
            "one": (),
            "two": ("--workers", "2"),
            "dask": ("--scheduler", cluster.scheduler_address),
        }.items():
            out = tmp_path / f"{name}.csv"
            status, shown, err = cli("load", "--preset", str(preset), "--csv", str(out), *flags)
            assert status == 0, err
            assert shown.count("scenario: k ") == 2
            files[name] = out.read_bytes()
    assert len(set(files.values())) == 1
    lines = files["one"].decode().splitlines()
    assert lines[0].startswith("k,level,policy,throughput_tok_s,")
    assert [line.split(",")[:3] for line in lines[1:]] == [
        [k, level, policy]
        for k in ("2", "4")
        for level in ("2.0", "12.0")
        for policy in ("off", "fixed")
    ]


def test_resume_after_ctrl_c_gives_the_uninterrupted_file(cli, preset, tmp_path, monkeypatch):
    import engine.serve.load as load

    full = tmp_path / "full.csv"
    assert cli("load", "--preset", str(preset), "--csv", str(full))[0] == 0
    real, calls = load.run_cell, []

    def interrupted(*args, **kwargs):
        calls.append(1)
        if len(calls) > 5:  # k = 2's two levels and the first of k = 4
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    out = tmp_path / "resumed.csv"
    monkeypatch.setattr(load, "run_cell", interrupted)
    status, _, err = cli("load", "--preset", str(preset), "--csv", str(out))
    assert status == 130 and "interrupted" in err
    assert len(out.read_text().splitlines()) == 1 + 5
    monkeypatch.setattr(load, "run_cell", real)
    status, shown, err = cli("load", "--preset", str(preset), "--csv", str(out), "--resume")
    assert status == 0, err
    assert "kept 5 rows of" in shown
    assert out.read_bytes() == full.read_bytes()


def test_resume_needs_a_csv_and_records_need_one_process(cli, preset, tmp_path):
    status, _, err = cli("load", "--preset", str(preset), "--resume")
    assert status == 2 and "--resume: needs --csv FILE" in err
    status, _, err = cli(
        "load", "--preset", str(preset), "--workers", "2", "--records", str(tmp_path / "r.csv")
    )
    assert status == 2 and "--records: streams from one process" in err


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (("--workers", "9999"), "--workers: 9999 is not an integer in [0, 64]"),
        (("--scheduler", "bogus"), "'bogus' is not a scheduler address (tcp://HOST:PORT)"),
    ],
)
def test_bad_runner_flags_are_one_line(cli, preset, flags, message):
    status, out, err = cli("load", "--preset", str(preset), *flags)
    assert (status, out) == (2, "") and message in err and len(err.splitlines()) == 1
