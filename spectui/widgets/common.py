"""Small helpers shared by the views: where files go, how numbers and colours look."""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any


def results_dir() -> Path:
    """Where the app writes CSV files: $SPECTUI_RESULTS_DIR, else $XDG_DATA_HOME/spectui."""
    if os.environ.get("SPECTUI_RESULTS_DIR"):
        return Path(os.environ["SPECTUI_RESULTS_DIR"])
    data_home = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data_home) / "spectui" / "results"


def hide_timings() -> bool:
    """True when wall-clock figures must not be shown (snapshot tests set this)."""
    return bool(os.environ.get("SPECTUI_HIDE_TIMINGS"))


FMT_WIDTH = 9  # widest number fmt() writes in fixed point; wider ones go to engineering form


def fmt(value: float | None, digits: int = 3, width: int = FMT_WIDTH, speedup: bool = False) -> str:
    """A number for a card, a cell or a panel: NaN (or None) as an em dash.

    ``speedup=True`` writes the fixed-point form with
    :func:`engine.analysis.formatting.speedup_text`,
    so a loss never reads as 1.000.

    Fixed point with ``digits`` decimals when that fits in ``width`` characters and does not
    round a non-zero value to zero; otherwise engineering notation with three significant
    digits (exponent a multiple of 3: ``2.00e6``, ``20.0e300``, ``-150e-9``), at most 10
    characters for any float.
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if speedup:
        from engine.analysis.formatting import speedup_text

        fixed = speedup_text(value, digits, unit="")
    else:
        fixed = f"{value:.{digits}f}"
    if math.isinf(value) or value == 0:
        return fixed
    if len(fixed) <= width and float(fixed) != 0:
        return fixed
    return _engineering(float(value))


def half_width(value: float | None, digits: int = 3) -> str:
    """A 95 % half-width beside a number shown with ``digits`` decimals: "±0.019"; one below
    the last shown digit is "±<0.001" (the number is that precise), not ``±487e-6``."""
    if value is not None and math.isfinite(value) and 0 < value < 0.5 * 10.0**-digits:
        return f"±<{10.0**-digits:.{digits}f}"
    return f"±{fmt(value, digits)}"


def _engineering(value: float) -> str:
    """``value`` (finite, non-zero) with 3 significant digits and an exponent in steps of 3."""
    digits, exponent_text = f"{value:.2e}".split("e")  # rounded once, here: "9.99e+02"
    exponent = int(exponent_text)
    shift = exponent % 3  # 0, 1 or 2 places of the point move into the mantissa
    sign = "-" if digits.startswith("-") else ""
    figures = digits.lstrip("-").replace(".", "")  # three significant digits
    mantissa = figures[: 1 + shift] + ("." + figures[1 + shift :] if shift < 2 else "")
    return f"{sign}{mantissa}e{exponent - shift}"


# What a worker does, by its group, for the notification when it fails.
WORKER_TASKS: dict[str, str] = {
    "run": "Monte Carlo run",
    "curve": "Speedup curve",
    "sweep": "Sweep",
    "exact": "Exact figures",
    "export": "CSV export",
    "plots": "Plots",
    "preload": "Loading the engine",
    "warm": "Starting the sweep processes",
}


def failure_reason(worker: Any) -> str:
    """Why a worker failed, in one line: the exception's type and message."""
    error = worker.error
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def report_worker_error(node: Any, event: Any, what: str | None = None) -> bool:
    """Notify (never crash) when a worker of ``node`` failed; True if it did.

    The notification names the task (``what``, else :data:`WORKER_TASKS` by the worker's
    group) and the reason. The event's default handling stops here, so a base class's
    handler (:class:`ReportsWorkerErrors`) does not notify the same failure twice.
    """
    from textual.worker import WorkerState

    if event.state != WorkerState.ERROR:
        return False
    worker = event.worker
    if what is None:
        what = WORKER_TASKS.get(worker.group) or worker.name or "Background task"
    node.notify(f"{what} failed: {failure_reason(worker)}", severity="error", timeout=10)
    event.prevent_default()
    return True


class ReportsWorkerErrors:
    """Mixin for the views: every failed worker becomes a notification with its reason.

    ``Worker.StateChanged`` does not bubble, so each node that starts workers needs this
    handler; after the notification it calls :meth:`worker_failed`, where a view leaves its
    busy state ("computing…", "running…").
    """

    def on_worker_state_changed(self, event: Any) -> None:
        if event.worker.is_finished:
            # The keys the footer shows follow the view's busy state ("esc Cancel" while a
            # sweep runs), which reads the worker: a message the worker posted before it
            # returned is handled while it still counts as running.
            self.app.refresh_bindings()  # type: ignore[attr-defined]
        if report_worker_error(self, event):
            self.worker_failed(event.worker)

    def worker_failed(self, worker: Any) -> None:
        """Called after a worker of this node raised; override to leave the busy state."""
