"""One configuration of the simulator, validated on construction.

Field names, defaults and units follow the original C++ simulator's CLI
(``--draft-model``, ``--k``, ... ``--seed``), plus ``tail``.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
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
SEED_MAX = 2**63 - 1
TAIL_RULES = ("full", "clamp")
DRAFT_MODEL_NAMES = ("fixed", "position_decay", "entropy_aware")
# The parameters each draft model reads (engine.draft_models uses these as the models'
# ``reads``). Kept here, free of numpy, so the app's form can start without importing numpy.
MODEL_READS: dict[str, tuple[str, ...]] = {
    "fixed": ("acceptance_rate",),
    "position_decay": ("decay_base", "decay_factor"),
    "entropy_aware": ("entropy_high", "entropy_low", "entropy_frac"),
}
# Parameters that only some model reads; every other field is read by all models.
MODEL_PARAMETERS: frozenset[str] = frozenset(p for r in MODEL_READS.values() for p in r)


class ConfigError(ValueError):
    """A configuration value is invalid. ``field`` names the offending parameter."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


@dataclass(frozen=True)
class FieldSpec:
    """How one field of :class:`SpecConfig` is checked, and how it is described to a user."""

    kind: str  # "int", "prob", "cost", "choice", "seed"
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] = ()
    unit: str = ""
    help: str = ""

    def allowed(self) -> str:
        if self.kind == "choice":
            return "one of " + ", ".join(self.choices)
        if self.kind == "prob":
            return "a number in [0, 1]"
        if self.kind == "cost":
            return f"a number in [{_short(self.low)}, {_short(self.high)}]"
        return f"an integer in [{int(self.low or 0)}, {int(self.high or 0)}]"


def _short(bound: float | None) -> str:
    """A bound as a person types it: 0, 0.001, 1e9."""
    return f"{bound or 0:g}".replace("e+0", "e").replace("e+", "e")


FIELD_SPECS: dict[str, FieldSpec] = {
    "draft_model": FieldSpec("choice", choices=DRAFT_MODEL_NAMES, help="draft model"),
    "k": FieldSpec("int", 1, K_MAX, help="speculation length K (draft tokens per cycle)"),
    "acceptance_rate": FieldSpec("prob", help="fixed model: P(accept) of every draft token"),
    "draft_cost_us": FieldSpec(
        "cost", 0.0, COST_MAX_US, unit="us", help="cost of one draft forward pass"
    ),
    "verify_cost_us": FieldSpec(
        "cost", VERIFY_MIN_US, COST_MAX_US, unit="us", help="cost of one target (verify) pass"
    ),
    "decay_base": FieldSpec("prob", help="position_decay: P(accept) at position 1"),
    "decay_factor": FieldSpec("prob", help="position_decay: factor per further position"),
    "entropy_high": FieldSpec("prob", help="entropy_aware: P(accept) of an easy token"),
    "entropy_low": FieldSpec("prob", help="entropy_aware: P(accept) of a hard token"),
    "entropy_frac": FieldSpec("prob", help="entropy_aware: fraction of hard tokens"),
    "n_sequences": FieldSpec("int", 1, SEQUENCES_MAX, help="sequences to simulate"),
    "tokens_per_seq": FieldSpec("int", 1, TOKENS_MAX, help="output tokens per sequence"),
    "seed": FieldSpec("seed", 0, SEED_MAX, help="random seed"),
    "tail": FieldSpec(
        "choice", choices=TAIL_RULES, help="last cycle drafts K (full) or min(K, r-1) (clamp)"
    ),
}


def check_value(field: str, value: Any) -> Any:
    """Validate and normalise one field's value; raise :class:`ConfigError` naming the field."""
    if field not in FIELD_SPECS:
        raise ConfigError(field, "unknown parameter; known: " + ", ".join(FIELD_SPECS))
    spec = FIELD_SPECS[field]
    bad = f"{value!r} is not allowed; expected {spec.allowed()}"
    if spec.kind == "choice":
        if not isinstance(value, str) or value not in spec.choices:
            raise ConfigError(field, bad)
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ConfigError(field, bad)  # numpy numbers are Real; bools and strings are not
    if spec.kind in ("int", "seed"):
        if not isinstance(value, numbers.Integral):
            value = float(value)
            if not math.isfinite(value) or not value.is_integer():
                raise ConfigError(field, bad)
            value = int(value)
        assert spec.low is not None and spec.high is not None
        if not spec.low <= value <= spec.high:
            raise ConfigError(field, bad)
        return int(value)
    value = float(value)
    if not math.isfinite(value):
        raise ConfigError(field, bad)
    if spec.kind == "prob" and not 0.0 <= value <= 1.0:
        raise ConfigError(field, bad)
    if spec.kind == "cost":
        assert spec.low is not None and spec.high is not None
        if not spec.low <= value <= spec.high:
            raise ConfigError(field, bad)
    return value


def parse_value(field: str, text: str) -> Any:
    """One field's value from what a person typed (CLI flag, form field), checked.

    Numbers are ASCII only: Python's int() and float() also read other scripts' digits
    ("٣" is 3), which nobody means in a configuration. Raises :class:`ConfigError`.
    """
    if field not in FIELD_SPECS:
        return check_value(field, text)  # the unknown-parameter error
    spec = FIELD_SPECS[field]
    text = text.strip()
    if spec.kind == "choice":
        return check_value(field, text)
    integer = spec.kind in ("int", "seed")
    noun = "an integer" if integer else "a number"
    try:
        if not text.isascii():
            noun += " (ASCII digits only)"
            raise ValueError(text)
        value: Any = int(text) if integer else float(text)
    except ValueError:
        shown = repr(text) if text else "empty"
        raise ConfigError(field, f"{shown} is not {noun}; expected {spec.allowed()}") from None
    return check_value(field, value)


@dataclass(frozen=True)
class SpecConfig:
    """One simulator configuration. Costs in microseconds, counts in tokens/sequences.

    Every field is validated on construction; an invalid value raises
    :class:`ConfigError` whose message names the field, the value and the allowed range.
    """

    draft_model: str = "fixed"
    k: int = 5
    acceptance_rate: float = 0.8
    draft_cost_us: float = 20.0
    verify_cost_us: float = 200.0
    decay_base: float = 0.9
    decay_factor: float = 0.95
    entropy_high: float = 0.95
    entropy_low: float = 0.5
    entropy_frac: float = 0.3
    n_sequences: int = 500
    tokens_per_seq: int = 128
    seed: int = 42
    tail: str = "full"

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            object.__setattr__(self, f.name, check_value(f.name, getattr(self, f.name)))

    @property
    def cost_ratio(self) -> float:
        """draft_cost_us / verify_cost_us (dimensionless)."""
        return self.draft_cost_us / self.verify_cost_us

    def replace(self, **changes: Any) -> SpecConfig:
        """A copy with some fields changed (validated)."""
        unknown = set(changes) - set(FIELD_SPECS)
        if unknown:
            name = sorted(unknown)[0]
            raise ConfigError(name, "unknown parameter; known: " + ", ".join(FIELD_SPECS))
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> SpecConfig:
        """Build from a mapping; unknown keys are errors."""
        return cls().replace(**values)


CONFIG_FIELDS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(SpecConfig))
