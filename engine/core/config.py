"""One scenario: a workload, a seed and named parts, validated on construction.

A scenario is the original simulator's configuration generalised (docs/model.md, "Beyond
the original"): an acceptance model (``draft_model``), a cost model (``cost.model``), a K
policy (``policy.name``), a draft shape (``shape.name``) and a proposer
(``proposer.name``), each a registered part
(:mod:`engine.core.parts`) chosen by name and read with its own fields, plus the workload
and the seed.

The table of fields, :data:`FIELD_SPECS`, is this module's own fields (:data:`CORE_FIELDS`)
with, after each field that chooses a part, the fields of the parts registered for it;
it is rebuilt whenever a part registers. The CLI flags, the app's form, preset keys, CSV
columns and validation are all generated from it. Keys are the original's flat names for
its 14 fields (``k``, ``acceptance_rate``, ... ``tail``), always first and in its order, so
its flags, presets and CSV columns keep working; newer fields have dotted keys
(``workload.batch_size``, ``cost.verify_token_us``). This module imports neither numpy nor
pandas: the app's form starts without them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import cache
from typing import Any

from engine.core.fields import (
    BATCH_MAX,
    BETA_MAX,
    CORE_FIELDS,
    COST_MAX_US,
    EFFICIENCY_MIN,
    FIELD_SPECS,
    K_MAX,
    K_MAX_POLICY,
    KIND_TEXT_MAX,
    PROMPT_MAX,
    SEED_MAX,
    SEQUENCES_MAX,
    SHOWN_MAX,
    T0_MAX_US,
    TAIL_RULES,
    TEXT_MAX,
    TOKENS_MAX,
    TREE_TEXT_MAX,
    VERIFY_MIN_US,
    WINDOW_MAX,
    WORKERS_MAX,
    ConfigError,
    FieldSpec,
    _check_part_value,
    ascii_int,
    ascii_number,
    check_value,
    field,
    known_spec_ids,
    parse_value,
    rates_of,
    schedule_k,
)
from engine.core.parts import ACCEPTANCE, COST, POLICY, PROPOSER, REGISTRIES, SHAPE, on_change

__all__ = [
    "BATCH_MAX",
    "BETA_MAX",
    "CONFIG_FIELDS",
    "CORE_FIELDS",
    "COST_MAX_US",
    "DEFAULTS",
    "EFFICIENCY_MIN",
    "FIELD_SPECS",
    "KIND_TEXT_MAX",
    "K_MAX",
    "K_MAX_POLICY",
    "PARTS",
    "PROMPT_MAX",
    "SCENARIO_FIELDS",
    "SEED_MAX",
    "SEQUENCES_MAX",
    "SHOWN_MAX",
    "T0_MAX_US",
    "TAIL_RULES",
    "TEXT_MAX",
    "TOKENS_MAX",
    "TREE_TEXT_MAX",
    "VERIFY_MIN_US",
    "WINDOW_MAX",
    "WORKERS_MAX",
    "ConfigError",
    "FieldSpec",
    "LiveKeys",
    "SpecConfig",
    "ascii_int",
    "ascii_number",
    "check_value",
    "field",
    "known_spec_ids",
    "needs_stepwise",
    "parse_value",
    "part_fields",
    "policy_k_max",
    "rates_of",
    "reads",
    "schedule_k",
    "seed_key_values",
    "stream_width",
]

_CORE_KEYS = frozenset(spec.key for spec in CORE_FIELDS)


class LiveKeys(Sequence[str]):
    """A tuple of keys that follows the table (the parts registered so far): ``keys()``
    is asked each time."""

    def __init__(self, keys: Callable[[], tuple[str, ...]]) -> None:
        self._keys = keys

    def __getitem__(self, index: Any) -> Any:
        return self._keys()[index]

    def __len__(self) -> int:
        return len(self._keys())

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys())

    def __contains__(self, key: object) -> bool:
        return key in self._keys()

    def __repr__(self) -> str:
        return repr(self._keys())


# Every field's default by key (kept up to date with the table).
DEFAULTS: dict[str, Any] = {}
# The original simulator's fields: always written, in this order.
CONFIG_FIELDS: Sequence[str] = LiveKeys(lambda: _ORIGINAL_KEYS)
# Newer fields (dotted keys): written when set away from their defaults.
SCENARIO_FIELDS: Sequence[str] = LiveKeys(lambda: _NEWER_KEYS)
_ORIGINAL_KEYS: tuple[str, ...] = ()
_NEWER_KEYS: tuple[str, ...] = ()
_BY_ATTR: dict[str, FieldSpec] = {}
_ATTRS: tuple[str, ...] = ()
_ORIGINAL: tuple[tuple[str, str], ...] = ()
_NEWER: tuple[tuple[str, str, Any], ...] = ()
_PART_SPECS: tuple[FieldSpec, ...] = ()
_FIELD_ORDER: dict[str, int] = {}
_table_number = 0  # how many times the table was built
# Built with the table (read per scenario of a sweep): a key or attribute name to its attribute;
# the seed-key fields by key, with whether a tree's own acceptance drops them.
_GET_ATTR: dict[str, str] = {}
_SEED_FIELDS: tuple[tuple[str, str, bool], ...] = ()


class _PartsView(Mapping[str, tuple[str, tuple[str, ...]]]):
    """Each kind of part: the key of the field that chooses it, and the names registered."""

    def __getitem__(self, kind: str) -> tuple[str, tuple[str, ...]]:
        registry = REGISTRIES[kind]
        return registry.selector, registry.names()

    def __iter__(self) -> Iterator[str]:
        return iter(REGISTRIES)

    def __len__(self) -> int:
        return len(REGISTRIES)


PARTS: Mapping[str, tuple[str, tuple[str, ...]]] = _PartsView()


def _assemble() -> list[FieldSpec]:
    """The table in order: the core fields, each selector followed by its parts' fields."""
    selectors = {registry.selector: registry for registry in REGISTRIES.values()}
    order: list[FieldSpec] = []
    readers: dict[str, list[str]] = {}
    declared: dict[str, tuple[FieldSpec, str]] = {}
    for core in CORE_FIELDS:
        registry = selectors.get(core.key)
        if registry is None:
            order.append(core)
            continue
        names = registry.names()
        briefs = [f"{n} ({p.brief})" if p.brief else n for n, p in registry.items()]
        shown = (
            f"{core.help}: {', '.join(briefs)}"
            if any(p.brief for p in registry.values())
            else core.help
        )
        order.append(dataclasses.replace(core, choices=names, help=shown))
        for name, part in registry.items():
            for spec in part.fields:
                if spec.key in _CORE_KEYS:
                    raise ValueError(f"{registry.noun} {name}: {spec.key} is a core field")
                if spec.key in declared:
                    first, selector = declared[spec.key]
                    if first != spec or selector != registry.selector:
                        raise ValueError(
                            f"{registry.noun} {name}: field {spec.key} differs from the one "
                            f"{', '.join(readers[spec.key])} declared"
                        )
                    readers[spec.key].append(name)
                    continue
                declared[spec.key] = (spec, registry.selector)
                readers[spec.key] = [name]
                order.append(spec)
    table = [
        dataclasses.replace(spec, part=(declared[spec.key][1], tuple(readers[spec.key])))
        if spec.key in declared
        else spec
        for spec in order
    ]
    attrs = [spec.attr for spec in table]
    if len(set(attrs)) != len(attrs):
        clash = sorted({a for a in attrs if attrs.count(a) > 1})
        raise ValueError(f"two fields have the attribute {clash[0]!r}")
    originals = sorted((s for s in table if s.original is not None), key=lambda s: s.original or 0)
    columns = [s.original for s in originals]
    if len(set(columns)) != len(columns):
        raise ValueError("two fields claim the same column of the original's record")
    return originals + [s for s in table if s.original is None]


