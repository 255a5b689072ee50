"""Issue #41: a placement of the models that cannot exist (tp that does not split the heads,
ep that does not split the experts, weights that no GPU of the kind holds) is refused when
the scenario is made, naming the field and what would do (engine.cost.placement). The
figures are worked by hand from engine/cost/data/models.toml and hardware.toml."""

from __future__ import annotations

from dataclasses import replace

import pytest

from engine.core.config import ConfigError, SpecConfig
from engine.cost.models import build_cost
from engine.cost.placement import Run, check_feasible
from engine.cost.specs import get_hardware, get_model
from engine.serve.server import Server, kv_capacity


def scenario(**fields):
    return SpecConfig().replace(**{"cost.model": "roofline", **fields})


def refusal(**fields) -> str:
    with pytest.raises(ConfigError) as caught:
        scenario(**fields)
    return str(caught.value)


def test_tp_must_divide_the_attention_heads_and_the_message_lists_the_counts_that_do():
    # Llama-3.1-8B: 32 heads, 8 KV heads; its divisors up to 64 split both.
    assert refusal(**{"cost.tp": 3}) == (
        "cost.tp: 3 does not divide llama-3.1-8b's 32 attention heads; choose 1, 2, 4, 8, 16 or 32"
    )
    for tp in (1, 2, 4, 8, 16, 32):
        assert scenario(**{"cost.tp": tp}).tp == tp
    assert "64 does not divide" in refusal(**{"cost.tp": 64})


def test_tp_must_split_the_kv_heads_or_replicate_them_evenly():
    # Llama-3.2-3B: 24 heads, 8 KV heads. 6 and 12 divide the heads, but 6 GPUs cannot
    # share 8 KV heads and 12 cannot hold copies of them evenly; 24 holds each 3 times.
    expected = (
        "cost.tp: {} GPUs cannot share llama-3.2-3b's 8 KV heads evenly (tp must divide "
        "them or be a multiple of them); choose 1, 2, 4, 8 or 24"
    )
    for tp in (6, 12):
        assert refusal(**{"cost.target": "llama-3.2-3b", "cost.tp": tp}) == expected.format(tp)
    assert scenario(**{"cost.target": "llama-3.2-3b", "cost.tp": 24}).tp == 24


def test_the_draft_is_checked_on_its_own_gpus():
    assert refusal(**{"cost.draft_tp": 3}) == (
        "cost.draft_tp: 3 does not divide llama-3.2-1b's 32 attention heads; "
        "choose 1, 2, 4, 8, 16 or 32"
    )
    # Qwen2.5-0.5B: 14 heads, 2 KV heads: 1, 2, 14 (7 GPUs cannot share 2 KV heads).
    assert refusal(**{"cost.draft": "qwen2.5-0.5b", "cost.draft_tp": 7}) == (
        "cost.draft_tp: 7 GPUs cannot share qwen2.5-0.5b's 2 KV heads evenly (tp must divide "
        "them or be a multiple of them); choose 1, 2 or 14"
    )


def test_a_latent_cache_is_replicated_so_only_the_attention_heads_count():
    hw, draft = get_hardware("h100"), get_model("llama-3.2-1b")
    grouped = get_model("llama-3.2-3b")  # 24 heads, 8 KV heads
    latent = replace(grouped, kv_lora_rank=256, qk_rope_head_dim=32)
    with pytest.raises(ConfigError, match="6 GPUs cannot share llama-3.2-3b's 8 KV heads"):
        check_feasible(hw, grouped, draft, Run(tp=6), Run())
    assert check_feasible(hw, latent, draft, Run(tp=6), Run()) > 0


def test_ep_must_divide_the_routed_experts():
    assert refusal(**{"cost.target": "qwen3-30b-a3b", "cost.ep": 3}) == (
        "cost.ep: 3 does not divide qwen3-30b-a3b's 128 routed experts; "
        "choose 1, 2, 4, 8, 16, 32 or 64"
    )
    assert scenario(**{"cost.target": "qwen3-30b-a3b", "cost.ep": 64}).ep == 64
    # A dense target keeps its own message (tests/engine/cost/test_moe.py).
    assert refusal(**{"cost.ep": 2}).startswith("cost.ep: llama-3.1-8b has no routed experts")


# Llama-3.1-405B and the 1B draft in bf16: (405,853,388,800 + 1,235,814,400) x 2 bytes =
# 814.2 GB; an A100 80GB's whole memory less the server's 2 GB reserve: 78.0 GB.
TOO_BIG = (
    "cost.target: llama-3.1-405b and llama-3.2-1b take 814.2 GB a GPU of a100-80gb's 78.0 GB "
    "usable (gpu_memory_utilization 1, reserve 2 GB): the weights do not fit; spread them "
    "over more GPUs (cost.tp) or use a bigger GPU"
)


