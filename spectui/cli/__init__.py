"""The command line: the TUI by default; run / sweep / analyze / plot / presets / serve headless.

One module per subcommand (spectui.cli.run, .sweep, ...: its flags and what it does), the
parser that gathers them (spectui.cli.parser) and the flags they share (spectui.cli.flags).
Every usage error ends with one line on stderr and exit status 2, never a traceback.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from importlib import import_module

from engine.core.config import ConfigError
from spectui.cli.parser import build_parser
from spectui.errors import UsageError


def main(argv: Sequence[str] | None = None) -> int:
    from spectui import ascii

    ascii.install()  # an ASCII-only stdout gets "+-" for "±", never a UnicodeEncodeError
    args = build_parser().parse_args(argv)
    try:
        if args.command is None:
            return _open_app(args.preset)
        return int(import_module(f"spectui.cli.{args.command}").command(args))
    except (UsageError, ConfigError, ValueError) as err:
        if not _is_user_error(err):
            raise
        return _fail(args.command, str(err))
    except BrokenPipeError:
        # The reader (e.g. `| head`) went away: stop quietly, as other filters do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except OSError as err:
        where = f"{err.filename}: " if err.filename else ""
        return _fail(args.command, f"{where}{err.strerror or err}")
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def _is_user_error(err: Exception) -> bool:
    """Errors about the user's input, as opposed to bugs (which keep their traceback)."""
    if isinstance(err, UsageError | ConfigError):
        return True
    # Imported only if already loaded: the TUI path should not pay for pandas here.
    for module, name in (
        ("engine.presets", "PresetError"),
        ("engine.analysis.analysis", "SweepDataError"),
    ):
        cls = getattr(sys.modules.get(module), name, None)
        if cls is not None and isinstance(err, cls):
            return True
    return False


def _fail(command: str | None, message: str) -> int:
    prog = f"spectui {command}" if command else "spectui"
    print(f"{prog}: error: {message}", file=sys.stderr)
    return 2


def _open_app(preset: str | None) -> int:
    # Served in a browser (textual-serve sets Textual's web driver): use ours, which ends
    # the process whenever the connection ends (see spectui.served). Textual reads this
    # variable when it is first imported, just below.
    if os.environ.get("TEXTUAL_DRIVER") == "textual.drivers.web_driver:WebDriver":
        os.environ["TEXTUAL_DRIVER"] = "spectui.served:ServedDriver"
    else:
        from spectui import ascii

        # Textual draws on stderr: one ASCII character per cell keeps its layout.
        ascii.install(sys.__stderr__, cells=True)
    from spectui.app import create_app

    create_app(preset).run()
    return 0
