"""Expert parallelism, routing skew, latent attention and sliding windows in the roofline
(issue #26), checked against the formulas of docs/model.md worked by hand."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

import pytest

from engine.core.config import ConfigError, SpecConfig
from engine.cost.models import build_cost
from engine.cost.moe import experts_touched
from engine.cost.roofline import pass_bytes
from engine.cost.specs import SpecError, get_model, load_models
from tests.engine.cost.test_parallel import LONE_GPU

H100_BW, H100_F = 3.35e12, 989e12
H100_LINK, H100_HOP_S = 450e9, 1.9e-6
ETA_W, ETA_KV, ETA_F = 0.81, 1.0, 0.77
# Qwen3-30B-A3B: 48 MoE layers of 128 experts (4,718,592 parameters each), 8 active a token.
Q_TOTAL, Q_EXPERT, Q_LAYERS, Q_E, Q_K, Q_D = 30_532_122_624, 4_718_592, 48, 128, 8, 2048
Q_DENSE = Q_TOTAL - Q_E * Q_EXPERT * Q_LAYERS
Q_KV = 2 * 48 * 4 * 128 * 2


def cost(**fields):
    values = {"cost.model": "roofline", "cost.target": "qwen3-30b-a3b", **fields}
    return build_cost(SpecConfig().replace(**values))


def ep_pass_us(ep, n_tokens, batch, context):
    """One GPU of ``ep``, attention and dense part whole (tp 1), experts spread."""
    touched = Q_E * (1 - (1 - Q_K / Q_E) ** n_tokens)
    weights = (Q_DENSE * 2 + touched * Q_EXPERT * Q_LAYERS * 2 / ep) / (ETA_W * H100_BW)
    kv = batch * context * Q_KV / (ETA_KV * H100_BW)
    flops = (
        2 * Q_DENSE * n_tokens
        + 4 * 48 * Q_D * context * n_tokens
        + 2 * Q_K * Q_EXPERT * Q_LAYERS * n_tokens / ep
    )
    sent = n_tokens * Q_K * Q_D * 2 * (ep - 1) / ep**2
    alltoall = 2 * Q_LAYERS * (sent / H100_LINK + H100_HOP_S)
    return 1e6 * (weights + kv + flops / (ETA_F * H100_F) + alltoall)


@pytest.mark.parametrize(("ep", "w", "batch"), [(2, 1, 1), (4, 4, 1), (8, 3, 64)])
def test_experts_over_ep_gpus_is_the_formula(ep, w, batch):
    got = float(cost(**{"cost.ep": ep}).verify_us(w, batch, 2048))
    assert got == pytest.approx(ep_pass_us(ep, w * batch, batch, 2048), rel=1e-12)


def test_expert_parallelism_pays_at_a_large_batch_and_its_all_to_alls_cost_at_batch_1():
    one, eight = cost(), cost(**{"cost.ep": 8})
    # Batch 256: every expert is loaded; each of 8 GPUs reads an eighth of them.
    assert float(eight.verify_us(1, 256, 1024)) < 0.5 * float(one.verify_us(1, 256, 1024))
    # Batch 1: 8 experts a layer, an eighth of them a GPU, but the dense part is read whole
    # and 2 x 48 all-to-alls of a hop each are added: a smaller gain than at batch 256.
    gain = lambda b: float(one.verify_us(1, b, 1024)) / float(eight.verify_us(1, b, 1024))  # noqa: E731
    assert 1.0 < gain(1) < gain(256)


def test_expert_parallelism_needs_an_moe_target_and_a_link(tmp_path):
    with pytest.raises(ConfigError, match=r"cost.ep: llama-3.1-8b has no routed experts"):
        SpecConfig().replace(**{"cost.model": "roofline", "cost.ep": 2})
    folder = tmp_path / "xdg-config" / "spectui"
    folder.mkdir(parents=True)
    (folder / "hardware.toml").write_text(LONE_GPU)
    with pytest.raises(ConfigError, match="cost.ep: lone-gpu has no link between GPUs"):
        SpecConfig().replace(
            **{
                "cost.model": "roofline_max",
                "cost.gpu": "lone-gpu",
                "cost.target": "qwen3-30b-a3b",
                "cost.ep": 2,
            }
        )


def test_skewed_routing_touches_fewer_experts_worked_by_hand():
    # 4 experts, 1 active, skew 1: popularity 1, 1/2, 1/3, 1/4 over 25/12, so a token picks
    # expert e with 12/25, 6/25, 4/25, 3/25; two tokens touch sum(1 - (1 - p)^2) of them.
    tiny = replace(get_model("qwen3-30b-a3b"), experts=4, experts_active=1)
    picks = [Fraction(12, 25), Fraction(6, 25), Fraction(4, 25), Fraction(3, 25)]
    by_hand = sum(1 - (1 - p) ** 2 for p in picks)
    assert float(experts_touched(tiny, 2, skew=1.0)) == pytest.approx(float(by_hand), rel=1e-12)
    uniform = 4 * (1 - (1 - Fraction(1, 4)) ** 2)
    assert float(experts_touched(tiny, 2)) == pytest.approx(float(uniform), rel=1e-15)
    assert by_hand < uniform
    # Two of 4 active, skew 2: popularity 1, 1/4, 1/9, 1/16 would give the first expert
    # p > 1, so it is picked by every token and the rest share the other pick: 36/61,
    # 16/61, 9/61. One token touches exactly 2; three touch 1 + sum(1 - (1 - p)^3).
    two = replace(tiny, experts_active=2)
    rest = [Fraction(36, 61), Fraction(16, 61), Fraction(9, 61)]
    assert float(experts_touched(two, 1, skew=2.0)) == pytest.approx(2.0, rel=1e-12)
    three = 1 + sum(1 - (1 - p) ** 3 for p in rest)
    assert float(experts_touched(two, 3, skew=2.0)) == pytest.approx(float(three), rel=1e-12)


def test_routing_skew_makes_a_verify_pass_cheaper_at_batch_1():
    uniform, skewed = cost(), cost(**{"cost.expert_skew": 1.0})
    assert float(skewed.verify_us(4, 1, 1024)) < float(uniform.verify_us(4, 1, 1024))
    # One token still loads its k experts whatever the skew.
    assert float(skewed.verify_us(1, 1, 1024)) == pytest.approx(
        float(uniform.verify_us(1, 1, 1024)), rel=1e-3
    )


def test_latent_attention_caches_one_vector_a_layer_on_every_gpu():
    mla = replace(get_model("llama-3.1-8b"), kv_lora_rank=512, qk_rope_head_dim=64)
    assert mla.kv_bytes_per_token(2.0) == 32 * (512 + 64) * 2
    assert mla.kv_shards(8) == 1 and get_model("llama-3.1-8b").kv_shards(8) == 8
    from engine.cost.roofline import Run

    _, kv = pass_bytes(mla, 4, 1000, 2.0, Run(tp=8))
    assert float(kv) == 4 * 1000 * 32 * 576 * 2


def test_a_sliding_window_caps_its_layers_context():
    # 10 of 32 layers see the last 128 tokens only.
    model = replace(get_model("llama-3.1-8b"), sliding_window=128, sliding_layers=10)
    _, kv = pass_bytes(model, 2, 4096, 2.0)
    per_layer = 2 * 8 * 128 * 2
    assert float(kv) == pytest.approx(2 * per_layer * (22 * 4096 + 10 * 128), rel=1e-12)
    _, short = pass_bytes(model, 2, 100, 2.0)  # inside the window: every layer reads it all
    assert float(short) == pytest.approx(2 * 100 * 32 * per_layer, rel=1e-12)


MOE_ENTRY = """
["my-moe"]
name = "an MoE"
params = 1000
layers = 2
d_model = 8
n_heads = 2
kv_heads = 1
head_dim = 4
vocab = 10
source = "test"
notes = ""
"""


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("experts = 4\n", "field 'experts' needs 'experts_active'"),
        ("experts_active = 2\n", "field 'experts_active' needs 'experts'"),
        ("experts = 4\nexperts_active = 5\nexpert_params = 10\n", "'experts_active' must be at"),
        ("experts = 4\nexperts_active = 2\nexpert_params = 200\n", "'params' (1000) must exceed"),
        ("sliding_layers = 1\n", "field 'sliding_layers' needs 'sliding_window'"),
        ("sliding_window = 64\nsliding_layers = 3\n", "'sliding_layers' must be at most layers"),
        ("qk_rope_head_dim = 64\n", "field 'qk_rope_head_dim' needs 'kv_lora_rank'"),
        (
            "experts = 5000\nexperts_active = 2\nexpert_params = 1\n",
            "'experts' must be at most 4096",
        ),
    ],
)
def test_a_user_model_whose_fields_do_not_fit_together_is_one_line(tmp_path, extra, message):
    folder = tmp_path / "spectui"
    folder.mkdir()
    (folder / "models.toml").write_text(
        MOE_ENTRY.replace('source = "test"', extra + 'source = "test"')
    )
    with pytest.raises(SpecError) as caught:
        load_models(folder)
    assert message in str(caught.value) and "[my-moe]" in str(caught.value)
    assert "\n" not in str(caught.value)


def test_skewed_routing_over_many_experts_keeps_memory_bounded():
    # A user's model at the largest expert count: summing 4096 experts over 2,000 token
    # counts at once would hold 66 MB; a block at a time holds about 1 MB.
    import tracemalloc

    import numpy as np

    many = replace(get_model("qwen3-30b-a3b"), experts=4096, experts_active=8)
    tokens = np.arange(1, 2_001, dtype=np.float64)
    tracemalloc.start()
    touched = experts_touched(many, tokens, skew=1.0)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 10e6
    assert touched[0] == pytest.approx(8.0, rel=1e-9) and touched[-1] <= 4096
