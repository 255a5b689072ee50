"""What the subcommands share: a flag per scenario field, the scenario those flags give, and
the argument types of paths."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from pathlib import Path
from typing import Any

from engine.core.config import DEFAULTS, FIELD_SPECS, ConfigError, SpecConfig, parse_value
from spectui.errors import UsageError

DEFAULT_SWEEP_OUT = Path("results/sweep_summary.csv")
ENGINES = ("fast", "reference")
ENGINE_HELP = (
    "simulator: fast (vectorised, default) or reference (one draft at a time, slow). "
    "They use the seed's random stream differently, so for the same seed they give "
    "different Monte Carlo numbers, equal in distribution; exact values are the same"
)


def typed_arg(field: str):
    """An argparse type that parses and range-checks one configuration field."""

    def parse(text: str) -> object:
        try:
            return parse_value(field, text)
        except ConfigError as err:
            raise argparse.ArgumentTypeError(str(err).split(": ", 1)[1]) from None

    parse.__name__ = field
    return parse


_METAVARS = {
    "int": "N",
    "seed": "N",
    "prob": "F",
    "number": "F",
    "spec": "ID",
    "path": "FILE",
    "probs": "P1,P2,...",
    "schedule": "B:K,...",
    "tree": "SHAPE",
}


def _default_text(field: str) -> str:
    value = DEFAULTS[field]
    if isinstance(value, float):
        return f"{value:g}"
    return str(value) if value != "" else "none"


def add_scenario_flags(parser: argparse.ArgumentParser, skip: tuple[str, ...] = ()) -> None:
    """One flag per field of the scenario table (engine.core.config.FIELD_SPECS): the original's
    14 flags under their names, newer fields by their key's last part (``--batch-size``);
    not those in ``skip`` (a subcommand that takes a list of them)."""
    from engine.core.parts import REGISTRIES

    # Flags grouped by part in --help: the scenario's own, then each kind's.
    groups = {"": parser.add_argument_group("scenario")}
    for registry in REGISTRIES.values():
        groups[registry.selector] = parser.add_argument_group(registry.title)
    # Each part's choosing flag first in its group (--cost before the cost fields); the
    # original's --draft-model stays among the scenario's flags.
    for field, spec in sorted(FIELD_SPECS.items(), key=lambda item: item[0] not in groups):
        if spec.kind == "choice" and len(spec.choices) < 2:
            continue  # a part with one choice so far: nothing to choose
        if field in skip:
            continue
        group = groups.get(spec.part[0] if spec.part else "", groups[""])
        if field in groups and spec.original is None:
            group = groups[field]
        text = f"{spec.help} (default: {_default_text(field)})"
        if spec.unit:
            text = text.replace(" (default", f", {spec.unit} (default")
        if spec.kind == "choice":
            group.add_argument(spec.cli_flag, dest=field, choices=spec.choices, help=text)
        else:
            group.add_argument(
                spec.cli_flag,
                dest=field,
                metavar=_METAVARS[spec.kind],
                type=typed_arg(field),
                help=text,
            )


def given_fields(args: argparse.Namespace) -> dict[str, Any]:
    """The scenario fields whose flags were given, by field key."""
    return {f: getattr(args, f) for f in FIELD_SPECS if getattr(args, f, None) is not None}


def base_config(args: argparse.Namespace) -> SpecConfig:
    """The ``--preset``'s configuration, or the defaults."""
    from engine.presets import load_preset

    return load_preset(args.preset).config if args.preset else SpecConfig()


def config_from_args(args: argparse.Namespace) -> SpecConfig:
    """The preset's configuration (or the defaults), overridden by the flags given."""
    return base_config(args).replace(**given_fields(args))


def folder(text: str) -> Path:
    path = Path(text).expanduser()
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is not a folder")
    return path


def file_path(text: str) -> Path:
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty path is not a file name")
    return Path(text)


# --- Acceptance from the catalog (--method, --dataset) ---------------------------------

# The one scenario field the catalog lookup reads rather than the acceptance model: its
# flag (--temperature) chooses among the catalog's rows and is no explicit acceptance.
LOOKUP_TEMPERATURE = "acceptance.temperature"
ASSUMED_HINT = "give --method or --acceptance-rate"


