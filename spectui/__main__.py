"""The command line: the TUI by default; run / sweep / analyze / plot / presets / serve headless.

Every usage error ends with one line on stderr and exit status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from engine.config import FIELD_SPECS, WORKERS_MAX, ConfigError, parse_value
from spectui.errors import UsageError, bounded_int

DEFAULT_SWEEP_OUT = Path("results/sweep_summary.csv")
ENGINES = ("fast", "reference")
ENGINE_HELP = (
    "simulator: fast (vectorised, default) or reference (one draft at a time, slow). "
    "They use the seed's random stream differently, so for the same seed they give "
    "different Monte Carlo numbers, equal in distribution; exact values are the same"
)


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def _typed_arg(field: str):
    """An argparse type that parses and range-checks one configuration field."""

    def parse(text: str) -> object:
        try:
            return parse_value(field, text)
        except ConfigError as err:
            raise argparse.ArgumentTypeError(str(err).split(": ", 1)[1]) from None

    parse.__name__ = field
    return parse


# Flags for a scenario's fields, grouped by part in --help.
FLAG_GROUPS: tuple[tuple[str, str], ...] = (
    ("", "scenario"),
    ("draft_model", "acceptance (draft model)"),
    ("cost.model", "cost model"),
    ("policy.name", "K policy"),
)
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
    from engine.config import DEFAULTS

    value = DEFAULTS[field]
    if isinstance(value, float):
        return f"{value:g}"
    return str(value) if value != "" else "none"


def add_scenario_flags(parser: argparse.ArgumentParser) -> None:
    """One flag per field of the scenario table (engine.config.FIELD_SPECS): the original's
    14 flags under their names, newer fields by their key's last part (``--batch-size``)."""
    groups = {selector: parser.add_argument_group(title) for selector, title in FLAG_GROUPS}
    from engine.config import PARTS

    selectors = {selector for selector, _ in PARTS.values()}
    # Each part's choosing flag first in its group (--cost before the cost fields).
    for field, spec in sorted(FIELD_SPECS.items(), key=lambda item: item[0] not in selectors):
        if spec.kind == "choice" and len(spec.choices) < 2:
            continue  # a part with one choice so far (policy, shape): nothing to choose
        group = groups.get(spec.part[0] if spec.part else "", groups[""])
        if field in ("cost.model", "policy.name"):
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
                type=_typed_arg(field),
                help=text,
            )


