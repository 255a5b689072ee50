"""Errors the command line reports as one line with exit status 2."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from engine.core.config import ascii_int


class UsageError(Exception):
    """A user mistake (bad flag combination, missing optional package, ...)."""


def bounded_int(flag: str, high: int, low: int = 1) -> Callable[[str], int]:
    """An argparse type: an integer in [low, high], in ASCII digits
    (engine.core.config.ascii_int)."""

    def parse(text: str) -> int:
        try:
            value = ascii_int(text)
        except ValueError:
            value = low - 1
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(
                f"{text!r} is not allowed; expected an integer in [{low}, {high}]"
            )
        return value

    parse.__name__ = flag
    return parse
