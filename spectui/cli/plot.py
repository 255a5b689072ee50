"""``spectui plot``: a sweep's six plots, as PNG files or in the terminal."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from spectui.cli.flags import DEFAULT_SWEEP_OUT, file_path
from spectui.errors import UsageError


def add_parser(sub: Any) -> None:
    plot = sub.add_parser("plot", help="the six plots, as PNG files or in the terminal")
    plot.add_argument("file", nargs="?", type=file_path, default=DEFAULT_SWEEP_OUT)
    plot.add_argument(
        "--out", metavar="DIR", type=file_path, help="write 01_...png to 06_...png here"
    )
    plot.add_argument("--terminal", action="store_true", help="draw the plots on stdout")


def command(args: argparse.Namespace) -> int:
    if args.out is None and not args.terminal:
        raise UsageError("give --out DIR (PNG files), --terminal, or both")
    from spectui.plotting import plot_command

    written = plot_command(args.file, args.out, args.terminal)
    for path in written:
        print(f"wrote {path}", file=sys.stderr)
    return 0
