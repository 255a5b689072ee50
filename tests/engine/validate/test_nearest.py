"""The app's nearest validated entry: same hardware, target and draft, a speedup."""

from __future__ import annotations

from engine.core.config import SpecConfig
from engine.validate.nearest import nearest, nearest_text


def roofline(**values):
    return SpecConfig().replace(**{"cost.model": "roofline", **values})


def test_the_nearest_entry_is_on_the_same_setup_nearest_in_batch_then_k():
    row = nearest(roofline(**{"cost.draft": "eagle-llama-3.1-8b", "k": 5}))
    assert row is not None and row.entry.id == "vllm-20780-eagle1-k5"
    # Batch 16 on an H100 with the EAGLE-1 head: the EAGLE-3 paper's SGLang sweep, chains of 3.
    row = nearest(roofline(**{"cost.draft": "eagle-llama-3.1-8b", "k": 5, "batch_size": 16}))
    assert row is not None and row.entry.id == "eagle3-paper-eagle-bs16"


def test_a_cost_ratio_is_never_named_on_a_speedup_curve():
    # llama.cpp #8499 measured only cost ratios for these models on an A100.
    config = roofline(
        **{"cost.gpu": "a100-80gb", "cost.target": "llama-2-7b", "cost.draft": "tinyllama-1.1b"}
    )
    assert nearest(config) is None and nearest_text(config) is None


def test_a_cost_model_without_hardware_names_none():
    assert nearest_text(SpecConfig()) is None  # the linear cost: no GPU, no target
