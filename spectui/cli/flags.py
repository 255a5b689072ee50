"""What the subcommands share: a flag per scenario field, the scenario those flags give, and
the argument types of paths."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from engine.core.config import FIELD_SPECS, ConfigError, SpecConfig, parse_value

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
    from engine.core.config import DEFAULTS

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
