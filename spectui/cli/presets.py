"""``spectui presets``: the shipped and the user's presets, as a table."""

from __future__ import annotations

import argparse
from typing import Any


def add_parser(sub: Any) -> None:
    sub.add_parser("presets", help="list shipped and user presets")


def command(args: argparse.Namespace) -> int:
    from engine.presets import list_presets
    from spectui.render import console, presets_table

    console().print(presets_table(list_presets()))
    return 0
