"""The web server of ``spectui serve``: textual-serve's, made safe to leave running.

* Every HTTP and websocket request must carry the server's token, as ``?token=`` in its
  URL or as the cookie the page sets when it is opened with one; anything else gets 403.
  The token is printed once, in the URL, and never logged (the access log leaves out
  query strings).
* SIGTERM or SIGINT ends the server, every app and every process an app started within
  :data:`SHUTDOWN_S`, browsers connected or not: each app runs in a process group of its
  own, is asked to quit, and what is left of the group after :data:`QUIT_GRACE_S` is
  killed. (textual-serve waited for every browser to leave first.)
* A websocket message that is not one of the browser's packets, or a browser that goes
  away mid-write, is logged in one line; the session goes on, or ends, quietly.

Imported only by ``spectui serve``: it needs aiohttp and textual-serve, which the served
apps themselves do not load.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import secrets
import signal
import sys
import threading
import time
from typing import Any

import aiohttp_jinja2
from aiohttp import WSCloseCode, WSMsgType, web
from aiohttp.abc import AbstractAccessLogger
from aiohttp.web_runner import GracefulExit
from textual_serve.app_service import AppService
from textual_serve.server import Server as TextualServer
from textual_serve.server import to_int

from spectui.serve_common import base_url, reap_children

log = logging.getLogger("textual-serve")

QUIT_GRACE_S = 2.5
"""How long apps have to quit on their own once the server is stopped."""
SHUTDOWN_S = 4.5
"""The server process is gone this long after SIGTERM or SIGINT, whatever happens."""
WS_CLOSE_S = 1.0
# A browser's terminal is at most this many cells a side (textual-serve's client sends
# its xterm's size; anything else is not a browser of ours).
MAX_CELLS = 1000


def kill_group(pgid: int) -> None:
    """SIGKILL every process left in the process group ``pgid`` (none left: nothing)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


class _AppService(AppService):
    """textual-serve's app process, in a process group (and session) of its own: the
    server can end it with everything it started, and a terminal's Ctrl+C reaches the
    server only, which then stops the apps in order."""

    async def _open_app_process(self, width: int = 80, height: int = 24) -> Any:
        self._process = process = await asyncio.create_subprocess_shell(
            self.command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=self._build_environment(width=width, height=height),
            start_new_session=True,
        )
        assert process.stdin is not None
        self._stdin = process.stdin
        return process


class _AccessLogger(AbstractAccessLogger):
    """One line a request, without its query string (which holds the token)."""

    def log(self, request: web.BaseRequest, response: web.StreamResponse, time: float) -> None:
        self.logger.info(
            '%s "%s %s" %s', request.remote, request.method, request.path, response.status
        )


