"""The Sweep view's status: the count line (how far, the rate and ETA, where it runs), the
progress bar and the info line, read from the sweep's thread on a timer; and how it ended."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.widgets import ProgressBar, Static
from textual.worker import Worker

from engine.core.config import ConfigError
from spectui.messages import SweepFinished, SweepRunsOn
from spectui.widgets.common import hide_timings
from spectui.widgets.sweep.base import SweepBase
from spectui.widgets.sweep.workers import sweep_scheduler

PROGRESS_EVERY_S = 0.25  # the count line and the bar, read from the sweep (not pushed)


class SweepStatus(SweepBase):
    """The count line (``#sweep-count``), the bar and the info line (``#sweep-info``)."""

    def _count_line(self, text: str) -> None:
        count = self.query_one("#sweep-count", Static)
        count.styles.height = 1
        count.update(text)

    def _can_start(self) -> None:
        """The info line once no sweep runs: the chosen preset, if any, can start."""
        preset = self._selected()
        if preset is not None:
            self.query_one("#sweep-info", Static).update(f"{preset.size()} configs · s start")

    def _where_next(self, preset: Any) -> str:
        """Where a sweep of ``preset`` would run, for the count line: "" (here), "on
        ADDRESS", or that $SPECTUI_SCHEDULER is invalid."""
        from engine.sweep.cluster import SCHEDULER_ENV

        try:
            scheduler = sweep_scheduler(preset)
        except ConfigError:
            return f"{SCHEDULER_ENV} invalid"
        return "" if scheduler is None else f"on {scheduler}"

    def _fit(self, text: str, where: str) -> str:
        """``text · where`` in the count line's width: ``where`` (an address) shortened in
        its middle if need be."""
        if not where:
            return text
        return f"{text} · {_shorten(where, self._count_width() - len(text) - 3)}"

    def _count_width(self) -> int:
        width = self.query_one("#sweep-count", Static).content_region.width
        if width <= 0:  # not laid out yet: the view's width, less the count line's padding
            width = self.content_region.width - 2
        return width if width > 0 else 50

    def _start_ticker(self) -> None:
        self._stop_ticker()
        self._ticker = self.set_interval(PROGRESS_EVERY_S, self._poll_progress)

    def _stop_ticker(self) -> None:
        if self._ticker is not None:
            self._ticker.stop()
            self._ticker = None

    def _poll_progress(self) -> None:
        """Show what the sweep thread has done (:attr:`live`), if it changed."""
        live = self.live
        if live == self._shown_live or not live[0]:
            return
        self._shown_live = live
        phase, done, total, elapsed = live
        if phase != "running":  # planning, laying out the grid
            self.query_one(ProgressBar).update(total=total, progress=0)
            self._set_count(0, total, 0.0, f"{phase} {done}/{total} configurations…")
            return
        self.query_one(ProgressBar).update(total=total, progress=done)
        self._set_count(done, total, elapsed)

    def _set_count(self, done: int, total: int, elapsed: float, text: str = "") -> None:
        """The count line: ``done/total`` with the rate and ETA (``elapsed``: seconds of
        the sweep's work, its planning left out), or ``text`` (planning)."""
        self._progress = (done, total, elapsed)
        if not text:
            text = f"{done}/{total}"
            if not hide_timings() and elapsed > 0 and done:
                rate = done / elapsed
                eta = (total - done) / rate if rate else float("nan")
                text += f" · {rate:.0f}/s · ETA {eta:.0f}s"
        text = self._fit(text, self.where)
        if self.dashboard is not None:  # a line of its own (the notification has it whole)
            text += f"\ndashboard {_shorten(self.dashboard, self._count_width() - 10)}"
        # Fixed height in the stylesheet: no re-layout of the screen on every update.
        self.query_one("#sweep-count", Static).update(text, layout=False)

    def on_sweep_runs_on(self, message: SweepRunsOn) -> None:
        """The sweep's Dask cluster answered: say where it runs, and its dashboard."""
        plural = "" if message.workers == 1 else "s"
        self.where = f"on {message.scheduler} · {message.workers} worker{plural}"
        if message.dashboard is not None:
            self.dashboard = message.dashboard
            self.query_one("#sweep-count", Static).styles.height = 2
            self.notify(f"Dask dashboard: {message.dashboard}", title="Sweep on Dask")
        self._shown_live = None  # the count line again, with where it runs
        self._poll_progress()

    def worker_failed(self, worker: Worker) -> None:
        """The sweep's worker raised (the one handler has said why): leave "running"."""
        if worker.group != "sweep":
            return
        from engine.sweep.cluster import DaskUnavailable

        self.app.refresh_bindings()
        self._stop_ticker()
        self.dashboard, self.where = None, ""
        count = self.query_one("#sweep-count", Static)
        count.styles.height = 1
        if isinstance(worker.error, DaskUnavailable):  # nothing ran
            count.update("not run: Dask cannot run it (see notification)")
        else:
            count.update("sweep failed (see notification)")
        self._can_start()

    def on_sweep_finished(self, message: SweepFinished) -> None:
        self._stop_ticker()
        self.app.refresh_bindings()
        self.dashboard, self.where = None, ""  # the cluster's: gone with it
        self.frame, self.grids, self.finished = message.frame, message.optimal, message
        self.query_one(ProgressBar).update(total=message.total, progress=message.done)
        self._can_start()  # the chosen preset, maybe chosen while this one ran
        word = "cancelled" if message.cancelled else "done"
        text = f"{message.done}/{message.total} {word}"
        count = self.query_one("#sweep-count", Static)
        count.styles.height = 1
        if not hide_timings():
            # The saved path on a line of its own, shortened to fit: it must stay visible.
            text += f" in {message.elapsed:.1f}s\nsaved "
            room = max(count.content_region.width, 20) - len("saved ")
            text += _short_path(message.path, room) if message.path is not None else "nowhere"
            count.styles.height = 2
        count.update(text)
        self._draw()
        if message.path is None:  # cancelled while its cluster started
            self.notify(f"Sweep {word} before it started: nothing saved")
            return
        kept = "partial results" if message.cancelled else "results"
        self.notify(f"Sweep {word}: {message.done} rows; {kept} saved to {message.path}")


def _shorten(text: str, room: int) -> str:
    """``text`` in at most ``room`` characters (at least 9): its middle cut to …"""
    room = max(room, 9)
    if len(text) <= room:
        return text
    head = (room - 1) // 2
    return text[:head] + "…" + text[len(text) - (room - 1 - head) :]


def _short_path(path: Path, room: int) -> str:
    """``path`` in at most ``room`` characters if it can: ~ for home, then …/ for leading
    directories; the file name is always kept whole."""
    text = str(path)
    home = str(Path.home())
    if text.startswith(home + "/"):
        text = "~" + text[len(home) :]
    parts = text.split("/")
    while len(text) > room and len(parts) > 2:
        parts = ["…", *parts[2:]] if parts[0] == "…" else ["…", *parts[1:]]
        text = "/".join(parts)
    return text
