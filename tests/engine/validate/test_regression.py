"""The regression guard of issue #25: no entry's error may grow past its recorded value
(tests/fixtures/validation/errors.csv) by more than half a percentage point, and no
prediction may be lost. Not a fit: the recorded errors are what the models gave when the
entry was added; tests/fixtures/validation/record.py re-records them on purpose."""

from __future__ import annotations

import csv
from pathlib import Path

from engine.validate.report import rows_of
from engine.validate.table import shipped_table

RECORDED = Path(__file__).parents[2] / "fixtures" / "validation" / "errors.csv"
TOLERANCE = 0.005


def recorded() -> dict[tuple[str, str], float]:
    with RECORDED.open(encoding="utf-8") as handle:
        return {(r["id"], r["method"]): float(r["error"]) for r in csv.DictReader(handle)}


def current() -> dict[tuple[str, str], float]:
    out = {}
    for row in rows_of(shipped_table()):
        for method in row.predictions:
            error = row.error(method)
            if error is not None:
                out[(row.entry.id, method)] = error
    return out


def test_no_error_grows_past_its_recorded_value():
    before, now = recorded(), current()
    grown = {
        key: (before[key], error)
        for key, error in now.items()
        if key in before and abs(error) > abs(before[key]) + TOLERANCE
    }
    assert not grown, f"errors grew (recorded, now): {grown}"


def test_every_prediction_is_recorded_and_none_is_lost():
    before, now = recorded(), current()
    assert set(now) - set(before) == set(), "new predictions: record them (record.py)"
    assert set(before) - set(now) == set(), "predictions lost"
