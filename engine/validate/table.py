"""The table of published measurements: ``data/measurements.toml``, one ``[[entry]]`` per
measurement, ``[[series]]`` for what the entries of one setup share (docs/validation.md).

Every entry names its source (``source``, ``url``, the date it was ``read``), its setup
(hardware, GPU count, target, method and draft, K or tree, batch, prompt and output
lengths, temperature, the ``dataset`` or task as the source names it (what the
acceptance catalog's rows are chosen by: engine.validate.catalog_acceptance); the target's
``tp`` and ``ep`` GPUs and the draft's ``draft_tp``, the target's ``weight_dtype`` and
``compute_dtype`` as the roofline's fields name them; for a
measurement under load, the ``concurrency`` of its closed loop and the ``requests`` served,
predicted by the serving simulator: engine.validate.under_load), the
acceptance the source reports (``mean_length`` bonus token included, or ``draft_acceptance``
accepted per drafted token, and ``acceptance`` in the source's words; ``acceptance_assumed``
when the source reports none for this run: the entry is then predicted with the acceptance
catalog's, engine.validate.catalog_acceptance, and another run's figure given here only
calibrates the series' entries that state their own), the measured outcome
(one pair of ``tpot_ms``/``baseline_tpot_ms``, ``tokens_per_s``/``baseline_tokens_per_s``,
``wall_s``/``baseline_wall_s``, or a published ``speedup`` or draft ``cost_ratio``; and
``outcome`` in words), what was assumed (``note``), and for a miss what spectui does not
model that explains it (``miss``). ``status`` is ``ok`` or ``pending: needs ...``. A
model-free proposer's entry (n-gram, suffix decoding: category ``model-free``) names the
registered ``proposer``, its ``hit_rate`` (the share of steps that drafted, stated or
assumed: its note says which) and what its mean length counts (``length_over``).
"""

from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from engine.acceptance.catalog import LENGTH_OVER, convert_length_over

CATEGORIES = ("batch 1", "batch scaling", "long context", "trees", "model-free")
# How a model-free proposer's mean accepted length counts (LENGTH_OVER, the catalog's: over
# every step, or over the steps that drafted only) and the one conversion between the two
# (engine.acceptance.catalog.convert_length_over) are the catalog's.
PENDING = "pending: needs "
# Published figures the measured value is computed from: (measured, baseline) pairs, whose
# ratio baseline / measured is a speedup (tokens per second: measured / baseline), or one
# published figure.
OUTCOME_PAIRS = (
    ("tpot_ms", "baseline_tpot_ms"),
    ("wall_s", "baseline_wall_s"),
    ("tokens_per_s", "baseline_tokens_per_s"),
)
OUTCOME_SINGLE = ("speedup", "cost_ratio")
# Field kinds: text, count (whole number >= 1), whole (>= 0), fraction (0..1), positive,
# bool. Entries inherit every field of their series but "id".
FIELDS: dict[str, str] = {
    "id": "text",
    "series": "text",
    "category": "text",
    "status": "text",
    "source": "text",
    "url": "text",
    "read": "text",
    "engine": "text",
    "hardware": "text",
    "gpus": "count",
    "tp": "count",
    "draft_tp": "count",
    "ep": "count",
    "weight_dtype": "text",
    "compute_dtype": "text",
    "target": "text",
    "method": "text",
    "draft": "text",
    "k": "whole",
    "verify_width": "count",
    "draft_passes": "whole",
    "draft_width": "count",
    "drafts_in_verify": "bool",
    "batch": "count",
    "concurrency": "count",
    "requests": "count",
    "prompt": "whole",
    "output": "count",
    "temperature": "nonnegative",
    "dataset": "text",
    "proposer": "text",
    "hit_rate": "fraction",
    "length_over": "text",
    "mean_length": "positive",
    "draft_acceptance": "fraction",
    "acceptance": "text",
    "acceptance_assumed": "bool",
    "tpot_ms": "positive",
    "baseline_tpot_ms": "positive",
    "wall_s": "positive",
    "baseline_wall_s": "positive",
    "tokens_per_s": "positive",
    "baseline_tokens_per_s": "positive",
    "speedup": "positive",
    "cost_ratio": "positive",
    "outcome": "text",
    "setup": "text",
    "note": "text",
    "miss": "text",
}
REQUIRED = ("id", "category", "status", "source", "url", "read", "hardware", "target", "method")
REQUIRED_TEXT = ("acceptance", "outcome", "setup", "note")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_ID = re.compile(r"^[a-z0-9][a-z0-9.-]{0,25}$")  # 26 characters at most: the report is 80 wide


class TableError(ValueError):
    """The table is malformed: one line naming the entry and the field."""


