"""Registered parts: one registry per kind of part, in the spirit of Gymnasium's
``register``/``make`` (docs/scenarios.md, "Adding a part").

A scenario chooses one part of each kind by name: an acceptance model (``draft_model``), a
cost model (``cost.model``), a K policy (``policy.name``), a draft shape (``shape.name``)
and a proposer (``proposer.name``: where the drafts come from, a draft model or a
model-free look-up). A part is a class in its own file that declares

- ``name``: what a scenario, a preset, a flag and a CSV cell call it;
- ``description``: one line for tables, help and toasts;
- ``fields``: the fields it reads (:func:`engine.core.fields.field`: key, kind, range,
  unit, help, form label); two parts may declare the same field (the same
  :class:`~engine.core.fields.FieldSpec`), which both then read;
- what it supports (each kind's base class names these: exact values, the stepwise engine,
  confidences, a context-dependent cost, ...);
- the few methods the engines call (each kind's base class documents them).

It registers with its kind's registry, ``@ACCEPTANCE.register`` above the class. Everything
that lists parts (the CLI's choices and flags, the form, preset validation, CSV columns,
formatting, the arena's roster, calibration's candidates) reads the registries, and the
table of fields (:data:`engine.core.fields.FIELD_SPECS`) follows each registration. The
built-in parts register when ``engine`` is imported (``engine/__init__.py``); a part
defined anywhere else registers the same way, and :meth:`Registry.unregister` takes it back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, ClassVar, Generic, TypeVar

from engine.core.fields import FieldSpec

_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_")


class Part:
    """Base class of every registered part (see the module docstring). Each kind's base
    class subclasses it with the methods and flags of that kind."""

    kind: ClassVar[str] = ""  # set by each kind's base class
    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    brief: ClassVar[str] = ""  # a few words beside its name in the choosing field's help
    fields: ClassVar[tuple[FieldSpec, ...]] = ()

    def check(self, config: Any) -> None:
        """Refuse (:class:`engine.core.fields.ConfigError`, naming the field) a scenario this
        part cannot run with the other parts it chose; nothing by default."""

    def label(self, config: Any) -> str:
        """The part with its settings in a few words, for titles and tables."""
        return self.name


P = TypeVar("P", bound=Part)

# Called after every registration or removal (engine.core.config rebuilds its table).
_listeners: list[Callable[[], None]] = []


class Registry(Mapping[str, P], Generic[P]):
    """The parts of one kind by name, in registration order (the order of every list a
    user sees: CLI choices, the form, tables)."""

    def __init__(self, kind: str, selector: str, noun: str, title: str) -> None:
        self.kind = kind
        self.selector = selector  # the key of the field that chooses the part
        self.noun = noun  # "draft model", "cost model": how errors name the kind
        self.title = title  # how --help titles the group of its flags
        self._parts: dict[str, P] = {}

    def register(self, cls: type[P]) -> type[P]:
        """Register the part class ``cls`` (a decorator: returns it unchanged). Refuses a
        name already taken, a name that is not lower-case letters, digits and underscores,
        a class of another kind and a field that clashes with another declaration."""
        name = cls.name
        if not name or set(name) - _NAME_CHARS or len(name) > 32:
            raise ValueError(f"a {self.noun} needs a name of a-z, 0-9 and _, got {name!r}")
        if cls.kind != self.kind:
            raise TypeError(f"{cls.__name__} is a {cls.kind or 'bare'} part, not a {self.kind}")
        if name in self._parts:
            raise ValueError(f"{self.noun} {name!r} is registered already")
        if not cls.description:
            raise ValueError(f"{self.noun} {name!r} needs a one-line description")
        self._parts[name] = cls()
        try:
            _changed()
        except Exception:
            del self._parts[name]
            _changed()
            raise
        return cls

    def unregister(self, name: str) -> None:
        """Take the part ``name`` back (a plug-in's or a test's own)."""
        del self._parts[name]
        _changed()

    def __getitem__(self, name: str) -> P:
        try:
            return self._parts[name]
        except KeyError:
            raise KeyError(f"unknown {self.noun} {name!r}; known: {', '.join(self)}") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._parts)

    def __len__(self) -> int:
        return len(self._parts)

    def names(self) -> tuple[str, ...]:
        return tuple(self._parts)

    def of(self, config: Any) -> P:
        """The part ``config`` chooses."""
        name = config.get(self.selector)
        part = self._parts.get(name)  # asked per configuration of a sweep: no exception path
        return self[name] if part is None else part

    def where(self, test: Callable[[P], bool]) -> tuple[str, ...]:
        """The names of the parts for which ``test(part)`` holds, in registration order."""
        return tuple(name for name, part in self._parts.items() if test(part))


_generation = 0


def generation() -> int:
    """How many times the registries have changed (a cache of anything read from them keys
    on it)."""
    return _generation


def _changed() -> None:
    global _generation
    _generation += 1
    for listener in _listeners:
        listener()


def on_change(listener: Callable[[], None]) -> None:
    """Call ``listener()`` after every registration and removal."""
    _listeners.append(listener)


# The registries, one per kind (their base classes: engine.acceptance.base.AcceptanceModel,
# engine.cost.part.CostPart, engine.policies.base.PolicyPart, engine.shapes.base.ShapePart,
# engine.proposers.base.ProposerPart).
ACCEPTANCE: Registry[Any] = Registry(
    "acceptance", "draft_model", "draft model", "acceptance (draft model)"
)
COST: Registry[Any] = Registry("cost", "cost.model", "cost model", "cost model")
POLICY: Registry[Any] = Registry("policy", "policy.name", "policy", "K policy")
SHAPE: Registry[Any] = Registry("shape", "shape.name", "shape", "draft shape")
PROPOSER: Registry[Any] = Registry("proposer", "proposer.name", "proposer", "proposer")
REGISTRIES: dict[str, Registry[Any]] = {
    r.kind: r for r in (ACCEPTANCE, COST, POLICY, SHAPE, PROPOSER)
}


def chosen(config: Any) -> Iterator[Part]:
    """The parts ``config`` chooses, one of each kind, in the registries' order."""
    for registry in REGISTRIES.values():
        yield registry.of(config)


__all__ = [
    "ACCEPTANCE",
    "COST",
    "POLICY",
    "PROPOSER",
    "REGISTRIES",
    "SHAPE",
    "Part",
    "Registry",
    "chosen",
    "generation",
    "on_change",
]
