"""`--method` of a model-free method chooses its proposer (issue #42): `--method ngram`,
`pld`, `prompt lookup` and `suffix` resolve to the catalog's n-gram and suffix decoding,
whose rows are drafted by the registered proposers that declare them (ngram, suffix;
``catalog_method``), so without `--proposer` the scenario's proposer becomes that one and its
acceptance is the acceptance GIVEN A HIT: a row over all steps (Spec-Bench) is converted at
the hit rate, M_hit = 1 + (M_all - 1) / h, and the line says the rows, the hit rate and the
conversion. An explicit `--proposer` wins.

Hand-worked: Spec-Bench's RTX 3090 leaderboard gives PLD on Vicuna-7B-v1.3 1.73 mean
accepted tokens per decoding step (every step: a step without a match counts 1.00); at the
proposer's default hit rate 0.547 (vLLM PR #24344: 993 of 1,814 steps drafted),
M_hit = 1 + 0.73 / 0.547 = 2.334552. A fixed rate a at the assumed K = 5 yields it when
(1 - a^6) / (1 - a) = 2.334552; per step, hits and misses, 0.547 x (2.334552 - 1) + 1 = 1.73
again."""

from __future__ import annotations

import json

import pytest

from engine.acceptance.catalog import load_catalog, mean_length_at_constant_rate

SMALL = ("--n-sequences", "20", "--tokens-per-seq", "32")
PLD_ROW = "specbench-3090-vicuna-7b-pld"  # 1.73, Spec-Bench (RTX 3090), Vicuna-7B-v1.3
M_HIT = 1 + 0.73 / 0.547  # 2.334552...


def _flat(text: str) -> str:
    return " ".join(text.split())


def _json(cli, *args: str) -> dict:
    status, out, err = cli("run", *SMALL, *args, "--json")
    assert status == 0, err
    return json.loads(out)


def test_the_ids_the_tests_name_exist():
    from engine.cost.specs import load_models

    row = load_catalog().row(PLD_ROW)
    assert (row.method, row.value, row.length_over) == ("n-gram", 1.73, "all steps")
    assert "vicuna-7b" in load_models()


def test_pld_on_vicuna_7b_drafts_with_ngram_given_a_hit(cli):
    status, out, err = cli("run", *SMALL, "--method", "pld", "--target", "vicuna-7b")
    assert status == 0, err
    flat = _flat(out)
    assert flat.startswith("acceptance: fixed (acceptance ")
    assert (
        "n-gram from the catalog, same target and head: 1 row of specbench-3090-vicuna-7b" in flat
    )
    assert (
        "given a hit: the rows' mean length over all steps converted, M_hit = 1 + (M_all - 1) "
        f"/ h at h = 0.547 ({PLD_ROW} 1.73 -> 2.3346); hit rate 0.547 assumed: the "
        "proposer's default (vLLM PR #24344); the rows give none"
    ) in flat
    assert "proposer ngram (--method n-gram; give --proposer to choose another)" in flat
    assert "ngram (hit rate 0.547, look-up 1.5 us)" in flat  # the scenario's title
    payload = _json(cli, "--method", "pld", "--target", "vicuna-7b")
    assert payload["config"]["proposer.name"] == "ngram"
    assert payload["acceptance"]["rows"] == [PLD_ROW]
    rate = payload["config"]["acceptance_rate"]
    assert mean_length_at_constant_rate(rate, 5) == pytest.approx(M_HIT, rel=1e-5)
    # Per step, hits and misses: the published 1.73 again.
    assert payload["metrics"]["tokens_per_cycle_exact"] == pytest.approx(1.73, abs=1e-4)


@pytest.mark.parametrize("name", ["ngram", "prompt lookup", "PLD", "prompt-lookup"])
def test_every_name_of_n_gram_chooses_ngram(cli, name):
    payload = _json(cli, "--method", name, "--target", "vicuna-7b")
    assert payload["config"]["proposer.name"] == "ngram"
    assert payload["acceptance"]["rows"] == [PLD_ROW]


def test_suffix_chooses_suffix_and_its_rows_count_drafting_steps(cli):
    # vLLM PR #24852: 1226 of 1986 drafts accepted at K = 1, counted over drafting steps.
    payload = _json(cli, "--method", "suffix", "--k", "1")
    assert payload["config"]["proposer.name"] == "suffix"
    assert payload["acceptance"]["rows"] == ["vllm-24852-suffix-k1"]
    text = payload["acceptance"]["text"]
    assert "given a hit: the rows count the drafting steps (no conversion)" in text
    assert payload["config"]["acceptance_rate"] == pytest.approx(0.62)