@dataclass(frozen=True, eq=False)  # entries are compared by identity (their ids are unique)
class Entry:
    """One published measurement (fields as :data:`FIELDS`; absent ones are None)."""

    values: dict[str, Any]

    def __getattr__(self, name: str) -> Any:
        if name in FIELDS:
            return self.values.get(name)
        raise AttributeError(name)

    @property
    def pending(self) -> bool:
        return str(self.status).startswith(PENDING)

    @property
    def assumed(self) -> bool:
        """Whether the acceptance is not the source's own for this run (another run's)."""
        return bool(self.values.get("acceptance_assumed"))

    @property
    def is_tree(self) -> bool:
        return self.values.get("verify_width") is not None

    @property
    def quantity(self) -> str:
        """What was measured: ``speedup`` or ``cost ratio`` (a draft pass over a step)."""
        return "cost ratio" if self.values.get("cost_ratio") is not None else "speedup"

    @property
    def measured(self) -> float:
        """The measured speedup (or cost ratio) from the published figures."""
        v = self.values
        for measured, baseline in OUTCOME_PAIRS:
            if measured in v:
                if measured == "tokens_per_s":
                    return float(v[measured]) / float(v[baseline])
                return float(v[baseline]) / float(v[measured])
        return float(v["speedup"] if "speedup" in v else v["cost_ratio"])

    @property
    def tokens_per_cycle(self) -> float | None:
        """Mean tokens per verify pass, bonus included: the published mean length, or
        ``1 + draft_acceptance x K`` (every cycle drafts K). None if neither is reported. A
        model-free proposer's is per step, hits and misses: a length over the drafting steps
        converted to all steps at hit rate h, h (M - 1) + 1 (engine.acceptance.catalog.
        convert_length_over)."""
        if self.mean_length is not None:
            m = float(self.mean_length)
            per_drafting_step = self.length_over == "drafting steps"
        elif self.draft_acceptance is not None and self.k is not None:
            m = 1.0 + float(self.draft_acceptance) * int(self.k)
            per_drafting_step = True  # accepted per drafted: counted where a step drafted
        else:
            return None
        if self.proposer is not None and per_drafting_step:
            # a step without a match emits one token
            return convert_length_over(m, float(self.hit_rate), "drafting steps", "all steps")
        return m

    @property
    def shape_text(self) -> str:
        if self.is_tree:
            return f"tree {self.verify_width}"
        if self.proposer is not None:
            return f"{self.proposer} K={self.k} hit rate {self.hit_rate:g}"
        return f"K={self.k}" if self.k is not None else "-"

    @property
    def batch_text(self) -> str:
        """``batch 4``, or ``concurrency 10`` for a measurement under load."""
        if self.concurrency is not None:
            return f"concurrency {self.concurrency}"
        return f"batch {self.batch}"


def _check(where: str, name: str, value: Any) -> Any:
    kind = FIELDS.get(name)
    if kind is None:
        raise TableError(f"{where}: unknown field '{name}'")
    if kind == "text":
        if not isinstance(value, str) or not value.strip():
            raise TableError(f"{where}: field '{name}' must be non-empty text")
        return value
    if kind == "bool":
        if not isinstance(value, bool):
            raise TableError(f"{where}: field '{name}' must be true or false")
        return value
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise TableError(f"{where}: field '{name}' must be a finite number")
    if kind in ("count", "whole"):
        low = 1 if kind == "count" else 0
        if not float(value).is_integer() or value < low:
            raise TableError(f"{where}: field '{name}' must be a whole number >= {low}")
        return int(value)
    if kind == "fraction" and not 0.0 <= value <= 1.0:
        raise TableError(f"{where}: field '{name}' must be in [0, 1]")
    if kind == "positive" and value <= 0:
        raise TableError(f"{where}: field '{name}' must be > 0")
    if kind == "nonnegative" and value < 0:
        raise TableError(f"{where}: field '{name}' must be >= 0")
    return float(value)


def _check_entry(where: str, v: dict[str, Any]) -> None:
    for name in REQUIRED + REQUIRED_TEXT:
        if name not in v:
            raise TableError(f"{where}: missing field '{name}'")
    if not _ID.match(v["id"]):
        raise TableError(
            f"{where}: field 'id' must be 1 to 26 lower-case letters, digits, '.' and '-'"
        )
    if v["category"] not in CATEGORIES:
        raise TableError(f"{where}: field 'category' must be one of {', '.join(CATEGORIES)}")
    if v["status"] != "ok" and not v["status"].startswith(PENDING):
        raise TableError(f"{where}: field 'status' must be 'ok' or '{PENDING}...'")
    if not _DATE.match(v["read"]):
        raise TableError(f"{where}: field 'read' must be a date YYYY-MM-DD")
    outcomes = [pair for pair in OUTCOME_PAIRS if pair[0] in v or pair[1] in v]
    singles = [name for name in OUTCOME_SINGLE if name in v]
    if len(outcomes) + len(singles) != 1:
        raise TableError(
            f"{where}: give exactly one outcome: {', '.join('/'.join(p) for p in OUTCOME_PAIRS)}"
            f", {' or '.join(OUTCOME_SINGLE)}"
        )
    for pair in outcomes:
        missing = [name for name in pair if name not in v]
        if missing:
            raise TableError(f"{where}: missing field '{missing[0]}'")
    if "mean_length" in v and "draft_acceptance" in v:
        raise TableError(f"{where}: give mean_length or draft_acceptance, not both")
    if "k" in v and "verify_width" in v:
        raise TableError(f"{where}: give k (a chain) or verify_width (a tree), not both")
    pending = v["status"].startswith(PENDING)  # a source may not state K
    if "k" not in v and "verify_width" not in v and "cost_ratio" not in v and not pending:
        raise TableError(f"{where}: give k (a chain) or verify_width (a tree)")
    if "verify_width" in v and ("draft_passes" not in v or "draft_width" not in v):
        raise TableError(f"{where}: a tree needs draft_passes and draft_width")
    if "proposer" in v and not pending:
        _check_proposer(where, v)
    k, m = v.get("k"), v.get("mean_length")
    if k is not None and m is not None and not 1.0 <= m <= k + 1:
        raise TableError(f"{where}: field 'mean_length' must be in [1, K + 1] = [1, {k + 1}]")


