"""Issue #41: impossible hardware is refused by every command alike, in one line naming the
field, exit status 2, before any work (engine.cost.placement; the engine's cases and their
arithmetic: tests/engine/cost/test_feasibility.py)."""

from __future__ import annotations

import pytest

# Llama-3.1-405B and the 1B draft in bf16 take (405,853,388,800 + 1,235,814,400) x 2 bytes;
# an A100 80GB gives at most 80 - 2 GB (the server's reserve).
TOO_BIG = ("--cost", "roofline", "--gpu", "a100-80gb", "--target", "llama-3.1-405b")
TOO_BIG_LINE = (
    "cost.target: llama-3.1-405b and llama-3.2-1b take 814.2 GB a GPU of a100-80gb's 78.0 GB "
    "usable (gpu_memory_utilization 1, reserve 2 GB): the weights do not fit; spread them "
    "over more GPUs (cost.tp) or use a bigger GPU"
)
ODD_TP = ("--cost", "roofline", "--tp", "3")
ODD_TP_LINE = (
    "cost.tp: 3 does not divide llama-3.1-8b's 32 attention heads; choose 1, 2, 4, 8, 16 or 32"
)
# What each command needs besides the scenario (load: a level).
COMMANDS = {"run": (), "regime": (), "arena": (), "tree": (), "load": ("--rate", "1")}


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize(
    ("flags", "line"),
    [(TOO_BIG, TOO_BIG_LINE), (ODD_TP, ODD_TP_LINE)],
    ids=["weights-do-not-fit", "tp-3-of-32-heads"],
)
def test_every_command_refuses_the_same_setup_in_the_same_line(cli, command, flags, line):
    status, out, err = cli(command, *COMMANDS[command], *flags)
    assert (status, out) == (2, "")
    assert err.splitlines() == [f"spectui {command}: error: {line}"]


def test_a_preset_and_a_sweeps_grid_are_refused_naming_the_file(cli, tmp_path):
    big = tmp_path / "big.toml"
    big.write_text(
        'description = "too big"\n[config]\n"cost.model" = "roofline"\n'
        '"cost.gpu" = "a100-80gb"\n"cost.target" = "llama-3.1-405b"\n'
    )
    status, out, err = cli("run", "--preset", str(big))
    assert (status, out) == (2, "")
    assert err.splitlines() == [f"spectui run: error: {big}: config.{TOO_BIG_LINE}"]
    grid = tmp_path / "grid.toml"
    grid.write_text(
        'description = "tp"\n[config]\n"cost.model" = "roofline"\n'
        '[[grid]]\n"cost.tp" = [1, 3]\nk = [1, 2]\n'
    )
    out_csv = tmp_path / "rows.csv"
    status, out, err = cli("sweep", "--preset", str(grid), "--exact-only", "--out", str(out_csv))
    assert (status, out) == (2, "")
    assert err.splitlines() == [
        f"spectui sweep: error: {grid}: a configuration of its grid: {ODD_TP_LINE}"
    ]
    assert not out_csv.exists() and not out_csv.with_name("rows.csv.partial").exists()


def test_run_accepts_what_load_can_serve_and_load_says_how(cli):
    # Llama-3.1-70B in fp8 with the bf16 1B draft: 73.0 GB on one H100 (80 GB): more than
    # load's default 0.9 x 80 - 2 = 70.0 GB, less than the 78.0 GB at utilization 1.
    setup = ("--cost", "roofline", "--target", "llama-3.1-70b", "--weight-dtype", "fp8")
    status, out, err = cli("run", *setup, "--n-sequences", "2", "--tokens-per-seq", "8")
    assert status == 0 and "speedup" in out, err
    status, out, err = cli("load", "--rate", "1", *setup)
    assert (status, out) == (2, "")
    assert err.splitlines() == [
        "spectui load: error: cost.target: llama-3.1-70b and llama-3.2-1b take 73.0 GB a GPU "
        "of h100's 70.0 GB usable (gpu_memory_utilization 0.9, reserve 2 GB): the weights do "
        "not fit; raise gpu_memory_utilization (at 1 they fit), spread them over more GPUs "
        "(cost.tp) or use a bigger GPU"
    ]
