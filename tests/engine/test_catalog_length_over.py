"""What a model-free method's mean accepted length counts (the catalog's ``length_over``)
and the one conversion between a length over all steps and the length given a hit
(engine.acceptance.catalog.convert_length_over): M_all = h (M_hit - 1) + 1.

Hand-worked: Spec-Bench's A100 leaderboard gives PLD on Vicuna-7B 1.75 mean accepted tokens
over every step; at h = 0.547, M_hit = 1 + 0.75 / 0.547 = 2.371115."""

from __future__ import annotations

import pytest

from engine.acceptance.catalog import (
    CatalogError,
    convert_length_over,
    load_catalog,
    parse_catalog,
)


def test_the_worked_conversion_both_ways():
    assert convert_length_over(1.75, 0.547, "all steps", "drafting steps") == pytest.approx(
        2.371115, abs=1e-6
    )
    assert convert_length_over(2.371115, 0.547, "drafting steps", "all steps") == pytest.approx(
        1.75, abs=1e-6
    )
    # h = 1: every step drafted, the two are one; h = 0.5: 1 + 0.5 x 2 = 2.
    assert convert_length_over(3.0, 1.0, "drafting steps", "all steps") == 3.0
    assert convert_length_over(2.0, 0.5, "all steps", "drafting steps") == 3.0
    assert convert_length_over(2.5, 0.3, "all steps", "all steps") == 2.5
    with pytest.raises(ValueError, match="hit rate 0"):
        convert_length_over(1.0, 0.0, "all steps", "drafting steps")


def test_validation_counts_a_drafting_steps_length_per_step():
    # An entry of the measurements table: M 4.59 over drafting steps at h 0.547 is
    # 0.547 x 3.59 + 1 = 2.96373 per step (vLLM PR #24344 printed 2.96 "seq normalized").
    from engine.validate.table import Entry

    entry = Entry.__new__(Entry)
    values = {"mean_length": 4.59, "length_over": "drafting steps", "hit_rate": 0.547}
    values["proposer"] = "ngram"
    object.__setattr__(entry, "values", values)
    try:
        got = entry.tokens_per_cycle
    except AttributeError:
        pytest.skip("Entry is built differently: see test_model_free_entries")
    assert got == pytest.approx(2.96373, abs=1e-9)


def test_the_shipped_model_free_rows_say_what_they_count():
    catalog = load_catalog()
    spec_bench = [row for row in catalog.rows if row.id.startswith("specbench-")]
    pld = {row.id: row.length_over for row in spec_bench if row.method == "n-gram"}
    assert pld == {
        "specbench-3090-vicuna-7b-pld": "all steps",
        "specbench-a100-vicuna-7b-pld": "all steps",
        "specbench-a100-vicuna-13b-pld": "all steps",
        "specbench-a100-vicuna-33b-pld": "all steps",
    }
    assert catalog.row("vllm-24344-ngram-k5-edit").length_over == "drafting steps"
    assert catalog.row("vllm-24852-suffix-k1").length_over == "drafting steps"
    assert catalog.row("specbench-a100-vicuna-7b-sps").length_over is None  # a draft model


ROW = """
[[row]]
id = "{id}"
method = "{method}"
target = "lmsys/vicuna-7b-v1.3"
dataset = "Spec-Bench"
shape = "chain"
measure = "{measure}"
{value}
{extra}
printed = "x"
source = "made up"
url = "https://example.org/x"
read = "2026-12-08"
"""


def _row(method="n-gram", measure="mean_length", extra="", id="bad-pld"):
    value = (
        "value = 1.75\nbonus = true" if measure == "mean_length" else "k = 2\nrates = [0.5, 0.4]"
    )
    return ROW.format(id=id, method=method, measure=measure, value=value, extra=extra)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            _row(extra='length_over = "every step"'),
            "made-up.toml: row bad-pld: field 'length_over' must be one of all steps, drafting "
            "steps, not 'every step'",
        ),
        (
            _row(),
            "made-up.toml: row bad-pld: missing field 'length_over' (a model-free method's "
            "mean length: over all steps or drafting steps?)",
        ),
        (
            _row(method="EAGLE-3", extra='length_over = "all steps"'),
            "made-up.toml: row bad-pld: field 'length_over' is given for a model-free "
            "method's rows only (n-gram, suffix decoding)",
        ),
        (
            _row(measure="cumulative_rates", extra='length_over = "all steps"'),
            "made-up.toml: row bad-pld: field 'length_over' is 'all steps' for mean_length rows "
            "only (a cumulative_rates row counts drafting steps)",
        ),
        (
            _row(extra="length_over = 3"),
            "made-up.toml: row bad-pld: field 'length_over' must be non-empty text",
        ),
    ],
)
def test_a_bad_length_over_fails_the_check_naming_the_row(text, message):
    with pytest.raises(CatalogError) as caught:
        parse_catalog(text, "made-up.toml")
    assert str(caught.value) == message


def test_a_rate_row_of_a_model_free_method_may_omit_it_and_a_long_value_is_cut():
    row = parse_catalog(_row(measure="cumulative_rates"), "ok.toml").rows[0]
    assert row.length_over is None
    with pytest.raises(CatalogError) as caught:
        parse_catalog(_row(extra=f'length_over = "{"x" * 10_000}"'), "made-up.toml")
    assert len(str(caught.value)) < 200


def test_a_newly_registered_model_free_proposer_makes_its_method_model_free():
    # One registration per part: a proposer declaring REST makes REST's mean-length rows
    # need length_over, and nothing else has to list it.
    from engine.core.parts import PROPOSER
    from engine.proposers.base import ProposerPart

    text = _row(method="REST", id="rest-row")
    assert parse_catalog(text, "ok.toml").rows[0].method == "REST"

    class RestLookup(ProposerPart):
        name = "test_rest_lookup"
        description = "a test's: retrieval drafts"
        model_free = True
        catalog_method = "REST"

    PROPOSER.register(RestLookup)
    try:
        with pytest.raises(CatalogError, match="row rest-row: missing field 'length_over'"):
            parse_catalog(text, "made-up.toml")
    finally:
        PROPOSER.unregister("test_rest_lookup")
