"""Roofline pass times: the issue's check table, properties, the ridge, bad parameters."""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine.cost.linear import LinearCost
from engine.cost.roofline import (
    RooflineCost,
    RooflineMaxCost,
    pass_us_additive,
    pass_us_max,
)
from engine.cost.specs import get_hardware, get_model

# Hand constants, written out from docs/model.md and the model's config.json, not read from
# the code under test: Llama-3.1-8B on H100 SXM, bf16 weights and KV cache.
P = 8.03e9  # parameters, the design brief's rounded figure
P_EXACT = 8_030_261_248  # the data file's count, from config.json's shapes
LAYERS, D_MODEL = 32, 4096
KV_BYTES = 2 * 32 * 8 * 128 * 2  # 131,072 bytes per context token
F, BW = 989e12, 3.35e12
ETA_W, ETA_KV, ETA_F = 0.81, 1.0, 0.77

# (B, K, L) -> (additive, max) from issue #10, 1k = 1024 tokens.
ISSUE_TABLE = {
    (1, 3, 1024): (1.011, 1.000),
    (64, 3, 1024): (1.424, 1.000),
    (128, 5, 1024): (2.008, 1.299),
    (64, 3, 8192): (1.182, 1.000),
    (64, 3, 32768): (1.092, 1.000),
}


def hand_additive_s(n_tokens: float, batch: float, context: float, P: float = P) -> float:
    weights = P * 2 / (ETA_W * BW)
    kv_cache = batch * context * KV_BYTES / (ETA_KV * BW)
    compute = (2 * P * n_tokens + 4 * LAYERS * D_MODEL * context * n_tokens) / (ETA_F * F)
    return weights + kv_cache + compute


def hand_max_s(n_tokens: float, batch: float, context: float, P: float = P) -> float:
    compute = (2 * P * n_tokens + 4 * LAYERS * D_MODEL * context * n_tokens) / F
    memory = (P * 2 + batch * context * KV_BYTES) / BW
    return max(compute, memory)


@pytest.fixture(scope="module")
def h100():
    return get_hardware("h100")


@pytest.fixture(scope="module")
def llama8b():
    return get_model("llama-3.1-8b")


@pytest.fixture(scope="module")
def llama1b():
    return get_model("llama-3.2-1b")


@pytest.fixture(scope="module")
def costs(h100, llama8b, llama1b):
    return (
        RooflineCost(hardware=h100, target=llama8b, draft=llama1b),
        RooflineMaxCost(hardware=h100, target=llama8b, draft=llama1b),
    )


def test_hand_arithmetic_reproduces_the_issue_table():
    # The expectations themselves, from the formula by hand: guards the test's constants.
    for (batch, k, context), (additive, maximum) in ISSUE_TABLE.items():
        verify, step = batch * (k + 1), batch
        hand_add = hand_additive_s(verify, batch, context) / hand_additive_s(step, batch, context)
        hand_max = hand_max_s(verify, batch, context) / hand_max_s(step, batch, context)
        assert round(hand_add, 3) == additive
        assert round(hand_max, 3) == maximum


def test_check_table_verify_over_decode_step(costs, capsys):
    additive, maximum = costs
    lines = ["B    K  L       additive  max"]
    for (batch, k, context), (want_add, want_max) in ISSUE_TABLE.items():
        got_add = additive.verify_us(k + 1, batch, context) / additive.verify_us(1, batch, context)
        got_max = maximum.verify_us(k + 1, batch, context) / maximum.verify_us(1, batch, context)
        verify_n, step_n = batch * (k + 1), batch
        want_add_exact = hand_additive_s(verify_n, batch, context, P_EXACT) / hand_additive_s(
            step_n, batch, context, P_EXACT
        )
        want_max_exact = hand_max_s(verify_n, batch, context, P_EXACT) / hand_max_s(
            step_n, batch, context, P_EXACT
        )
        assert got_add == pytest.approx(want_add_exact, rel=1e-12)
        assert got_max == pytest.approx(want_max_exact, rel=1e-12)
        assert f"{got_add:.3f}" == f"{want_add:.3f}"
        assert f"{got_max:.3f}" == f"{want_max:.3f}"
        lines.append(f"{batch:<4} {k:<2} {context:<7} {got_add:.3f}     {got_max:.3f}")
    with capsys.disabled():
        print("\nLlama-3.1-8B on H100, verify pass / decode step\n" + "\n".join(lines))


