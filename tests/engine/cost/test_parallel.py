"""Tensor parallelism and a draft's overhead per pass in the roofline (issue #26), checked
against the formulas of docs/model.md worked by hand, and one GPU unchanged."""

from __future__ import annotations

import pytest

from engine.core.config import ConfigError, SpecConfig
from engine.cost.models import build_cost

H100_BW, H100_F = 3.35e12, 989e12
H100_LINK, H100_HOP_S = 450e9, 1.9e-6  # NVLink one way; NCCL's LL128 step
ETA_W, ETA_KV, ETA_F = 0.81, 1.0, 0.77
# Llama 3.1 70B: params, layers, d_model, kv heads, bytes of KV per token at bf16
L70 = (70_553_706_496, 80, 8192, 8, 2 * 80 * 8 * 128 * 2)


def pass_us(tp, n_tokens, batch, context, model=L70):
    params, layers, d_model, kv_heads, kv_token = model
    weights = params * 2 / tp / (ETA_W * H100_BW)
    kv = batch * context * kv_token / min(tp, kv_heads) / (ETA_KV * H100_BW)
    flops = (2 * params * n_tokens + 4 * layers * d_model * context * n_tokens) / tp
    compute = flops / (ETA_F * H100_F)
    ring = 2 * (tp - 1) / tp * n_tokens * d_model * 2 / H100_LINK + 2 * (tp - 1) * H100_HOP_S
    allreduce = 2 * layers * ring if tp > 1 else 0.0
    return 1e6 * (weights + kv + compute + allreduce)


def cost(**fields):
    values = {"cost.model": "roofline", "cost.target": "llama-3.1-70b", **fields}
    return build_cost(SpecConfig().replace(**values))


@pytest.mark.parametrize("tp", [2, 4, 8, 16])
def test_a_verify_pass_over_tp_gpus_is_the_formula(tp):
    # 4 sequences of 6 tokens at 2k of context; at tp 16 the 8 KV heads are replicated.
    got = float(cost(**{"cost.tp": tp}).verify_us(6, 4, 2048))
    assert got == pytest.approx(pass_us(tp, 24, 4, 2048), rel=1e-12)


def test_one_gpu_is_todays_roofline_to_the_last_bit():
    default = build_cost(SpecConfig().replace(**{"cost.model": "roofline"}))
    explicit = cost(**{"cost.target": "llama-3.1-8b", "cost.tp": 1, "cost.draft_tp": 1})
    for w, b, ctx in ((1, 1, 0), (6, 64, 8192), (60, 3, 100_000)):
        assert float(explicit.verify_us(w, b, ctx)) == float(default.verify_us(w, b, ctx))
        assert float(explicit.draft_us(w, b, ctx)) == float(default.draft_us(w, b, ctx))


def test_tensor_parallelism_pays_until_the_all_reduces_dominate():
    # A 70B decoding step at batch 1 gets faster from 2 to 8 GPUs, but not 4 times.
    steps = [float(cost(**{"cost.tp": tp}).verify_us(1, 1, 1024)) for tp in (2, 4, 8)]
    assert steps == sorted(steps, reverse=True)
    assert steps[0] / steps[2] < 4


def test_a_draft_overhead_is_paid_on_every_draft_pass_and_nowhere_else():
    plain = cost(**{"cost.target": "llama-3.1-8b"})
    taxed = cost(**{"cost.target": "llama-3.1-8b", "cost.draft_overhead_us": 250.0})
    assert float(taxed.draft_us(4, 8, 512)) == pytest.approx(
        float(plain.draft_us(4, 8, 512)) + 4 * 250.0, rel=1e-12
    )
    assert float(taxed.draft_pass_us(3, 8, 512)) == pytest.approx(
        float(plain.draft_pass_us(3, 8, 512)) + 250.0, rel=1e-12
    )
    assert float(taxed.verify_us(5, 8, 512)) == float(plain.verify_us(5, 8, 512))


def test_the_draft_runs_on_its_own_gpus():
    both = cost(**{"cost.tp": 4, "cost.draft_tp": 4})
    one = cost(**{"cost.tp": 4})
    assert float(both.verify_us(3, 1, 0)) == float(one.verify_us(3, 1, 0))
    assert float(both.draft_us(1, 1, 0)) < float(one.draft_us(1, 1, 0))


LONE_GPU = """
["lone-gpu"]
name = "a GPU whose spec gives no link"
flops_bf16 = 1e15
mem_bw_bytes_s = 3e12
mem_bytes = 8e10
source = "test"
notes = ""
"""


@pytest.fixture
def lone_gpu(tmp_path):
    """A user GPU without a link in its spec ($XDG_CONFIG_HOME is this test's own)."""
    folder = tmp_path / "xdg-config" / "spectui"
    folder.mkdir(parents=True)
    (folder / "hardware.toml").write_text(LONE_GPU)
    return "lone-gpu"


def test_tensor_parallel_needs_the_hardwares_link_and_is_refused_on_construction(lone_gpu):
    for form in ("roofline", "roofline_max"):
        with pytest.raises(ConfigError, match="cost.tp: lone-gpu has no link between GPUs"):
            SpecConfig().replace(**{"cost.model": form, "cost.gpu": lone_gpu, "cost.tp": 2})
        with pytest.raises(ConfigError, match="cost.draft_tp: lone-gpu has no link"):
            SpecConfig().replace(**{"cost.model": form, "cost.gpu": lone_gpu, "cost.draft_tp": 2})
    # Another cost model does not read them.
    assert SpecConfig().replace(**{"cost.gpu": lone_gpu, "cost.tp": 2}).tp == 2


