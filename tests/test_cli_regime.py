"""`spectui regime`: the regime map on the command line, asserted on what it prints."""

from __future__ import annotations

import csv
import json
import re

import pytest

from engine.analysis.formatting import LOSE_MARK, speedup_text
from engine.core.config import SpecConfig
from engine.core.parts import COST
from engine.simulate.exact import speedup_exact

SMALL = ["--batch-sizes", "1,64,512", "--contexts", "0,1k,32k", "--ks", "1,2,3,4,6,8"]


@pytest.fixture
def run(cli):
    """`spectui regime ARGS` in this process (the `cli` fixture of tests/conftest.py)."""
    return lambda *args: cli("regime", *args)


def _row(out: str, batch: int) -> list[str]:
    """The printed cells of the row for ``batch`` (after its label)."""
    for line in out.splitlines():
        if re.match(rf"^\s*{batch}\s", line):
            return re.findall(rf"\d+{LOSE_MARK}?≈?{LOSE_MARK}? \d+\.\d\d", line)
    raise AssertionError(f"no row for batch {batch} in:\n{out}")


def test_default_map_is_roofline_and_fits_80_columns(run):
    status, out, err = run()
    assert status == 0, err
    lines = out.splitlines()
    assert all(len(line) <= 80 for line in lines)
    assert "roofline on h100: llama-3.1-8b verifies, llama-3.2-1b drafts" in out
    header = next(line for line in lines if line.lstrip().startswith("batch"))
    assert header.split() == ["batch", "1k", "2k", "4k", "8k", "16k", "32k", "64k", "128k"]
    for batch in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512):
        assert len(_row(out, batch)) == 8
    # Cell (batch 1, 1k): K* and the exact speedup of that configuration.
    base = SpecConfig(cost_model="roofline", batch_size=1, prompt_len=1024)
    best = max(range(1, 17), key=lambda k: (speedup_exact(base.replace(k=k)), -k))
    expected = f"{best} {speedup_text(speedup_exact(base.replace(k=best)), unit='')}"
    assert _row(out, 1)[0] == expected
    assert "K* and its speedup per cell" in out and "no K pays: speculation off" in out
    assert "some K pays in every cell" in out


def test_no_pay_cells_are_marked_with_a_legend(run):
    status, out, _ = run(
        "--draft", "eagle-llama-3.1-8b", "--acceptance-rate", "0.6", *SMALL, "--gpu", "h100"
    )
    assert status == 0
    cells = _row(out, 512)
    assert cells[0].startswith(f"1{LOSE_MARK} 0.")  # batch 512, context 0: no K pays
    assert LOSE_MARK not in "".join(cells[1:])  # long context pays again
    assert LOSE_MARK not in "".join(_row(out, 1))
    assert "no K pays in 1 of 9 cells; off from batch 512 at context 0" in out
    assert f"{LOSE_MARK} no K pays" in out


def test_scenario_flags_reach_the_map(run):
    status, out, _ = run(
        "--cost", "roofline_max", "--gpu", "a100-80gb", "--target", "vicuna-13b",
        "--draft", "llama-3.2-1b", "--draft-model", "position_decay", "--decay-base", "0.9",
        "--tokens-per-seq", "64", "--tail", "clamp", *SMALL,
    )  # fmt: skip
    assert status == 0
    assert "roofline_max on a100-80gb: vicuna-13b verifies, llama-3.2-1b drafts" in out
    assert "position_decay decay_base=0.9, decay_factor=0.95" in out
    assert "T=64, tail clamp" in out
    config = SpecConfig(
        cost_model="roofline_max", gpu="a100-80gb", target="vicuna-13b",
        draft_model="position_decay", decay_base=0.9, tokens_per_seq=64, tail="clamp",
        batch_size=64, prompt_len=32768,
    )  # fmt: skip
    speedups = {k: speedup_exact(config.replace(k=k)) for k in (1, 2, 3, 4, 6, 8)}
    best = max(speedups, key=lambda k: (speedups[k], -k))
    assert _row(out, 64)[2] == f"{best} {speedup_text(speedups[best], unit='')}"


def test_linear_cost_says_it_has_no_batch_or_context_dependence(run):
    status, out, _ = run("--cost", "linear", *SMALL)
    assert status == 0
    assert "linear cost model has no batch or context dependence" in out
    assert len({cell for b in (1, 64, 512) for cell in _row(out, b)}) == 1


def test_k_max(run):
    status, out, _ = run("--k-max", "3", "--batch-sizes", "1", "--contexts", "1k")
    assert status == 0
    assert "K 1..3" in out
    assert _row(out, 1)[0].startswith("3 ")  # K* = 3 of 1..3 at batch 1


def test_json_and_csv(run, tmp_path):
    target = tmp_path / "map.csv"
    status, out, _ = run("--json", "--csv", str(target), *SMALL)
    assert status == 0
    payload = json.loads(out)
    assert payload["batch_sizes"] == [1, 64, 512] and payload["contexts"] == [0, 1024, 32768]
    assert payload["ks"] == [1, 2, 3, 4, 6, 8]
    assert payload["config"]["cost.model"] == "roofline"
    config = SpecConfig(cost_model="roofline", batch_size=512, prompt_len=0, k=3)
    assert payload["speedup"][2][0][2] == speedup_exact(config)
    rows = list(csv.DictReader(target.open()))
    assert len(rows) == 9
    assert rows[0]["batch_size"] == "1" and rows[0]["prompt_len"] == "0"
    assert float(rows[-1]["speedup_k8"]) == payload["speedup"][2][2][5]
    assert [r["k_opt"] for r in rows] == [str(k) for row in payload["k_opt"] for k in row]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--batch-sizes", "0,4"], "--batch-sizes: workload.batch_size: 0 is not allowed"),
        (["--batch-sizes", "x"], "workload.batch_size: 'x' is not an integer"),
        (["--contexts", "1q"], "workload.prompt_len: '1q' is not an integer"),
        (["--k-max", "2000"], "k: 2000 is not allowed; expected an integer in [1, 1024]"),
        (["--ks", "1,0"], "k: 0 is not allowed"),
        (["--batch-size", "8"], "--batch-size: the map varies this; use --batch-sizes"),
        (["--prompt-len", "8"], "--prompt-len: the map varies this; use --contexts"),
        (["--k", "3"], "--k: the map varies this; use --ks or --k-max"),
        (["--gpu", "nope"], "cost.gpu: unknown hardware 'nope'"),
        (["--acceptance-rate", "1.5"], "--acceptance-rate: 1.5 is not allowed; expected a number"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(run, args, message):
    status, out, err = run(*args)
    assert status == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1, err
    assert message in err
    assert "Traceback" not in err


def test_help_names_the_axes_and_the_roofline_default(run):
    status, out, _ = run("--help")
    assert status == 0
    help_text = " ".join(out.split())
    assert "--batch-sizes LIST" in help_text and "--contexts LIST" in help_text
    assert "--k-max N" in help_text and "--json" in help_text and "--csv FILE" in help_text
    choices = ",".join(COST.names())  # every cost model, in the registry's order
    cost_help = help_text.split(f"--cost {{{choices}}}")[-1]
    assert "(default: roofline)" in cost_help.split("--")[0]
