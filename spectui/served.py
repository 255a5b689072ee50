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

import contextlib
import ipaddress
import multiprocessing
import os
import signal
import threading
from typing import Any

from textual import messages
from textual.drivers.web_driver import WebDriver

from spectui.serve_common import EXIT_GRACE_S
from spectui.serve_common import base_url as base_url  # still read from here
from spectui.serve_common import reap_children as reap_children


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
