"""What both sides of ``spectui serve`` share: the server (spectui.webserver, which needs
aiohttp and textual-serve) and the served app's driver (spectui.served, which loads
neither). A module of its own below both, so that neither imports the other for it
(served's ``serve`` starts the server); served still exports these names.
"""

from __future__ import annotations

import asyncio
import os
import socket
import threading
import time

# The served app's watchdog ends it this long after it was told to leave
# (spectui.served.ServedDriver); the server waits that long and a second for its children.
EXIT_GRACE_S = 5.0
REAP_POLL_S = 0.02


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
