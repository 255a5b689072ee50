"""Issue #42's follow-ups on the engine side: a model-free proposer's runs name its sampler,
place no draft model, and say on screen that a look-up, not a draft pass, precedes each
step (engine.sweep.sweep.sampler_name, engine.cost.placement.check_feasible, spectui.render).
"""

from __future__ import annotations

import json

import pytest

ROOFLINE_7B_3090 = ("--cost", "roofline", "--target", "vicuna-7b", "--gpu", "rtx-3090")


def test_a_model_free_run_names_the_proposers_sampler(cli):
    status, out, err = cli("run", "--proposer", "ngram", "--n-sequences", "20", "--json")
    assert status == 0, err
    assert json.loads(out)["sampler"] == "proposer/1"


def test_a_draft_models_run_keeps_its_sampler(cli):
    status, out, err = cli("run", "--n-sequences", "20", "--json")
    assert status == 0, err
    assert json.loads(out)["sampler"] == "prefix/2"


def test_a_sweep_row_of_a_model_free_proposer_names_its_sampler():
    from engine.core.config import SpecConfig
    from engine.sweep.sweep import evaluate_many

    rows = evaluate_many(
        [
            SpecConfig(n_sequences=20).replace(**{"proposer.name": "ngram"}),
            SpecConfig(n_sequences=20),
        ]
    )
    assert [row["sampler"] for row in rows] == ["proposer/1", "prefix/2"]


def test_no_draft_is_placed_for_a_model_free_proposer(cli):
    # vicuna-7b twice (2 x 6,738,415,616 x 2 bytes = 27.0 GB) exceed an RTX 3090's
    # 24 GB - 2 GB reserve = 22.0 GB; the target alone (13.5 GB) fits.
    status, _, err = cli("run", *ROOFLINE_7B_3090, "--draft", "vicuna-7b", "--n-sequences", "5")
    assert status == 2
    assert "vicuna-7b and vicuna-7b take 27.0 GB" in err
    status, _, err = cli(
        "run",
        *ROOFLINE_7B_3090,
        "--draft",
        "vicuna-7b",
        "--proposer",
        "ngram",
        "--n-sequences",
        "5",
    )
    assert status == 0, err


def test_the_target_alone_leaves_its_bytes_for_the_kv_cache():
    from engine.core.fields import ConfigError
    from engine.cost.placement import Run, check_feasible
    from engine.cost.specs import get_hardware, get_model

    hw, target = get_hardware("rtx-3090"), get_model("vicuna-7b")
    # 24e9 - 2e9 reserve - 6,738,415,616 x 2 bytes = 8,523,168,768 bytes.
    assert check_feasible(hw, target, None, Run(), Run(tp=8), 1.0) == 8_523_168_768
    with pytest.raises(ConfigError, match=r"^cost.target: vicuna-7b and vicuna-7b take 27.0 GB"):
        check_feasible(hw, target, target, Run(), Run(), 1.0)
    # The message names the target alone when no draft is placed.
    with pytest.raises(ConfigError, match=r"^cost.target: llama-3.1-70b takes "):
        check_feasible(hw, get_model("llama-3.1-70b"), None, Run(), Run(), 1.0)


def _row(out: str, name: str) -> str:
    for line in out.splitlines():
        text = line.strip().strip("│").strip()
        if text.startswith(name + "  "):
            return " ".join(text[len(name) :].split())
    raise AssertionError(f"no row {name!r} in:\n{out}")


def test_the_run_title_names_the_proposer_and_its_look_up(cli):
    status, out, err = cli("run", "--proposer", "ngram", "--hit-rate", "0.4", "--n-sequences", "20")
    assert status == 0, err
    text = " ".join(out.replace("│", " ").split())
    assert "K=5, ngram (hit rate 0.4, look-up 1.5 us), linear: draft 20 us" in text
    assert "its draft unused (no draft pass)" in text
    assert _row(out, "look-up / step") == "1.500 us CPU, every step, hit or not"
    assert "draft time / cycle" not in out


def test_a_draft_models_run_title_is_as_before(cli):
    status, out, err = cli("run", "--n-sequences", "20")
    assert status == 0, err
    assert _row(out, "draft time / cycle") == "100.0 us K=5, context 0"
    assert "look-up" not in out and "no draft pass" not in out
