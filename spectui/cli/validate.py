"""``spectui validate``: spectui's predictions against published measurements.

Per entry of the shipped table (engine/validate/data/measurements.toml): the measured value,
the prediction from specs and the calibrated one, their relative errors and verdicts; then
the median absolute error and the share within 10 % per method and category. ``--markdown``
writes the report docs/validation.md is generated from.
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
from typing import Any

from spectui.cli.flags import file_path
from spectui.errors import UsageError

ID_SHOWN_MAX = 40  # characters of an unknown id echoed back


def _ids(text: str) -> list[str]:
    ids = [part.strip() for part in text.split(",")]
    if not all(ids):
        raise argparse.ArgumentTypeError("expected ID,ID,... (entry ids, comma-separated)")
    return ids


def add_parser(sub: Any) -> None:
    validate = sub.add_parser(
        "validate",
        help="predictions against published measurements: errors, verdicts, medians",
        description="Predict every published measurement in spectui's table two ways (from "
        "specs: the roofline with today's efficiencies; calibrated: a cost fitted to the rest "
        "of the entry's series, leave one out) and print each error and verdict, then the "
        "median error per method and category.",
    )
    validate.add_argument("--json", action="store_true", help="print everything as JSON")
    validate.add_argument(
        "--markdown", metavar="FILE", type=file_path, help="write the report as Markdown"
    )
    validate.add_argument(
        "--only", metavar="ID,...", type=_ids, help="only these entries (ids as listed)"
    )


def _unknown(entry_id: str, known: list[str]) -> str:
    shown = entry_id if len(entry_id) <= ID_SHOWN_MAX else entry_id[:ID_SHOWN_MAX] + "..."
    close = difflib.get_close_matches(entry_id, known, n=3)
    hint = f"did you mean {', '.join(close)}?" if close else "`spectui validate` lists them"
    return f"--only: no entry {shown!r} ({hint})"


def command(args: argparse.Namespace) -> int:
    from engine.validate.report import json_data, report_of, text_lines
    from engine.validate.table import shipped_left_out, shipped_table

    if args.markdown is not None:  # refused before any work: a directory, a missing folder
        from engine.core.files import writable_target

        target = writable_target(args.markdown)
        if not target.parent.is_dir():
            raise UsageError(f"--markdown: {target.parent}: no such directory")
    from engine.validate import temperature

    table = shipped_table()
    main_ids = [e.id for e in table]
    if args.only:
        known = main_ids + list(temperature.row_ids())
        unknown = [i for i in args.only if i not in known]
        if unknown:
            raise UsageError(_unknown(unknown[0], known))
    asked = not args.only or any(i in temperature.row_ids() for i in args.only)
    source, by_temperature = temperature.predictions() if asked else ({}, ())
    if args.only:
        by_temperature = tuple(r for r in by_temperature if r.id in args.only)
    report = report_of(table, args.only)
    shown = not args.only or any(i in main_ids for i in args.only)
    if args.json:
        data = json_data(report) if shown else {}
        print(json.dumps({**data, "temperature": temperature.json_rows(by_temperature)}, indent=1))
    else:
        sections = [text_lines(report)] if shown else []
        if by_temperature:
            sections.append(temperature.text_lines(by_temperature))
        print("\n\n".join("\n".join(lines) for lines in sections))
    if args.markdown is not None:
        from engine.core.files import atomic_write_text
        from engine.validate.markdown import markdown

        text = markdown(report, shipped_left_out(), (source, by_temperature))
        atomic_write_text(args.markdown, text)
        print(f"report written to {args.markdown}", file=sys.stderr)
    return 0