def add_catalog_flags(parser: argparse.ArgumentParser) -> None:
    """The flags of "acceptance from the catalog": ``--method`` and ``--dataset``."""
    from engine.acceptance.catalog import METHODS
    from engine.acceptance.nearest import ALIASES

    group = parser.add_argument_group(
        "acceptance from the catalog",
        "Without an acceptance flag, --method takes the acceptance from the nearest rows of "
        "the acceptance catalog (same target and head, same target, same family, same "
        "method on another target) for --target, --draft, --dataset and --temperature, "
        "fitted; the output says which rows, their sources and how near. An acceptance "
        "flag (--draft-model, --acceptance-rate, ...) wins.",
    )
    group.add_argument(
        "--method",
        metavar="NAME",
        help=f"a drafting method of the catalog: {', '.join(METHODS)} (any case; also "
        f"{', '.join(ALIASES)})",
    )
    group.add_argument(
        "--dataset",
        metavar="NAME",
        help="prefer the method's catalog rows of this dataset (MT-Bench, HumanEval, ...)",
    )


def acceptance_fields() -> frozenset[str]:
    """The fields that set a scenario's acceptance: the acceptance registry's selector and
    every field of its parts (not the temperature the catalog lookup reads)."""
    from engine.core.parts import ACCEPTANCE

    keys = {ACCEPTANCE.selector}
    for part in ACCEPTANCE.values():
        keys.update(spec.key for spec in part.fields)
    return frozenset(keys - {LOOKUP_TEMPERATURE})


@dataclass(frozen=True)
class AcceptanceChoice:
    """Where a command's acceptance comes from: ``changes`` (the fields the catalog's fit
    sets, or none), ``text`` (the line to print before the results, without its
    "acceptance: " prefix; None: the flags or the preset gave it, nothing to add),
    ``assumed`` (nothing gave it: the default, or a method the catalog has nothing for),
    and the catalog rows used and their level."""

    changes: dict[str, Any] = dataclass_field(default_factory=dict)
    text: str | None = None
    assumed: bool = False
    rows: tuple[str, ...] = ()
    level: str | None = None

    @property
    def default(self) -> bool:
        """Nothing was asked: the scenario's default acceptance, assumed."""
        return self.assumed and self.level is None

    def line(self) -> str | None:
        return None if self.text is None else f"acceptance: {self.text}"

    def json(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "assumed": self.assumed,
            "rows": list(self.rows),
            "level": self.level,
        }


