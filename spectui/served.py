"""The driver of an app served in a browser (``spectui serve``): it always ends.

textual-serve starts one ``python -m spectui`` per browser connection, with Textual's
WebDriver talking to the server over the child's stdin and stdout. When the browser goes
away the server sends a ``quit`` packet; when the server goes away the child's stdin reaches
end of file and its stdout breaks. Textual's WebDriver handles neither robustly:

* end of stdin only ends its input thread; the app runs on, headless, forever;
* a ``quit`` that arrives during start-up (a browser that closed at once, e.g. headless
  Chromium with ``--screenshot``) can leave Textual's message loop busy with refresh
  callbacks that never yield to asyncio. The loop then never runs the SIGTERM / SIGINT
  handlers (asyncio runs them on the loop), so the child spins at high CPU and ignores
  both signals.

:class:`ServedDriver` asks the app to exit on any of these (quit, end of stdin, broken
stdout, SIGTERM, SIGINT) and, should the app not be gone ``EXIT_GRACE_S`` later, ends the
process from a watchdog thread, which needs no event loop. ``spectui.cli`` puts it in
place of the WebDriver whenever textual-serve starts the app.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import multiprocessing
import os
import signal
import socket
import threading
import time
from typing import Any

from textual import messages
from textual.drivers.web_driver import WebDriver

EXIT_GRACE_S = 5.0
REAP_POLL_S = 0.02


def serve(command: str, host: str, port: int, title: str, token: str) -> None:
    """Serve ``command`` (one process per browser) on ``host``:``port``, to requests that
    carry ``token`` (:class:`spectui.webserver.Server`)."""
    from spectui.webserver import Server

    Server(command, host=host, port=port, title=title, token=token).serve()


def is_loopback(host: str) -> bool:
    """``host`` names this machine only (``localhost``, 127.0.0.0/8, ``::1``); the empty
    host, ``0.0.0.0`` and ``::`` are every interface."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def base_url(host: str, port: int) -> str:
    """The address a person opens for a server bound to ``host``: every interface
    (``""``, ``0.0.0.0``, ``::``) is reached through this machine's name; an IPv6 address
    goes in brackets."""
    if host in ("", "0.0.0.0", "::"):
        host = socket.gethostname()
    elif ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{port}"


async def reap_children(_app: object = None) -> None:
    """Wait (at most EXIT_GRACE_S and a second) until no child of this process is left and
    every exit has been reported to the event loop.

    textual-serve stops an app when its output ends, not when its process is gone, and then
    closes the event loop; asyncio's child watcher (on Python 3.11 a thread per process,
    named ``asyncio-waitpid-N``, which reaps it and then tells the loop) reporting an exit to a
    closed loop logs ``WARNING Loop ... that handles pid ... is closed``. ``waitid`` with
    WNOWAIT only looks (a child that exited and is not reaped yet still counts)."""
    deadline = time.monotonic() + EXIT_GRACE_S + 1.0
    while time.monotonic() < deadline:
        if not _has_children() and not _reporting_exits():
            return
        await asyncio.sleep(REAP_POLL_S)


def _has_children() -> bool:
    if not hasattr(os, "waitid"):  # not on macOS: the watcher's threads say enough
        return False
    try:
        os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return False
    return True


def _reporting_exits() -> bool:
    """A thread of asyncio's ThreadedChildWatcher is still waiting for a child or about to
    report its exit."""
    return any(
        t.name.startswith("asyncio-waitpid-") and t.is_alive() for t in threading.enumerate()
    )


def end_process(status: int) -> None:
    """End this process now, and the worker processes it started (the sweep pool's): they
    would outlive an os._exit, holding the server's pipes open."""
    for child in multiprocessing.active_children():
        with contextlib.suppress(Exception):
            child.kill()
    os._exit(status)


class ServedDriver(WebDriver):
    """Textual's WebDriver, plus: whatever ends the connection ends the process."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._web_write = self._write
        self._write = self._write_or_leave
        self._leaving = threading.Lock()
        self._left = False

    def leave(self, status: int = 0) -> None:
        """Ask the app to exit; if it has not after EXIT_GRACE_S, end the process."""
        with self._leaving:
            if self._left:
                return
            self._left = True
        watchdog = threading.Timer(EXIT_GRACE_S, end_process, (status,))
        watchdog.daemon = True  # a prompt, clean exit is not held up by it
        watchdog.start()
        with contextlib.suppress(RuntimeError):  # no event loop any more: already ending
            self._app.post_message(messages.ExitApp())

    def _write_or_leave(self, data: bytes) -> None:
        if data == b"__GANGLION__\n":
            # The first thing WebDriver writes, just after it gave asyncio the SIGINT and
            # SIGTERM handlers. Python runs ours in the main thread even while the event loop
            # is starved; the loop's (Textual's graceful exit) still run when it gets a turn.
            for signum in (signal.SIGINT, signal.SIGTERM):
                signal.signal(signum, self._on_signal)
        try:
            self._web_write(data)
        except OSError:  # the server is gone (EPIPE): nobody sees this app
            self.leave()

    def _on_signal(self, signum: int, _frame: object) -> None:
        self.leave(128 + signum)

    def on_meta(self, packet_type: str, payload: dict[str, object]) -> None:
        if packet_type == "quit":
            self.leave()
        super().on_meta(packet_type, payload)

    def run_input_thread(self) -> None:
        super().run_input_thread()
        if not self.exit_event.is_set():
            # The input ended without the app stopping: stdin reached end of file, so the
            # server is gone.
            self.leave()
