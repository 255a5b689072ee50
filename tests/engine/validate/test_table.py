"""The table of published measurements: what it must hold, and a malformed one refused with
one line naming the entry and the field."""

from __future__ import annotations

import pytest

from engine.cost.specs import load_hardware, load_models
from engine.validate.table import CATEGORIES, TableError, parse_table, shipped_table

GOOD = """
[[series]]
id = "s"
category = "batch 1"
status = "ok"
source = "somewhere"
url = "https://example.org"
read = "2026-12-02"
hardware = "h100"
target = "llama-3.1-8b"
method = "EAGLE-1"
draft = "eagle-llama-3.1-8b"
batch = 1
baseline_tpot_ms = 7.0
acceptance = "AL"
setup = "setup"
note = "note"

[[entry]]
id = "s-k2"
series = "s"
k = 2
mean_length = 2.0
tpot_ms = 4.0
outcome = "TPOT 4 ms"
"""


def test_an_entry_takes_its_series_fields_and_computes_the_measured_speedup():
    (entry,) = parse_table(GOOD, "t.toml")
    assert entry.hardware == "h100" and entry.k == 2 and entry.batch == 1
    assert entry.measured == pytest.approx(7.0 / 4.0)
    assert entry.tokens_per_cycle == 2.0 and not entry.pending


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("k = 2", "k = -1"), "entry s-k2: field 'k' must be a whole number >= 0"),
        (("k = 2", "k = 2.5"), "entry s-k2: field 'k' must be a whole number >= 0"),
        (("mean_length = 2.0", "mean_length = 3.5"), "field 'mean_length' must be in [1, K + 1]"),
        (("mean_length = 2.0", "mean_length = nan"), "field 'mean_length' must be a finite number"),
        (("tpot_ms = 4.0", "tpot_ms = -4.0"), "entry s-k2: field 'tpot_ms' must be > 0"),
        (("tpot_ms = 4.0", "speedup = 1.5"), "give exactly one outcome"),
        (("tpot_ms = 4.0", ""), "entry s-k2: missing field 'tpot_ms'"),
        (('status = "ok"', 'status = "later"'), "field 'status' must be 'ok' or 'pending: needs"),
        (('category = "batch 1"', 'category = "huge"'), "field 'category' must be one of"),
        (('read = "2026-12-02"', 'read = "yesterday"'), "field 'read' must be a date"),
        (('series = "s"', 'series = "t"'), "field 'series' names no [[series]] (t)"),
        (('id = "s-k2"', 'id = "S K2"'), "field 'id' must be 1 to 26 lower-case"),
        (('id = "s-k2"', 'id = "' + "x" * 27 + '"'), "field 'id' must be 1 to 26 lower-case"),
        (("k = 2", "k = 2\nbogus = 1"), "entry s-k2: unknown field 'bogus'"),
        (('note = "note"', ""), "entry s-k2: missing field 'note'"),
        (("k = 2", 'k = "two"'), "field 'k' must be a finite number"),
        (("k = 2", "k = true"), "field 'k' must be a finite number"),
        (("mean_length = 2.0", "mean_length = 2.0\ndraft_acceptance = 0.5"), "not both"),
        (("k = 2", "verify_width = 8"), "entry s-k2: a tree needs draft_passes and draft_width"),
        (("k = 2", ""), "entry s-k2: give k (a chain) or verify_width (a tree)"),
        (
            ("k = 2", "k = 2\nverify_width = 8"),
            "give k (a chain) or verify_width (a tree), not both",
        ),
        (("[[entry]]", "[[entries]]"), "t.toml: unknown table 'entries'"),
        (("[[entry]]", "[[entry"), "t.toml: not valid TOML"),
    ],
)
def test_a_malformed_table_is_refused_with_one_line(change, message):
    old, new = change
    with pytest.raises(TableError) as caught:
        parse_table(GOOD.replace(old, new, 1), "t.toml")
    text = str(caught.value)
    assert message in text and "\n" not in text


def test_a_pending_entry_may_leave_k_out():
    text = GOOD.replace('status = "ok"', 'status = "pending: needs K"').replace("k = 2", "")
    (entry,) = parse_table(text, "t.toml")
    assert entry.pending and entry.k is None and entry.verify_width is None


def test_an_id_used_twice_is_refused():
    with pytest.raises(TableError, match="entry s-k2: id used twice"):
        parse_table(GOOD + GOOD[GOOD.index("[[entry]]") :], "t.toml")


# What issue #25 asks of the shipped table.
def test_the_shipped_table_has_twenty_entries_with_sources():
    table = shipped_table()
    assert len(table) >= 20
    for entry in table:
        assert entry.url.startswith("https://") and entry.read.startswith("2026-")
        assert entry.source and entry.setup and entry.acceptance and entry.outcome


def test_the_shipped_table_covers_what_the_issue_lists():
    table = shipped_table()
    assert {e.category for e in table} == set(CATEGORIES)
    ok = [e for e in table if not e.pending]
    assert {"batch 1", "trees"} <= {e.category for e in ok}
    assert len({e.hardware for e in ok}) >= 2
    # A K sweep of one setup: at least three K, so a point can be held out.
    series = {e.series for e in ok if e.k is not None}
    assert any(len({e.k for e in ok if e.series == s}) >= 6 for s in series)
    assert any(e.pending for e in table)
    assert all(e.status.startswith("pending: needs ") for e in table if e.pending)


def test_every_predicted_entry_names_shipped_specs():
    hardware, models = load_hardware(), load_models()
    for entry in shipped_table():
        if entry.pending or entry.k == 0:  # a cycle that drafts nothing is a step: no specs
            continue
        assert entry.hardware in hardware, entry.id
        assert entry.target in models, entry.id
        assert (entry.draft or entry.target) in models, entry.id