class Server(TextualServer):
    """textual-serve's server with a token on every request and a bounded shutdown."""

    def __init__(self, command: str, *, host: str, port: int, title: str, token: str) -> None:
        super().__init__(command, host=host, port=port, title=title)
        self.token = token
        self.cookie = f"spectui-token-{port}"  # cookies are per host, not per port
        self.public_url = base_url(host, port)
        self._apps: dict[int, asyncio.subprocess.Process] = {}  # pgid: app, while it runs
        self._sockets: set[web.WebSocketResponse] = set()
        self._stopping = False
        self._waits: set[asyncio.Future[None]] = set()

    # Requests ------------------------------------------------------------------------

    def _has_token(self, request: web.Request) -> bool:
        given = request.query.get("token") or request.cookies.get(self.cookie) or ""
        return secrets.compare_digest(given.encode(), self.token.encode())

    @web.middleware
    async def _check_token(self, request: web.Request, handler: Any) -> web.StreamResponse:
        if not self._has_token(request):
            raise web.HTTPForbidden(text="403: this server wants the token of the URL it printed\n")
        origin = request.headers.get("Origin")
        if origin is not None and origin.split("://", 1)[-1] != request.host:
            # A page of another site that got the cookie sent along (a cross-site websocket).
            raise web.HTTPForbidden(text="403: cross-origin request\n")
        response: web.StreamResponse = await handler(request)
        if "token" in request.query and not response.prepared:
            # The page's own requests (scripts, styles, its websocket) carry the cookie.
            response.set_cookie(self.cookie, self.token, httponly=True, samesite="Strict")
        return response

    async def _make_app(self) -> web.Application:
        app = await super()._make_app()
        app.middlewares.append(self._check_token)
        app.on_cleanup.append(reap_children)
        return app

    @aiohttp_jinja2.template("app_index.html")
    async def handle_index(self, request: web.Request) -> dict[str, Any]:
        # URLs from the address the browser used (textual-serve's come from the bound
        # host: ws://0.0.0.0:... for a server on every interface).
        router = request.app.router
        scheme = "wss" if request.scheme == "https" else "ws"
        static = router["static"].url_for(filename="/")
        return {
            "font_size": to_int(request.query.get("fontsize", "16"), 16),
            "app_websocket_url": f"{scheme}://{request.host}{router['websocket'].url_for()}",
            "config": {
                "static": {"url": f"{request.scheme}://{request.host}{static}".rstrip("/") + "/"}
            },
            "application": {"name": self.title},
        }

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        websocket = web.WebSocketResponse(heartbeat=15, timeout=WS_CLOSE_S)
        width = _cells(request.query.get("width"), 80)
        height = _cells(request.query.get("height"), 24)
        service: _AppService | None = None
        self._sockets.add(websocket)
        try:
            await websocket.prepare(request)
            if self._stopping:
                return websocket
            service = _AppService(
                self.command,
                write_bytes=websocket.send_bytes,
                write_str=websocket.send_str,
                close=websocket.close,
                download_manager=self.download_manager,
                debug=self.debug,
            )
            await service.start(width, height)
            assert service._process is not None
            self._watch(service._process)
            await self._process_messages(websocket, service)
        except asyncio.CancelledError:
            pass
        except Exception as error:  # the browser went away mid-write, most likely
            log.warning("%s: connection ended: %s", request.remote, _said(error))
        finally:
            self._sockets.discard(websocket)
            with contextlib.suppress(Exception):
                await websocket.close()
            if service is not None:
                with contextlib.suppress(Exception):
                    await service.stop()
        return websocket

    async def _process_messages(
        self, websocket: web.WebSocketResponse, app_service: AppService
    ) -> None:
        async for message in websocket:
            if message.type != WSMsgType.TEXT:
                continue
            try:
                kind, data = _packet(message.data)
            except ValueError as err:
                log.warning("ignored a websocket message: %s", err)
                continue
            if kind == "stdin":
                await app_service.send_bytes(data.encode("utf-8"))
            elif kind == "resize":
                await app_service.set_terminal_size(data["width"], data["height"])
            elif kind == "ping":
                await websocket.send_json(["pong", data])
            elif kind == "blur":
                await app_service.blur()
            elif kind == "focus":
                await app_service.focus()

    # Processes -----------------------------------------------------------------------

    def _watch(self, process: asyncio.subprocess.Process) -> None:
        """Keep ``process`` (an app, leader of its group) until it exits; then kill what
        is left of its group (pool workers, multiprocessing's resource tracker)."""
        self._apps[process.pid] = process

        async def wait() -> None:
            await process.wait()
            self._apps.pop(process.pid, None)
            kill_group(process.pid)

        task = asyncio.ensure_future(wait())
        self._waits.add(task)
        task.add_done_callback(self._waits.discard)

    def request_exit(self) -> None:
        if self._stopping:  # a second Ctrl+C: now
            self._end_now()
        self._stopping = True
        watchdog = threading.Timer(SHUTDOWN_S, self._end_now)
        watchdog.daemon = True
        watchdog.start()
        raise GracefulExit()

    def _end_now(self) -> None:
        for pgid in list(self._apps):
            kill_group(pgid)
        os._exit(1)

    async def on_shutdown(self, app: web.Application) -> None:
        """Ask every app to quit and close every browser's websocket; kill the process
        groups of the apps still running after QUIT_GRACE_S."""
        self._stopping = True
        deadline = time.monotonic() + QUIT_GRACE_S
        processes = list(self._apps.values())
        for process in processes:
            if process.stdin is not None:
                with contextlib.suppress(Exception):
                    process.stdin.write(AppService.encode_packet(b"M", b'{"type": "quit"}'))
        await asyncio.gather(
            *(
                asyncio.wait_for(ws.close(code=WSCloseCode.GOING_AWAY), WS_CLOSE_S)
                for ws in list(self._sockets)
            ),
            return_exceptions=True,
        )
        waits = [asyncio.ensure_future(p.wait()) for p in processes]
        if waits:
            await asyncio.wait(waits, timeout=max(0.0, deadline - time.monotonic()))
        for process in processes:
            if process.returncode is None:
                kill_group(process.pid)
        if waits:
            await asyncio.wait(waits, timeout=WS_CLOSE_S)

    async def on_startup(self, app: web.Application) -> None:
        pass  # textual-serve's banner: see _announce

    def _announce(self, *_: object) -> None:
        """Once the server listens (aiohttp's own "Running on" message, replaced): the URL,
        with the token, said once."""
        print(f"Serving {self.title} on {self.public_url}/?token={self.token}", flush=True)
        print("Press Ctrl+C to quit", flush=True)

    def initialize_logging(self) -> None:
        # Plain lines on stderr: textual-serve's handler drew every traceback with its
        # local variables, the token among them.
        logging.basicConfig(level="INFO", format="%(levelname)s %(message)s", stream=sys.stderr)

    def serve(self, debug: bool = False) -> None:
        self.debug = debug
        self.initialize_logging()
        loop = asyncio.new_event_loop()
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(signal.SIGINT, self.request_exit)
            loop.add_signal_handler(signal.SIGTERM, self.request_exit)
        web.run_app(
            self._make_app(),
            host=self.host,
            port=self.port,
            handle_signals=False,
            loop=loop,
            print=self._announce,
            shutdown_timeout=WS_CLOSE_S,
            access_log_class=_AccessLogger,
        )


def _cells(text: str | None, default: int) -> int:
    value = to_int(text or "", default)
    return value if 1 <= value <= MAX_CELLS else default


def _packet(text: str) -> tuple[str, Any]:
    """The kind and data of one of the browser's messages, checked; ValueError says what
    is wrong with it (without echoing it: it may be anything)."""
    try:
        envelope = json.loads(text)
    except ValueError:
        raise ValueError(f"not JSON ({len(text)} characters)") from None
    if not (isinstance(envelope, list) and envelope and isinstance(envelope[0], str)):
        raise ValueError("not a [kind, data] list")
    kind, data = envelope[0], envelope[1] if len(envelope) > 1 else None
    if kind == "stdin" and not isinstance(data, str):
        raise ValueError("stdin data is not text")
    if kind == "resize":
        sizes = [data.get(side) if isinstance(data, dict) else None for side in ("width", "height")]
        if not all(type(n) is int and 1 <= n <= MAX_CELLS for n in sizes):
            raise ValueError(f"resize wants a width and height in [1, {MAX_CELLS}]")
    return kind, data


def _said(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
