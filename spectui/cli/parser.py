"""The ``spectui`` parser: the app's ``--preset``, then each subcommand's flags, as its module
(spectui.cli.<name>) adds them."""

from __future__ import annotations

import argparse
from importlib import import_module
from typing import NoReturn

# In the order of ``spectui --help``; each is a module here with add_parser(sub) and
# command(args) -> exit status.
COMMANDS = (
    "run",
    "sweep",
    "analyze",
    "plot",
    "regime",
    "arena",
    "load",
    "calibrate",
    "tree",
    "lab",
    "validate",
    "acceptance",
    "presets",
    "serve",
)


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> Parser:
    parser = Parser(
        prog="spectui",
        description="Explore speculative decoding: exact and Monte Carlo simulation, "
        "sweeps, optimal K. Without a subcommand, opens the terminal app.",
    )
    parser.add_argument("--preset", metavar="NAME|PATH", help="preset to open the app on")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for name in COMMANDS:
        import_module(f"spectui.cli.{name}").add_parser(sub)
    return parser
