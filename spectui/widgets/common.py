"""Small helpers shared by the views: where files go, how numbers and colours look."""

from __future__ import annotations

import math
import os
from pathlib import Path


def results_dir() -> Path:
    """Where the app writes CSV files: $SPECTUI_RESULTS_DIR, else $XDG_DATA_HOME/spectui."""
    if os.environ.get("SPECTUI_RESULTS_DIR"):
        return Path(os.environ["SPECTUI_RESULTS_DIR"])
    data_home = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data_home) / "spectui" / "results"


def hide_timings() -> bool:
    """True when wall-clock figures must not be shown (snapshot tests set this)."""
    return bool(os.environ.get("SPECTUI_HIDE_TIMINGS"))


def fmt(value: float, digits: int = 3) -> str:
    """A number for a card or a cell; NaN shown as an em dash."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{value:.{digits}f}"


def speedup_colour(speedup: float) -> str:
    """Background colour of a speedup: red below 1, amber near 1, greens above."""
    if math.isnan(speedup):
        return "grey23"
    if speedup < 1.0:
        return "dark_red"
    if speedup < 1.25:
        return "dark_orange3"
    if speedup < 1.75:
        return "gold3"
    if speedup < 2.5:
        return "chartreuse4"
    return "green4"


def report_worker_error(widget, event, what: str) -> bool:
    """Notify (never crash) when a worker of ``widget`` failed; True if it did."""
    from textual.worker import WorkerState

    if event.state != WorkerState.ERROR:
        return False
    error = event.worker.error
    widget.notify(f"{what} failed: {type(error).__name__}: {error}", severity="error", timeout=8)
    return True