def test_an_explicit_proposer_wins_and_the_line_says_whose_rows(cli):
    status, out, _ = cli(
        "run", *SMALL, "--proposer", "model", "--method", "pld", "--target", "vicuna-7b"
    )
    assert status == 0
    flat = _flat(out)
    assert (
        "the rows are n-gram's, a model-free proposer's (proposer ngram), fitted as "
        "published; proposer model kept, as given (--proposer)"
    ) in flat
    assert "given a hit" not in flat and "ngram (hit rate" not in flat
    payload = _json(cli, "--proposer", "model", "--method", "pld", "--target", "vicuna-7b")
    assert payload["config"].get("proposer.name", "model") == "model"
    # The draft model drafts every step: the row's 1.73 as published, at K = 5.
    rate = payload["config"]["acceptance_rate"]
    assert mean_length_at_constant_rate(rate, 5) == pytest.approx(1.73, rel=1e-5)


def test_a_given_hit_rate_converts_the_rows(cli):
    payload = _json(cli, "--method", "pld", "--target", "vicuna-7b", "--hit-rate", "0.5")
    text = payload["acceptance"]["text"]
    assert f"{PLD_ROW} 1.73 -> 2.4600" in text  # 1 + 0.73 / 0.5
    assert "hit rate 0.5 as given (--hit-rate)" in text
    rate = payload["config"]["acceptance_rate"]
    assert mean_length_at_constant_rate(rate, 5) == pytest.approx(2.46, rel=1e-5)


def test_eagle3_changes_no_proposer(cli):
    payload = _json(cli, "--method", "eagle3", "--target", "llama-3.1-8b")
    assert "proposer.name" not in payload["config"]  # the default, model
    text = payload["acceptance"]["text"]
    assert "proposer" not in text.split("; target ")[-1] and "given a hit" not in text


def test_an_explicit_acceptance_keeps_the_methods_proposer(cli):
    payload = _json(cli, "--method", "pld", "--acceptance-rate", "0.6")
    assert payload["config"]["proposer.name"] == "ngram"
    assert payload["config"]["acceptance_rate"] == 0.6
    assert payload["acceptance"]["text"].endswith(
        "the catalog was not used (--method n-gram); proposer ngram (--method n-gram; give "
        "--proposer to choose another)"
    )


ROWS_WITH_HIT = """
[[row]]
id = "x-pld"
method = "n-gram"
target = "lmsys/vicuna-7b-v1.3"
dataset = "Spec-Bench"
shape = "chain"
measure = "mean_length"
bonus = true
value = 1.5
hit_rate = 0.25
length_over = "all steps"
printed = "1.5"
source = "made up"
url = "https://example.org/x"
read = "2026-12-08"
"""


def test_the_rows_hit_rate_is_the_one_used_and_the_scenarios(cli, monkeypatch):
    import engine.acceptance.catalog

    catalog = engine.acceptance.catalog.parse_catalog(ROWS_WITH_HIT, "made-up.toml")
    monkeypatch.setattr(engine.acceptance.catalog, "load_catalog", lambda path=None: catalog)
    payload = _json(cli, "--method", "pld", "--target", "vicuna-7b")
    text = payload["acceptance"]["text"]
    assert "x-pld 1.5 -> 3.0000" in text  # 1 + 0.5 / 0.25
    assert "hit rate 0.25 from the rows (x-pld)" in text
    assert payload["config"]["proposer.hit_rate"] == 0.25
    assert payload["metrics"]["tokens_per_cycle_exact"] == pytest.approx(1.5, abs=1e-4)


def test_a_command_that_cannot_take_the_proposer_keeps_its_own():
    # A tree (spectui tree) drafts with a model: the command asks for no proposer change.
    from argparse import Namespace

    from engine.core.config import SpecConfig
    from spectui.cli.flags import choose_acceptance

    args = Namespace(method="pld", dataset=None, preset=None, **{"cost.target": "vicuna-7b"})
    choice = choose_acceptance(args, SpecConfig(), take_proposer=False)
    assert "proposer.name" not in choice.changes
    assert choice.rows == (PLD_ROW,)
    assert choice.text.endswith(
        "the rows are n-gram's, a model-free proposer's (proposer ngram), fitted as "
        "published; proposer model kept, this command does not take the method's proposer"
    )
    rate = choice.changes["acceptance_rate"]
    assert mean_length_at_constant_rate(rate, 5) == pytest.approx(1.73, rel=1e-5)
