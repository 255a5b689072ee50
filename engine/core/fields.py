"""The fields of a scenario: how each is named, checked and described (:class:`FieldSpec`),
and the checks of a typed or stored value.

The table of fields, :data:`FIELD_SPECS`, is assembled in :mod:`engine.core.config` from its
own fields (the workload, the seed, the fields that choose each part) and those each
registered part declares (:mod:`engine.core.parts`). This module imports neither numpy nor
pandas: the app's form starts without them.
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

K_MAX = 1024
# The exact dynamic program is O(tokens_per_seq x K); these bounds keep every valid run finite.
TOKENS_MAX = 10**6
SEQUENCES_MAX = 10**7
COST_MAX_US = 1e9  # a thousand seconds per forward pass; beyond that totals overflow
# One nanosecond. With COST_MAX_US it bounds draft/verify by 1e12, so that every accepted
# configuration has finite metrics (cost_ratio, compute_overhead) and a speedup > 0.
VERIFY_MIN_US = 1e-3
# The roofline efficiencies' floor: a pass then takes at most a million times its ideal
# time, so that every accepted roofline configuration has finite metrics.
EFFICIENCY_MIN = 1e-6
SEED_MAX = 2**63 - 1
BATCH_MAX = 4096
WORKERS_MAX = 64  # sweep worker processes (engine.sweep.pool, spectui sweep --workers)
PROMPT_MAX = 10**7
T0_MAX_US = 1e6
TAIL_RULES = ("full", "clamp")
K_MAX_POLICY = 32  # the default bound of an adaptive policy's k (policy.k_max)
WINDOW_MAX = 10**4
BETA_MAX = 1e4
TREE_TEXT_MAX = 8192  # characters of a shape.tree text
# The most characters a typed value of each kind may have (a form field's length, checked
# before the text is read, so that no paste costs more than this much reading); other kinds
# (numbers, choices, ids) take TEXT_MAX. Each is above its longest valid text: 1,024 rates,
# 4,096 batch:k pairs, a path of PATH_MAX.
TEXT_MAX = 64
KIND_TEXT_MAX = {
    "probs": 32 * K_MAX,
    "schedule": 16 * BATCH_MAX,
    "tree": TREE_TEXT_MAX,
    "path": 4096,
}
SHOWN_MAX = 60  # characters of a wrong value an error message repeats
_SPEC_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,63}")


class ConfigError(ValueError):
    """A configuration value is invalid. ``field`` names the offending parameter."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message

    def __reduce__(self) -> tuple[Any, ...]:  # a worker process sends it back whole
        return (type(self), (self.field, self.message))


@dataclass(frozen=True)
class FieldSpec:
    """One field of a scenario: how it is named, checked and described to a user.

    ``kind``: "int", "seed", "prob" (a number in [0, 1]), "number" (in [low, high], or
    (low, high] when ``low_open``), "choice", "spec" (a hardware or model id from the spec
    files, checked when the part that reads it is chosen; ``choices`` holds "hardware" or
    "model"), "path" (a file name), "probs" (probabilities, written "0.9,0.8,0.7") or
    "schedule" (k by batch size, written "1:5,32:3,128:0"). The last two are kept as their
    canonical text, so that a scenario stays hashable and reads back from a CSV cell.
    ``part`` is (key of the choosing field, the names of the parts that read this field),
    filled in by the table from the parts that declare the field; None when every scenario
    reads it. ``original``: the field's column in the original's record (its 14 fields,
    always written first, in that order). ``seed_key``: the field enters the
    per-configuration seed key when it is read (see :func:`seed_key_values`).
    """

    kind: str
    default: Any = None
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] = ()
    unit: str = ""
    help: str = ""
    low_open: bool = False
    part: tuple[str, tuple[str, ...]] | None = None
    seed_key: bool = False
    flag: str = ""  # the CLI flag; by default "--" and the key's last part, dashed
    label: str = ""  # the app form's label: at most 9 characters, so it never wraps
    key: str = ""
    attr: str = ""  # the attribute of SpecConfig; by default the key's last part
    original: int | None = None  # its column in the original simulator's record, if any
    optional: bool = False  # a "path" that may be left empty

    def allowed(self) -> str:
        if self.kind == "choice":
            return "one of " + ", ".join(self.choices)
        if self.kind == "prob":
            return "a number in [0, 1]"
        if self.kind == "number":
            bracket = "(" if self.low_open else "["
            return f"a number in {bracket}{_short(self.low)}, {_short(self.high)}]"
        if self.kind == "spec":
            return f"a {self.choices[0]} id ({', '.join(known_spec_ids(self.choices[0]))})"
        if self.kind == "path":
            return "a file name"
        if self.kind == "probs":
            return f"1 to {K_MAX} numbers in [0, 1], comma-separated"
        if self.kind == "tree":
            return "a tree: chain:K, kary:k,d, eagle, sequoia:budget,depth or parents=..."
        if self.kind == "schedule":
            return (
                f"BATCH:K pairs, comma-separated, batches rising from 1 (to {BATCH_MAX}), "
                f"K in [0, {K_MAX}]"
            )
        return f"an integer in [{int(self.low or 0)}, {int(self.high or 0)}]"

    @property
    def text_max(self) -> int:
        """The most characters a typed value of this field may have (:data:`KIND_TEXT_MAX`)."""
        return KIND_TEXT_MAX.get(self.kind, TEXT_MAX)

    @property
    def cli_flag(self) -> str:
        return self.flag or "--" + self.key.rsplit(".", 1)[-1].replace("_", "-")

    @property
    def numeric(self) -> bool:
        return self.kind in ("int", "seed", "prob", "number")


