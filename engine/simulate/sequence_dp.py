"""The exact dynamic program over one sequence: the expected sum of a per-cycle value over
the cycles that produce ``r`` tokens, for every ``r``. The chain's exact figures
(:mod:`engine.simulate.exact`) and the token tree's (:mod:`engine.simulate.tree_scenario`) are made
with it.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

__all__ = ["ACCUMULATE_COLUMNS", "CHECKPOINT_ROWS", "expected_over_sequence"]

FloatArray = npt.NDArray[np.float64]

# :func:`expected_over_sequence` calls its ``checkpoint`` every this many r.
CHECKPOINT_ROWS = 4096

# The program sums an expectation's rows with one np.add.accumulate up to this many
# columns, else with one np.add per row: accumulate loops over the columns inside numpy,
# at a few nanoseconds per element; a call per row costs about half a microsecond.
ACCUMULATE_COLUMNS = 64
# One column of at most this many terms (K + 1) is summed with Python floats: a step then
# costs well under the ~3 us of three numpy calls (a single long sequence: the Run view's
# exact figures, one run's metrics). The same additions in the same order: the same bits.
_SCALAR_WIDTH = 24


def expected_over_sequence(
    dist: FloatArray,
    per_cycle: FloatArray,
    checkpoint: Callable[[int], None] | None = None,
) -> FloatArray:
    """E[sum over the cycles of one sequence of a per-cycle value], for every length r and
    every column (a configuration, or anything that shares its acceptance column).

    ``dist[j, c]`` is P(n = j) for j = 0..K in a cycle of K drafts (shape (K + 1, columns),
    or (K + 1, 1) for one distribution broadcast to every column; zero beyond a column's own
    K). ``per_cycle[r, c]`` is the value of a cycle that starts with r tokens still needed
    (shape (T + 1, columns); row 0 is unused): its time (engine.core.kernel.cycle_costs), 1 to
    count cycles, its expected emitted tokens. ``checkpoint(r)``, if given, is called every
    :data:`CHECKPOINT_ROWS` r, so that a caller can stop a long program (by raising).

    Returns f, shape (T + 1, columns): f(0) = 0 and
    f(r) = per_cycle(r) + sum_j P_r(n = j) f(max(r - j - 1, 0)), the sum added j = 0, 1, ...
    A column whose own length is T_c < T reads f[T_c]: f(r) depends only on smaller r.
    O(T * K) per column; one Python iteration per r.

    Only ``per_cycle`` depends on the tail rule. Under "clamp" a cycle with r <= K tokens to
    go drafts k_r = r - 1, whose distribution is P(n = j) for j < k_r and P(n >= k_r) at
    j = k_r; but every n >= r - 1 leaves f(0) = 0 tokens to produce, so the expectation has
    the same terms as with K drafts, followed by exact zeros: the same bits.
    """
    width = dist.shape[0]  # K + 1
    total, columns = per_cycle.shape[0] - 1, per_cycle.shape[1]
    if columns == 1 and width <= _SCALAR_WIDTH:
        return _one_column(dist[:, 0].tolist(), per_cycle[:, 0], checkpoint)
    # f(r) is row r + K: rows 0..K hold f(-K..0) = 0, the lengths an outcome may overshoot.
    f = np.empty((width + total, columns))
    f[:width] = 0.0
    f[width:] = per_cycle[1:]
    terms = np.empty((width, columns))
    # Both ways add row j = 0, 1, ... in turn: one accumulate call (numpy loops over the
    # columns inside it) for few columns, a call per row for many.
    sums = np.empty((width, columns)) if columns <= ACCUMULATE_COLUMNS else None
    for r in range(1, total + 1):
        if checkpoint is not None and r % CHECKPOINT_ROWS == 0:
            checkpoint(r)
        # Row j of the window is f(r - 1 - j), j = 0..K.
        np.multiply(dist, f[r - 1 : r + width - 1][::-1], out=terms)
        if sums is not None:
            np.add.accumulate(terms, axis=0, out=sums)
            expectation = sums[-1]
        else:
            expectation = terms[0]
            for j in range(1, width):
                np.add(expectation, terms[j], out=expectation)
        row = f[r + width - 1]
        np.add(row, expectation, out=row)  # per_cycle(r) + the expectation
    return f[width - 1 :]


def _one_column(
    dist: list[float], per_cycle: FloatArray, checkpoint: Callable[[int], None] | None
) -> FloatArray:
    """:func:`expected_over_sequence` of one column in Python floats: the same terms,
    added in the same order (from 0.0, j = 0, 1, ..., then to per_cycle(r))."""
    width, total = len(dist), per_cycle.shape[0] - 1
    f = [0.0] * width + per_cycle[1:].tolist()  # f(r) at index r + K, as above
    for r in range(1, total + 1):
        if checkpoint is not None and r % CHECKPOINT_ROWS == 0:
            checkpoint(r)
        here = r + width - 1
        expectation = 0.0
        # f(r - 1 - j) for j = 0..K: indices here - 1 down to here - width = r - 1 >= 0.
        for p, value in zip(dist, reversed(f[here - width : here]), strict=True):
            expectation += p * value
        f[here] = f[here] + expectation
    return np.array(f[width - 1 :])[:, None]
