"""From catalog rows to a registered acceptance model: :func:`fit_rows`.

The rows of one setup (the same method, target, draft, dataset and temperature; typically a
mean accepted length M at several K, or per-position rates at one K) become one registered
acceptance model with its scenario values, whose mean accepted length at every K is then
what a scenario with those values computes (:meth:`CatalogFit.mean_length`).

**The points a fit is judged on.** Every row gives the M it measured at its K (bonus token
included, :attr:`~engine.acceptance.catalog.Row.mean_length`). A row of per-position rates
(cumulative r_i, or conditional p_i turned into r_i) gives, besides, the M of each prefix of
its chain: 1 + r_1 + ... + r_j for j = 1..K, the tokens a cycle of that drafter yields when
its first j positions are counted. A model's value at a point (K, j) is 1 + sum_{i<=j}
P(n >= i) of the model run at K, from the registered model's own ``position_probs``.

**The candidates**, each with its parameter count: ``fixed`` (one rate a; M = (1 -
a^(K+1))/(1 - a)), ``position_decay`` (two: base, factor), ``per_position`` (one rate per
position, when a row gives rates: their mean over the rows) and ``depth_rates`` (one rate
per measured K, when the rows measure at least two K: the only one whose M can fall as K
grows). ``fixed`` and ``position_decay`` are fitted by least squares of the relative errors
over the points (a grid, refined); ``per_position`` and ``depth_rates`` are set from the
rows directly (``depth_rates``: at each measured K the constant rate whose M is the rows'
mean M there; between measured K linearly interpolated; below the first, the first).

**The rule.** The candidate with the fewest parameters whose largest relative error over the
points is within :data:`FIT_TOLERANCE` (1 %) wins (ties: the registry's order); when none is,
the one with the least largest error (ties: fewer parameters). A published M is printed to
two decimals (2.47 is 2.465..2.475, 0.2 %), so a fit within 1 % of every point is as good
as the rows can tell apart, and a fit with more parameters would only follow the rounding.

**Assumed K.** A row that states no K (Spec-Bench's mean accepted tokens, a tree of unstated
depth) is fitted at an assumed K: the scenario's default K (the ``k`` field's default),
raised to floor(M) where that is needed for a chain of K to yield M (M < K + 1). The fit
says so (:attr:`CatalogFit.assumed`, :meth:`CatalogFit.describe`). A fit to a single point
is exact there (error 0) and says that it is: M at any other K is the model's, not a
measurement. A tree's or a block's M is fitted as a chain of its depth with the same M.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engine.acceptance.catalog import (
    Row,
    cumulative_from_conditional,
    mean_length_at_constant_rate,
)
from engine.core.config import FIELD_SPECS, K_MAX, SpecConfig, part_fields
from engine.core.parts import ACCEPTANCE

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    FloatArray = npt.NDArray[np.float64]

FIT_TOLERANCE = 0.01  # a candidate within 1 % of every point is good enough (see the rule)
_DIGITS = 6  # significant digits of a fitted value (what the scenario holds)
_GRID = 2001  # points of the first grid of a one-parameter search
_GRID_2D = 81  # per side, two parameters
_REFINE = 8  # refinements, each a grid of the same size over 8 steps around the best point
_EXACT = 1e-4  # a fit this close to every point is "exact" there (6 digits kept)
_CHUNK_FLOATS = 1 << 20  # floats of one block of the search (8 MB), whatever K


@dataclass(frozen=True)
class FitPoint:
    """One point a fit is judged on: row ``row_id`` measured at K = ``k`` (assumed when the
    row states none), its first ``positions`` positions (``k`` for the row's own M, fewer for
    a prefix of its per-position rates); ``measured`` and ``fitted`` M, bonus included."""

    row_id: str
    k: int
    positions: int
    measured: float
    fitted: float

    @property
    def error(self) -> float:
        """(fitted - measured) / measured: the fit's relative error here."""
        return (self.fitted - self.measured) / self.measured


