"""The acceptance catalog: published measurements of how much of a draft a target accepts,
one ``[[row]]`` per measurement in ``data/catalog.toml``, each copied as its source printed
it and checked here (data/README.md says how to add one).

A source reports one of four measures, which are kept apart (:data:`MEASURES`):

- ``conditional_rates``: p_i, the chance that position i is accepted given that every
  position before it was (spectui's ``--acceptance-rate`` is p_i = a for every i);
- ``cumulative_rates``: r_i = p_1 ... p_i, the drafts accepted at position i over all drafts
  (vLLM's per-position counters and its log line, llama.cpp's "acceptance rate per
  position");
- ``mean_length``: M, the tokens a verify pass emits, = 1 + sum_{i<=k} r_i with the bonus
  token (vLLM's "mean acceptance length", EAGLE's tau); a row with ``bonus = false`` counts
  accepted drafts only (M - 1);
- ``accepted_per_drafted``: (M - 1) / k (llama.cpp's "draft acceptance", vLLM's "draft
  acceptance rate"), valid only when every step drafted k.

:func:`to_mean_length` is the one conversion: every measure to M with the bonus token,
which every row answers as :attr:`Row.mean_length`. For p_i = a at every position,
M = (1 - a^(k+1)) / (1 - a) (:func:`mean_length_at_constant_rate`).

Model-free proposers (n-gram, suffix decoding) draft only when their lookup hits, and an
engine's counters count only the steps that drafted: their rates are conditional on a hit,
and ``hit_rate`` (the share of steps that drafted) is recorded where it is published. A
model-free method's row says what its mean length counts (``length_over``,
:data:`LENGTH_OVER`): "all steps" (a step without a match emits its one token: Spec-Bench's
"mean accepted tokens") or "drafting steps" (an engine's counters: vLLM's, llama.cpp's).
:func:`convert_length_over` is the one conversion between the two, at hit rate h:
M_all = h (M_hit - 1) + 1, M_hit = 1 + (M_all - 1) / h. The model-free methods are the ones a
registered model-free proposer declares (``catalog_method``; :func:`model_free_methods`).

This module imports no numpy (the catalog is a few hundred small rows).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, fields
from functools import cache
from itertools import pairwise
from pathlib import Path
from typing import Any

from engine.core.inputs import read_input_text, toml_document

CATALOG_PATH = Path(__file__).parent / "data" / "catalog.toml"
CATALOG_MAX_BYTES = 1 << 20  # the shipped file is ~75 KB; a larger one is refused unread

MEASURES = ("conditional_rates", "cumulative_rates", "mean_length", "accepted_per_drafted")
RATE_MEASURES = ("conditional_rates", "cumulative_rates")  # a list, one rate per position
# Every method a row may name (the one list): a new method is added here first.
METHODS = (
    "draft model",
    "EAGLE",
    "EAGLE-2",
    "EAGLE-3",
    "P-EAGLE",
    "Medusa",
    "Hydra",
    "MTP",
    "DFlash",
    "DSpark",
    "DFly",
    "n-gram",
    "suffix decoding",
    "Lookahead",
    "REST",
    "Token Recycling",
    "SAM-Decoding",
)
# chain: k drafts in a line; tree: a token tree (k is its depth); block: a block drafted in
# one pass (DFlash's); unstated: the source does not say. k is absent where it is not stated.
SHAPES = ("chain", "tree", "block", "unstated")
# What a model-free method's mean accepted length counts: every decoding step (a step without
# a match emits one token: Spec-Bench's "mean accepted tokens per decoding step"), or only
# the steps that drafted (an engine's counters: vLLM's, llama.cpp's), the length given a hit.
LENGTH_OVER = ("all steps", "drafting steps")

# Field kinds: text, count (whole number >= 1), fraction (0..1), nonnegative, number,
# bool, rates (a list of fractions). A row inherits every field of its series but "id".
FIELDS: dict[str, str] = {
    "id": "text",
    "series": "text",
    "method": "text",
    "target": "text",
    "draft": "text",
    "dataset": "text",
    "temperature": "nonnegative",
    "shape": "text",
    "k": "count",
    "tree_nodes": "count",
    "measure": "text",
    "value": "number",
    "rates": "rates",
    "bonus": "bool",
    "hit_rate": "fraction",
    "length_over": "text",
    "printed": "text",
    "source": "text",
    "url": "text",
    "read": "text",
    "engine": "text",
    "hardware": "text",
    "setup": "text",
    "note": "text",
}
REQUIRED = (
    "id",
    "method",
    "target",
    "dataset",
    "shape",
    "measure",
    "printed",
    "source",
    "url",
    "read",
)
_ID = re.compile(r"^[a-z0-9][a-z0-9.-]{0,47}$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


class CatalogError(ValueError):
    """The catalog is malformed: one line naming the file, the row and the field."""


# --- The definitions, and the one conversion -------------------------------------------


def cumulative_from_conditional(conditional: tuple[float, ...]) -> tuple[float, ...]:
    """r_i = p_1 ... p_i: the cumulative per-position rates of conditional ones (each in
    [0, 1]; as long as the input)."""
    out, product = [], 1.0
    for p in conditional:
        product *= p
        out.append(product)
    return tuple(out)


def conditional_from_cumulative(cumulative: tuple[float, ...]) -> tuple[float, ...]:
    """p_i = r_i / r_(i-1) (r_0 = 1): the conditional rates of cumulative ones, which never
    rise. A position after one no draft reached (r_(i-1) = 0) gets p_i = 0."""
    out, before = [], 1.0
    for r in cumulative:
        out.append(r / before if before > 0.0 else 0.0)
        before = r
    return tuple(out)


def mean_length_at_constant_rate(a: float, k: int) -> float:
    """M = 1 + a + ... + a^k = (1 - a^(k+1)) / (1 - a): the mean tokens per verify pass,
    bonus included, of k drafts each accepted with conditional rate ``a`` (k + 1 at a = 1)."""
    if a == 1.0:
        return float(k + 1)
    return (1.0 - a ** (k + 1)) / (1.0 - a)


def accepted_per_drafted(mean_length: float, k: int) -> float:
    """(M - 1) / k: accepted draft tokens per drafted one, when every step drafts ``k``
    (llama.cpp's "draft acceptance", vLLM's "draft acceptance rate")."""
    return (mean_length - 1.0) / k


def to_mean_length(
    measure: str,
    *,
    value: float | None = None,
    rates: tuple[float, ...] | None = None,
    k: int | None = None,
    bonus: bool | None = None,
) -> float:
    """The mean accepted length M, bonus token included (tokens per verify pass, >= 1), of
    any measure: the one conversion of the catalog's measures to a common form.

    - ``mean_length``: ``value`` with the bonus token (``bonus``), or ``value + 1``;
    - ``cumulative_rates``: 1 + sum r_i;
    - ``conditional_rates``: 1 + sum (p_1 ... p_i);
    - ``accepted_per_drafted``: 1 + k x ``value`` (every step drafted ``k``).
    """
    if measure == "mean_length" and value is not None and bonus is not None:
        return value if bonus else value + 1.0
    if measure == "cumulative_rates" and rates is not None:
        return 1.0 + sum(rates)
    if measure == "conditional_rates" and rates is not None:
        return 1.0 + sum(cumulative_from_conditional(rates))
    if measure == "accepted_per_drafted" and value is not None and k is not None:
        return 1.0 + k * value
    raise ValueError(f"measure '{measure}' lacks what converts it (value, rates, k, bonus)")


def convert_length_over(mean_length: float, hit_rate: float, given: str, wanted: str) -> float:
    """A model-free proposer's mean accepted length M (bonus included) counted over ``given``
    steps, as counted over ``wanted`` ones (each one of :data:`LENGTH_OVER`), at hit rate
    ``hit_rate`` (h, the share of steps that drafted; a step without a match emits one
    token): the one conversion between the two.

    - "drafting steps" to "all steps": M_all = h (M_hit - 1) + 1 (computed h M_hit + 1 - h);
    - "all steps" to "drafting steps": M_hit = 1 + (M_all - 1) / h (ValueError at h = 0,
      where every step is a plain one and M_all = 1 says nothing of a hit).
    """
    for name in (given, wanted):
        if name not in LENGTH_OVER:
            raise ValueError(f"length over {name!r}: one of {', '.join(LENGTH_OVER)}")
    if given == wanted:
        return mean_length
    if wanted == "all steps":
        return hit_rate * mean_length + (1.0 - hit_rate)
    if not hit_rate > 0.0:
        raise ValueError(f"hit rate {hit_rate:g}: no step drafted, no length given a hit")
    return 1.0 + (mean_length - 1.0) / hit_rate


def model_free_methods() -> tuple[str, ...]:
    """The catalog methods that registered model-free proposers draft (each proposer part
    declares its ``catalog_method``; engine.proposers), in the registry's order."""
    from engine.core.parts import PROPOSER

    out: list[str] = []
    for name in PROPOSER:
        part = PROPOSER[name]
        method = getattr(part, "catalog_method", None)
        if part.model_free and method and method not in out:
            out.append(method)
    return tuple(out)