def _rebuild() -> None:
    """Rebuild the table and everything derived from it (after a registration)."""
    global _ORIGINAL_KEYS, _NEWER_KEYS, _BY_ATTR, _ATTRS, _ORIGINAL, _NEWER, _PART_SPECS
    global _FIELD_ORDER, _GET_ATTR, _SEED_FIELDS, _table_number
    table = _assemble()
    _table_number += 1
    FIELD_SPECS.clear()
    FIELD_SPECS.update((spec.key, spec) for spec in table)
    DEFAULTS.clear()
    DEFAULTS.update((spec.key, spec.default) for spec in table)
    _ORIGINAL_KEYS = tuple(s.key for s in table if s.original is not None)
    _NEWER_KEYS = tuple(s.key for s in table if s.original is None)
    _BY_ATTR = {spec.attr: spec for spec in table}
    _ATTRS = tuple(spec.attr for spec in table)
    _ORIGINAL = tuple((k, FIELD_SPECS[k].attr) for k in _ORIGINAL_KEYS)
    _NEWER = tuple((k, FIELD_SPECS[k].attr, DEFAULTS[k]) for k in _NEWER_KEYS)
    _PART_SPECS = tuple(spec for spec in table if spec.kind in ("spec", "path"))
    _FIELD_ORDER = {attr: number for number, attr in enumerate(_ATTRS)}
    _GET_ATTR = {
        **{spec.attr: spec.attr for spec in table},
        **{k: s.attr for k, s in FIELD_SPECS.items()},
    }
    selector = ACCEPTANCE.selector
    _SEED_FIELDS = tuple(
        (
            key,
            spec.attr,
            key in (selector, "k") or (spec.part or ("",))[0] == selector,
        )
        for key, spec in sorted(FIELD_SPECS.items())
        if spec.seed_key
    )
    part_fields.cache_clear()


