"""Hardware and model specs: shipped data, user overrides, one-line errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from engine.cost.specs import (
    SpecError,
    get_hardware,
    get_model,
    load_hardware,
    load_models,
    user_config_dir,
)

SHIPPED_HARDWARE = {
    *("h100", "h200", "b200", "a100-80gb", "mi300x", "l40s", "rtx-4090"),
    *("v100-pcie", "rtx-3090"),  # the validation table's (docs/validation.md)
}
SHIPPED_MODELS = {
    "llama-3.1-8b",
    "llama-3.1-70b",
    "llama-3.2-1b",
    "qwen2.5-7b",
    "qwen2.5-0.5b",
    "eagle-llama-3.1-8b",
    "eagle3-llama-3.1-8b",
    "vicuna-13b",
    # Spec-Bench's drafters and llama.cpp's models: the validation table's (docs/validation.md).
    "eagle-vicuna-13b",
    "eagle3-vicuna-13b",
    "medusa-vicuna-13b-4",
    "vicuna-68m",
    "llama-2-7b",
    "tinyllama-1.1b",
    "llama-160m",
    "vicuna-7b",
    "eagle-vicuna-7b",
    "medusa-vicuna-7b-4",
    "qwen3-30b-a3b",  # MoE (issue #26)
    "llama-3.2-3b",
    *("llama-3.3-70b", "llama-3.1-405b", "qwen3-8b", "qwen3-235b-a22b", "deepseek-v3"),
    *("gpt-oss-120b", "mixtral-8x7b", "eagle3-llama-3.3-70b", "deepseek-v3-mtp"),
    *("qwen3-0.6b", "llama-4-maverick", "minicpm3-4b", "eagle3-minicpm3-4b"),
}

GOOD_HARDWARE = """
[my-gpu]
name = "Measured H100"
flops_bf16 = 7.0e14
mem_bw_bytes_s = 2.9e12
mem_bytes = 85_520_000_000
source = "our benchmarks"
notes = ""
"""


@pytest.fixture
def config_dir(tmp_path, monkeypatch) -> Path:
    """An empty user config directory, found through $XDG_CONFIG_HOME."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    directory = tmp_path / "spectui"
    directory.mkdir()
    return directory


def test_shipped_data_loads_with_the_semantics_figures(config_dir):
    hardware, models = load_hardware(), load_models()
    # The ids the docs and the validation table name (more may be added, one entry each).
    assert set(hardware) >= SHIPPED_HARDWARE
    assert set(models) >= SHIPPED_MODELS
    h100 = hardware["h100"]
    assert (h100.flops_bf16, h100.mem_bw_bytes_s) == (989e12, 3.35e12)
    assert (hardware["mi300x"].flops_bf16, hardware["mi300x"].mem_bw_bytes_s) == (1307e12, 5.3e12)
    llama = models["llama-3.1-8b"]
    assert (llama.layers, llama.d_model, llama.kv_heads, llama.head_dim) == (32, 4096, 8, 128)
    assert llama.params == pytest.approx(8.03e9, rel=1e-3)
    assert llama.kv_bytes_per_token() == 131_072
    assert models["llama-3.1-70b"].kv_bytes_per_token(2) == 327_680
    assert models["eagle-llama-3.1-8b"].layers == 1
    assert models["eagle-llama-3.1-8b"].draft_for == "llama-3.1-8b"
    assert models["llama-3.2-1b"].bytes_per_weight == 2.0
    assert all(spec.source for spec in [*hardware.values(), *models.values()])


def test_user_config_dir_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert user_config_dir() == tmp_path / "spectui"
    monkeypatch.delenv("XDG_CONFIG_HOME")
    assert user_config_dir() == Path.home() / ".config" / "spectui"


