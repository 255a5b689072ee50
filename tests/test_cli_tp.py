"""The presets of issue #26's costs (tensor parallelism, weight formats, MoE), through a
sweep and the analysis, as a user runs them."""

from __future__ import annotations

import re

import pandas as pd
import pytest


def sweep(cli, tmp_path, preset):
    """``spectui sweep --preset PRESET --exact-only``: its rows."""
    out = tmp_path / f"{preset}.csv"
    status, _, err = cli("sweep", "--preset", preset, "--exact-only", "--out", str(out))
    assert status == 0, err
    return out, pd.read_csv(out)


def best_k(frame, by):
    """(K*, its exact speedup) per group of ``by`` columns."""
    best = {}
    for key, rows in frame.groupby(by):
        row = rows.loc[rows["speedup_exact"].idxmax()]
        best[key if len(by) > 1 else key[0]] = (int(row["k"]), float(row["speedup_exact"]))
    return best


def test_more_gpus_for_the_target_lower_the_best_k_and_its_speedup(cli, tmp_path):
    out, frame = sweep(cli, tmp_path, "tp-70b-h100")
    assert sorted(frame["cost.tp"].unique()) == [2, 4, 8]
    status, shown, _ = cli("analyze", str(out))
    assert status == 0 and "rows: cost.tp;" in shown
    best = best_k(frame, ["cost.tp"])
    for tp in (2, 4, 8):
        cell = rf"tp={tp} │\s+{best[tp][0]} {best[tp][1]:.2f}\s"
        assert re.search(cell, shown), cell
    # The draft stays on one GPU while the target's step shrinks: drafting gets dearer.
    ks, speedups = zip(*(best[tp] for tp in (2, 4, 8)), strict=True)
    assert list(ks) == sorted(ks, reverse=True) and ks[0] > ks[-1]
    assert list(speedups) == sorted(speedups, reverse=True)


def test_an_fp8_target_makes_the_same_bf16_draft_dearer(cli, tmp_path):
    _, frame = sweep(cli, tmp_path, "fp8-vs-bf16")
    best = best_k(frame, ["cost.weight_dtype", "cost.compute_dtype", "workload.batch_size"])
    for batch in (1, 64):
        bf16, fp8 = best[("model", "bf16", batch)], best[("fp8", "bf16", batch)]
        assert fp8[0] < bf16[0] and fp8[1] < bf16[1]
    # fp8 matmuls matter where a pass is compute-bound: at batch 64, hardly at batch 1.
    assert best[("fp8", "fp8", 1)] == pytest.approx(best[("fp8", "bf16", 1)], rel=1e-2)
    assert best[("fp8", "fp8", 64)][1] > best[("fp8", "bf16", 64)][1]


def test_an_moe_target_wants_a_shorter_draft_at_batch_1_and_a_longer_one_at_64(cli, tmp_path):
    _, frame = sweep(cli, tmp_path, "moe-vs-dense")
    best = best_k(frame, ["cost.target", "workload.batch_size"])
    moe, dense = "qwen3-30b-a3b", "llama-3.2-3b"
    assert best[(moe, 1)][0] < best[(dense, 1)][0] and best[(moe, 1)][1] < best[(dense, 1)][1]
    assert best[(moe, 64)][0] > best[(moe, 1)][0] and best[(moe, 64)][1] > best[(dense, 64)][1]


def test_an_eager_draft_turns_speculation_off(cli, tmp_path):
    # aiconfigurator's measurement: vLLM ran this draft eagerly at 15.3 ms a pass, and
    # speculation ran at 0.4x the plain decoding speed.
    _, frame = sweep(cli, tmp_path, "eager-draft")
    best = best_k(frame, ["cost.draft_overhead_us"])
    graphed, eager = best[0.0], best[14842.0]
    assert graphed[0] >= 6 and graphed[1] > 3
    assert eager[0] == 1 and eager[1] < 1
    at_k3 = frame[(frame["cost.draft_overhead_us"] == 14842.0) & (frame["k"] == 3)]
    assert float(at_k3["speedup_exact"].iloc[0]) == pytest.approx(0.4, abs=0.02)


def regime_rows(cli, *flags):
    """``spectui regime``'s table as the user reads it: {batch: [(K*, speedup, pays)]}."""
    status, shown, err = cli("regime", *flags)
    assert status == 0, err
    rows = {}
    for line in shown.splitlines():
        cells = re.findall(r"(\d+)(✗?)≈? (\d+\.\d+)", line)
        head = re.match(r"\s+(\d+)\s", line)
        if head and cells:
            rows[int(head.group(1))] = [(int(k), float(s), not off) for k, off, s in cells]
    return rows


def test_the_regime_map_of_an_moe_target_moves_the_best_k_and_the_crossover(cli):
    flags = ("--preset", "moe-vs-dense", "--batch-sizes", "1,4,16,64", "--contexts", "1024")
    moe = regime_rows(cli, *flags, "--target", "qwen3-30b-a3b")
    dense = regime_rows(cli, *flags, "--target", "llama-3.2-3b")
    # Batch 1: the MoE target's best K is shorter (no K pays at all), the dense one's is not.
    assert moe[1][0][0] < dense[1][0][0] and not moe[1][0][2] and dense[1][0][2]
    # Speculation starts to pay for the MoE target only as the batch loads every expert
    # anyway, and then it pays more than for the dense one.
    assert moe[16][0][2] and moe[16][0][1] > dense[16][0][1]


def test_a_parallel_draft_wants_a_longer_draft(cli):
    flags = ("--batch-sizes", "1", "--contexts", "1024", "--k-max", "16")
    sequential = regime_rows(cli, *flags)[1][0]
    parallel = regime_rows(cli, *flags, "--drafting", "parallel")[1][0]
    assert parallel[0] > sequential[0] and parallel[1] > sequential[1]
