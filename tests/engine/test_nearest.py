"""The catalog's nearest rows (engine.acceptance.nearest): hand-worked choices on a small
made-up catalog (each level, the dataset and temperature preferences, the setup with the
most rows, ties), the one key of a model's names, the one family rule, the method aliases
and the one-line refusals of a method or dataset the catalog does not know."""

from __future__ import annotations

import pytest

from engine.acceptance.catalog import METHODS, load_catalog, parse_catalog
from engine.acceptance.nearest import (
    ALIASES,
    LEVELS,
    CatalogLookupError,
    dataset_names,
    model_family,
    model_key,
    nearest_rows,
    resolve_method,
)

_SOURCE = """source = "made up for the test"
url = "https://example.org/{id}"
read = "2026-12-08"
"""

# Three EAGLE-3 rows of one 8B setup at K 2..4 (MT-Bench, no temperature), two single rows
# on the same 8B target (HumanEval at T 0: another head, and the same head), two of a 70B
# setup (GSM8K, T 1), one on Qwen3-8B, one n-gram row. No row of suffix decoding.
CATALOG_TEXT = (
    """
[[series]]
id = "s8b"
method = "EAGLE-3"
target = "meta-llama/Llama-3.1-8B-Instruct"
draft = "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"
dataset = "MT-Bench"
shape = "chain"
measure = "mean_length"
bonus = true
"""
    + _SOURCE.format(id="s8b")
    + """
[[row]]
id = "a2"
series = "s8b"
k = 2
value = 2.3
printed = "2.3"

[[row]]
id = "a3"
series = "s8b"
k = 3
value = 2.7
printed = "2.7"

[[row]]
id = "a4"
series = "s8b"
k = 4
value = 3.0
printed = "3.0"

[[row]]
id = "b-other-head"
method = "EAGLE-3"
target = "meta-llama/Llama-3.1-8B-Instruct"
draft = "someone/other-head-8b"
dataset = "HumanEval"
temperature = 0.0
shape = "chain"
k = 3
measure = "mean_length"
bonus = true
value = 2.5
printed = "2.5"
"""
    + _SOURCE.format(id="b1")
    + """
[[row]]
id = "b-same-head"
method = "EAGLE-3"
target = "meta-llama/Llama-3.1-8B-Instruct"
draft = "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"
dataset = "HumanEval (164 problems)"
temperature = 0.0
shape = "chain"
k = 3
measure = "mean_length"
bonus = true
value = 2.9
printed = "2.9"
"""
    + _SOURCE.format(id="b2")
    + """
[[series]]
id = "s70b"
method = "EAGLE-3"
target = "meta-llama/Llama-3.3-70B-Instruct"
dataset = "GSM8K"
temperature = 1.0
shape = "chain"
measure = "mean_length"
bonus = true
"""
    + _SOURCE.format(id="s70b")
    + """
[[row]]
id = "c2"
series = "s70b"
k = 2
value = 2.2
printed = "2.2"

[[row]]
id = "c3"
series = "s70b"
k = 3
value = 2.5
printed = "2.5"

[[row]]
id = "d-qwen"
method = "EAGLE-3"
target = "Qwen/Qwen3-8B"
dataset = "MT-bench"
shape = "chain"
k = 3
measure = "mean_length"
bonus = true
value = 2.4
printed = "2.4"
"""
    + _SOURCE.format(id="d")
    + """
[[row]]
id = "e-pld"
method = "n-gram"
target = "lmsys/vicuna-7b-v1.3"
dataset = "Spec-Bench"
shape = "chain"
measure = "mean_length"
bonus = true
value = 1.7
length_over = "all steps"
printed = "1.7"
"""
    + _SOURCE.format(id="e")
)


@pytest.fixture(scope="module")
def catalog():
    return parse_catalog(CATALOG_TEXT, "made-up.toml")


def _ids(nearest) -> list[str]:
    return [row.id for row in nearest.rows]


# --- The levels ----------------------------------------------------------------------------


def test_same_target_without_a_head_takes_the_setup_with_the_most_rows(catalog):
    # Without a draft every head on the target counts: a2..a4 (3 rows), b-other-head,
    # b-same-head (1 each): three setups, the one of three rows wins.
    nearest = nearest_rows(catalog, "eagle3", target="llama-3.1-8b")
    assert nearest.level == "same target and head"
    assert _ids(nearest) == ["a2", "a3", "a4"]
    assert nearest.candidates == 5
    assert nearest.description == (
        "EAGLE-3 from the catalog, same target and head: 3 rows of s8b "
        "(meta-llama/Llama-3.1-8B-Instruct, yuhuili/EAGLE3-LLaMA3.1-Instruct-8B, MT-Bench, "
        "T not stated, chain K 2..4; made up for the test, https://example.org/s8b; "
        "the most rows of 3 setups)"
    )


