"""An ASCII-only terminal gets ASCII stand-ins, never a UnicodeEncodeError (spectui.ascii)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from spectui.ascii import CELL_ERRORS, ERRORS, GLYPHS, install, stand_in

ASCII_LOCALE = {"PYTHONCOERCECLOCALE": "0", "PYTHONUTF8": "0", "LC_ALL": "C"}


def _spectui_ascii(*args: str) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONIOENCODING", "LANG")}
    env.update(ASCII_LOCALE, NO_COLOR="1", COLUMNS="100")
    return subprocess.run(
        [sys.executable, "-m", "spectui", *args], capture_output=True, env=env, timeout=300
    )


def test_the_ascii_locale_really_is_ascii():
    env = {**os.environ, **ASCII_LOCALE}
    env.pop("PYTHONIOENCODING", None)
    code = "import sys; print(sys.stdout.encoding)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.stdout.strip().lower() in ("ascii", "ansi_x3.4-1968")


def test_run_prints_plus_minus_on_an_ascii_stdout():
    out = _spectui_ascii("run", "--n-sequences", "20")
    assert out.returncode == 0, out.stderr.decode(errors="replace")
    assert out.stdout.isascii()
    assert b" +- " in out.stdout and b"speedup (Monte Carlo)" in out.stdout


def test_sweep_and_analyze_on_an_ascii_stdout(tmp_path):
    csv = tmp_path / "tiny.csv"
    sweep = _spectui_ascii("sweep", "--preset", "tiny", "--out", str(csv))
    assert sweep.returncode == 0, sweep.stderr.decode(errors="replace")
    assert sweep.stderr.isascii()
    analyze = _spectui_ascii("analyze", str(csv))
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
