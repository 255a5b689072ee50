"""`spectui serve` never leaves a process behind (spectui.served).

The first tests drive a served child directly, over stdin, with the packets textual-serve
sends; the last starts the real server on a free loopback port and connects a websocket.
Every wait polls with a deadline; no test sleeps for a fixed time to pass.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from spectui.served import EXIT_GRACE_S

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")

# Start-up of the app under a busy test run takes a few seconds; leaving must be prompt.
DEADLINE_S = 30 + EXIT_GRACE_S
STOP_S = 5.0  # what `serve` promises: SIGTERM or SIGINT ends it and every child this soon


def _packet(kind: bytes, meta: dict[str, object]) -> bytes:
    data = json.dumps(meta).encode()
    return kind + len(data).to_bytes(4, "big") + data


# The served app's watchdog ends a stuck app EXIT_GRACE_S (5 s) after it was told to leave;
# the tests of a stuck app run it with this grace (the same watchdog, 4.5 s sooner), as
# `python -m spectui` would run. Set once spectui.served is imported, as the driver Textual
# loads: importing it first would import Textual before spectui chose its driver.
SHORT_GRACE_S = 0.5
SHORT_GRACE_SPECTUI = f"""
import importlib.util, runpy, sys

class ShortGrace:
    def find_spec(self, name, path=None, target=None):
        if name != "spectui.served":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            module.EXIT_GRACE_S = {SHORT_GRACE_S}

        spec.loader.exec_module = exec_module
        return spec