@dataclass(frozen=True)
class CatalogFit:
    """A registered acceptance model fitted to catalog rows (:func:`fit_rows`).

    ``model``: its name, as the ``draft_model`` field takes it; ``values``: the scenario
    values by field key (``draft_model`` first), what ``SpecConfig.replace(**values)``
    takes; ``parameters``: how many it fitted; ``rows``: the rows; ``points``: every point
    it was judged on (:class:`FitPoint`); ``assumed``: what the fit assumed, in words (None
    when nothing); ``label``: what the rows are (their series, or the one row's id)."""

    model: str
    values: dict[str, Any]
    parameters: int
    rows: tuple[Row, ...]
    points: tuple[FitPoint, ...]
    assumed: str | None
    label: str

    @property
    def errors(self) -> tuple[FitPoint, ...]:
        """The fit against each row: the row's own M at its K (one point per row)."""
        return tuple(p for p in self.points if p.positions == p.k)

    @property
    def max_error(self) -> float:
        """The largest relative error over the points (absolute)."""
        return max(abs(p.error) for p in self.points)

    def config(self, k: int) -> SpecConfig:
        """The scenario of the fitted model at K = ``k`` (every other field its default)."""
        return SpecConfig().replace(**self.values, k=k)

    def mean_length(self, k: int) -> float:
        """The fitted M at K = ``k`` (bonus included): 1 + sum_j P(n >= j) of the model's own
        ``position_probs`` at that K, as the exact figures compute it."""
        return _model_length(self.config(k), k)

    def params_text(self) -> str:
        """The fitted parameters in a few words: "base 0.81 factor 0.97"."""
        keys = [key for key in self.values if key != ACCEPTANCE.selector]
        return " ".join(f"{_short_key(key)} {_short(self.values[key])}" for key in keys)

    def describe(self) -> str:
        """One line: the model, its parameters, the rows and the largest error."""
        rows = "1 row" if len(self.rows) == 1 else f"{len(self.rows)} rows"
        text = (
            f"{self.model} {self.params_text()}, fitted to {rows} of {self.label} "
            f"(max error {100 * self.max_error:.1f} %)"
        )
        return f"{text}; {self.assumed}" if self.assumed else text


def _short_key(key: str) -> str:
    name = key.rsplit(".", 1)[-1]
    return {"acceptance_rate": "rate", "decay_base": "base", "decay_factor": "factor"}.get(
        name, name.replace("_", " ")
    )