_MISSING = object()
# The key under which a scenario keeps its hash: no field's attribute can be it.
_HASH = "#hash"


class SpecConfig:
    """One scenario. Costs in microseconds, counts in tokens/sequences.

    Fields are attributes (``config.k``, ``config.cost_model``), one per entry of
    :data:`FIELD_SPECS`, given by attribute name to the constructor. Every field is
    validated on construction; an invalid value raises :class:`ConfigError` whose message
    names the field, the value and the allowed range. A scenario is immutable and hashable;
    it compares equal to another with the same values.
    """

    def __init__(self, **values: Any) -> None:
        for name in values:
            if name not in _BY_ATTR:
                raise TypeError(f"SpecConfig() got an unexpected keyword argument {name!r}")
        state = self.__dict__
        for spec in FIELD_SPECS.values():
            value = values.get(spec.attr, _MISSING)
            state[spec.attr] = check_value(spec.key, spec.default if value is _MISSING else value)
        _check_across(self)

    def __getattr__(self, name: str) -> Any:
        # A field of a part registered after this scenario was made: its default.
        spec = _BY_ATTR.get(name)
        if spec is None:
            raise AttributeError(f"'SpecConfig' object has no attribute {name!r}")
        return spec.default

    def __setattr__(self, name: str, value: Any) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")

    def _values(self) -> tuple[Any, ...]:
        state = self.__dict__
        try:
            return tuple(map(state.__getitem__, _ATTRS))
        except KeyError:  # a field of a part registered after this scenario was made
            return tuple(getattr(self, attr) for attr in _ATTRS)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not SpecConfig:
            return NotImplemented
        return self._values() == other._values()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        # Kept (a sweep hashes each scenario many times), for the table it was taken under:
        # a registration changes the values a scenario compares by.
        state = self.__dict__
        kept = state.get(_HASH)
        if kept is None or kept[0] != _table_number:
            kept = state[_HASH] = (_table_number, hash(self._values()))
        return kept[1]

    def __repr__(self) -> str:
        shown = ", ".join(
            f"{attr}={value!r}" for attr, value in zip(_ATTRS, self._values(), strict=True)
        )
        return f"SpecConfig({shown})"

    def __reduce__(self) -> tuple[Any, ...]:  # a worker process rebuilds it without checks
        return (_restored, (dict(zip(_ATTRS, self._values(), strict=True)),))

    @property
    def cost_ratio(self) -> float:
        """draft_cost_us / verify_cost_us (dimensionless; the linear cost model's)."""
        return float(self.draft_cost_us / self.verify_cost_us)

    def get(self, key: str) -> Any:
        """The value of the field ``key`` (its key or its attribute name)."""
        attr = _GET_ATTR.get(key)  # inline: asked for each scenario of a sweep
        return getattr(self, _attr(key) if attr is None else attr)

    def replace(self, **changes: Any) -> SpecConfig:
        """A copy with some fields changed (validated); fields by key or attribute name."""
        values = dict(zip(_ATTRS, self._values(), strict=True))
        values.update({_attr(name): v for name, v in changes.items()})
        return SpecConfig(**values)

    def values(self) -> dict[str, Any]:
        """Every field by key, in table order."""
        return {spec.key: getattr(self, spec.attr) for spec in FIELD_SPECS.values()}

    def to_dict(self) -> dict[str, Any]:
        """The configuration as a record (CSV row, preset, JSON): the original's 14 fields,
        then each newer field whose value differs from its default. A scenario of the
        original writes exactly the original's columns."""
        record = {key: getattr(self, attr) for key, attr in _ORIGINAL}
        for key, attr, default in _NEWER:
            value = getattr(self, attr)
            if value != default:
                record[key] = value
        return record

    def derive(self, changes: Mapping[str, Any], memo: dict[Any, Any]) -> SpecConfig:
        """:meth:`replace` for the many configurations of a grid over one base: equal to
        ``self.replace(**changes)`` (and refused alike), but a (field, value) pair is
        validated once per ``memo`` (a dict the caller keeps for one grid; a field's check
        depends on its value alone) instead of every field of every configuration. The
        checks across fields (a part's spec ids, the parts' own) run for each."""
        values = dict(zip(_ATTRS, self._values(), strict=True))
        # As replace: every name known first, then the values checked in field order.
        attrs = {_attr(name): value for name, value in changes.items()}
        for attr in sorted(attrs, key=_FIELD_ORDER.__getitem__):
            values[attr] = SpecConfig.check_field(attr, attrs[attr], memo)
        config = _restored(values)
        for spec in _PART_SPECS:
            if reads(config, spec.key):
                part = ("part", spec.key, getattr(config, spec.attr))
                if part not in memo:
                    _check_part_value(spec, getattr(config, spec.attr))
                    memo[part] = True
        _check_parts(config)
        return config

    @staticmethod
    def check_field(name: str, value: Any, memo: dict[Any, Any]) -> Any:
        """:func:`check_value` of the field ``name`` (its key or attribute name), remembered
        in ``memo`` (see :meth:`derive`)."""
        key = FIELD_SPECS[name].key if name in FIELD_SPECS else _BY_ATTR[_attr(name)].key
        try:  # the repr tells -0.0 from 0.0 (equal, and equal keys, but not the same)
            slot: tuple[Any, ...] | None = ("value", key, type(value), value, repr(value))
            checked = memo.get(slot, _MISSING)
        except TypeError:  # an unhashable value (a list): checked every time
            slot, checked = None, _MISSING
        if checked is _MISSING:
            checked = check_value(key, value)
            if slot is not None:
                memo[slot] = checked
        return checked

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> SpecConfig:
        """Build from a mapping by key (or attribute name); unknown keys are errors."""
        return cls().replace(**values)