def test_the_same_head_and_dataset_win_within_the_first_level(catalog):
    # With the head: a2..a4 and b-same-head are the first level (b-other-head is not); of
    # those, HumanEval is b-same-head's alone ("HumanEval (164 problems)" is HumanEval).
    nearest = nearest_rows(
        catalog, "EAGLE-3", target="llama-3.1-8b", draft="eagle3-llama-3.1-8b", dataset="humaneval"
    )
    assert nearest.level == "same target and head"
    assert _ids(nearest) == ["b-same-head"]
    assert nearest.dataset_matched is True
    assert nearest.why == "the only setup of dataset humaneval (of 2 at this level)"


def test_another_head_on_the_target_is_the_second_level(catalog):
    # A draft no row names: every row of the target is "same target"; a2..a4 has most rows.
    nearest = nearest_rows(catalog, "eagle3", target="llama-3.1-8b", draft="llama-3.2-1b")
    assert nearest.level == "same target"
    assert _ids(nearest) == ["a2", "a3", "a4"]


def test_a_dataset_not_measured_at_the_level_keeps_the_level_and_says_so(catalog):
    nearest = nearest_rows(catalog, "eagle3", target="llama-3.1-8b", dataset="GSM8K")
    assert nearest.level == "same target and head"  # GSM8K is the 70B's only: not nearer
    assert _ids(nearest) == ["a2", "a3", "a4"]
    assert nearest.dataset_matched is False
    assert "no row of dataset 'GSM8K' at this level" in nearest.description


def test_a_target_of_the_same_family_then_the_nearest_temperature(catalog):
    # llama-3.1-70b: no row; llama-3.x rows are the 8B's (5) and the 3.3-70B's (2).
    nearest = nearest_rows(catalog, "eagle3", target="llama-3.1-70b")
    assert nearest.level == "same family"
    assert _ids(nearest) == ["a2", "a3", "a4"]  # most rows
    # At T 1 only c2, c3 are stated at 1 (b-* at 0, a* unstated): they win over more rows.
    warm = nearest_rows(catalog, "eagle3", target="llama-3.1-70b", temperature=1.0)
    assert _ids(warm) == ["c2", "c3"]
    assert warm.why == "the only setup at the nearest temperature (of 4 at this level)"
    # At T 0.2 the nearest stated temperature is 0 (b-*): two setups of one row, the first.
    cool = nearest_rows(catalog, "eagle3", target="llama-3.1-70b", temperature=0.2)
    assert _ids(cool) == ["b-other-head"]
    assert cool.why == (
        "2 setups at the nearest temperature of 1 row each: the first in the catalog"
    )


def test_a_target_of_another_family_is_the_method_on_another_target(catalog):
    # Qwen2.5 is qwen-2.x, the catalog's Qwen3-8B qwen-3.x: no family; all 8 EAGLE-3 rows.
    nearest = nearest_rows(catalog, "eagle3", target="qwen2.5-7b")
    assert nearest.level == "same method on another target"
    assert nearest.candidates == 8
    assert _ids(nearest) == ["a2", "a3", "a4"]
    assert nearest_rows(catalog, "eagle3", target="qwen3-8b").level == "same target and head"


def test_a_method_without_rows_is_nothing(catalog):
    nearest = nearest_rows(catalog, "suffix", target="llama-3.1-8b")
    assert nearest.level == LEVELS[-1] == "nothing"
    assert nearest.rows == () and not nearest.found
    assert nearest.description == "suffix decoding: nothing in the catalog (no row of this method)"


def test_aliases_and_spellings_find_the_catalog_method(catalog):
    assert _ids(nearest_rows(catalog, "PLD", target="vicuna-7b")) == ["e-pld"]
    assert resolve_method("prompt-lookup") == resolve_method("ngram") == "n-gram"
    assert resolve_method("eagle3") == resolve_method("EAGLE 3") == "EAGLE-3"
    assert resolve_method("mtp") == "MTP"
    assert resolve_method("Draft_Model") == "draft model"
    # The table maps to the catalog's methods only, and never repeats a method's own name.
    squeeze = [m.lower().replace("-", "").replace(" ", "") for m in METHODS]
    for alias, method in ALIASES.items():
        assert method in METHODS
        assert alias.lower().replace("-", "").replace(" ", "") not in squeeze


def test_an_unknown_method_is_one_line_naming_the_known_ones(catalog):
    with pytest.raises(CatalogLookupError) as raised:
        nearest_rows(catalog, "medusa-2", target="llama-3.1-8b")
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith("--method: unknown method 'medusa-2'; known: draft model, EAGLE,")
    assert all(method in message for method in METHODS)
    assert all(alias in message for alias in ALIASES)
    with pytest.raises(CatalogLookupError, match=r"'x{40}\.\.\.'"):
        resolve_method("x" * 100_000)  # a pasted megabyte is not echoed back


