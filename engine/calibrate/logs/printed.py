"""Numbers as serving logs print them: counts (checked, never guessed), rate lists, and half
a unit of a value's last printed digit (the tolerance its checks allow)."""

from __future__ import annotations

import math

# A printed number: digits, maybe a fraction.
NUMBER = r"(\d+(?:\.\d+)?)"


def half_unit(number: str, scale: float = 1.0) -> float:
    """Half a unit of the last printed digit of ``number``, times ``scale``."""
    decimals = len(number.split(".")[1]) if "." in number else 0
    return 0.5 * 10.0**-decimals * scale


# The largest token count a window may hold: beyond any serving log (a million tokens a
# second for thirty years); a larger, negative, fractional or non-numeric count rejects it.
COUNT_MAX = 10**15
COUNT = r"([^\s,;]+)"  # what a log prints where a count belongs, checked by read_count


def _count(number: str) -> int | None:
    """A printed count ("66", "1000.0"); None unless a whole number in [0, COUNT_MAX]."""
    try:
        value = float(number)
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
        problems.append(f"{name} {number} is not a token count (a whole number, 0 to 1e15)")
    return value


def rate_list(text: str, scale: float = 1.0) -> tuple[tuple[float, ...], float]:
    """Comma-separated rates and half a unit of their printed precision."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    return tuple(float(p) * scale for p in parts), max(half_unit(p, scale) for p in parts)