def _restored(values: dict[str, Any]) -> SpecConfig:
    """A scenario from checked values, without checking them again."""
    config = object.__new__(SpecConfig)
    config.__dict__.update(values)
    return config


def _attr(name: str) -> str:
    attr = _GET_ATTR.get(name)
    if attr is None:
        raise ConfigError(name, "unknown parameter; known: " + ", ".join(FIELD_SPECS))
    return attr


def reads(config: SpecConfig, key: str) -> bool:
    """Whether ``config``'s chosen parts read the field ``key`` (else it is inert)."""
    part = FIELD_SPECS[key].part  # config may be a mapping of keys (the app's form)
    return part is None or config.get(part[0]) in part[1]


@cache
def part_fields(selector: str, name: str) -> tuple[str, ...]:
    """Keys of the fields that part ``name`` (chosen by the field ``selector``) reads."""
    return tuple(
        k
        for k, s in FIELD_SPECS.items()
        if s.part is not None and s.part[0] == selector and name in s.part[1]
    )


def seed_key_values(config: SpecConfig) -> dict[str, str]:
    """The fields that key a configuration's random stream, as repr strings.

    Those marked ``seed_key`` that the configuration reads: the acceptance model and its
    parameters, K, the length, the number of sequences and the tail rule. No cost field
    enters (a cycle's price never changes the draws: configurations that differ only in
    cost draw the same numbers, and a sweep draws them once, see
    :func:`engine.simulate.simulator.simulate_shared`), nor any newer field, and a parameter a
    model ignores never splits two configurations' draws. (Up to sampler 1 the two linear
    costs were keyed, as the original keyed them.) A shape that replaces the chain's
    acceptance (a tree's rank probabilities) leaves the acceptance model and K out.
    """
    own = SHAPE.of(config).own_acceptance
    return {
        key: repr(getattr(config, attr))
        for key, attr, acceptance in _SEED_FIELDS
        if reads(config, key) and not (own and acceptance)
    }


