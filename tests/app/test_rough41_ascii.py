"""Issue #41, the app's rough edges: on an ASCII terminal (``LC_ALL=C PYTHONUTF8=0``) the
Exact panel's "speedup T→∞" read "speedup T>~". The app's stand-ins keep one character per
cell, and take the readable form where blank cells follow that can hold it.

What is asserted is what the terminal gets: the bytes of the Exact panel's row as Textual
writes it (its style changes included, as captured from the app at 80x24)."""

from __future__ import annotations

from spectui.ascii import CELL_ERRORS, install

# The row "│ speedup T→∞   2.460   │" as Textual writes it: label, padding, value cells.
ROW = (
    "\x1b[1;97;40mspeedup T→∞\x1b[0m\x1b[1;97;40m \x1b[0m\x1b[97;40m  2.460\x1b[0m"
    "\x1b[40m   \x1b[0m\x1b[90;40m│\x1b[0m"
)


def _cells(written: bytes) -> str:
    """The characters that take cells: the style changes left out."""
    import re

    return re.sub(r"\x1b\[[0-9;]*m", "", written.decode())


def test_the_exact_panels_t_to_infinity_reads_as_t_equals_inf_in_the_same_cells():
    install()
    written = ROW.encode("ascii", CELL_ERRORS)
    assert _cells(written) == "speedup T=inf 2.460   |"
    assert len(_cells(written)) == len("speedup T→∞   2.460   │")


def test_with_more_room_the_arrow_is_an_arrow_and_with_none_one_character_a_cell():
    install()
    assert "T→∞    0.5".encode("ascii", CELL_ERRORS) == b"T->inf 0.5"
    assert "T→∞|".encode("ascii", CELL_ERRORS) == b"T>~|"
    assert "wait…  x".encode("ascii", CELL_ERRORS) == b"wait.  x"  # a blank stays
