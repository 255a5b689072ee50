"""What the copy key (F4) puts on the clipboard: the texts, built here; the app chooses.

The clipboard is the terminal's (Textual's ``copy_to_clipboard``, OSC 52), so a copy works
over SSH. :func:`command_line` is the form as a ``spectui run`` command that gives back the
same configuration; :func:`table_row` a table's highlighted row, tab-separated.
"""

from __future__ import annotations

import shlex
from typing import Any

from engine.core.config import FIELD_SPECS, SpecConfig

PREVIEW_CHARS = 60  # of the copied text, in the toast that says what was copied


def _flag_value(value: Any) -> str:
    """A field's value as its CLI flag reads it back (repr: a float's shortest round trip)."""
    return repr(value) if isinstance(value, float) else str(value)


def command_line(config: SpecConfig) -> str:
    """``spectui run`` with a flag for every field that differs from the defaults (in
    ``--flag=value`` form, so a value starting with ``-`` stays a value), each argument
    quoted for a POSIX shell: ``shlex.split`` of it, parsed by the CLI, is ``config``."""
    defaults = SpecConfig()
    args = ["spectui", "run"]
    for key, spec in FIELD_SPECS.items():
        if spec.kind == "choice" and len(spec.choices) < 2:
            continue  # no flag: nothing to choose (and so always the default)
        value = config.get(key)
        if value != defaults.get(key):
            args.append(f"{spec.cli_flag}={_flag_value(value)}")
    return " ".join(shlex.quote(arg) for arg in args)


def engine_flags(emitted: dict[str, str]) -> str:
    """Each serving engine's setting for the recommended K, one line each: its name, then the
    setting as Calibrate emitted it (already quoted for a shell where it is a command)."""
    width = max((len(name) for name in emitted), default=0)
    return "\n".join(f"{name:<{width}}  {text}" for name, text in emitted.items())


def table_row(table: Any) -> str | None:
    """The highlighted row of a focused table (the cycle table or a DataTable), its cells
    tab-separated as shown (a row label first); None if the table has no rows."""
    from textual.widgets import DataTable

    from spectui.widgets.cycle_table import CycleTable

    if isinstance(table, CycleTable):
        if not table.row_count:
            return None
        row = min(max(table.cursor_row, 0), table.row_count - 1)
        return "\t".join(cell.strip() for cell in table.get_row_at(row))
    if isinstance(table, DataTable):
        if not table.row_count:
            return None
        row = min(max(table.cursor_coordinate.row, 0), table.row_count - 1)
        cells = [_plain(cell) for cell in table.get_row_at(row)]
        label = table.ordered_rows[row].label
        if label is not None and _plain(label):
            cells.insert(0, _plain(label))
        return "\t".join(cells)
    return None


def _plain(cell: Any) -> str:
    return str(getattr(cell, "plain", cell)).strip()


def preview(text: str) -> str:
    """The copied text as a toast shows it: one line, at most :data:`PREVIEW_CHARS`."""
    line = " ".join(text.split())
    return line if len(line) <= PREVIEW_CHARS else line[: PREVIEW_CHARS - 1] + "…"