def _short(bound: float | None) -> str:
    """A bound as a person types it: 0, 0.001, 1e9."""
    return f"{bound or 0:g}".replace("e+0", "e").replace("e+", "e").replace("e-0", "e-")


def field(key: str, default: Any, **spec: Any) -> FieldSpec:
    """A field as a part (or the core table) declares it: its key, default and
    :class:`FieldSpec` settings; its attribute is the key's last part unless given."""
    spec.setdefault("attr", key.rsplit(".", 1)[-1])
    return FieldSpec(key=key, default=default, **spec)


# Where the ids of a "spec" field's kind come from ("hardware", "model"): a function per kind,
# registered by the part that reads them (engine.cost.models.roofline).
SPEC_IDS: dict[str, Callable[[], tuple[str, ...]]] = {}


def known_spec_ids(kind: str) -> tuple[str, ...]:
    """The ids of ``kind`` ("hardware" or "model"): shipped and the user's own (none when no
    registered part reads that kind)."""
    source = SPEC_IDS.get(kind)
    return source() if source is not None else ()


# The fields every scenario has, in table order; each field that chooses a part is followed
# in the table by the fields of the parts registered for it.
CORE_FIELDS: tuple[FieldSpec, ...] = (
    field(
        "draft_model",
        "fixed",
        original=0,
        label="model",
        kind="choice",
        help="draft model",
        seed_key=True,
    ),
    field(
        "k",
        5,
        original=1,
        label="K",
        kind="int",
        low=1,
        high=K_MAX,
        help="speculation length K (draft tokens per cycle)",
        seed_key=True,
    ),
    field(
        "n_sequences",
        500,
        original=10,
        label="sequences",
        kind="int",
        low=1,
        high=SEQUENCES_MAX,
        help="sequences to simulate",
        seed_key=True,
    ),
    field(
        "tokens_per_seq",
        128,
        original=11,
        label="tok/seq",
        kind="int",
        low=1,
        high=TOKENS_MAX,
        help="output tokens per sequence",
        seed_key=True,
    ),
    field(
        "seed", 42, original=12, label="seed", kind="seed", low=0, high=SEED_MAX, help="random seed"
    ),
    field(
        "tail",
        "full",
        original=13,
        label="tail",
        kind="choice",
        choices=TAIL_RULES,
        help="last cycle drafts K (full) or min(K, r-1) (clamp)",
        seed_key=True,
    ),
    # Newer fields: dotted keys; none enters the seed key (none changes the draws), so every
    # result of the original stays as it was.
    field(
        "workload.prompt_len",
        0,
        label="prompt",
        kind="int",
        low=0,
        high=PROMPT_MAX,
        unit="tokens",
        help="context already in the KV cache when decoding starts",
    ),
    field(
        "workload.batch_size",
        1,
        attr="batch_size",
        label="batch",
        kind="int",
        low=1,
        high=BATCH_MAX,
        help="sequences decoded together (each verify pass checks all of them)",
    ),
    field(
        "cost.model",
        "linear",
        attr="cost_model",
        label="cost",
        kind="choice",
        flag="--cost",
        help="cost model",
    ),
    field(
        "policy.name",
        "fixed",
        attr="policy",
        label="policy",
        kind="choice",
        flag="--policy",
        help="K policy",
    ),
    field(
        "shape.name",
        "chain",
        attr="shape",
        label="shape",
        kind="choice",
        flag="--shape",
        help="draft shape",
    ),
    field(
        "proposer.name",
        "model",
        attr="proposer",
        label="proposer",
        kind="choice",
        flag="--proposer",
        help="where the drafts come from",
    ),
)