def test_absolute_decode_step_time(costs):
    additive, maximum = costs
    # Batch 1, no context: weights only, 16.06 GB at 0.81 x 3.35 TB/s, plus 2*P FLOPs.
    want_us = 1e6 * (8_030_261_248 * 2 / (0.81 * 3.35e12) + 2 * 8_030_261_248 / (0.77 * 989e12))
    assert additive.verify_us(1, 1, 0) == pytest.approx(want_us, rel=1e-12)
    assert maximum.verify_us(1, 1, 0) == pytest.approx(1e6 * 8_030_261_248 * 2 / 3.35e12)
    assert 5900 < additive.verify_us(1, 1, 0) < 6000  # about 5.94 ms


def test_draft_is_k_passes_of_the_draft_model_with_one_token(costs, h100, llama1b):
    additive, maximum = costs
    one = pass_us_additive(llama1b, h100, 1, 64, 4096)
    assert additive.draft_us(4, 64, 4096) == pytest.approx(4 * one, rel=1e-12)
    assert additive.draft_us(0, 64, 4096) == 0.0
    one_max = pass_us_max(llama1b, h100, 1, 64, 4096)
    assert maximum.draft_us(3, 64, 4096) == pytest.approx(3 * one_max, rel=1e-12)


def test_t0_is_added_once_per_pass(h100, llama8b, llama1b):
    base = RooflineCost(hardware=h100, target=llama8b, draft=llama1b)
    with_t0 = RooflineCost(hardware=h100, target=llama8b, draft=llama1b, t0_us=25.0)
    assert with_t0.verify_us(4, 8, 1000) - base.verify_us(4, 8, 1000) == pytest.approx(25.0)
    assert with_t0.draft_us(3, 8, 1000) - base.draft_us(3, 8, 1000) == pytest.approx(75.0)


@pytest.mark.parametrize("form", [pass_us_additive, pass_us_max])
def test_monotone_in_batch_context_and_width(form, h100, llama8b):
    grid = np.array([1, 2, 4, 16, 64, 256, 1024], dtype=float)
    by_batch = form(llama8b, h100, 4, grid, 2048)
    by_context = form(llama8b, h100, 4, 64, grid * 32)
    by_width = form(llama8b, h100, grid[:5], 64, 2048)
    for series in (by_batch, by_context, by_width):
        assert np.all(np.diff(series) >= 0)
    # The additive form grows strictly with every input (every term is charged).
    if form is pass_us_additive:
        for series in (by_batch, by_context, by_width):
            assert np.all(np.diff(series) > 0)


def test_max_form_never_exceeds_additive_at_full_efficiency(h100, llama8b):
    batch = np.array([1, 8, 64, 512])[:, None, None]
    context = np.array([0, 1024, 32768])[None, :, None]
    width = np.array([1, 2, 5, 17])[None, None, :]
    additive = pass_us_additive(
        llama8b, h100, width, batch, context, eta_w=1.0, eta_kv=1.0, eta_f=1.0
    )
    maximum = pass_us_max(llama8b, h100, width, batch, context)
    assert np.all(maximum <= additive)
    assert np.all(additive <= 2 * maximum)  # a sum of two terms is at most twice the larger


def test_arrays_broadcast_and_match_scalar_calls(costs):
    additive, _ = costs
    widths = np.array([1, 2, 4])
    batches = np.array([[1], [32]])
    got = additive.verify_us(widths, batches, 1024)
    assert got.shape == (2, 3)
    for i, batch in enumerate((1, 32)):
        for j, width in enumerate((1, 2, 4)):
            assert got[i, j] == additive.verify_us(width, batch, 1024)


def test_ridge_h100_is_about_295_tokens(costs, h100):
    additive, maximum = costs
    assert h100.flops_bf16 / h100.mem_bw_bytes_s == pytest.approx(295.22, abs=0.01)
    assert h100.ridge_flop_per_byte == pytest.approx(295.22, abs=0.01)
    # Max form, no context: compute 2*P*N/F passes weights P*2/BW at N = F/BW = 295.2.
    assert maximum.bound(1, 295, 0) == "memory"
    assert maximum.bound(1, 296, 0) == "compute"
    assert maximum.bound(5, 59, 0) == "memory"  # B x (K+1) = 295
    assert maximum.bound(5, 60, 0) == "compute"  # 300
    # Additive form: efficiencies move it to F*0.77 / (BW*0.81) = 280.6 tokens.
    assert additive.bound(1, 280, 0) == "memory"
    assert additive.bound(1, 281, 0) == "compute"
    # Long context: reading the KV cache keeps a large batch memory-bound.
    assert maximum.bound(4, 128, 32768) == "memory"
    verdicts = maximum.bound(np.array([1, 4]), 128, 0)
    assert list(verdicts) == ["memory", "compute"]


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"eta_w": 1.5}, "cost.eta_w"),
        ({"eta_f": 0.0}, "cost.eta_f"),
        ({"t0_us": -1.0}, "cost.t0_us"),
        ({"bytes_per_kv": 0}, "cost.bytes_per_kv"),
    ],
)
def test_bad_parameters_name_the_field(kwargs, field, h100, llama8b, llama1b):
    with pytest.raises(ValueError, match=field) as caught:
        RooflineCost(hardware=h100, target=llama8b, draft=llama1b, **kwargs)
    assert "\n" not in str(caught.value)


def test_bad_workload_names_the_argument(costs):
    additive, _ = costs
    with pytest.raises(ValueError, match="^w: must be a finite number >= 1"):
        additive.verify_us(0, 1, 0)
    with pytest.raises(ValueError, match="^batch:"):
        additive.verify_us(2, 0, 0)
    with pytest.raises(ValueError, match="^context_len:"):
        additive.verify_us(2, 1, -5)
    with pytest.raises(ValueError, match="^k:"):
        additive.draft_us(-1, 1, 0)
    # Scalars (float or int, checked without arrays) and arrays, each way a value is bad.
    for bad in (math.nan, math.inf, -0.5, 0.999, np.float64(math.nan), np.array([2.0, math.nan])):
        with pytest.raises(ValueError, match="^w: must be a finite number >= 1, got "):
            additive.verify_us(bad, 1, 0)
    for bad in (-1, -1e-300, math.nan, -math.inf, np.array([[0.0], [-1.0]])):
        with pytest.raises(ValueError, match="^context_len: must be a finite number >= 0, got "):
            additive.verify_us(2, 1, bad)
    assert additive.verify_us(1, 1, 0) == additive.verify_us(1.0, np.float64(1), np.int64(0))


def test_linear_cost():
    original = LinearCost(draft_cost_us=20.0, verify_cost_us=200.0)
    assert original.draft_us(4) == 80.0
    assert original.verify_us(5) == 200.0  # verify_token_us = 0: the original
    per_token = LinearCost(draft_cost_us=20.0, verify_cost_us=200.0, verify_token_us=15.0)
    assert per_token.verify_us(5, 64, 8192) == 200.0 + 15.0 * 4  # B and L ignored
    assert per_token.verify_us(1) == 200.0  # the baseline decode step
    np.testing.assert_array_equal(per_token.verify_us(np.array([1, 2, 3])), [200, 215, 230])
    with pytest.raises(ValueError, match="cost.verify_token_us"):
        LinearCost(draft_cost_us=20.0, verify_cost_us=200.0, verify_token_us=-1.0)
    with pytest.raises(ValueError, match="cost.verify_cost_us"):
        LinearCost(draft_cost_us=20.0, verify_cost_us=0.0)