# A K policy (or markov acceptance) prices every (r, k) a sequence may meet: at most this
# many cycle prices (T x (K_max + 1), 256 MiB of float64 each for prices and drafts).
POLICY_CELLS_MAX = 1 << 25


def needs_stepwise(config: SpecConfig) -> bool:
    """Whether the configuration's Monte Carlo runs cycle by cycle: its policy chooses each
    cycle's k, or its acceptance ties cycles together (markov)."""
    return bool(POLICY.of(config).stepwise or ACCEPTANCE.of(config).stepwise)


def policy_k_max(config: SpecConfig) -> int:
    """The largest k the configuration's policy can draft: K for fixed, the schedule's k at
    the batch size, ``policy.k_max`` for the adaptive policies."""
    return int(POLICY.of(config).k_bound(config))


def stream_width(config: SpecConfig) -> int:
    """How many draft positions each cycle's draws cover (the K_max of a policy's price and
    acceptance tables): 32, or the policy's own bound if it drafts more. Every contender
    whose policy drafts at most 32 sees the very same draws, the confidence model's
    per-token q's included."""
    return max(K_MAX_POLICY, policy_k_max(config))


def _check_across(config: SpecConfig) -> None:
    for spec in _PART_SPECS:
        if reads(config, spec.key):
            _check_part_value(spec, getattr(config, spec.attr))
    _check_parts(config)


def _check_parts(config: SpecConfig) -> None:
    """Refuse parts that cannot work together, naming the field: each chosen part's own
    checks, then the size of a stepwise run's price tables."""
    for registry in (POLICY, ACCEPTANCE, COST, SHAPE, PROPOSER):
        registry.of(config).check(config)
    if needs_stepwise(config):
        widest = policy_k_max(config)
        cells = config.tokens_per_seq * (stream_width(config) + 1)
        if cells > POLICY_CELLS_MAX:
            raise ConfigError(
                "tokens_per_seq",
                f"{config.tokens_per_seq} tokens with k up to {widest} need "
                f"{cells:,} cycle prices (T x (K_max + 1)); a K policy or markov acceptance "
                f"runs with at most {POLICY_CELLS_MAX:,}",
            )


_rebuild()
on_change(_rebuild)
