"""Numbers as serving logs print them: counts (checked, never guessed), K, rate lists, and
half a unit of a value's last printed digit (the tolerance its checks allow). Every number
is read by :func:`engine.core.fields.ascii_number`, and the patterns match ASCII digits only
(``\\d`` would match any script's: "١٢" is 12 to Python's int())."""

from __future__ import annotations

import math

from engine.core.fields import K_MAX, SHOWN_MAX, ascii_number

# A printed number: digits, maybe a fraction; a whole number. Never the start of a longer
# word ("1_0", "2.5e3", "３" after "1"): that is no number, not the number it starts with.
NUMBER = r"([0-9]+(?:\.[0-9]+)?)(?![\w.])"
WHOLE = r"([0-9]+)(?![\w.])"


def read_number(text: str) -> float:
    """A printed number (what :data:`NUMBER` matched); ValueError when it is not one."""
    return float(ascii_number(text))


def half_unit(number: str, scale: float = 1.0) -> float:
    """Half a unit of the last printed digit of ``number``, times ``scale``."""
    decimals = len(number.split(".")[1]) if "." in number else 0
    return 0.5 * 10.0**-decimals * scale


# The largest token count a window may hold: beyond any serving log (a million tokens a
# second for thirty years); a larger, negative, fractional or non-numeric count rejects it.
COUNT_MAX = 10**15
COUNT_TEXT = r"[^\s,;]+"  # what a log prints where a count belongs, checked by read_count
COUNT = f"({COUNT_TEXT})"


# What a window is rejected for when its numbers are not numbers (checks.unreadable), or
# not the numbers they stand for (a K of 0).
UNREADABLE = "numbers that cannot be read"


def shown(text: str) -> str:
    """A printed number as a problem repeats it: cut to SHOWN_MAX characters."""
    return text if len(text) <= SHOWN_MAX else text[: SHOWN_MAX - 1] + "…"


def _count(number: str) -> int | None:
    """A printed count ("66", "1000.0"); None unless a whole number in [0, COUNT_MAX]."""
    try:
        value = float(ascii_number(number))
    except ValueError:
        return None
    if not (math.isfinite(value) and value.is_integer() and 0 <= value <= COUNT_MAX):
        return None
    return int(value)


def read_count(problems: list[str], name: str, number: str) -> int | None:
    """:func:`_count`, with a problem (the window is then rejected) when it is not one: a
    bad count is never read as a missing one, to be derived from a rate."""
    value = _count(number)
    if value is None:
        problems.append(f"{name} {shown(number)} is not a token count (a whole number, 0 to 1e15)")
    return value


def read_k(problems: list[str], number: str) -> int | None:
    """A printed K (draft tokens per draft), with a problem unless a whole number in
    [1, :data:`~engine.core.fields.K_MAX`] (the largest K a scenario takes)."""
    value = _count(number)
    if value is None or not 1 <= value <= K_MAX:
        problems.append(f"{UNREADABLE}: K {shown(number)} is not 1 to {K_MAX} draft tokens")
        return None
    return value


def rate_list(text: str, scale: float = 1.0) -> tuple[tuple[float, ...], float]:
    """Comma-separated rates and half a unit of their printed precision."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    return tuple(read_number(p) * scale for p in parts), max(half_unit(p, scale) for p in parts)