def test_user_files_add_and_replace_entries(config_dir):
    shipped = set(load_hardware())  # before the user's file exists
    (config_dir / "hardware.toml").write_text(
        GOOD_HARDWARE
        + """
[h100]
name = "H100, our clocks"
flops_bf16 = 8.0e14
mem_bw_bytes_s = 3.0e12
mem_bytes = 80e9
source = "ours"
notes = "replaces the shipped h100"
"""
    )
    (config_dir / "models.toml").write_text(
        """
["my-model-8b-fp8"]
name = "My model 8B, fp8 weights"
params = 8_030_261_248
layers = 32
d_model = 4096
n_heads = 32
kv_heads = 8
head_dim = 128
vocab = 128256
bytes_per_weight = 1
source = "our config.json"
notes = ""
"""
    )
    hardware = load_hardware()
    assert set(hardware) == shipped | {"my-gpu"}
    assert get_hardware("my-gpu").flops_bf16 == 7.0e14
    replaced = get_hardware("h100")
    assert (replaced.flops_bf16, replaced.name) == (8.0e14, "H100, our clocks")
    assert replaced.origin == str(config_dir / "hardware.toml")
    assert get_hardware("h200").origin == "engine/cost/data/hardware.toml"  # untouched
    fp8 = get_model("my-model-8b-fp8")
    assert fp8.bytes_per_weight == 1.0
    assert fp8.weight_bytes == 8_030_261_248
    assert fp8.ffn_dim is None
    assert get_model("llama-3.1-8b").weight_bytes == 2 * 8_030_261_248
    # The ids a scenario checks on construction, read from the headers only, are the same.
    from engine.core.config import SpecConfig, known_spec_ids
    from engine.cost.specs import HARDWARE_FILE, MODELS_FILE, spec_ids

    assert spec_ids(HARDWARE_FILE) == tuple(sorted(hardware)) == known_spec_ids("hardware")
    assert spec_ids(MODELS_FILE) == tuple(sorted(load_models())) == known_spec_ids("model")
    assert SpecConfig(cost_model="roofline", gpu="my-gpu", target="my-model-8b-fp8").gpu


def test_explicit_config_dir_wins_over_xdg(config_dir, tmp_path):
    other = tmp_path / "elsewhere"
    other.mkdir()
    (other / "hardware.toml").write_text(GOOD_HARDWARE)
    assert "my-gpu" in load_hardware(other)
    assert "my-gpu" not in load_hardware()


def test_unknown_ids_list_the_known_ones(config_dir):
    with pytest.raises(SpecError) as caught:
        get_hardware("h1000")
    message = str(caught.value)
    known = ", ".join(sorted(load_hardware()))
    assert message.startswith(f"unknown hardware 'h1000' (known: {known}")
    assert message.startswith("unknown hardware 'h1000' (known: a100-80gb, b200, ")
    with pytest.raises(SpecError, match=r"unknown model 'llama-8b' \(known: deepseek-v3, "):
        get_model("llama-8b")


# Each model card's headline (total, active) in billions of parameters, against the counts
# the data file recomputes from config.json's shapes (issue #26).
HEADLINES = {
    "llama-3.1-405b": (405, None),
    "qwen3-8b": (8.2, None),
    "qwen3-235b-a22b": (235, 22),
    "deepseek-v3": (671, 37),
    "gpt-oss-120b": (116.83, 5.13),  # the card's active count leaves out the embedding
    "mixtral-8x7b": (46.7, 12.9),
    "qwen3-0.6b": (0.6, None),
    "llama-4-maverick": (400, 17),  # the text model (the vision tower is about 0.5 %)
}


@pytest.mark.parametrize("model_id", sorted(HEADLINES))
def test_new_models_counts_match_their_cards(config_dir, model_id):
    from engine.cost.moe import active_params

    model = load_models()[model_id]
    total, active = HEADLINES[model_id]
    assert model.params / 1e9 == pytest.approx(total, rel=0.01)
    if active is not None:
        counted = active_params(model)
        if model_id == "gpt-oss-120b":
            counted -= model.embedding_lookup_params
        assert counted / 1e9 == pytest.approx(active, rel=0.02)