# --- A row -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """One published measurement (fields as :data:`FIELDS`; absent optional ones are None).

    ``value`` is the scalar measure (mean_length, accepted_per_drafted), ``rates`` the
    per-position ones (index 0 is position 1); ``printed`` is the figure as the source
    printed it, ``note`` what was derived or assumed."""

    id: str
    method: str
    target: str
    dataset: str
    shape: str
    measure: str
    printed: str
    source: str
    url: str
    read: str
    series: str | None = None
    draft: str | None = None
    temperature: float | None = None
    k: int | None = None
    tree_nodes: int | None = None
    value: float | None = None
    rates: tuple[float, ...] | None = None
    bonus: bool | None = None
    hit_rate: float | None = None
    length_over: str | None = None
    engine: str | None = None
    hardware: str | None = None
    setup: str | None = None
    note: str | None = None

    @property
    def mean_length(self) -> float:
        """M, bonus included: :func:`to_mean_length` of this row's measure."""
        return to_mean_length(
            self.measure, value=self.value, rates=self.rates, k=self.k, bonus=self.bonus
        )


@dataclass(frozen=True)
class Catalog:
    """The rows of a catalog file, in file order, checked."""

    rows: tuple[Row, ...]

    @property
    def methods(self) -> tuple[str, ...]:
        return tuple(sorted({row.method for row in self.rows}))

    @property
    def targets(self) -> tuple[str, ...]:
        return tuple(sorted({row.target for row in self.rows}))

    @property
    def sources(self) -> tuple[str, ...]:
        """The distinct source addresses (``url``)."""
        return tuple(sorted({row.url for row in self.rows}))

    def row(self, row_id: str) -> Row:
        for row in self.rows:
            if row.id == row_id:
                return row
        raise KeyError(row_id)