def test_weights_no_gpu_of_the_kind_holds_are_refused_with_their_sizes():
    assert refusal(**{"cost.gpu": "a100-80gb", "cost.target": "llama-3.1-405b"}) == TOO_BIG
    # Over 16 GPUs: 405,853,388,800 x 2 / 16 + 2,471,628,800 = 53.2 GB a GPU: fits.
    assert scenario(**{"cost.gpu": "a100-80gb", "cost.target": "llama-3.1-405b", "cost.tp": 16})
    # roofline_max places its models alike.
    too_big = {
        "cost.model": "roofline_max",
        "cost.gpu": "a100-80gb",
        "cost.target": "llama-3.1-405b",
    }
    with pytest.raises(ConfigError) as caught:
        SpecConfig().replace(**too_big)
    assert str(caught.value) == TOO_BIG


# Llama-3.1-70B in fp8 on one H100 with the bf16 1B draft: 70,553,706,496 x 1 +
# 1,235,814,400 x 2 = 73,025,335,296 bytes (73.0 GB): over 0.9 x 80 - 2 = 70.0 GB, under
# 80 - 2 = 78.0 GB.
FP8_70B = {"cost.target": "llama-3.1-70b", "cost.weight_dtype": "fp8"}


def test_a_scenario_every_command_accepts_is_one_load_can_serve():
    cost = build_cost(scenario(**FP8_70B))  # accepted: run, sweep, regime, ... take it
    with pytest.raises(ConfigError) as caught:
        kv_capacity(cost, Server())  # load's default gpu_memory_utilization 0.9
    assert str(caught.value) == (
        "cost.target: llama-3.1-70b and llama-3.2-1b take 73.0 GB a GPU of h100's 70.0 GB "
        "usable (gpu_memory_utilization 0.9, reserve 2 GB): the weights do not fit; raise "
        "gpu_memory_utilization (at 1 they fit), spread them over more GPUs (cost.tp) or use "
        "a bigger GPU"
    )
    # At 1: (78e9 - 73,025,335,296) / (327,680 + 32,768) KV bytes a token = 13,801.4.
    assert kv_capacity(cost, Server(gpu_memory_utilization=1.0)) == 13_801
    # And a scenario no server could hold is refused by every command before load's turn.
    with pytest.raises(ConfigError) as caught:
        scenario(**{"cost.gpu": "a100-80gb", "cost.target": "llama-3.1-405b"})
    assert str(caught.value) == TOO_BIG


def test_kv_capacity_refuses_a_placement_made_by_hand_as_the_scenario_does():
    # A cost built without a scenario (the engine's own callers) meets the same check.
    hw, target, draft = get_hardware("h100"), get_model("llama-3.1-8b"), get_model("llama-3.2-1b")
    cost = build_cost(scenario())
    odd = replace(cost, target_run=Run(tp=3))
    with pytest.raises(ConfigError, match="cost.tp: 3 does not divide llama-3.1-8b's 32"):
        kv_capacity(odd, Server())
    # 8B and 1B on an H100: 0.9 x 80e9 - 2e9 - (8,030,261,248 + 1,235,814,400) x 2 bytes.
    assert check_feasible(hw, target, draft, Run(), Run(), 0.9, 2.0) == pytest.approx(
        51_467_848_704.0, abs=1.0
    )


def test_an_edited_user_spec_file_is_read_again(tmp_path):
    folder = tmp_path / "xdg-config" / "spectui"
    folder.mkdir(parents=True)
    models = folder / "models.toml"
    entry = (
        '["odd-7b"]\nname = "Odd"\nparams = 7e9\nlayers = 32\nd_model = 4096\n'
        'n_heads = {}\nkv_heads = {}\nhead_dim = 128\nvocab = 32000\nsource = "a test"\n'
        'notes = "none"\n'
    )
    models.write_text(entry.format(32, 8))
    assert scenario(**{"cost.target": "odd-7b", "cost.tp": 4}).tp == 4  # and remembered
    models.write_text(entry.format(30, 30) + "# now 30 heads\n")
    assert refusal(**{"cost.target": "odd-7b", "cost.tp": 4}) == (
        "cost.tp: 4 does not divide odd-7b's 30 attention heads; choose 1, 2, 3, 5, 6, 10, 15 or 30"
    )
