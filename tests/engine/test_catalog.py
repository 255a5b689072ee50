"""The acceptance catalog (engine/acceptance/data/catalog.toml): the shipped file loads with
the counts it holds, the four measures convert by hand-worked figures, and every check
refuses a bad row planted in a copy of the file, naming the row and the field."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from engine.acceptance.catalog import (
    CATALOG_PATH,
    CatalogError,
    accepted_per_drafted,
    conditional_from_cumulative,
    cumulative_from_conditional,
    load_catalog,
    mean_length_at_constant_rate,
    to_mean_length,
)

# --- The shipped catalog -------------------------------------------------------------------


def _raw_rows() -> list[dict]:
    """The rows of the shipped file as TOML reads them, each with its series' fields."""
    document = tomllib.loads(CATALOG_PATH.read_text(encoding="utf-8"))
    series = {table["id"]: table for table in document["series"]}
    return [{**series.get(row.get("series", ""), {}), **row} for row in document["row"]]


def test_the_shipped_catalog_loads_every_row_of_the_file():
    raw = _raw_rows()
    catalog = load_catalog()
    assert [row.id for row in catalog.rows] == [row["id"] for row in raw]
    assert catalog.methods == tuple(sorted({row["method"] for row in raw}))
    assert catalog.targets == tuple(sorted({row["target"] for row in raw}))
    assert catalog.sources == tuple(sorted({row["url"] for row in raw}))
    # issue #42's floor: at least 80 rows, 10 methods and 15 targets
    assert len(catalog.rows) >= 80
    assert len(catalog.methods) >= 10
    assert len(catalog.targets) >= 15


def test_every_shipped_row_has_a_mean_length_within_its_bounds():
    for row in load_catalog().rows:
        m = row.mean_length
        assert m >= 1.0, row.id
        if row.k is not None:
            assert m <= row.k + 1 + 1e-9, row.id


def test_the_shipped_rows_agree_with_what_their_sources_print_beside_them():
    catalog = load_catalog()
    # vLLM's test asserts AL 2.60 beside per-position 0.7296, 0.5208, 0.3545: 1 + 1.6049
    assert catalog.row("vllm-test-al-llama3-8b-eagle3").mean_length == pytest.approx(2.6049)
    # vLLM PR 24344's n-gram run prints mean acceptance length 4.59 beside its counters:
    # 1 + 0.81 + 0.74 + 0.70 + 0.68 + 0.66 = 4.59
    assert catalog.row("vllm-24344-ngram-k5-edit").mean_length == pytest.approx(4.59)
    # llama.cpp's accept = 72.055 % of 5 drafts: 1 + 5 x 0.72055 = 4.60275
    assert catalog.row("llamacpp-5877-3060-1b-k5").mean_length == pytest.approx(4.60275)
    # Spec-Bench's mean accepted tokens count the bonus token: M as printed
    assert catalog.row("specbench-a100-vicuna-13b-eagle3").mean_length == 5.71


# --- The conversions, by hand ---------------------------------------------------------------


def test_a_constant_rate_gives_the_closed_form_and_llama_cpps_draft_acceptance():
    # a = 0.847, k = 4: M = 1 + .847 + .717409 + .607645 + .514676 = 3.686730
    m = mean_length_at_constant_rate(0.847, 4)
    assert m == pytest.approx(3.686730, abs=1e-6)
    assert to_mean_length("conditional_rates", rates=(0.847,) * 4) == pytest.approx(m)
    # accepted per drafted (llama.cpp's "draft acceptance"): 2.686730 / 4 = 0.671683
    assert accepted_per_drafted(m, 4) == pytest.approx(0.671683, abs=1e-6)
    assert to_mean_length("accepted_per_drafted", value=0.671683, k=4) == pytest.approx(m, abs=1e-5)
    assert mean_length_at_constant_rate(1.0, 4) == 5.0


def test_cumulative_and_conditional_rates_convert_both_ways():
    # llama.cpp's "acceptance rate per position = (0.805, 0.632, 0.483)" are cumulative:
    # p = 0.805, 0.632 / 0.805 = 0.785093, 0.483 / 0.632 = 0.764241
    p = conditional_from_cumulative((0.805, 0.632, 0.483))
    assert p == pytest.approx((0.805, 0.785093, 0.764241), abs=1e-6)
    assert cumulative_from_conditional(p) == pytest.approx((0.805, 0.632, 0.483))
    # its printed "mean acceptance length = 2.92": 1 + 0.805 + 0.632 + 0.483
    assert to_mean_length("cumulative_rates", rates=(0.805, 0.632, 0.483)) == pytest.approx(2.92)
    assert to_mean_length("conditional_rates", rates=p) == pytest.approx(2.92)
    # a position no draft reached: the ones after it are 0, not a division by zero
    assert conditional_from_cumulative((0.5, 0.0, 0.0)) == (0.5, 0.0, 0.0)


def test_a_mean_length_without_the_bonus_token_gains_one():
    assert to_mean_length("mean_length", value=2.5, bonus=False) == 3.5
    assert to_mean_length("mean_length", value=2.5, bonus=True) == 2.5


# --- Each check, on a bad row planted in a copy of the shipped file -----------------------

