"""``spectui serve``: the app in a web browser (textual-serve), on loopback unless
``--allow-remote``, confined to the folders it may open."""

from __future__ import annotations

import argparse
import secrets
import shlex
import sys
from pathlib import Path
from typing import Any

from engine.presets import load_preset
from spectui.cli.flags import folder
from spectui.errors import UsageError, bounded_int


def add_parser(sub: Any) -> None:
    serve = sub.add_parser("serve", help="serve the app in a web browser (textual-serve)")
    serve.add_argument(
        "--host",
        default="127.0.0.1",
        help="bind address (default: 127.0.0.1, this machine only); any other needs --allow-remote",
    )
    serve.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow a --host other machines reach (0.0.0.0, '', ::, an interface's address): "
        "anyone with the printed URL, token included, uses the app and this machine's files",
    )
    serve.add_argument("--port", metavar="N", type=bounded_int("--port", 65535), default=8000)
    serve.add_argument("--preset", metavar="NAME|PATH")
    serve.add_argument(
        "--files",
        metavar="DIR",
        action="append",
        type=folder,
        help="a folder the served app may open files in, besides the working directory and "
        "spectui's own (repeatable); paths typed in the app that lead elsewhere are refused",
    )


def command(args: argparse.Namespace) -> int:
    try:
        import textual_serve.server  # noqa: F401
    except ImportError:
        raise UsageError("textual-serve is not installed: pip install 'spectui[serve]'") from None
    from spectui.served import is_loopback, serve

    where = "every interface" if args.host in ("", "0.0.0.0", "::") else repr(args.host)
    remote = not is_loopback(args.host)
    if remote and not args.allow_remote:
        raise UsageError(
            f"--host {args.host!r} serves the app, and through it this machine's files, to "
            "other machines: add --allow-remote to mean it (or leave --host out: loopback)"
        )
    program = [sys.executable, "-m", "spectui"]
    if args.preset:
        load_preset(args.preset)  # fail here, with one line, rather than in the browser
        program += ["--preset", str(Path(args.preset))]
    if remote:
        print(
            f"spectui serve: warning: listening on {where}, port {args.port}: anyone who "
            "reaches it with the URL below uses the app and this machine's files as you",
            file=sys.stderr,
        )
    from spectui import confined

    # What a browser's app may open: its own folders, the working directory, --files; set
    # for the app's shell command only (this process's environment stays as it was).
    folders = f"{confined.ENV}={shlex.quote(confined.environment(args.files or ()))}"
    token = secrets.token_urlsafe(32)
    line = f"{folders} {shlex.join(program)}"
    serve(line, host=args.host, port=args.port, title="spectui", token=token)
    return 0