def test_an_unknown_dataset_is_one_line_naming_the_catalogs(catalog):
    assert dataset_names(catalog) == ("MT-Bench", "HumanEval", "GSM8K", "Spec-Bench")
    with pytest.raises(CatalogLookupError) as raised:
        nearest_rows(catalog, "eagle3", target="llama-3.1-8b", dataset="ShareGPT")
    assert str(raised.value) == (
        "--dataset: unknown dataset 'ShareGPT'; known: MT-Bench; HumanEval; GSM8K; Spec-Bench"
    )


# --- One key for a model's names, one family rule -----------------------------------------


@pytest.mark.parametrize(
    ("spec_id", "hugging_face_id"),
    [
        ("llama-3.1-8b", "meta-llama/Llama-3.1-8B-Instruct"),
        ("llama-3.3-70b", "meta-llama/Llama-3.3-70B-Instruct"),
        ("vicuna-13b", "lmsys/vicuna-13b-v1.3"),
        ("qwen3-30b-a3b", "Qwen/Qwen3-30B-A3B"),
        ("deepseek-v3", "deepseek-ai/DeepSeek-V3-0324"),
        ("eagle3-llama-3.1-8b", "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"),
        ("eagle-llama-3.1-8b", "yuhuili/EAGLE-LLaMA3.1-Instruct-8B"),
        ("llama-3.2-1b", "Llama 3.2 1B Instruct Q8_0 (llama3.2:1b-instruct-q8_0)"),
        ("llama-4-maverick", "Llama 4 Maverick (NV FP8)"),
    ],
)
def test_a_spec_id_and_its_hugging_face_id_have_one_key(spec_id, hugging_face_id):
    assert model_key(spec_id) == model_key(hugging_face_id)


def test_model_keys_by_hand():
    assert model_key("meta-llama/Llama-3.1-8B-Instruct") == "llama-3.1-8-b"
    assert model_key("meta-llama/Meta-Llama-3-8B-Instruct") == "llama-3-8-b"
    assert model_key("nvidia/DeepSeek-V4-Flash-NVFP4") == "deepseek-v-4-flash"
    # Different models keep different keys.
    for a, b in [
        ("llama-3.1-8b", "llama-3.1-70b"),
        ("llama-3.1-8b", "meta-llama/Meta-Llama-3-8B-Instruct"),
        ("qwen3-30b-a3b", "Qwen/Qwen3-VL-30B-A3B-Instruct-FP8"),
        ("deepseek-v3", "nvidia/DeepSeek-V4-Flash-NVFP4"),
        ("eagle3-llama-3.1-8b", "eagle-llama-3.1-8b"),
    ]:
        assert model_key(a) != model_key(b), (a, b)


@pytest.mark.parametrize(
    ("name", "family"),
    [
        ("llama-3.1-8b", "llama-3.x"),
        ("meta-llama/Llama-3.3-70B-Instruct", "llama-3.x"),
        ("meta-llama/Meta-Llama-3-8B-Instruct", "llama-3.x"),
        ("llama-3.2-1b", "llama-3.x"),
        ("Llama 4 Maverick (NV FP8)", "llama-4.x"),
        ("llama-2-7b", "llama-2.x"),
        ("llama-160m", "llama"),  # a size follows the name: no version
        ("Qwen/Qwen3-8B", "qwen-3.x"),
        ("qwen3-30b-a3b", "qwen-3.x"),
        ("qwen2.5-7b", "qwen-2.x"),
        ("deepseek-ai/DeepSeek-V3-0324", "deepseek-3.x"),
        ("nvidia/DeepSeek-V4-Flash-NVFP4", "deepseek-4.x"),
        ("lmsys/vicuna-7b-v1.3", "vicuna"),
        ("vicuna-33b", "vicuna"),
        ("mixtral-8x7b", "mixtral"),
        ("openai/gpt-oss-20b", "gpt-oss"),
        ("google/gemma-4-E4B-it", "gemma-4.x"),
        ("70b", ""),
    ],
)
def test_the_family_rule(name, family):
    assert model_family(name) == family


def test_a_target_without_a_family_shares_none():
    text = CATALOG_TEXT.replace('target = "Qwen/Qwen3-8B"', 'target = "8B"')
    made_up = parse_catalog(text, "made-up.toml")
    # "70b" and "8B" both have the empty family: that is no family, not the same one.
    assert nearest_rows(made_up, "eagle3", target="70b").level == "same method on another target"


# --- The shipped catalog ---------------------------------------------------------------------


def test_the_shipped_catalogs_eagle3_head_on_llama_8b():
    nearest = nearest_rows(load_catalog(), "eagle3", target="llama-3.1-8b")
    assert nearest.level == "same target and head"
    # vLLM issue #20780's table: the EAGLE-3 head at K 2..7, the most rows on this target.
    assert _ids(nearest) == [f"vllm-20780-eagle3-k{k}" for k in range(2, 8)]
    assert "vllm-project/vllm issue #20780" in nearest.description
