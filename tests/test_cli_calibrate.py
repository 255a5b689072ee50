"""`spectui calibrate`: from a serving log to a K, asserted on what it prints."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np
import pytest

from engine.calibrate.fit import calibrate
from engine.calibrate.logs import parse_log_file
from engine.core.config import SpecConfig
from engine.simulate.exact import exact_metrics_many

LOGS = Path(__file__).parent / "fixtures" / "logs"
ANCHOR = Path(__file__).parent / "fixtures" / "anchors" / "vllm_20780.csv"


@pytest.fixture
def run(cli):
    """`spectui calibrate ARGS` in this process (the `cli` fixture of tests/conftest.py)."""
    return lambda *args: cli("calibrate", *args)


def test_a_vllm_log_gives_rates_a_model_and_a_k(run):
    status, out, err = run(str(LOGS / "vllm_v1_mean_length.log"))
    assert status == 0, err
    # The fixture's line: 129 drafts (387 drafted tokens at K = 3), cumulative rates
    # 0.543, 0.357, 0.264: position 1 reached by all 129, accepted by 70; position 2
    # reached by 70, accepted by 46; position 3 reached by 46, accepted by 34.
    assert "Calibration: 1 window (vllm-v1), 129 drafts, K = 3" in out
    for row in ("1       129         70   0.543", "2        70         46   0.657"):
        assert row in out
    chosen = [line.split()[0] for line in out.splitlines() if line.rstrip().endswith("chosen")]
    assert len(chosen) == 1
    # The printed K is the best exact speedup of the chosen model under the default cost
    cal = calibrate(parse_log_file(LOGS / "vllm_v1_mean_length.log").windows)
    configs = [cal.config(SpecConfig()).replace(k=k) for k in range(1, 17)]
    best = int(np.argmax(exact_metrics_many(configs)["speedup_exact"])) + 1
    assert f"recommended K = {best}: speedup" in out
    assert f'"num_speculative_tokens": {best}' in out
    assert f"--draft-max {best} " in out and f"max_draft_len: {best}" in out
    assert "within 2 % of the best: K" in out and "at the log's K = 3" in out


def test_json_and_standard_input(run, monkeypatch):
    text = (LOGS / "vllm_prometheus.prom").read_text()
    monkeypatch.setattr("sys.stdin", io.StringIO(text))
    status, out, _ = run("-", "--json")
    assert status == 0
    payload = json.loads(out)
    assert payload["windows"] == 2 and payload["k"] == 3
    rec = payload["recommendation"]
    assert rec["low"] <= rec["speedup"] <= rec["high"]
    assert rec["k"] in rec["band"]
    assert sum(m["chosen"] for m in payload["models"]) == 1
    assert set(payload["configs"]) == {"vllm", "sglang", "llama.cpp", "tensorrt-llm"}


def test_a_mean_length_only_log_needs_its_k(run):
    status, _, err = run(str(LOGS / "sglang_decode.log"))
    assert status == 2 and "--log-k N" in err and "Traceback" not in err
    status, out, _ = run(str(LOGS / "sglang_decode.log"), "--log-k", "3")
    assert status == 0
    assert "only the fixed model can be" in " ".join(out.split())
    assert "interval unknown: the log gives no draft count" in " ".join(out.split())


def test_cost_points_fit_the_linear_cost(run, tmp_path):
    """The EAGLE 1 sweep of vllm-project/vllm#20780: TPOT x M / baseline against K is a
    line, fixed + per_token x K target steps."""
    rows = [r for r in csv.DictReader(line for line in ANCHOR.open() if not line.startswith("#"))]
    eagle = [r for r in rows if r["method"] == "eagle"]
    points = tmp_path / "points.csv"
    with points.open("w") as handle:
        handle.write("k,mean_length,tpot\n0,1,7.07\n")
        for r in eagle:
            handle.write(f"{r['k']},{r['mean_length']},{r['tpot_ms']}\n")
    ks = np.array([int(r["k"]) for r in eagle], dtype=float)
    steps = np.array([float(r["tpot_ms"]) * float(r["mean_length"]) / 7.07 for r in eagle])
    per_token, fixed = np.polyfit(ks, steps, 1)
    log = str(LOGS / "vllm_v1_mean_length.log")
    # K up to 4 (not 16): the fitted cost is what is tested, not the K it recommends.
    status, out, err = run(log, "--cost-points", str(points), "--calibrate-k-max", "4")
    assert status == 0, err
    assert f"a cycle costs {fixed:.3f} + {per_token:.3f} x K target steps" in out
    # priced as the linear cost with a fixed cost per drafting cycle, and said so
    drafting = (fixed - 1.0) * 1000.0
    assert f"+ {drafting:g} us per drafting cycle" in " ".join(out.split())


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nope.log"], "nope.log: cannot read"),
        (["--log-k", "0", "LOG"], "--log-k: '0' is not allowed; expected an integer in [1, 1024]"),
        (["--cost-points", "POINTS", "LOG"], "row 2: expected columns k,mean_length,tpot"),
        (["--cost-points", "NAN", "LOG"], "row 3: k >= 0, mean_length >= 1, tpot > 0"),
        (["--cost-points", "BINARY", "LOG"], "not a text file (UTF-8 CSV expected)"),
    ],
)
def test_bad_input_is_one_line(run, tmp_path, args, message):
    empty = tmp_path / "empty.log"
    empty.write_text("hello\nworld\n")
    bad = tmp_path / "points.csv"
    bad.write_text("k,mean_length,tpot\nx,1,2\n")
    args = [str(LOGS / "vllm_v1_mean_length.log") if a == "LOG" else a for a in args]
    args = [str(bad) if a == "POINTS" else a for a in args]
    nan = tmp_path / "nan.csv"
    nan.write_text("k,mean_length,tpot\n0,1,7\n2,nan,4\n")
    binary = tmp_path / "points.bin"
    binary.write_bytes(bytes(range(256)))
    args = [str(nan) if a == "NAN" else str(binary) if a == "BINARY" else a for a in args]
    status, _, err = run(*args)
    assert status == 2 and message in err and "Traceback" not in err
    status, _, err = run(str(empty))
    assert status == 2 and "nothing usable in 2 lines" in err


def test_a_tree_scenario_is_calibrated_as_a_chain(run):
    """A log's K is a chain's: the recommendation for a tree-shaped scenario is the chain's,
    and the adaptive note does not ask a tree to run a K policy."""
    log = str(LOGS / "vllm_v1_mean_length.log")
    k_max = ("--calibrate-k-max", "6")  # K in 1..6, not 1..16: the same comparison, cheaper
    _, chain_out, _ = run(log, "--json", *k_max)
    status, tree_out, err = run(log, "--json", *k_max, "--shape", "tree", "--tree", "sequoia:8,3")
    assert status == 0, err
    assert json.loads(tree_out)["recommendation"] == json.loads(chain_out)["recommendation"]