# The table of fields by key, in table order: assembled (and kept up to date as parts
# register) by engine.core.config.
FIELD_SPECS: dict[str, FieldSpec] = {}


def _check_part_value(spec: FieldSpec, value: str) -> None:
    if spec.kind == "path":
        if not value.strip() and not spec.optional:
            raise ConfigError(spec.key, "a file is required by this cost model")
        return
    known = known_spec_ids(spec.choices[0])
    if known and value not in known:
        raise ConfigError(
            spec.key, f"unknown {spec.choices[0]} {value!r}; known: {', '.join(known)}"
        )


def check_value(field: str, value: Any) -> Any:
    """Validate and normalise one field's value; raise :class:`ConfigError` naming the field."""
    if field not in FIELD_SPECS:
        raise ConfigError(field, "unknown parameter; known: " + ", ".join(FIELD_SPECS))
    spec = FIELD_SPECS[field]
    try:
        return _checked(spec, value)
    except _Bad:
        raise ConfigError(
            field, f"{_shown(value)} is not allowed; expected {spec.allowed()}"
        ) from None


def _shown(value: Any) -> str:
    """A wrong value as an error message repeats it: its repr, cut to :data:`SHOWN_MAX`."""
    text = repr(value)
    return text if len(text) <= SHOWN_MAX else text[: SHOWN_MAX - 1] + "…"


class _Bad(Exception):
    """A value outside its field's range (check_value words the message, only then)."""


def _checked(spec: FieldSpec, value: Any) -> Any:
    field = spec.key
    if spec.kind == "choice":
        if not isinstance(value, str) or value not in spec.choices:
            raise _Bad
        return value
    if spec.kind == "spec":
        if not isinstance(value, str) or not _SPEC_ID.fullmatch(value):
            raise _Bad
        return value
    if spec.kind == "path":
        if not isinstance(value, str):
            raise ConfigError(field, f"{_shown(value)} is not allowed; expected a file name")
        return value
    if spec.kind == "probs":
        return ",".join(_short_prob(p) for p in _probs(value))
    if spec.kind == "schedule":
        return ",".join(f"{b}:{k}" for b, k in _schedule(value))
    if spec.kind == "tree":  # its shape is read where the tree is built (engine.shapes.trees)
        if not isinstance(value, str) or not value.strip() or len(value) > TREE_TEXT_MAX:
            raise _Bad
        return " ".join(value.split())
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise _Bad  # numpy numbers are Real; bools and strings are not
    if spec.kind in ("int", "seed"):
        if not isinstance(value, numbers.Integral):
            value = float(value)
            if not math.isfinite(value) or not value.is_integer():
                raise _Bad
            value = int(value)
        assert spec.low is not None and spec.high is not None
        if not spec.low <= value <= spec.high:
            raise _Bad
        return int(value)
    value = float(value)
    if not math.isfinite(value):
        raise _Bad
    if spec.kind == "prob" and not 0.0 <= value <= 1.0:
        raise _Bad
    if spec.kind == "number":
        assert spec.low is not None and spec.high is not None
        above = value > spec.low if spec.low_open else value >= spec.low
        if not (above and value <= spec.high):
            raise _Bad
    return value


def _short_prob(value: float) -> str:
    return repr(value) if value not in (0.0, 1.0) else str(int(value))


def _probs(value: Any) -> tuple[float, ...]:
    """The numbers of a "probs" field: text "0.9, 0.8 0.7" or a sequence of numbers."""
    items = value.replace(",", " ").split() if isinstance(value, str) else value
    if not isinstance(items, list | tuple) or not 1 <= len(items) <= K_MAX:
        raise _Bad
    out = []
    for item in items:
        if isinstance(item, bool):
            raise _Bad
        try:
            if isinstance(item, str):
                number = ascii_number(item)
            else:
                number = float(item) if isinstance(item, numbers.Real) else math.nan
        except ValueError:
            raise _Bad from None
        if not 0.0 <= number <= 1.0:  # NaN fails too
            raise _Bad
        out.append(number)
    return tuple(out)


