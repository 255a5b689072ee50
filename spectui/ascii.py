"""ASCII stand-ins for the glyphs spectui prints, for terminals that cannot encode them.

Under an ASCII locale (``LC_ALL=C PYTHONUTF8=0 PYTHONCOERCECLOCALE=0``) Python's stdout is
strict ASCII: ``spectui run`` died with UnicodeEncodeError on "±", and Textual (which writes
to stderr with ``backslashreplace``) drew "\\u2026" in place of "…", breaking its layout.
:func:`install` registers two codecs error handlers, once, and sets them on the streams that
cannot encode our glyphs:

* ``spectui-ascii`` (command line): readable stand-ins, several characters where needed
  ("±" -> "+-", "→" -> "->", "…" -> "...").
* ``spectui-ascii-cells`` (the app): one character per character, so that every cell of
  the screen stays where Textual put it; the readable stand-in where blank cells follow
  that can take its extra characters ("T→∞" as "T->inf", or "T=inf" where there is
  less room: :data:`RUNS`).
"""

from __future__ import annotations

import codecs
import re
import sys
import unicodedata
from typing import TextIO

# The glyphs spectui writes itself: (command-line text, one-cell text).
GLYPHS: dict[str, tuple[str, str]] = {
    "±": ("+-", "+"),
    "×": ("x", "x"),
    "≈": ("~", "~"),
    "…": ("...", "."),
    "→": ("->", ">"),
    "←": ("<-", "<"),
    "✓": ("v", "v"),
    "✗": ("x", "x"),
    "·": (".", "."),
    "—": ("--", "-"),
    "–": ("-", "-"),
    "∞": ("inf", "~"),
    "≥": (">=", ">"),
    "≤": ("<=", "<"),
    "µ": ("u", "u"),
    "░": (".", "."),  # the Lab screen's shaded bars (solid ones are "#")
    # The eight levels of a sparkline, lowest first.
    **{chr(0x2581 + i): (c, c) for i, c in enumerate("_.,-=+*#")},
}
SAMPLE = "".join(GLYPHS)
ERRORS, CELL_ERRORS = "spectui-ascii", "spectui-ascii-cells"


def stand_in(char: str, cells: bool = False) -> str:
    """The ASCII text for one character (one character long if ``cells``)."""
    if char in GLYPHS:
        return GLYPHS[char][1 if cells else 0]
    name = unicodedata.name(char, "")
    if "BOX DRAWINGS" in name:  # Textual's borders and rules
        if " AND " in name or "CROSS" in name:  # corners, tees, crossings
            return "+"
        return "-" if "HORIZONTAL" in name else "|" if "VERTICAL" in name else "+"
    if "BLOCK" in name or "SHADE" in name:
        return "#"
    if "ARROW" in name or "TRIANGLE" in name:
        return ">" if "RIGHT" in name else "<" if "LEFT" in name else "^" if "UP" in name else "v"
    decomposed = unicodedata.normalize("NFKD", char).encode("ascii", "ignore").decode()
    if decomposed:  # é -> e, ﬁ -> fi
        return decomposed[:1] if cells else decomposed
    if unicodedata.east_asian_width(char) in "WF" and cells:
        return "??"  # a wide character takes two cells
    return "?"


# Runs of glyphs with a shorter readable stand-in than their glyphs' own, for where the
# screen has fewer blank cells after them: the Exact panel's "speedup T→∞   2.460" has
# three, which "T->inf" would fill (and "2.460" would touch it).
RUNS: dict[str, tuple[str, ...]] = {"→∞": ("=inf",)}
# What may follow a glyph on the screen: blank cells, between style changes (SGR sequences,
# which take no cell). A longer stand-in takes some of those blanks.
_AFTER = re.compile(r"(?:\x1b\[[0-9;:]*m| )*")
_BLANK = re.compile(" ")


def _handler(cells: bool):
    def handle(error: UnicodeError) -> tuple[str, int]:
        if not isinstance(error, UnicodeEncodeError):
            raise error
        text = error.object[error.start : error.end]
        short = "".join(stand_in(c, cells) for c in text)
        if cells:
            return _roomy(error.object, error.end, text, short)
        return short, error.end

    return handle


def _roomy(written: str, end: int, text: str, short: str) -> tuple[str, int]:
    """The screen's stand-in for ``text`` (ending at ``end`` of what is ``written``): a
    readable one ("T→∞" as "T->inf", else as "T=inf", not "T>~") when the blank cells
    after it can take its extra characters and still leave one blank, else one character
    per cell (``short``). Either way every later cell stays where Textual put it."""
    after = _AFTER.match(written, end)
    assert after is not None  # (the pattern matches the empty string)
    blanks = after.group().count(" ")
    for readable in ("".join(stand_in(c) for c in text), *RUNS.get(text, ())):
        extra = len(readable) - len(short)
        if extra <= 0:
            break
        if blanks > extra:  # the first ``extra`` blanks go, the style changes stay
            return readable + _BLANK.sub("", after.group(), count=extra), after.end()
    return short, end


def _register() -> None:
    try:
        codecs.lookup_error(ERRORS)
    except LookupError:
        codecs.register_error(ERRORS, _handler(cells=False))
        codecs.register_error(CELL_ERRORS, _handler(cells=True))


def can_encode(stream: TextIO, text: str = SAMPLE) -> bool:
    encoding = getattr(stream, "encoding", None) or "ascii"
    try:
        text.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return False
    return True


def install(*streams: TextIO | None, cells: bool = False) -> None:
    """Give each stream that cannot encode our glyphs the ASCII error handler."""
    _register()
    for stream in streams or (sys.stdout, sys.stderr):
        if stream is not None and not can_encode(stream) and hasattr(stream, "reconfigure"):
            stream.reconfigure(errors=CELL_ERRORS if cells else ERRORS)
