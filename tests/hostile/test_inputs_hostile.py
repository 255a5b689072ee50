"""Hostile inputs (issue 23): each test reproduces a failure found by the probe battery on
main 6c79882 and asserts what the user sees instead. Grouped by item of the issue."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

LOGS = Path(__file__).parent.parent / "fixtures" / "logs"
HOSTILE = "x'; touch PWNED; echo '"

# ------------------------------------------------------------- 3. emitted commands


def _emitted(out: str, engine: str) -> str:
    (line,) = [line for line in out.splitlines() if line.startswith(f"  {engine}: ")]
    return line.removeprefix(f"  {engine}: ")


def test_calibrate_refuses_an_unknown_method_in_one_line(cli, tmp_path):
    status, out, err = cli("calibrate", str(LOGS / "vllm_v1_mean_length.log"), "--method", HOSTILE)
    assert status == 2 and out == ""
    assert len(err.strip().splitlines()) == 1
    assert "--method" in err and "eagle3" in err
    assert not (tmp_path / "PWNED").exists()


@pytest.mark.parametrize("method", ["eagle3", "ngram", "mtp"])
def test_calibrate_emits_lines_a_shell_splits_into_the_intended_arguments(cli, method):
    import json

    status, out, err = cli("calibrate", str(LOGS / "vllm_v1_mean_length.log"), "--method", method)
    assert status == 0, err
    (k,) = {
        line.split("recommended K = ")[1].split(":")[0]
        for line in out.splitlines()
        if "recommended K = " in line
    }
    flag, config = shlex.split(_emitted(out, "vllm"))
    assert flag == "--speculative-config"
    assert json.loads(config) == {"method": method, "num_speculative_tokens": int(k)}
    assert shlex.split(_emitted(out, "llama.cpp")) == [
        "--draft-max",
        k,
        "--draft-min",
        "0",
        "--draft-p-min",
        "0",
    ]
    sglang = shlex.split(_emitted(out, "sglang"))
    assert sglang[-6:] == [
        "--speculative-num-steps",
        k,
        "--speculative-eagle-topk",
        "1",
        "--speculative-num-draft-tokens",
        str(int(k) + 1),
    ]


def test_emit_refuses_a_method_a_shell_would_run():
    from engine.calibrate.fit import calibrate, emit, recommend
    from engine.calibrate.logs import parse_log_file
    from engine.config import SpecConfig

    cal = calibrate(parse_log_file(LOGS / "vllm_v1_mean_length.log").windows)
    rec = recommend(cal, SpecConfig(), k_max=4, draws=0)
    with pytest.raises(ValueError, match="method: expected one of"):
        emit(rec, cal, HOSTILE)


def test_serve_quotes_the_preset_path_in_the_command_it_runs(cli, tmp_path, monkeypatch):
    """textual-serve runs the command through a shell: a preset whose file name holds a
    quote and a command substitution must reach spectui as one argument."""
    pytest.importorskip("textual_serve.server")
    preset = tmp_path / 'it\'s "$(touch PWNED)".toml'
    preset.write_text("[config]\nk = 3\n")
    seen: list[str] = []
    monkeypatch.setattr("spectui.served.serve", lambda command, **_: seen.append(command))
    status, _, err = cli("serve", "--preset", str(preset))
    assert status == 0, err
    assert shlex.split(seen[0]) == [sys.executable, "-m", "spectui", "--preset", str(preset)]