GOOD_ROW = {
    "id": "planted",
    "method": '"EAGLE-3"',
    "target": '"Qwen/Qwen3-8B"',
    "dataset": '"MT-Bench"',
    "shape": '"chain"',
    "k": "3",
    "measure": '"mean_length"',
    "value": "2.5",
    "bonus": "true",
    "printed": '"AL 2.5"',
    "source": '"a planted row"',
    "url": '"https://example.org/planted"',
    "read": '"2026-12-08"',
}


def _planted(tmp_path: Path, **changes: str | None) -> Path:
    """A copy of the shipped catalog with one more row: GOOD_ROW with ``changes`` (a value
    of None leaves the field out)."""
    fields = {**GOOD_ROW, **changes}
    lines = ["", "[[row]]", 'id = "planted"']
    lines += [f"{name} = {value}" for name, value in fields.items() if name != "id" and value]
    path = tmp_path / "catalog.toml"
    path.write_text(CATALOG_PATH.read_text(encoding="utf-8") + "\n".join(lines) + "\n")
    return path


def _refused(path: Path) -> str:
    with pytest.raises(CatalogError) as caught:
        load_catalog(path)
    return str(caught.value)


def test_the_planted_good_row_loads(tmp_path):
    catalog = load_catalog(_planted(tmp_path))
    assert catalog.row("planted").mean_length == 2.5
    assert len(catalog.rows) == len(load_catalog().rows) + 1


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        # rates in [0, 1]
        (
            {
                "measure": '"cumulative_rates"',
                "value": None,
                "bonus": None,
                "rates": "[0.9, 1.2, 0.1]",
            },
            "field 'rates' must be in [0, 1] (a rate), not 1.2",
        ),
        (
            {"measure": '"accepted_per_drafted"', "value": "1.5", "bonus": None},
            "field 'value' must be in [0, 1] (a rate), not 1.5",
        ),
        # cumulative rates never rise
        (
            {
                "measure": '"cumulative_rates"',
                "value": None,
                "bonus": None,
                "rates": "[0.5, 0.6, 0.1]",
            },
            "field 'rates' (cumulative) must never rise",
        ),
        # one rate per position 1..K
        (
            {"measure": '"conditional_rates"', "value": None, "bonus": None, "rates": "[0.5, 0.6]"},
            "field 'rates' must list one rate per position 1..K (K = 3)",
        ),
        # mean accepted length in [1, K + 1] with the bonus token, [0, K] without
        ({"value": "4.5"}, "field 'value' must be in [1, K + 1] = [1, 4]"),
        ({"value": "0.5"}, "field 'value' must be in [1, K + 1] = [1, 4]"),
        ({"value": "3.5", "bonus": "false"}, "field 'value' must be in [0, K] = [0, 3]"),
        ({"value": "0.5", "k": None, "shape": '"tree"'}, "field 'value' must be >= 1"),
        ({"bonus": None}, "missing field 'bonus' (is the bonus token counted?)"),
        # K a positive integer
        ({"k": "0"}, "field 'k' must be a whole number >= 1"),
        ({"k": "2.5"}, "field 'k' must be a whole number >= 1"),
        ({"k": '"3"'}, "field 'k' must be a finite number"),
        # known measure, method and shape names
        ({"measure": '"acceptance"'}, "field 'measure' must be one of conditional_rates,"),
        ({"method": '"EAGLE-4"'}, "field 'method' must be one of draft model, EAGLE,"),
        ({"shape": '"ring"'}, "field 'shape' must be one of chain, tree, block, unstated"),
        # every row has its source and url
        ({"source": None}, "missing field 'source'"),
        ({"url": None}, "missing field 'url'"),
        ({"url": '"example.org"'}, "field 'url' must be an https:// address"),
        ({"read": '"8 Dec 2026"'}, "field 'read' must be a date YYYY-MM-DD"),
        # unknown fields refused
        ({"acceptance_rate": "0.8"}, "unknown field 'acceptance_rate'"),
        ({"temperature": "-1"}, "field 'temperature' must be >= 0"),
        ({"temperature": "nan"}, "field 'temperature' must be a finite number"),
    ],
)
def test_a_bad_row_is_refused_in_one_line_naming_the_row_and_field(tmp_path, changes, message):
    text = _refused(_planted(tmp_path, **changes))
    assert text.startswith(f"catalog.toml: row planted: {message}")
    assert "\n" not in text


def test_a_repeated_id_and_a_missing_series_are_refused(tmp_path):
    path = _planted(tmp_path, id=None)
    text = path.read_text() + '\n[[row]]\nid = "planted"\nseries = "none"\n'
    path.write_text(text)
    assert _refused(path) == (
        "catalog.toml: row planted: field 'series' names no [[series]] (none)"
    )
    path.write_text(
        path.read_text().replace(
            'series = "none"\n',
            "\n".join(f"{name} = {value}" for name, value in GOOD_ROW.items() if name != "id")
            + "\n",
        )
    )
    assert _refused(path) == "catalog.toml: row planted: id used twice"


def test_a_file_that_is_not_a_catalog_is_refused_in_one_line(tmp_path):
    path = tmp_path / "catalog.toml"
    path.write_text("[[row]\n")
    assert _refused(path).startswith("catalog.toml: not valid TOML: ")
    path.write_text('[[entry]]\nid = "x"\n')
    assert _refused(path) == "catalog.toml: unknown table 'entry' (known: series, row)"
    path.write_bytes(b"\xff\xfe")
    assert _refused(path) == "catalog.toml: not UTF-8 text"