sys.meta_path.insert(0, ShortGrace())
runpy.run_module("spectui", run_name="__main__", alter_sys=True)
"""


def _served_child(short_grace: bool = False) -> subprocess.Popen[bytes]:
    """`python -m spectui` as textual-serve starts it (same driver environment); with
    ``short_grace``, its watchdog waits SHORT_GRACE_S, not EXIT_GRACE_S."""
    env = {
        **os.environ,
        "TEXTUAL_DRIVER": "textual.drivers.web_driver:WebDriver",
        "TEXTUAL_FPS": "60",
        "TEXTUAL_COLOR_SYSTEM": "truecolor",
        "COLUMNS": "80",
        "ROWS": "24",
    }
    program = ["-c", SHORT_GRACE_SPECTUI] if short_grace else ["-m", "spectui"]
    return subprocess.Popen(
        [sys.executable, *program],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )


def _wait_started(child: subprocess.Popen[bytes]) -> None:
    """Until the child has said it is a Textual app (textual-serve waits for this too)."""
    assert child.stdout is not None
    for _ in range(10):
        if child.stdout.readline() == b"__GANGLION__\n":
            return
    raise AssertionError("the served app did not start")


def _ends(child: subprocess.Popen[bytes]) -> bool:
    try:
        child.wait(DEADLINE_S)
        return True
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()
        return False


def test_a_browser_that_leaves_during_start_up_ends_its_app():
    # What headless Chromium with --screenshot does: a resize, then gone at once. The
    # server then sends quit. Textual's WebDriver spun at ~80 % CPU here, forever.
    child = _served_child(short_grace=True)
    assert child.stdin is not None
    child.stdin.write(_packet(b"M", {"type": "resize", "width": 88, "height": 28}))
    child.stdin.write(_packet(b"M", {"type": "quit"}))
    child.stdin.flush()
    assert _ends(child), "the app of a disconnected browser is still running"


def test_a_stuck_app_still_ends_on_sigterm():
    child = _served_child(short_grace=True)
    assert child.stdin is not None
    child.stdin.write(_packet(b"M", {"type": "resize", "width": 88, "height": 28}))
    child.stdin.flush()
    _wait_started(child)
    child.send_signal(signal.SIGTERM)
    assert _ends(child)


def test_the_app_ends_when_the_server_is_gone():
    # The server died without a word: the child's stdin ends.
    child = _served_child()
    assert child.stdin is not None
    _wait_started(child)
    child.stdin.close()
    assert _ends(child), "the app outlived its server"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _descendants(pid: int) -> set[int]:
    """Every live process below ``pid`` (read from /proc)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[1].split()
            if fields[0] != "Z":
                parents[int(entry)] = int(fields[1])
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier}
        found |= frontier
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _is_python(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/comm").read_text().startswith("python")
    except OSError:
        return True  # already gone: it was seen as a child before


def _poll(condition, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return condition()


def test_stopping_the_server_leaves_no_child():
    aiohttp = pytest.importorskip("aiohttp")
    pytest.importorskip("textual_serve")
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "spectui", "serve", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert server.stdout is not None
    url = server.stdout.readline().split()[-1]  # Serving spectui on http://...?token=...
    children: set[int] = set()
    try:

        async def browse() -> None:
            async with aiohttp.ClientSession() as session:
                async with session.get(url) as response:
                    await response.read()
                # One browser that leaves during start-up, one that stays.
                for stays in (False, True):
                    ws = await session.ws_connect(url.replace("/?", "/ws?"))
                    await ws.send_json(["resize", {"width": 88, "height": 28}])
                    if stays:
                        break
                    await ws.close()

                def both_apps_seen() -> bool:
                    children.update(_descendants(server.pid))
                    return sum(_is_python(pid) for pid in children) >= 2

                assert _poll(both_apps_seen, 60)
                server.send_signal(signal.SIGINT)  # a browser still connected
                await asyncio.to_thread(server.wait, STOP_S)

        asyncio.run(browse())
        assert _poll(lambda: not any(_alive(pid) for pid in children), STOP_S), [
            Path(f"/proc/{pid}/cmdline").read_bytes() for pid in children if _alive(pid)
        ]
    finally:
        for pid in (server.pid, *children):
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        server.wait()


def test_ending_a_stuck_app_also_ends_its_worker_processes(tmp_path):
    # The watchdog's os._exit would leave the sweep pool's processes running, reparented.
    script = tmp_path / "pool_then_end.py"
    script.write_text(
        "import multiprocessing, sys, time\n"
        "from spectui.served import end_process\n"
        "if __name__ == '__main__':\n"
        "    ctx = multiprocessing.get_context('spawn')\n"
        "    worker = ctx.Process(target=time.sleep, args=(600,))\n"
        "    worker.start()\n"
        "    print(worker.pid, flush=True)\n"
        "    end_process(0)\n"
    )
    process = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    worker = int(process.stdout.readline())
    try:
        assert process.wait(60) == 0
        assert _poll(lambda: not _alive(worker), 10), "the worker outlived its app"
    finally:
        if _alive(worker):
            os.kill(worker, signal.SIGKILL)
        process.stdout.close()


FAKE_APP = """
import os, sys, time
sys.stdout.buffer.write(b"__GANGLION__\\n")
sys.stdout.flush()
data = b""
while b"quit" not in data:  # until the server says quit (or goes away)
    chunk = os.read(0, 4096)
    if not chunk:
        break
    data += chunk
exit_packet = b'{"type": "exit"}'
sys.stdout.buffer.write(b"M" + len(exit_packet).to_bytes(4, "big") + exit_packet)
sys.stdout.flush()  # what Textual's web driver writes as its app exits
os.close(1)  # the server reads end of file here and takes the app as gone...
time.sleep(0.3)  # ...while its process still has a moment of exit ahead
"""

SERVER = """
import sys, time
from spectui.served import serve
serve(sys.argv[1], "127.0.0.1", int(sys.argv[2]), "spectui", token="T")
time.sleep(1.5)  # the server process lives on after its loop closed, as spectui's does
"""


def test_stopping_the_server_logs_no_closed_loop_warning(tmp_path):
    """Issue 22: stopping `serve` logged `WARNING Loop ... that handles pid ... is closed`:
    an app's process ended after the server's event loop had closed (the server takes an
    app as gone when its output ends, and a process has a moment of exit after that)."""
    aiohttp = pytest.importorskip("aiohttp")
    pytest.importorskip("textual_serve")
    fake = tmp_path / "fake_app.py"
    fake.write_text(FAKE_APP)
    port = _free_port()
    server = subprocess.Popen(
        # exec: the app is the server's child itself (sh would hold its output open until
        # the app's end, and the window would be too short to see every time).
        [sys.executable, "-c", SERVER, f"exec {sys.executable} {fake}", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:

        async def browse() -> None:
            async with aiohttp.ClientSession() as session:
                for _ in range(300):
                    try:
                        async with session.get(f"http://127.0.0.1:{port}/?token=T") as response:
                            await response.read()
                        break
                    except aiohttp.ClientError:
                        await asyncio.sleep(0.1)
                ws = await session.ws_connect(f"http://127.0.0.1:{port}/ws?token=T")
                await ws.send_json(["resize", {"width": 80, "height": 24}])
                assert _poll(lambda: any(map(_is_python, _descendants(server.pid))), 60)
                await ws.close()  # the browser goes: the server stops its app
                server.send_signal(signal.SIGINT)  # and the server is stopped
                await asyncio.to_thread(server.wait, DEADLINE_S)

        asyncio.run(browse())
        assert server.stdout is not None
        out = server.stdout.read().decode()
        assert "Press Ctrl+C to quit" in out
        assert "is closed" not in out and "WARNING" not in out, out
    finally:
        for pid in (server.pid, *_descendants(server.pid)):
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        server.wait()
