"""``spectui analyze``: a sweep's optimal K, break-even, losers and Pareto front."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from spectui.cli.flags import DEFAULT_SWEEP_OUT, file_path


def add_parser(sub: Any) -> None:
    analyze = sub.add_parser("analyze", help="optimal K, break-even, losers, Pareto front")
    analyze.add_argument("file", nargs="?", type=file_path, default=DEFAULT_SWEEP_OUT)
    analyze.add_argument(
        "--markdown", metavar="FILE", type=file_path, help="write a findings report"
    )


def command(args: argparse.Namespace) -> int:
    from engine.analysis.analysis import read_sweep_csv
    from engine.analysis.report import findings_markdown
    from spectui.render import analysis_renderables, console

    frame = read_sweep_csv(args.file)
    out = console()
    for renderable in analysis_renderables(frame):
        out.print(renderable)
    if args.markdown is not None:
        from engine.core.files import atomic_write_text

        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(args.markdown, findings_markdown(frame, source=str(args.file)))
        print(f"report written to {args.markdown}", file=sys.stderr)
    return 0