def test_every_shipped_gpu_has_a_link():
    from engine.cost.specs import load_hardware

    assert all(spec.link_bw_bytes_s and spec.link_name for spec in load_hardware().values())
    assert load_hardware()["b200"].link_name.startswith("NVLink 5")


def test_a_full_mesh_gives_a_collective_one_link_per_peer():
    # MI300X: seven 64 GB/s links each way; 2 GPUs share one, 8 use all seven.
    from engine.cost.collectives import link_bw
    from engine.cost.specs import get_hardware

    mi300x, h100 = get_hardware("mi300x"), get_hardware("h100")
    assert [link_bw(mi300x, g) for g in (2, 4, 8, 16)] == [64e9, 192e9, 448e9, 448e9]
    assert [link_bw(h100, g) for g in (2, 8)] == [450e9, 450e9]  # a switch: every pair at full


def test_the_settings_are_in_the_label():
    from engine.core.parts import COST

    config = SpecConfig().replace(
        **{
            "cost.model": "roofline",
            "cost.tp": 4,
            "cost.draft_tp": 2,
            "cost.draft_overhead_us": 15.0,
        }
    )
    label = COST.of(config).label(config)
    assert label.startswith(
        "roofline on 4 x h100: llama-3.1-8b verifies, llama-3.2-1b drafts on 2 (+15 us a pass),"
    )


L8 = (8_030_261_248, 32, 4096, 8, 2 * 32 * 8 * 128 * 2)


def one_gpu_us(bytes_per_weight, peak, n_tokens, batch, context, model=L8):
    params, layers, d_model, _, kv_token = model
    weights = params * bytes_per_weight / (ETA_W * H100_BW)
    kv = batch * context * kv_token / (ETA_KV * H100_BW)
    flops = 2 * params * n_tokens + 4 * layers * d_model * context * n_tokens
    return 1e6 * (weights + kv + flops / (ETA_F * peak))


@pytest.mark.parametrize(
    ("dtype", "bytes_per_weight"),
    [("bf16", 2.0), ("fp8", 1.0), ("int8", 1.0), ("nvfp4", 9 / 16), ("mxfp4", 17 / 32)],
)
def test_the_targets_weights_are_read_at_their_formats_bytes(dtype, bytes_per_weight):
    got = cost(**{"cost.target": "llama-3.1-8b", "cost.weight_dtype": dtype})
    assert float(got.verify_us(5, 16, 1024)) == pytest.approx(
        one_gpu_us(bytes_per_weight, H100_F, 80, 16, 1024), rel=1e-12
    )
    # The draft keeps its own weights.
    plain = cost(**{"cost.target": "llama-3.1-8b"})
    assert float(got.draft_us(3, 16, 1024)) == float(plain.draft_us(3, 16, 1024))


def test_fp8_matmuls_run_at_the_gpus_fp8_peak():
    got = cost(**{"cost.target": "llama-3.1-8b", "cost.compute_dtype": "fp8"})
    assert float(got.verify_us(5, 64, 1024)) == pytest.approx(
        one_gpu_us(2.0, 1979e12, 320, 64, 1024), rel=1e-12
    )


def test_fp8_matmuls_need_an_fp8_peak():
    with pytest.raises(ConfigError, match="cost.compute_dtype: a100-80gb has no fp8 peak"):
        SpecConfig().replace(
            **{"cost.model": "roofline", "cost.gpu": "a100-80gb", "cost.compute_dtype": "fp8"}
        )


# Qwen3-30B-A3B: 48 MoE layers of 128 experts (4,718,592 parameters each), 8 active a token.
Q_TOTAL, Q_EXPERT, Q_LAYERS, Q_E, Q_K = 30_532_122_624, 4_718_592, 48, 128, 8
Q_DENSE = Q_TOTAL - Q_E * Q_EXPERT * Q_LAYERS
Q_KV = 2 * 48 * 4 * 128 * 2


def moe_pass_us(n_tokens, batch, context):
    touched = Q_E * (1 - (1 - Q_K / Q_E) ** n_tokens)
    weights = (Q_DENSE + touched * Q_EXPERT * Q_LAYERS) * 2 / (ETA_W * H100_BW)
    kv = batch * context * Q_KV / (ETA_KV * H100_BW)
    active = Q_DENSE + Q_K * Q_EXPERT * Q_LAYERS
    flops = 2 * active * n_tokens + 4 * 48 * 2048 * context * n_tokens
    return 1e6 * (weights + kv + flops / (ETA_F * H100_F))


@pytest.mark.parametrize(("w", "batch"), [(1, 1), (4, 1), (8, 16), (3, 512)])
def test_an_moe_pass_reads_the_experts_its_tokens_touch(w, batch):
    got = cost(**{"cost.target": "qwen3-30b-a3b"}).verify_us(w, batch, 1024)
    assert float(got) == pytest.approx(moe_pass_us(w * batch, batch, 1024), rel=1e-12)


def test_checking_more_tokens_costs_an_moe_target_more_than_a_dense_one():
    # At batch 1 each extra token loads about 8 more experts: a verify pass of 4 tokens
    # costs well over twice a decoding step, where a dense model's costs about the same.
    moe = cost(**{"cost.target": "qwen3-30b-a3b"})
    dense = cost(**{"cost.target": "llama-3.1-8b"})
    ratio = lambda c: float(c.verify_us(4, 1, 1024)) / float(c.verify_us(1, 1, 1024))  # noqa: E731
    assert ratio(moe) > 2.0 and ratio(dense) < 1.05
    # At a large batch every expert is loaded anyway.
    assert float(moe.verify_us(2, 512, 0)) / float(moe.verify_us(1, 512, 0)) < 1.5
