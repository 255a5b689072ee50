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

from engine.config import FIELD_SPECS, TAIL_RULES, ConfigError, parse_value
from spectui.errors import UsageError

DEFAULT_SWEEP_OUT = Path("results/sweep_summary.csv")
ENGINES = ("fast", "reference")
ENGINE_HELP = (
    "simulator: fast (vectorised, default) or reference (one draft at a time, slow). "
    "They use the seed's random stream differently, so for the same seed they give "
    "different Monte Carlo numbers, equal in distribution; exact values are the same"
)
MAX_WORKERS = 64


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def _flag(field: str) -> str:
    return "--" + field.replace("_", "-")


def _typed_arg(field: str):
    """An argparse type that parses and range-checks one configuration field."""

    def parse(text: str) -> object:
        try:
            return parse_value(field, text)
        except ConfigError as err:
            raise argparse.ArgumentTypeError(str(err).split(": ", 1)[1]) from None

    parse.__name__ = field
    return parse


# The original simulator's flags and defaults (its README's CLI reference).
RUN_FLAGS: tuple[tuple[str, str, str], ...] = (
    ("k", "N", "speculation length (default: 5)"),
    ("acceptance_rate", "F", "draft acceptance probability, fixed model (default: 0.8)"),
    ("draft_cost_us", "F", "cost per draft forward pass, us (default: 20)"),
    ("verify_cost_us", "F", "cost per verify forward pass, us (default: 200)"),
    ("decay_base", "F", "position_decay base rate (default: 0.9)"),
    ("decay_factor", "F", "position_decay factor (default: 0.95)"),
    ("entropy_high", "F", "entropy_aware high accuracy (default: 0.95)"),
    ("entropy_low", "F", "entropy_aware low accuracy (default: 0.5)"),
    ("entropy_frac", "F", "fraction of high-entropy tokens (default: 0.3)"),
    ("n_sequences", "N", "sequences to simulate (default: 500)"),
    ("tokens_per_seq", "N", "output tokens per sequence (default: 128)"),
    ("seed", "N", "random seed (default: 42)"),
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
    run.add_argument("--draft-model", choices=FIELD_SPECS["draft_model"].choices)
    for field, metavar, text in RUN_FLAGS:
        run.add_argument(
            _flag(field), dest=field, metavar=metavar, type=_typed_arg(field), help=text
        )
    run.add_argument("--tail", choices=TAIL_RULES, help="last-cycle rule (default: full)")
    run.add_argument("--preset", metavar="NAME|PATH", help="start from a preset; flags override it")
    run.add_argument(
        "--summary-out", metavar="FILE", type=_file_path, help="append a summary CSV row"
    )
    run.add_argument(
        "--cycles-out", metavar="FILE", type=_file_path, help="write per-cycle records (CSV)"
    )
    run.add_argument("--json", action="store_true", help="print one JSON object, nothing else")
    run.add_argument("--engine", choices=ENGINES, default="fast", help=ENGINE_HELP)

    sweep = sub.add_parser("sweep", help="run a preset's grid of configurations to a CSV")
    sweep.add_argument("--preset", metavar="NAME|PATH", default="seed-576")
    sweep.add_argument("--out", metavar="FILE", type=_file_path, default=DEFAULT_SWEEP_OUT)
    sweep.add_argument(
        "--workers", metavar="N", type=_bounded_int("--workers", MAX_WORKERS), default=1
    )
    sweep.add_argument("--engine", choices=ENGINES, default="fast", help=ENGINE_HELP)
    sweep.add_argument("--exact-only", action="store_true", help="exact values only, no sampling")

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

    sub.add_parser("presets", help="list shipped and user presets")

    serve = sub.add_parser("serve", help="serve the app in a web browser (textual-serve)")
    serve.add_argument("--host", default="127.0.0.1", help="bind address (default: 127.0.0.1)")
    serve.add_argument("--port", type=_bounded_int("--port", 65535), default=8000)
    serve.add_argument("--preset", metavar="NAME|PATH")
    return parser


def _bounded_int(flag: str, high: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = 0
        if not 1 <= value <= high:
            raise argparse.ArgumentTypeError(
                f"{text!r} is not allowed; expected an integer in [1, {high}]"
            )
        return value

    parse.__name__ = flag
    return parse


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
