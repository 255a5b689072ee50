"""An ASCII-only terminal gets ASCII stand-ins, never a UnicodeEncodeError (spectui.ascii)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from spectui.ascii import CELL_ERRORS, ERRORS, GLYPHS, install, stand_in

ASCII_LOCALE = {"PYTHONCOERCECLOCALE": "0", "PYTHONUTF8": "0", "LC_ALL": "C"}


# The commands of the tests below, one after another in one process under the ASCII locale
# (one start-up, not three): each through main(), as `python -m spectui` runs it, from the
# streams as Python set them up (their error handlers put back after each); after each, a
# separator line on stdout and on stderr, and its exit status on stdout.
SEPARATOR = "----- spectui-ascii-test: next command -----"
SESSION = f"""
import json, sys, traceback
from spectui.cli import main

errors = sys.stdout.errors, sys.stderr.errors
for args in json.loads(sys.argv[1]):
    try:
        status = main(args)
    except SystemExit as exit_:
        status = exit_.code
    except Exception:
        traceback.print_exc()
        status = 1
    sys.stdout.reconfigure(errors=errors[0])
    sys.stderr.reconfigure(errors=errors[1])
    print({SEPARATOR!r}, flush=True)
    print({SEPARATOR!r}, file=sys.stderr, flush=True)
    print(json.dumps(status), flush=True)
"""


@dataclass
class Ran:
    returncode: int
    stdout: bytes
    stderr: bytes


def _spectui_ascii(home: Path, *commands: list[str]) -> list[Ran]:
    """Each of ``commands`` (a list of arguments) as ``spectui ARGS`` under the ASCII locale,
    in one process, in ``home`` (its working directory and user directories)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONIOENCODING", "LANG")}
    env.update(ASCII_LOCALE, NO_COLOR="1", COLUMNS="100")
    # As tests/conftest.py's isolated_dirs gives a test (this runs before it, once a module)
    env.update(SPECTUI_PRESET_DIR=str(home / "presets"), SPECTUI_RESULTS_DIR=str(home / "results"))
    for name in ("CONFIG", "DATA", "STATE", "CACHE"):
        env[f"XDG_{name}_HOME"] = str(home / f"xdg-{name.lower()}")
    env.pop("MPLCONFIGDIR", None)
    out = subprocess.run(
        [sys.executable, "-c", SESSION, json.dumps(commands)],
        capture_output=True,
        cwd=home,
        env=env,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr.decode(errors="replace")
    separator = SEPARATOR.encode() + b"\n"
    # stdout: OUT0 SEPARATOR STATUS0 OUT1 SEPARATOR STATUS1 ...; stderr: ERR0 SEPARATOR ERR1 ...
    chunks, errs = out.stdout.split(separator), out.stderr.split(separator)
    assert len(chunks) == len(errs) == len(commands) + 1, out
    statuses = [int(chunk.split(b"\n", 1)[0]) for chunk in chunks[1:]]
    stdouts = [chunks[0], *(chunk.split(b"\n", 1)[1] for chunk in chunks[1:-1])]
    return [Ran(*ran) for ran in zip(statuses, stdouts, errs[:-1], strict=True)]


@pytest.fixture(scope="module")
def ascii_commands(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Ran]:
    home = tmp_path_factory.mktemp("ascii")
    csv = home / "tiny.csv"
    run, sweep, analyze = _spectui_ascii(
        home,
        ["run", "--n-sequences", "20"],
        ["sweep", "--preset", "tiny", "--out", str(csv)],
        ["analyze", str(csv)],
    )
    return {"run": run, "sweep": sweep, "analyze": analyze}


def test_the_ascii_locale_really_is_ascii():
    env = {**os.environ, **ASCII_LOCALE}
    env.pop("PYTHONIOENCODING", None)
    code = "import sys; print(sys.stdout.encoding)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.stdout.strip().lower() in ("ascii", "ansi_x3.4-1968")


def test_run_prints_plus_minus_on_an_ascii_stdout(ascii_commands):
    out = ascii_commands["run"]
    assert out.returncode == 0, out.stderr.decode(errors="replace")
    assert out.stdout.isascii()
    assert b" +- " in out.stdout and b"speedup (Monte Carlo)" in out.stdout


def test_sweep_and_analyze_on_an_ascii_stdout(ascii_commands):
    sweep = ascii_commands["sweep"]
    assert sweep.returncode == 0, sweep.stderr.decode(errors="replace")
    assert sweep.stderr.isascii()
    analyze = ascii_commands["analyze"]
    assert analyze.returncode == 0, analyze.stderr.decode(errors="replace")
    assert analyze.stdout.isascii()
    assert b"Optimal K" in analyze.stdout


def test_the_command_line_stand_ins_are_the_readable_ones():
    install()
    assert "1.2 ± 0.1 → 3×, ≈ 4…".encode("ascii", ERRORS) == b"1.2 +- 0.1 -> 3x, ~ 4..."


@pytest.mark.parametrize(
    "char", [*GLYPHS, "─", "│", "┌", "╋", "▊", "▼", "▶", "é", "✔", "\N{SNOWMAN}"]
)
def test_the_app_stand_ins_keep_every_cell_in_place(char):
    # Textual lays the screen out in cells; one character must stay one character.
    install()
    encoded = char.encode("ascii", CELL_ERRORS)
    assert len(encoded) == 1 and encoded == stand_in(char, cells=True).encode()


def test_box_drawing_becomes_lines_and_corners():
    assert [stand_in(c, cells=True) for c in "─│┌┤"] == ["-", "|", "+", "+"]
