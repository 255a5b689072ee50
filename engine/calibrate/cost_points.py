"""A measured K sweep from a CSV file (``spectui calibrate --cost-points``): the points that
:func:`engine.calibrate.linear_cost.fit_linear_cost` fits a linear cycle cost to.

The file: a header naming the columns ``k,mean_length,tpot`` (in any order, others
ignored), then a row per K measured: K drafted tokens per cycle (whole, 0 to
:data:`~engine.core.fields.K_MAX`; one row with K = 0 is plain decoding, the baseline), the
mean acceptance length M measured there (1 to K + 1: a cycle of K drafts emits at least the
target's token and at most all K and it), and the time per output token (any unit, > 0).
Lines starting with ``#`` and blank lines are skipped. Every number is in ASCII digits
(:func:`~engine.core.fields.ascii_number`). A file that breaks a rule is refused in one line
(:class:`CostPointsError`) naming it, the row (the file's line number) and the column.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

from engine.calibrate.logs.printed import shown
from engine.core.fields import COST_MAX_US, K_MAX, ascii_number
from engine.core.inputs import TABLE_MAX_BYTES, read_input_text

COLUMNS = ("k", "mean_length", "tpot")
# A fitted cost is written as a scenario's linear cost in microseconds of a target step of
# this many (only ratios matter).
STEP_US = 1000.0
# The most target steps a measured cycle may cost (TPOT x M over the baseline's TPOT): what
# the linear cost model's fields allow at STEP_US (COST_MAX_US); more is a unit mistake.
CYCLE_STEPS_MAX = COST_MAX_US / STEP_US
RULE = f"k >= 0, mean_length >= 1, tpot > 0 (finite numbers; k <= {K_MAX}, mean_length <= k + 1)"
POINT = tuple[int, float, float]  # (K, mean acceptance length M, TPOT)


class CostPointsError(ValueError):
    """A cost-points file that cannot be read or breaks a rule; the message is one line that
    names the file and, for a cell, its row (the file's line number) and column."""


def read_cost_points(path: str | Path) -> tuple[list[POINT], float]:
    """The (K, M, TPOT) points of the K sweep in ``path`` (module docstring) and the TPOT of
    its K = 0 row; :class:`CostPointsError` when the file cannot be read or breaks a rule,
    or gives no K = 0 row and two K or more."""
    try:
        text = read_input_text(path, TABLE_MAX_BYTES, "a cost-points file")
    except OSError as err:
        raise CostPointsError(f"{path}: cannot read: {err.strerror or err}") from None
    except UnicodeDecodeError:
        raise CostPointsError(f"{path}: not a text file (UTF-8 CSV expected)") from None
    rows = [
        (number, _cells(path, number, line))
        for number, line in enumerate(text.splitlines(), start=1)
        if line.strip() and not line.startswith("#")
    ]
    if not rows:
        raise CostPointsError(f"{path}: no header (expected columns {','.join(COLUMNS)})")
    header_line, header = rows[0]
    names = [name.strip() for name in header]
    if any(name not in names for name in COLUMNS):
        raise CostPointsError(
            f"{path}: row {header_line}: expected columns {','.join(COLUMNS)} (the header)"
        )
    where = [names.index(name) for name in COLUMNS]
    points: list[tuple[int, POINT]] = []
    baseline: tuple[int, float] | None = None
    for number, cells in rows[1:]:
        k, mean, tpot = _point(path, number, cells, where)
        if k > 0:
            points.append((number, (k, mean, tpot)))
        elif baseline is not None:
            raise CostPointsError(
                f"{path}: row {number}: a second k = 0 row (plain decoding is row {baseline[0]})"
            )
        else:
            baseline = (number, tpot)
    if baseline is None or len({k for _, (k, _, _) in points}) < 2:
        raise CostPointsError(f"{path}: needs a k = 0 row (plain decoding) and two or more K")
    for number, (_, mean, tpot) in points:
        steps = tpot * mean / baseline[1]
        if not steps <= CYCLE_STEPS_MAX:
            raise CostPointsError(
                f"{path}: row {number}: a cycle of tpot x mean_length over row "
                f"{baseline[0]}'s tpot costs more than {CYCLE_STEPS_MAX:,.0f} plain steps "
                "(tpot in other units?)"
            )
    return [point for _, point in points], baseline[1]


def _cells(path: str | Path, number: int, line: str) -> list[str]:
    """Line ``number``'s cells, read alone (a quote it leaves open never takes the next)."""
    try:
        return next(csv.reader([line]))
    except csv.Error:
        raise CostPointsError(f"{path}: row {number}: not a line of CSV") from None


def _point(path: str | Path, number: int, cells: list[str], where: list[int]) -> POINT:
    """Row ``number``'s (K, M, TPOT), read and checked (:data:`RULE`)."""
    if len(cells) <= max(where):
        raise CostPointsError(
            f"{path}: row {number}: expected columns {','.join(COLUMNS)} with numbers "
            f"({len(cells)} cell{'s' * (len(cells) != 1)})"
        )
    values: list[float] = []
    for name, column in zip(COLUMNS, where, strict=True):
        integer = name == "k"
        try:
            values.append(ascii_number(cells[column], integer=integer))
        except ValueError:
            noun = "a whole number" if integer else "a number"
            raise CostPointsError(
                f"{path}: row {number}: expected columns {','.join(COLUMNS)} with numbers: "
                f"column {column + 1} ({name}) is not {noun} in ASCII digits"
            ) from None
    k, mean, tpot = int(values[0]), values[1], values[2]
    within = (0 <= k <= K_MAX, 1.0 <= mean <= k + 1, math.isfinite(tpot) and tpot > 0)
    if not all(within):
        bad = within.index(False)
        at = f" at k = {k}" if bad == 1 else ""
        raise CostPointsError(
            f"{path}: row {number}: {RULE}; column {where[bad] + 1} ({COLUMNS[bad]}) is "
            f"{shown(cells[where[bad]].strip())}{at}"
        )
    return k, mean, tpot
