"""Model-free proposers in the validation table (n-gram / prompt lookup: issue #42): the
table's checks, the tokens per step and the predicted step worked by hand, and their
calibration kept apart from the draft models' of the same series."""

from __future__ import annotations

import pytest

from engine.validate.predict import from_specs, same_bench
from engine.validate.report import MODEL_FREE, group_of, rows_of
from engine.validate.table import TableError, parse_table, shipped_table
from tests.engine.validate.test_predict import H100_BW, H100_F, LLAMA_8B, pass_s

NGRAM = """
[[series]]
id = "s"
category = "model-free"
status = "ok"
source = "somewhere"
url = "https://example.org"
read = "2026-12-08"
hardware = "h100"
target = "llama-3.1-8b"
batch = 1
acceptance = "M"
setup = "setup"
note = "note"
outcome = "speedup"

[[entry]]
id = "ngram"
series = "s"
method = "n-gram"
{fields}
speedup = 1.5
"""
GOOD = 'proposer = "ngram"\nk = 10\nhit_rate = {h}\nlength_over = "{over}"\nmean_length = 3.0'


def ngram(h=0.5, over="drafting steps", fields=None):
    text = NGRAM.format(fields=fields if fields is not None else GOOD.format(h=h, over=over))
    return parse_table(text, "t.toml")[0]


def test_a_mean_length_over_drafting_steps_is_mixed_with_the_plain_steps():
    # Half the steps draft and emit 3 on average, the other half emit 1: 2 a step.
    assert ngram(0.5, "drafting steps").tokens_per_cycle == pytest.approx(2.0)
    # Spec-Bench's mean accepted tokens count every step already.
    assert ngram(0.5, "all steps").tokens_per_cycle == pytest.approx(3.0)
    assert ngram(0.5).shape_text == "ngram K=10 hit rate 0.5"


def test_a_model_free_step_is_a_lookup_and_one_target_pass():
    # Hit: one target pass over 11 tokens; miss: a plain step; both after a 1.5 us look-up.
    step = pass_s(*LLAMA_8B, 1, 512, H100_BW, H100_F)
    hit = pass_s(*LLAMA_8B, 11, 512, H100_BW, H100_F) + 1.5e-6
    miss = step + 1.5e-6
    expected = 2.0 / ((0.5 * hit + 0.5 * miss) / step)
    assert from_specs(ngram(0.5)).value == pytest.approx(expected, rel=1e-9)


def test_the_table_refuses_an_incomplete_model_free_entry():
    with pytest.raises(TableError, match="field 'proposer' must be one of ngram, suffix"):
        ngram(fields='proposer = "model"\nk = 3\nhit_rate = 1.0\nmean_length = 2.0')
    with pytest.raises(TableError, match="missing field 'hit_rate'"):
        ngram(fields='proposer = "ngram"\nk = 3\nmean_length = 2.0')
    with pytest.raises(TableError, match="field 'length_over' must be one of all steps, drafting"):
        ngram(fields='proposer = "ngram"\nk = 3\nhit_rate = 1.0\nmean_length = 2.0')
    with pytest.raises(TableError, match="field 'hit_rate' must be in"):
        ngram(fields='proposer = "ngram"\nk = 3\nhit_rate = 1.5\nmean_length = 2.0')


def test_the_shipped_pld_entries_are_their_own_group_and_calibrate_no_draft_model():
    table = shipped_table()
    pld = [e for e in table if e.proposer is not None]
    assert {e.id for e in pld} >= {"specbench-a100-v13b-pld", "specbench-3090-v7b-pld"}
    assert all(group_of(e) == MODEL_FREE for e in pld)
    # Spec-Bench's A100 Vicuna-13B series: PLD is no point of the heads' calibration.
    eagle = next(e for e in table if e.id == "specbench-a100-v13b-eagle")
    assert "specbench-a100-v13b-pld" not in {e.id for e in same_bench(eagle, table)}
    row = next(r for r in rows_of(table) if r.entry.id == "specbench-a100-v13b-pld")
    assert row.predictions["specs"].value is not None and row.catalog is None
    assert row.predictions["calibrated"].value is None  # alone of its proposer in the series
