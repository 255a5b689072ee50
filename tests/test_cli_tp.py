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
    assert sorted(frame["cost.tp"].unique()) == [1, 2, 4, 8]
    status, shown, _ = cli("analyze", str(out))
    assert status == 0 and "rows: cost.tp;" in shown
    best = best_k(frame, ["cost.tp"])
    for tp in (1, 2, 4, 8):
        cell = rf"tp={tp} │\s+{best[tp][0]} {best[tp][1]:.2f}\s"
        assert re.search(cell, shown), cell
    # The draft stays on one GPU while the target's step shrinks: drafting gets dearer.
    ks, speedups = zip(*(best[tp] for tp in (1, 2, 4, 8)), strict=True)
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