def build_parser() -> Parser:
    parser = Parser(
        prog="spectui",
        description="Explore speculative decoding: exact and Monte Carlo simulation, "
        "sweeps, optimal K. Without a subcommand, opens the terminal app.",
    )
    parser.add_argument("--preset", metavar="NAME|PATH", help="preset to open the app on")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)

    run = sub.add_parser("run", help="simulate one configuration and print its metrics")
    add_scenario_flags(run)
    run.add_argument("--preset", metavar="NAME|PATH", help="start from a preset; flags override it")
    run.add_argument(
        "--summary-out", metavar="FILE", type=_file_path, help="append a summary CSV row"
    )
    run.add_argument(
        "--cycles-out",
        metavar="FILE",
        type=_file_path,
        help="write per-cycle records: CSV, or Parquet if FILE ends in .parquet "
        "(needs pyarrow: pip install 'spectui[parquet]')",
    )
    run.add_argument("--json", action="store_true", help="print one JSON object, nothing else")
    run.add_argument("--engine", choices=ENGINES, default="fast", help=ENGINE_HELP)

    sweep = sub.add_parser("sweep", help="run a preset's grid of configurations to a CSV")
    sweep.add_argument("--preset", metavar="NAME|PATH", default="seed-576")
    sweep.add_argument("--out", metavar="FILE", type=_file_path, default=DEFAULT_SWEEP_OUT)
    sweep.add_argument(
        "--workers", metavar="N", type=bounded_int("--workers", WORKERS_MAX), default=1
    )
    sweep.add_argument("--engine", choices=ENGINES, default="fast", help=ENGINE_HELP)
    sweep.add_argument("--exact-only", action="store_true", help="exact values only, no sampling")
    sweep.add_argument(
        "--scheduler",
        metavar="ADDRESS|local:N",
        help="run on Dask (pip install 'spectui[dask]'): a running scheduler (tcp://HOST:8786) "
        "or a local cluster of N worker processes (local:N); the rows are the same",
    )
    sweep.add_argument(
        "--resume",
        action="store_true",
        help="continue an interrupted sweep: run only the configurations not yet in "
        "FILE.partial (or FILE); the final file equals an uninterrupted run's",
    )

    analyze = sub.add_parser("analyze", help="optimal K, break-even, losers, Pareto front")
    analyze.add_argument("file", nargs="?", type=_file_path, default=DEFAULT_SWEEP_OUT)
    analyze.add_argument(
        "--markdown", metavar="FILE", type=_file_path, help="write a findings report"
    )

    plot = sub.add_parser("plot", help="the six plots, as PNG files or in the terminal")
    plot.add_argument("file", nargs="?", type=_file_path, default=DEFAULT_SWEEP_OUT)
    plot.add_argument(
        "--out", metavar="DIR", type=_file_path, help="write 01_...png to 06_...png here"
    )
    plot.add_argument("--terminal", action="store_true", help="draw the plots on stdout")

    from spectui.regime_command import add_regime_parser

    add_regime_parser(sub, add_scenario_flags)
    from spectui.arena_command import add_arena_parser

    add_arena_parser(sub, add_scenario_flags)
    from spectui.calibrate_command import add_calibrate_parser

    add_calibrate_parser(sub, add_scenario_flags)
    from spectui.tree_command import add_tree_parser

    add_tree_parser(sub, add_scenario_flags)

    sub.add_parser("presets", help="list shipped and user presets")

    serve = sub.add_parser("serve", help="serve the app in a web browser (textual-serve)")
    serve.add_argument(
        "--host",
        default="127.0.0.1",
        help="bind address (default: 127.0.0.1, this machine only); any other needs --allow-remote",
    )
    serve.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow a --host other machines reach (0.0.0.0, '', ::, an interface's address): "
        "anyone with the printed URL, token included, uses the app and this machine's files",
    )
    serve.add_argument("--port", metavar="N", type=bounded_int("--port", 65535), default=8000)
    serve.add_argument("--preset", metavar="NAME|PATH")
    serve.add_argument(
        "--files",
        metavar="DIR",
        action="append",
        type=_folder,
        help="a folder the served app may open files in, besides the working directory and "
        "spectui's own (repeatable); paths typed in the app that lead elsewhere are refused",
    )
    return parser


def _folder(text: str) -> Path:
    path = Path(text).expanduser()
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is not a folder")
    return path


def _file_path(text: str) -> Path:
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty path is not a file name")
    return Path(text)


def main(argv: Sequence[str] | None = None) -> int:
    from spectui import ascii

    ascii.install()  # an ASCII-only stdout gets "+-" for "±", never a UnicodeEncodeError
    args = build_parser().parse_args(argv)
    try:
        if args.command is None:
            return _open_app(args.preset)
        from spectui import commands

        return int(getattr(commands, f"cmd_{args.command}")(args))
    except (UsageError, ConfigError, ValueError) as err:
        if not _is_user_error(err):
            raise
        return _fail(args.command, str(err))
    except BrokenPipeError:
        # The reader (e.g. `| head`) went away: stop quietly, as other filters do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except OSError as err:
        where = f"{err.filename}: " if err.filename else ""
        return _fail(args.command, f"{where}{err.strerror or err}")
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def _is_user_error(err: Exception) -> bool:
    """Errors about the user's input, as opposed to bugs (which keep their traceback)."""
    if isinstance(err, UsageError | ConfigError):
        return True
    # Imported only if already loaded: the TUI path should not pay for pandas here.
    for module, name in (("engine.presets", "PresetError"), ("engine.analysis", "SweepDataError")):
        cls = getattr(sys.modules.get(module), name, None)
        if cls is not None and isinstance(err, cls):
            return True
    return False


def _fail(command: str | None, message: str) -> int:
    prog = f"spectui {command}" if command else "spectui"
    print(f"{prog}: error: {message}", file=sys.stderr)
    return 2


def _open_app(preset: str | None) -> int:
    # Served in a browser (textual-serve sets Textual's web driver): use ours, which ends
    # the process whenever the connection ends (see spectui.served). Textual reads this
    # variable when it is first imported, just below.
    if os.environ.get("TEXTUAL_DRIVER") == "textual.drivers.web_driver:WebDriver":
        os.environ["TEXTUAL_DRIVER"] = "spectui.served:ServedDriver"
    else:
        from spectui import ascii

        # Textual draws on stderr: one ASCII character per cell keeps its layout.
        ascii.install(sys.__stderr__, cells=True)
    from spectui.app import create_app

    create_app(preset).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