def test_latent_and_windowed_attention_in_the_shipped_data(config_dir):
    models = load_models()
    # DeepSeek-V3: one 576-element latent a layer a token, 61 layers, fp8 cache entries here.
    assert models["deepseek-v3"].kv_bytes_per_token(1.0) == 61 * 576
    # gpt-oss-120b: half its 36 layers see the last 128 tokens.
    gpt = models["gpt-oss-120b"]
    assert float(gpt.attended(10_128)) == pytest.approx((18 * 10_128 + 18 * 128) / 36)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (GOOD_HARDWARE.replace('name = "Measured H100"\n', ""), "[my-gpu]: missing field 'name'"),
        (
            GOOD_HARDWARE.replace("flops_bf16 = 7.0e14", 'flops_bf16 = "fast"'),
            "[my-gpu]: field 'flops_bf16' must be a number, got a string",
        ),
        (
            GOOD_HARDWARE.replace("mem_bw_bytes_s = 2.9e12", "mem_bw_bytes_s = -1"),
            "[my-gpu]: field 'mem_bw_bytes_s' must be > 0, got -1",
        ),
        (
            GOOD_HARDWARE.replace("mem_bytes = 85_520_000_000", "mem_bytes = true"),
            "[my-gpu]: field 'mem_bytes' must be a number, got a boolean",
        ),
        (
            GOOD_HARDWARE.replace("flops_bf16 = 7.0e14", "flops_bf16 = inf"),
            "[my-gpu]: field 'flops_bf16' must be finite, got inf",
        ),
        (GOOD_HARDWARE + "flops = 1\n", "[my-gpu]: unknown field 'flops' (known: name,"),
        ("[my-gpu\n", "not valid TOML"),
        ("speed = 3\n", "[speed]: expected a table of fields, got 3"),
        (
            GOOD_HARDWARE.replace("[my-gpu]", "[h100.2]"),
            "[h100]: nested table '2': quote an id that contains a dot",
        ),
    ],
)
def test_bad_hardware_entries_give_one_line_naming_file_id_field(config_dir, text, expected):
    user_file = config_dir / "hardware.toml"
    user_file.write_text(text)
    with pytest.raises(SpecError) as caught:
        load_hardware()
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"{user_file}: ")
    assert expected in message


@pytest.mark.parametrize(
    ("field_line", "replacement", "expected"),
    [
        ("layers = 32", "layers = 0", "field 'layers' must be a whole number >= 1, got 0"),
        ("head_dim = 128", "head_dim = 12.5", "field 'head_dim' must be a whole number >= 1"),
        ("vocab = 128256", 'vocab = "big"', "field 'vocab' must be a number, got a string"),
        ("bytes_per_weight = 1", "bytes_per_weight = 0", "field 'bytes_per_weight' must be > 0"),
        (
            'notes = ""',
            'notes = ""\ntied_embeddings = 1',
            "field 'tied_embeddings' must be true or false, got 1",
        ),
    ],
)
def test_bad_model_entries(config_dir, field_line, replacement, expected):
    text = """
["my-model"]
name = "m"
params = 8e9
layers = 32
d_model = 4096
n_heads = 32
kv_heads = 8
head_dim = 128
vocab = 128256
bytes_per_weight = 1
source = "s"
notes = ""
"""
    assert field_line in text
    (config_dir / "models.toml").write_text(text.replace(field_line, replacement))
    with pytest.raises(SpecError) as caught:
        load_models()
    assert "\n" not in str(caught.value)
    assert f"[my-model]: {expected}" in str(caught.value)
    # A bad user file does not hide behind a good lookup: every load reports it.
    with pytest.raises(SpecError):
        get_model("llama-3.1-8b")


def test_data_files_are_package_resources():
    # importlib.resources, not a path relative to the source tree: works from a wheel.
    from importlib import resources

    names = {entry.name for entry in resources.files("engine.cost").joinpath("data").iterdir()}
    assert {"hardware.toml", "models.toml"} <= names
    pyproject = (Path(__file__).parents[3] / "pyproject.toml").read_text()
    assert '"cost/data/*.toml"' in pyproject


def test_cost_modules_stay_pure():
    code = (
        "import sys, engine.cost.specs, engine.cost.roofline, engine.cost.table, "
        "engine.cost.linear, engine.cost.models, engine.core.kernel\n"
        "bad = [m for m in ('textual', 'rich', 'plotext', 'textual_plotext', 'spectui', "
        "'matplotlib', 'pandas') if m in sys.modules]\n"
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