def _field(where: str, name: str, value: Any) -> Any:
    """``value`` of field ``name`` checked against its kind (rates become a tuple)."""
    kind = FIELDS.get(name)
    if kind is None:
        raise CatalogError(f"{where}: unknown field '{name}'")
    if kind == "text":
        if not isinstance(value, str) or not value.strip():
            raise CatalogError(f"{where}: field '{name}' must be non-empty text")
        return value
    if kind == "bool":
        if not isinstance(value, bool):
            raise CatalogError(f"{where}: field '{name}' must be true or false")
        return value
    if kind == "rates":
        if not isinstance(value, list) or not value:
            raise CatalogError(f"{where}: field '{name}' must be a non-empty list of rates")
        return tuple(_fraction(where, name, item) for item in value)
    if kind == "fraction":
        return _fraction(where, name, value)
    number = _number(where, name, value)
    if kind == "count":
        if not number.is_integer() or number < 1:
            raise CatalogError(f"{where}: field '{name}' must be a whole number >= 1")
        return int(number)
    if kind == "nonnegative" and number < 0:
        raise CatalogError(f"{where}: field '{name}' must be >= 0")
    return number


def _number(where: str, name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise CatalogError(f"{where}: field '{name}' must be a finite number")
    return float(value)


def _fraction(where: str, name: str, value: Any) -> float:
    number = _number(where, name, value)
    if not 0.0 <= number <= 1.0:
        raise CatalogError(f"{where}: field '{name}' must be in [0, 1] (a rate), not {value}")
    return number


def _check_row(where: str, v: dict[str, Any]) -> None:
    """What a row's fields must say together (each field is checked alone already)."""
    for name in REQUIRED:
        if name not in v:
            raise CatalogError(f"{where}: missing field '{name}'")
    if not _ID.match(v["id"]):
        raise CatalogError(
            f"{where}: field 'id' must be 1 to 48 lower-case letters, digits, '.' and '-'"
        )
    if v["method"] not in METHODS:
        raise CatalogError(f"{where}: field 'method' must be one of {', '.join(METHODS)}")
    if v["shape"] not in SHAPES:
        raise CatalogError(f"{where}: field 'shape' must be one of {', '.join(SHAPES)}")
    if v["measure"] not in MEASURES:
        raise CatalogError(f"{where}: field 'measure' must be one of {', '.join(MEASURES)}")
    if not v["url"].startswith("https://"):
        raise CatalogError(f"{where}: field 'url' must be an https:// address")
    if not _DATE.match(v["read"]):
        raise CatalogError(f"{where}: field 'read' must be a date YYYY-MM-DD")
    _check_measure(where, v)
    _check_length_over(where, v)


def _check_length_over(where: str, v: dict[str, Any]) -> None:
    """``length_over``: one of LENGTH_OVER; required for a model-free method's mean_length
    row, refused for another method's; "all steps" only for a mean_length row (rates and
    accepted per drafted are counted over the drafts)."""
    over = v.get("length_over")
    free = model_free_methods()
    if over is not None and over not in LENGTH_OVER:
        raise CatalogError(
            f"{where}: field 'length_over' must be one of {', '.join(LENGTH_OVER)}, not "
            f"{over[:40]!r}"
        )
    if v["method"] not in free:
        if over is not None:
            raise CatalogError(
                f"{where}: field 'length_over' is given for a model-free method's rows only "
                f"({', '.join(free)})"
            )
        return
    if over is None and v["measure"] == "mean_length":
        raise CatalogError(
            f"{where}: missing field 'length_over' (a model-free method's mean length: "
            f"over {' or '.join(LENGTH_OVER)}?)"
        )
    if over == "all steps" and v["measure"] != "mean_length":
        raise CatalogError(
            f"{where}: field 'length_over' is 'all steps' for mean_length rows only "
            f"(a {v['measure']} row counts drafting steps)"
        )


def _check_measure(where: str, v: dict[str, Any]) -> None:
    measure, k = v["measure"], v.get("k")
    if measure in RATE_MEASURES:
        if "rates" not in v or "value" in v:
            raise CatalogError(f"{where}: field 'rates' gives a {measure} row, not 'value'")
        rates = v["rates"]
        if k is None or len(rates) != k:
            raise CatalogError(
                f"{where}: field 'rates' must list one rate per position 1..K (K = {k})"
            )
        if measure == "cumulative_rates" and any(b > a for a, b in pairwise(rates)):
            raise CatalogError(f"{where}: field 'rates' (cumulative) must never rise")
    else:
        if "value" not in v or "rates" in v:
            raise CatalogError(f"{where}: field 'value' gives a {measure} row, not 'rates'")
    if measure == "accepted_per_drafted":
        _fraction(where, "value", v["value"])
        if k is None:
            raise CatalogError(f"{where}: missing field 'k' (accepted per drafted needs K)")
    if measure == "mean_length" and "bonus" not in v:
        raise CatalogError(f"{where}: missing field 'bonus' (is the bonus token counted?)")
    if measure != "mean_length" and "bonus" in v:
        raise CatalogError(f"{where}: field 'bonus' is given for mean_length rows only")
    if measure == "mean_length":
        low = 1.0 if v["bonus"] else 0.0
        if k is None:  # a tree or block of unstated depth: only the floor
            if v["value"] < low:
                raise CatalogError(f"{where}: field 'value' must be >= {low:g}")
            return
        high = k + 1 if v["bonus"] else k
        if not low <= v["value"] <= high:
            bounds = "[1, K + 1]" if v["bonus"] else "[0, K]"
            raise CatalogError(f"{where}: field 'value' must be in {bounds} = [{low:g}, {high:g}]")


_ROW_FIELDS = {f.name for f in fields(Row)}


def parse_catalog(text: str, origin: str) -> Catalog:
    """The rows of a catalog file's ``text`` (``origin`` names it in errors), checked."""
    try:
        document = toml_document(text)
    except Exception as error:  # tomllib.TOMLDecodeError, or nested too deep
        raise CatalogError(f"{origin}: not valid TOML: {error}") from None
    unknown = sorted(set(document) - {"series", "row"})
    if unknown:
        raise CatalogError(f"{origin}: unknown table '{unknown[0]}' (known: series, row)")
    series: dict[str, dict[str, Any]] = {}
    for i, table in enumerate(_tables(document, "series", origin)):
        named = isinstance(table.get("id"), str) and table["id"]
        where = f"{origin}: series {table['id'] if named else i + 1}"
        values = {name: _field(where, name, value) for name, value in table.items()}
        if "id" not in values:
            raise CatalogError(f"{where}: missing field 'id'")
        if "series" in values:
            raise CatalogError(f"{where}: unknown field 'series' (a series names no series)")
        if values["id"] in series:
            raise CatalogError(f"{where}: id used twice")
        series[values.pop("id")] = values
    rows: list[Row] = []
    seen: set[str] = set()
    for i, table in enumerate(_tables(document, "row", origin)):
        named = isinstance(table.get("id"), str) and table["id"]
        where = f"{origin}: row {table['id'] if named else i + 1}"
        own = {name: _field(where, name, value) for name, value in table.items()}
        if "series" in own and own["series"] not in series:
            raise CatalogError(f"{where}: field 'series' names no [[series]] ({own['series']})")
        values = {**series.get(own.get("series", ""), {}), **own}
        _check_row(where, values)
        if values["id"] in seen:
            raise CatalogError(f"{where}: id used twice")
        seen.add(values["id"])
        rows.append(Row(**{name: values[name] for name in values if name in _ROW_FIELDS}))
    if not rows:
        raise CatalogError(f"{origin}: no [[row]]")
    return Catalog(tuple(rows))


def _tables(document: dict[str, Any], name: str, origin: str) -> list[dict[str, Any]]:
    tables = document.get(name, [])
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise CatalogError(f"{origin}: '{name}' must be [[{name}]] tables")
    return tables


def load_catalog(path: str | Path | None = None) -> Catalog:
    """The catalog at ``path`` (a regular file of at most 1 MiB), or the shipped one
    (``data/catalog.toml``, read once). Raises :class:`CatalogError` naming the file, row
    and field, or OSError for a file that cannot be read."""
    if path is None:
        return _shipped()
    return _read(Path(path))


@cache
def _shipped() -> Catalog:
    return _read(CATALOG_PATH)


def _read(path: Path) -> Catalog:
    try:
        text = read_input_text(path, CATALOG_MAX_BYTES, "an acceptance catalog")
    except UnicodeDecodeError:
        raise CatalogError(f"{path.name}: not UTF-8 text") from None
    return parse_catalog(text, path.name)