def choose_acceptance(
    args: argparse.Namespace, base: SpecConfig, *, take_proposer: bool = True
) -> AcceptanceChoice:
    """The acceptance of a command's scenario (``base``, the preset's or the defaults, with
    the flags given): an explicit acceptance flag wins; else ``--method``'s nearest
    catalog rows, fitted; else the preset's; else the default, said to be assumed.
    UsageError for a method or dataset the catalog does not know, one line naming the
    known ones. ``--method`` of a method a registered proposer declares (n-gram: ngram)
    also chooses that proposer, unless ``--proposer`` was given or ``take_proposer`` is
    False (a command whose scenario no model-free proposer can run: a tree)."""
    from engine.analysis.formatting import acceptance_text

    given = given_fields(args)
    fields = acceptance_fields()
    explicit = [key for key in FIELD_SPECS if key in given and key in fields]
    # The acceptance alone (a command may still change the cost model: regime, tree).
    scenario = base.replace(**{key: given[key] for key in explicit})
    method, dataset = getattr(args, "method", None), getattr(args, "dataset", None)
    preset = bool(getattr(args, "preset", None))
    if method is None:
        if dataset is not None:
            raise UsageError("--dataset: chooses among a method's catalog rows; give --method")
        if explicit or preset:
            return AcceptanceChoice()
        return AcceptanceChoice(
            text=f"{acceptance_text(scenario)}, the default (assumed; {ASSUMED_HINT})",
            assumed=True,
        )
    from engine.acceptance.catalog import load_catalog
    from engine.acceptance.nearest import (
        CatalogLookupError,
        catalog_acceptance,
        resolve_method,
    )

    catalog = load_catalog()
    try:
        name = resolve_method(method)
        drafting = _method_proposer(name, given, base, take_proposer)
        if explicit:
            from engine.acceptance.nearest import resolve_dataset

            if dataset is not None:
                resolve_dataset(catalog, dataset)
            flags = ", ".join(FIELD_SPECS[key].cli_flag for key in explicit)
            return AcceptanceChoice(
                changes=dict(drafting.changes),
                text=f"{acceptance_text(scenario)}, as given ({flags}); the catalog was not "
                f"used (--method {name}){drafting.text}",
            )
        target = str(given.get("cost.target", base.get("cost.target")))
        draft = given.get("cost.draft", base.get("cost.draft"))
        draft_given = "cost.draft" in given or draft != DEFAULTS["cost.draft"]
        found = catalog_acceptance(
            catalog,
            name,
            scenario,
            target=target,
            draft=str(draft) if draft_given else None,
            dataset=dataset,
            temperature=given.get(LOOKUP_TEMPERATURE),
            hit=drafting.hit,
        )
    except CatalogLookupError as err:
        raise UsageError(str(err)) from None
    default_target = "cost.target" not in given and target == DEFAULTS["cost.target"]
    target_text = f"target {target}" + (" (the default; give --target)" if default_target else "")
    ids = tuple(row.id for row in found.nearest.rows)
    level = found.nearest.level
    if not found.found:
        fallback = "the preset's" if preset else "the default"
        return AcceptanceChoice(
            changes=dict(drafting.changes),
            text=f"{found.text}; {target_text}; assumed {acceptance_text(scenario)}, "
            f"{fallback} ({ASSUMED_HINT}){drafting.text}",
            assumed=True,
            rows=ids,
            level=level,
        )
    text = f"{found.text}; {target_text}"
    if found.assumed:
        text += f"; assumed: {found.assumed}"
    text += drafting.text
    changes = {**drafting.changes, **found.values}
    return AcceptanceChoice(changes=changes, text=text, rows=ids, level=level)


@dataclass(frozen=True)
class _Drafting:
    """What ``--method`` says of the proposer: ``changes`` (``proposer.name`` when the
    method's proposer is taken), ``text`` (a clause to end the acceptance line, "" when
    nothing to say) and ``hit`` (the hit rate, when the scenario's proposer is model-free:
    the acceptance is then the acceptance given a hit)."""

    changes: dict[str, Any]
    text: str
    hit: Any


def _method_proposer(
    method: str, given: dict[str, Any], base: SpecConfig, take: bool = True
) -> _Drafting:
    """The proposer of ``--method``'s catalog method (the registered proposer that declares
    it, engine.proposers ``catalog_method``), taken when ``--proposer`` was not given; an
    explicit ``--proposer`` wins and the line says whose rows they are."""
    from engine.acceptance.nearest import HitRate, method_proposer
    from engine.core.parts import PROPOSER
    from engine.proposers.base import HIT_RATE_DEFAULT, HIT_RATE_SOURCE

    selector = PROPOSER.selector
    own = method_proposer(method)
    changes: dict[str, Any] = {}
    text = ""
    if selector in given or not take:
        current = str(given.get(selector, base.get(selector)))
        why = (
            f"as given ({FIELD_SPECS[selector].cli_flag})"
            if selector in given
            else "this command does not take the method's proposer"
        )
        if own is not None and own != current:
            kind = "a model-free proposer's" if PROPOSER[own].model_free else "a proposer's"
            as_published = "" if PROPOSER[current].model_free else ", fitted as published"
            text = (
                f"; the rows are {method}'s, {kind} (proposer {own}){as_published}; "
                f"proposer {current} kept, {why}"
            )
    else:
        current = str(base.get(selector))
        if own is not None and own != current:
            changes[selector] = own
            current = own
            text = f"; proposer {own} (--method {method}; give --proposer to choose another)"
    hit = None
    if PROPOSER[current].model_free:
        key = "proposer.hit_rate"
        if key in given:
            hit = HitRate(float(given[key]), f"as given ({FIELD_SPECS[key].cli_flag})", True)
        else:
            value = float(base.get(key))
            source = (
                f"the proposer's default ({HIT_RATE_SOURCE})"
                if value == HIT_RATE_DEFAULT
                else "the preset's"
            )
            hit = HitRate(value, source)
    return _Drafting(changes, text, hit)
