"""A progress bar for the long subcommands (run, a sweep's planning, regime, tree) that shows
only once the work has taken a while, and only on a terminal."""

from __future__ import annotations

import sys
import time
from typing import Any

RUN_PROGRESS_AFTER_S = 1.0  # a run shorter than this shows no progress bar


def delayed_progress(total: int, description: str) -> tuple[Any, Any]:
    """A bar on a terminal's stderr that shows once the work has taken
    :data:`RUN_PROGRESS_AFTER_S`: a function of the count done, and one that closes it
    (call it in a ``finally``: a bar left open would swallow the "interrupted" line)."""
    started = time.perf_counter()
    bar: list[Any] = []

    def advance(done: int) -> None:
        if not bar:
            if not sys.stderr.isatty() or time.perf_counter() - started < RUN_PROGRESS_AFTER_S:
                return
            from spectui.render import SweepProgressBar

            bar.append(SweepProgressBar(total, description))
            bar[0].__enter__()
        bar[0].advance(done)

    def close() -> None:
        if bar:
            bar[0].__exit__(None, None, None)

    return advance, close