def _check_proposer(where: str, v: dict[str, Any]) -> None:
    """A model-free proposer's entry: a registered model-free proposer, its K, its hit rate
    and what its mean accepted length counts."""
    from engine.core.config import SpecConfig  # noqa: F401  (registers the parts)
    from engine.core.parts import PROPOSER

    known = PROPOSER.where(lambda part: bool(part.model_free))
    if v["proposer"] not in known:
        raise TableError(f"{where}: field 'proposer' must be one of {', '.join(known)}")
    for name in ("k", "hit_rate"):
        if name not in v:
            raise TableError(f"{where}: missing field '{name}' (a model-free proposer's)")
    if "mean_length" in v and v.get("length_over") not in LENGTH_OVER:
        raise TableError(f"{where}: field 'length_over' must be one of {', '.join(LENGTH_OVER)}")
    if "draft" in v:
        raise TableError(f"{where}: field 'draft' is not given with a model-free proposer")


def parse_table(text: str, origin: str) -> tuple[Entry, ...]:
    """The entries of a table file's ``text`` (``origin`` names it in errors), checked."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise TableError(f"{origin}: not valid TOML: {error}") from None
    unknown = sorted(set(document) - {"series", "entry", "left_out"})
    if unknown:
        raise TableError(f"{origin}: unknown table '{unknown[0]}' (known: series, entry, left_out)")
    series: dict[str, dict[str, Any]] = {}
    for i, table in enumerate(document.get("series", [])):
        where = f"{origin}: series {i + 1}"
        values = {name: _check(where, name, value) for name, value in table.items()}
        if "id" not in values:
            raise TableError(f"{where}: missing field 'id'")
        series[values.pop("id")] = values
    entries: list[Entry] = []
    seen: set[str] = set()
    for i, table in enumerate(document.get("entry", [])):
        named = isinstance(table.get("id"), str) and table["id"]
        where = f"{origin}: entry {table['id'] if named else i + 1}"
        own = {name: _check(where, name, value) for name, value in table.items()}
        if "series" in own and own["series"] not in series:
            raise TableError(f"{where}: field 'series' names no [[series]] ({own['series']})")
        values = {**series.get(own.get("series", ""), {}), **own}
        _check_entry(where, values)
        if values["id"] in seen:
            raise TableError(f"{where}: id used twice")
        seen.add(values["id"])
        entries.append(Entry(values))
    return tuple(entries)


@dataclass(frozen=True)
class LeftOut:
    """A source looked at and not used, and why (``[[left_out]]``)."""

    source: str
    url: str
    read: str
    why: str


def parse_left_out(text: str, origin: str) -> tuple[LeftOut, ...]:
    """The ``[[left_out]]`` tables of a table file's ``text``, checked."""
    out = []
    for i, table in enumerate(tomllib.loads(text).get("left_out", [])):
        where = f"{origin}: left_out {i + 1}"
        names = ("source", "url", "read", "why")
        unknown = sorted(set(table) - set(names))
        if unknown:
            raise TableError(f"{where}: unknown field '{unknown[0]}'")
        for name in names:
            value = table.get(name)
            if not isinstance(value, str) or not value.strip():
                raise TableError(f"{where}: field '{name}' must be non-empty text")
        out.append(LeftOut(**{name: table[name] for name in names}))
    return tuple(out)


SHIPPED = "engine/validate/data/measurements.toml"


@cache
def _shipped_text() -> str:
    return (
        resources.files("engine.validate").joinpath("data", "measurements.toml").read_text("utf-8")
    )


@cache
def shipped_table() -> tuple[Entry, ...]:
    """The shipped table (read once per process)."""
    return parse_table(_shipped_text(), SHIPPED)


@cache
def shipped_left_out() -> tuple[LeftOut, ...]:
    """The shipped table's sources looked at and left out."""
    return parse_left_out(_shipped_text(), SHIPPED)