def rates_of(text: str) -> tuple[float, ...]:
    """The conditional acceptance rates p_1..p_m of a per_position scenario's
    ``acceptance.rates`` (checked text)."""
    return _probs(text)


def _schedule(value: Any) -> tuple[tuple[int, int], ...]:
    """The (batch, k) pairs of a "schedule" field: "1:5,32:3,128:0"."""
    if not isinstance(value, str):
        raise _Bad
    pairs = []
    for item in value.replace(" ", "").split(","):
        batch, sep, k = item.partition(":")
        if not sep or not (batch.isascii() and batch.isdigit() and k.isascii() and k.isdigit()):
            raise _Bad
        pairs.append((int(batch), int(k)))
    batches = [b for b, _ in pairs]
    if batches[0] != 1 or batches != sorted(set(batches)) or batches[-1] > BATCH_MAX:
        raise _Bad
    if any(k > K_MAX for _, k in pairs):
        raise _Bad
    return tuple(pairs)


def schedule_k(text: str, batch: int) -> int:
    """The k a ``policy.schedule`` gives at batch size ``batch``: the pair with the largest
    batch not above it."""
    return [k for b, k in _schedule(text) if b <= batch][-1]


# The numbers a person or a file may write: ASCII decimal digits, an optional sign, point and
# exponent, or the words float() knows for the infinities and NaN (which range checks refuse).
# Python's int() and float() also read other scripts' digits ("٣" is 3, "５" is 5) and
# underscores ("1_0" is 10), which nobody means in a flag, a field or a data file.
_INTEGER_TEXT = re.compile(r"[+-]?[0-9]+")
_NUMBER_TEXT = re.compile(
    r"[+-]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|inf|infinity|nan)",
    re.IGNORECASE,
)
NUMBER_TEXT_MAX = 400  # characters: longer digits are refused before int() reads them


def ascii_number(text: str, *, integer: bool = False) -> Any:
    """The number ``text`` spells in ASCII (spaces around it allowed): an int if ``integer``,
    else a float (possibly inf or NaN, which the caller's range check refuses). ValueError
    otherwise. This is the one parser of numbers in flags, form fields and data files."""
    text = text.strip()
    if len(text) > NUMBER_TEXT_MAX:
        raise ValueError(f"a number of {len(text):,} characters")
    pattern = _INTEGER_TEXT if integer else _NUMBER_TEXT
    if not text.isascii() or pattern.fullmatch(text) is None:
        raise ValueError(
            f"{text[:SHOWN_MAX]!r} is not {'an integer' if integer else 'a number'} in ASCII digits"
        )
    return int(text) if integer else float(text)


def ascii_int(text: str) -> int:
    """The integer ``text`` spells in ASCII digits (:func:`ascii_number`); ValueError otherwise."""
    return int(ascii_number(text, integer=True))


def parse_value(field: str, text: str) -> Any:
    """One field's value from what a person typed (CLI flag, form field), checked.

    Numbers are ASCII only: Python's int() and float() also read other scripts' digits
    ("٣" is 3), which nobody means in a configuration. Raises :class:`ConfigError`.
    """
    if field not in FIELD_SPECS:
        return check_value(field, text)  # the unknown-parameter error
    spec = FIELD_SPECS[field]
    if len(text) > spec.text_max:  # refused before it is read: no text costs more than this
        raise ConfigError(field, f"too long ({len(text):,} characters); at most {spec.text_max:,}")
    text = text.strip()
    if not spec.numeric:
        return check_value(field, text)
    integer = spec.kind in ("int", "seed")
    noun = "an integer" if integer else "a number"
    try:
        if not text.isascii():
            noun += " (ASCII digits only)"
            raise ValueError(text)
        value: Any = ascii_number(text, integer=integer)
    except ValueError:
        shown = repr(text) if text else "empty"
        raise ConfigError(field, f"{shown} is not {noun}; expected {spec.allowed()}") from None
    try:
        return check_value(field, value)
    except ConfigError:  # said as typed: "9", not the 9.0 it was read as
        raise ConfigError(field, f"{text} is not allowed; expected {spec.allowed()}") from None
