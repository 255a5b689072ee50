"""`spectui run` with a cost model: the issue's command prints the speedup, the cycle's draft
and verify times and the verify pass's bound; bad cost input is one line, exit 2."""

from __future__ import annotations

import json

import pytest

from engine.cost.specs import get_hardware, get_model
from tests.test_cli import spectui

ISSUE_COMMAND = [
    "run",
    "--cost",
    "roofline",
    "--gpu",
    "h100",
    "--target",
    "llama-3.1-8b",
    "--draft",
    "llama-3.2-1b",
    "--batch-size",
    "64",
    "--prompt-len",
    "8192",
    "--k",
    "4",
    "--n-sequences",
    "50",
]


def _pass_us(model, hw, n_tokens, batch, context):
    """The additive roofline of the model contract, written out by hand."""
    kv = 2 * model.layers * model.kv_heads * model.head_dim * 2.0
    flops = 2 * model.params * n_tokens + 4 * model.layers * model.d_model * context * n_tokens
    seconds = (
        model.params * model.bytes_per_weight / (0.81 * hw.mem_bw_bytes_s)
        + batch * context * kv / (1.0 * hw.mem_bw_bytes_s)
        + flops / (0.77 * hw.flops_bf16)
    )
    return 1e6 * seconds


def test_the_issue_command_prints_draft_and_verify_times_and_the_bound():
    out = spectui(*ISSUE_COMMAND).stdout
    h100, target, draft = get_hardware("h100"), get_model("llama-3.1-8b"), get_model("llama-3.2-1b")
    verify = _pass_us(target, h100, 64 * 5, 64, 8192)
    drafting = 4 * _pass_us(draft, h100, 64, 64, 8192)
    step = _pass_us(target, h100, 64, 64, 8192)
    lines = {line.split("  ")[0].strip("│ "): line for line in out.splitlines()}
    assert f"{drafting:,.1f} us" in lines["draft time / cycle"]
    assert f"{verify:,.1f} us" in lines["verify time / cycle"]
    assert f"{step:,.1f} us" in lines["decode step"]
    assert "memory-bound" in lines["verify pass"]
    assert "speedup (exact)" in out and "steady state at context 8192" in out
    assert "roofline on h100" in out


def test_json_carries_the_cycle_times():
    out = spectui(*ISSUE_COMMAND, "--json").stdout
    cost = json.loads(out)["cost"]
    assert cost["verify_bound"] == "memory"
    assert cost["cycle_us"] == pytest.approx(cost["draft_us"] + cost["verify_us"], rel=1e-12)
    assert json.loads(out)["config"]["workload.batch_size"] == 64


def test_at_large_batch_and_short_context_the_verify_pass_is_compute_bound():
    args = [
        "run",
        "--cost",
        "roofline",
        "--batch-size",
        "256",
        "--prompt-len",
        "0",
        "--k",
        "7",
        "--n-sequences",
        "20",
    ]
    assert "compute-bound" in spectui(*args).stdout


def test_the_linear_default_prints_the_original_costs():
    out = spectui("run", "--n-sequences", "20").stdout
    lines = [line for line in out.splitlines() if "time / cycle" in line]
    assert "100.0 us" in lines[0] and "200.0 us" in lines[1]  # 5 drafts x 20 us; one verify
    assert "linear: draft 20 us, verify 200 us" in out
    assert "verify pass" not in out  # a linear cost has no roofline bound


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--cost", "roofline", "--gpu", "h1000"], "cost.gpu: unknown hardware 'h1000'; known:"),
        (["--cost", "roofline", "--target", "gpt-9"], "cost.target: unknown model 'gpt-9'"),
        (["--cost", "table"], "cost.table: a file is required by this cost model"),
        (["--cost", "table", "--cost-table", "nope.csv"], "cost.table: nope.csv: No such file"),
        (
            ["--cost", "roofline", "--eta-w", "0"],
            "--eta-w: 0 is not allowed; expected a number in [1e-6, 1]",
        ),
        (["--batch-size", "0"], "--batch-size: 0 is not allowed; expected an integer in [1, 4096]"),
        (["--prompt-len", "-1"], "--prompt-len: -1 is not allowed"),
    ],
)
def test_bad_cost_input_is_one_line_and_exit_2(args, message):
    out = spectui("run", "--n-sequences", "5", *args, check=False)
    assert out.returncode == 2
    assert message in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr
