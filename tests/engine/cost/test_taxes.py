"""Runtime taxes and drafting modes in the roofline (issue #26): speculation's fixed cost a
cycle (paid at k = 0 too), parallel drafting, int4 weights and the draft's weight format,
checked against docs/model.md's formulas worked by hand."""

from __future__ import annotations

import pytest

from engine.core.config import SpecConfig
from engine.core.kernel import cycle_costs
from engine.cost.models import build_cost
from engine.simulate.exact import exact_metrics

H100_BW, H100_F = 3.35e12, 989e12
ETA_W, ETA_KV, ETA_F = 0.81, 1.0, 0.77
# Llama 3.1 8B (target) and Llama 3.2 1B (draft): params, layers, d_model, KV bytes a token.
L8 = (8_030_261_248, 32, 4096, 2 * 32 * 8 * 128 * 2)
L1 = (1_235_814_400, 16, 2048, 2 * 16 * 8 * 64 * 2)


def pass_us(model, n_tokens, batch, context, bytes_per_weight=2.0):
    params, layers, d_model, kv_token = model
    weights = params * bytes_per_weight / (ETA_W * H100_BW)
    kv = batch * context * kv_token / (ETA_KV * H100_BW)
    flops = 2 * params * n_tokens + 4 * layers * d_model * context * n_tokens
    return 1e6 * (weights + kv + flops / (ETA_F * H100_F))


def scenario(**fields):
    return SpecConfig().replace(**{"cost.model": "roofline", **fields})


def test_speculations_fixed_cost_is_paid_by_every_cycle_and_never_by_the_baseline():
    plain = cycle_costs(scenario(tokens_per_seq=40))
    taxed = cycle_costs(scenario(tokens_per_seq=40, **{"cost.spec_overhead_us": 750.0}))
    assert taxed.baseline_us == plain.baseline_us
    assert list(taxed.step_us) == list(plain.step_us)
    assert list(taxed.cycle_us[1:] - plain.cycle_us[1:]) == pytest.approx([750.0] * 40)
    assert taxed.limit_verify_us == pytest.approx(plain.limit_verify_us + 750.0, rel=1e-12)


def test_a_policy_that_drafts_nothing_still_pays_it():
    # vLLM issue 49548: dynamic speculation resolved to K = 0 and TPOT still rose 6.56 %.
    # A schedule of k = 0: every cycle is a decoding step plus the tax, so the speedup is
    # sum(step) / sum(step + tax) over the 30 tokens (contexts 0..29 on an 8B at batch 1).
    tax = 400.0
    config = scenario(
        tokens_per_seq=30,
        **{"policy.name": "schedule", "policy.schedule": "1:0", "cost.spec_overhead_us": tax},
    )
    steps = [pass_us(L8, 1, 1, context) for context in range(30)]
    by_hand = sum(steps) / (sum(steps) + 30 * tax)
    assert exact_metrics(config)["speedup_exact"] == pytest.approx(by_hand, rel=1e-9)


def test_a_parallel_draft_makes_one_pass_over_its_k_tokens():
    cost = build_cost(scenario(**{"cost.drafting": "parallel"}))
    for k, batch, context in ((1, 1, 0), (4, 1, 1024), (8, 16, 2048)):
        got = float(cost.draft_us(k, batch, context))
        assert got == pytest.approx(pass_us(L1, k * batch, batch, context), rel=1e-12)
    assert float(cost.draft_us(0, 4, 512)) == 0.0
    # At batch 1 a pass is memory-bound: drafting 8 costs about what drafting 1 does.
    assert float(cost.draft_us(8, 1, 512)) < 1.05 * float(cost.draft_us(1, 1, 512))
    sequential = build_cost(scenario())
    assert float(sequential.draft_us(8, 1, 512)) > 7.9 * float(sequential.draft_us(1, 1, 512))


def test_int4_weights_carry_a_bf16_scale_per_128():
    cost = build_cost(scenario(**{"cost.weight_dtype": "int4"}))
    assert float(cost.verify_us(3, 2, 100)) == pytest.approx(
        pass_us(L8, 6, 2, 100, bytes_per_weight=0.5 + 2 / 128), rel=1e-12
    )


def test_the_drafts_weight_format_is_its_own():
    cost = build_cost(scenario(**{"cost.draft_weight_dtype": "fp8"}))
    assert float(cost.draft_us(2, 4, 256)) == pytest.approx(
        2 * pass_us(L1, 4, 4, 256, bytes_per_weight=1.0), rel=1e-12
    )
    assert float(cost.verify_us(3, 4, 256)) == pytest.approx(pass_us(L8, 12, 4, 256), rel=1e-12)


def test_the_taxes_are_in_the_label():
    from engine.core.parts import COST

    config = scenario(
        **{
            "cost.drafting": "parallel",
            "cost.draft_weight_dtype": "fp8",
            "cost.spec_overhead_us": 300.0,
        }
    )
    assert (
        COST.of(config)
        .label(config)
        .startswith(
            "roofline on h100: llama-3.1-8b verifies, llama-3.2-1b drafts in one pass "
            "(fp8 weights), +300 us a cycle,"
        )
    )


def test_fp4_matmuls_run_at_blackwells_fp4_peak_and_are_refused_elsewhere():
    from engine.core.config import ConfigError

    b200 = build_cost(scenario(**{"cost.gpu": "b200", "cost.compute_dtype": "fp4"}))
    params, layers, d_model, kv_token = L8
    flops = 2 * params * 64 + 4 * layers * d_model * 1024 * 64
    by_hand = 1e6 * (
        params * 2 / (ETA_W * 7.7e12) + 64 * 1024 * kv_token / 7.7e12 + flops / (ETA_F * 9e15)
    )
    assert float(b200.verify_us(1, 64, 1024)) == pytest.approx(by_hand, rel=1e-12)
    with pytest.raises(ConfigError, match=r"cost.compute_dtype: h100 has no fp4 peak .*flops_fp4"):
        scenario(**{"cost.compute_dtype": "fp4"})