def _short(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    if isinstance(value, str) and "," in value:
        return ",".join(f"{float(v):.3g}" for v in value.split(","))
    return str(value)


def _model_length(config: SpecConfig, positions: int) -> float:
    """1 + sum_{j <= positions} P(n >= j) of ``config``'s model (run at its K)."""
    import numpy as np

    probs = ACCEPTANCE.of(config).position_probs(config, positions)
    return float(1.0 + np.cumprod(np.asarray(probs, dtype=np.float64)).sum())


def _round(x: float) -> float:
    return float(f"{x:.{_DIGITS}g}")


# --- The points ------------------------------------------------------------------------


def default_k() -> int:
    """The K a row that states none is fitted at: the ``k`` field's default."""
    return int(FIELD_SPECS["k"].default)


def row_k(row: Row) -> tuple[int, bool]:
    """(K the row is fitted at, whether it is assumed): its own K, or the default K raised
    to floor(M) where a chain of the default K cannot yield its M (M < K + 1)."""
    if row.k is not None:
        return row.k, False
    return min(K_MAX, max(default_k(), math.floor(row.mean_length))), True


@dataclass(frozen=True)
class _Target:
    row_id: str
    k: int
    positions: int
    measured: float


def _targets(rows: Sequence[Row]) -> list[_Target]:
    out: list[_Target] = []
    for row in rows:
        k, _ = row_k(row)
        if row.rates is not None:
            cumulative = (
                row.rates
                if row.measure == "cumulative_rates"
                else cumulative_from_conditional(row.rates)
            )
            total = 1.0
            for j, r in enumerate(cumulative, start=1):
                total += r
                out.append(_Target(row.id, k, j, total))
        else:
            out.append(_Target(row.id, k, k, row.mean_length))
    return out


# --- The candidates --------------------------------------------------------------------


def _search(
    length: Callable[[FloatArray, FloatArray, FloatArray], FloatArray],
    targets: list[_Target],
    dims: int,
) -> tuple[float, ...]:
    """Parameters in [0, 1]^dims minimising the sum of squared relative errors of
    ``length(params..., positions)`` (an array per grid point and target) at the targets: a
    grid over the square, then ``_REFINE`` times a grid of as many points over the 8 steps
    around the best point."""
    import numpy as np

    j = np.array([t.positions for t in targets], dtype=np.float64)
    m = np.array([t.measured for t in targets], dtype=np.float64)
    n = _GRID if dims == 1 else _GRID_2D
    chunk = max(1, _CHUNK_FLOATS // int(j.max()))  # grid points per block: bounded memory
    low, high = np.zeros(dims), np.ones(dims)
    best = np.full(dims, 0.5)
    for _ in range(_REFINE + 1):
        axes = [np.linspace(low[d], high[d], n) for d in range(dims)]
        grid = np.meshgrid(*axes, indexing="ij")
        params = [g.reshape(-1) for g in grid]
        if dims == 1:
            params.append(np.ones_like(params[0]))
        loss = np.concatenate(
            [
                (((length(params[0][at:end], params[1][at:end], j) - m) / m) ** 2).sum(axis=1)
                for at in range(0, params[0].size, chunk)
                for end in (at + chunk,)
            ]
        )
        index = int(np.argmin(loss))
        best = np.array([float(p[index]) for p in params[:dims]])
        step = (high - low) / (n - 1)
        low, high = np.maximum(best - 4 * step, 0.0), np.minimum(best + 4 * step, 1.0)
    return tuple(float(b) for b in best)


def _geometric_lengths(base: FloatArray, factor: FloatArray, positions: FloatArray) -> FloatArray:
    """M of p_i = base * factor^(i-1) over ``positions`` positions, (N,) parameters by (P,)
    positions: 1 + sum_{i<=j} base^i factor^(i(i-1)/2) (the search's objective only; the
    reported figures are the registered model's)."""
    import numpy as np

    depth = int(positions.max())
    i = np.arange(1, depth + 1, dtype=np.float64)
    terms = base[:, None] ** i * factor[:, None] ** (i * (i - 1) / 2)
    cumulative = np.concatenate([np.ones((base.size, 1)), 1.0 + np.cumsum(terms, axis=1)], axis=1)
    out: FloatArray = cumulative[:, positions.astype(np.int64)]
    return out


def _fit_fixed(rows: Sequence[Row], targets: list[_Target]) -> dict[str, Any]:
    (rate,) = _search(_geometric_lengths, targets, 1)  # factor 1: a constant rate
    if len(targets) == 1:  # exact at the one point (the search is within 1e-12 of it)
        rate = _constant_rate(targets[0].measured, targets[0].positions)
    return {"acceptance_rate": _round(rate)}


def _fit_decay(rows: Sequence[Row], targets: list[_Target]) -> dict[str, Any]:
    base, factor = _search(_geometric_lengths, targets, 2)
    return {"decay_base": _round(base), "decay_factor": _round(factor)}


def _fit_per_position(rows: Sequence[Row], targets: list[_Target]) -> dict[str, Any]:
    from engine.acceptance.catalog import conditional_from_cumulative

    by_position: list[list[float]] = []
    for row in rows:
        if row.rates is None:
            continue
        conditional = (
            conditional_from_cumulative(row.rates)
            if row.measure == "cumulative_rates"
            else row.rates
        )
        for i, p in enumerate(conditional):
            if i == len(by_position):
                by_position.append([])
            by_position[i].append(p)
    rates = [sum(ps) / len(ps) for ps in by_position]
    return {"acceptance.rates": ",".join(f"{_round(min(max(p, 0.0), 1.0)):g}" for p in rates)}


def _constant_rate(mean_length: float, k: int) -> float:
    """The a in [0, 1] with (1 - a^(k+1))/(1 - a) = ``mean_length`` (bisection; 0 below
    M = 1, 1 at or above M = k + 1)."""
    if mean_length <= 1.0:
        return 0.0
    if mean_length >= k + 1:
        return 1.0
    low, high = 0.0, 1.0
    for _ in range(100):
        mid = (low + high) / 2
        if mean_length_at_constant_rate(mid, k) < mean_length:
            low = mid
        else:
            high = mid
    return (low + high) / 2


def _fit_depth(rows: Sequence[Row], targets: list[_Target]) -> dict[str, Any]:
    by_k: dict[int, list[float]] = {}
    for row in rows:
        by_k.setdefault(row_k(row)[0], []).append(row.mean_length)
    measured = sorted(by_k)
    rate = {k: _constant_rate(sum(ms) / len(ms), k) for k, ms in by_k.items()}
    rates = []
    for k in range(1, measured[-1] + 1):
        if k in rate:
            rates.append(rate[k])
        elif k < measured[0]:
            rates.append(rate[measured[0]])
        else:
            below = max(m for m in measured if m < k)
            above = min(m for m in measured if m > k)
            share = (k - below) / (above - below)
            rates.append(rate[below] + share * (rate[above] - rate[below]))
    return {"acceptance.depth_rates": ",".join(f"{_round(a):g}" for a in rates)}


@dataclass(frozen=True)
class _Candidate:
    model: str
    parameters: Callable[[Sequence[Row], list[_Target]], int]
    applies: Callable[[Sequence[Row], list[_Target]], bool]
    fit: Callable[[Sequence[Row], list[_Target]], dict[str, Any]]


def _distinct_k(rows: Sequence[Row]) -> int:
    return len({row_k(row)[0] for row in rows})


def _positions(rows: Sequence[Row]) -> int:
    return max((len(row.rates) for row in rows if row.rates is not None), default=0)


# In the order ties are broken: the registry's.
CANDIDATES = (
    _Candidate("fixed", lambda rows, t: 1, lambda rows, t: True, _fit_fixed),
    _Candidate("position_decay", lambda rows, t: 2, lambda rows, t: True, _fit_decay),
    _Candidate(
        "per_position",
        lambda rows, t: _positions(rows),
        lambda rows, t: _positions(rows) > 0,
        _fit_per_position,
    ),
    _Candidate(
        "depth_rates",
        lambda rows, t: _distinct_k(rows),
        lambda rows, t: _distinct_k(rows) >= 2,
        _fit_depth,
    ),
)


def _points(values: dict[str, Any], targets: list[_Target]) -> tuple[FitPoint, ...]:
    """Each target with the model's M there: one survival per K, of the longest prefix
    asked (a model's p_1..p_j is the start of its p_1..p_m, j <= m)."""
    import numpy as np

    lengths: dict[int, FloatArray] = {}
    for k in sorted({t.k for t in targets}):
        config = SpecConfig().replace(**values, k=k)
        deepest = max(t.positions for t in targets if t.k == k)
        probs = np.asarray(ACCEPTANCE.of(config).position_probs(config, deepest), dtype=np.float64)
        lengths[k] = np.concatenate(([1.0], 1.0 + np.cumsum(np.cumprod(probs))))
    return tuple(
        FitPoint(t.row_id, t.k, t.positions, t.measured, float(lengths[t.k][t.positions]))
        for t in targets
    )


def _assumed(
    rows: Sequence[Row], targets: list[_Target], parameters: int, exact: bool
) -> str | None:
    notes = []
    guessed = [row for row in rows if row.k is None]
    if guessed:
        ks = sorted({row_k(row)[0] for row in guessed})
        which = "the row states" if len(rows) == 1 else f"{len(guessed)} of the rows state"
        notes.append(
            f"K = {', '.join(map(str, ks))} assumed ({which} no K; the default K "
            f"{default_k()}, or floor(M) where M needs more)"
        )
    points = sorted({(t.k, t.positions) for t in targets})
    if len(points) == 1 and exact:
        notes.append(f"exact at one point (K = {points[0][0]}): M at other K is the model's")
    elif parameters >= len(points) and exact:
        notes.append(
            f"{parameters} parameters for {len(points)} points: M between and beyond them "
            "is the model's"
        )
    shapes = sorted({row.shape for row in rows if row.shape in ("tree", "block")})
    if shapes:
        notes.append(f"a {' or '.join(shapes)} fitted as a chain of its depth")
    return "; ".join(notes) if notes else None


def fit_rows(rows: Sequence[Row]) -> CatalogFit:
    """One registered acceptance model fitted to ``rows`` (those of one setup; see the module
    docstring for the points, the candidates and the rule). Raises ValueError for no rows
    or a row whose K is beyond a scenario's (engine.core.config.K_MAX)."""
    rows = tuple(rows)
    if not rows:
        raise ValueError("no catalog rows to fit")
    for row in rows:
        if row_k(row)[0] > K_MAX:
            raise ValueError(
                f"row {row.id}: K = {row.k} is beyond a scenario's K (at most {K_MAX})"
            )
    targets = _targets(rows)
    tried: list[tuple[int, int, CatalogFit]] = []
    for order, candidate in enumerate(CANDIDATES):
        if candidate.model not in ACCEPTANCE or not candidate.applies(rows, targets):
            continue
        count = candidate.parameters(rows, targets)
        params = candidate.fit(rows, targets)
        keys = part_fields(ACCEPTANCE.selector, candidate.model)
        values = {ACCEPTANCE.selector: candidate.model, **{k: params[k] for k in keys}}
        points = _points(values, targets)
        exact = max(abs(p.error) for p in points) < _EXACT
        fit = CatalogFit(
            model=candidate.model,
            values=values,
            parameters=count,
            rows=rows,
            points=points,
            assumed=_assumed(rows, targets, count, exact),
            label=_label(rows),
        )
        tried.append((count, order, fit))
    within = [entry for entry in tried if entry[2].max_error <= FIT_TOLERANCE]
    if within:
        return min(within, key=lambda entry: (entry[0], entry[1]))[2]
    return min(tried, key=lambda entry: (entry[2].max_error, entry[0], entry[1]))[2]


def _label(rows: Sequence[Row]) -> str:
    if len(rows) == 1:
        return rows[0].id
    series = sorted({row.series or row.id for row in rows})
    return ", ".join(series)


# --- Setups ----------------------------------------------------------------------------


def setup_key(row: Row) -> tuple[Any, ...]:
    """What one setup shares: the row's series (or its id when it has none), method, target,
    draft, dataset, temperature, shape, engine, hardware and setup text. Rows of one key
    are fitted together (:func:`setups`)."""
    return (
        row.series or row.id,
        row.method,
        row.target,
        row.draft,
        row.dataset,
        row.temperature,
        row.shape,
        row.engine,
        row.hardware,
        row.setup,
    )


def setups(rows: Sequence[Row]) -> list[tuple[Row, ...]]:
    """``rows`` grouped by :func:`setup_key`, in the order each setup first appears; within
    one, in row order."""
    groups: dict[tuple[Any, ...], list[Row]] = {}
    for row in rows:
        groups.setdefault(setup_key(row), []).append(row)
    return [tuple(group) for group in groups.values()]
