"""Issue #43's new hardware and model entries: each loads through the spec loader, and one
roofline pass for a new model on a new GPU, worked by hand, is what `spectui run` prints."""

from __future__ import annotations

import pytest

from engine.cost.specs import get_hardware, get_model, load_hardware, load_models

NEW_HARDWARE = ("b300", "rtx-5090", "dgx-spark")
NEW_MODELS = ("gpt-oss-20b", "glm-4.5", "kimi-k2", "minimax-m2")


@pytest.mark.parametrize("spec_id", NEW_HARDWARE)
def test_each_new_accelerator_loads(spec_id):
    hw = load_hardware()[spec_id]
    assert hw.id == spec_id and hw.source and hw.notes
    assert hw.flops_bf16 > 0 and hw.mem_bw_bytes_s > 0 and hw.mem_bytes > 0


@pytest.mark.parametrize("spec_id", NEW_MODELS)
def test_each_new_model_loads(spec_id):
    model = load_models()[spec_id]
    assert model.id == spec_id and model.source and model.notes
    assert model.experts is not None  # all four are mixtures of experts
    # the routed experts are part of params, and never all of it
    assert 0 < model.experts * model.expert_layer_params < model.params


def test_model_figures_the_notes_derive():
    assert get_model("gpt-oss-20b").params == 20_914_757_184  # card: 20.9B
    assert get_model("kimi-k2").kv_bytes_per_token(2.0) == 61 * (512 + 64) * 2


def test_a_decode_step_of_gpt_oss_20b_on_b300_is_the_hand_roofline(cli):
    # gpt-oss-20b on b300, batch 1, context 1024, bf16 weights and cache, default
    # efficiencies (eta_w 0.81, eta_kv 1, eta_f 0.77), t0 = 0. One token touches 4 experts a
    # layer, so a decode step reads the active parameters:
    #   P_active = dense 1,797,824,064 + 4 x 24,891,840 x 24 = 4,187,440,704
    #   weight read = P_active x b_w / (eta_w x BW)
    #               = 4,187,440,704 x 2 / (0.81 x 7.7e12) = 8.3749e9 / 6.237e12 s = 1342.77 us
    # KV read: 12 full layers at 1024 tokens, 12 sliding ones at 128: attended context
    #   (12 x 1024 + 12 x 128) / 24 = 576; kv = 2 x 24 x 8 x 64 x 2 = 49,152 bytes a token
    #   576 x 49,152 / 7.7e12 s = 3.68 us
    # FLOPs: 2 x 4,187,440,704 + 4 x 24 x 2880 x 576 = 8.5341e9 / (0.77 x 2.25e15) = 4.93 us
    # decode step = 1342.77 + 3.68 + 4.93 = 1351.38 us, printed "1,351.4 us"
    hw, model = get_hardware("b300"), get_model("gpt-oss-20b")
    active = 1_797_824_064 + 4 * 24_891_840 * 24
    weight_us = 1e6 * active * model.bytes_per_weight / (0.81 * hw.mem_bw_bytes_s)
    assert weight_us == pytest.approx(1342.774, abs=1e-3)
    kv_us = 1e6 * 576 * model.kv_bytes_per_token(2.0) / hw.mem_bw_bytes_s
    flop_us = 1e6 * (2 * active + 4 * 24 * 2880 * 576) / (0.77 * hw.flops_bf16)
    step = weight_us + kv_us + flop_us
    status, out, err = cli(
        "run", "--cost", "roofline", "--gpu", "b300", "--target", "gpt-oss-20b",
        "--batch-size", "1", "--prompt-len", "1024", "--k", "3", "--n-sequences", "5",
    )  # fmt: skip
    assert status == 0, err
    line = next(line for line in out.splitlines() if "decode step" in line)
    assert f"{step:,.1f} us" in line
    assert "1,351.4 us" in line
