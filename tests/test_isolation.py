"""Each test has its own user directories: tests never write to the real ~/.config or
~/.local, never read each other's files, and can run in parallel and in any order."""

from __future__ import annotations

import os
import subprocess
import sys

from engine.presets import user_preset_dir
from spectui.widgets.common import results_dir


def _inside(path: str, tmp_path) -> bool:
    return os.path.realpath(path).startswith(os.path.realpath(tmp_path) + os.sep)


def test_user_directories_belong_to_the_test(tmp_path):
    """Outside tests/app too: the Plots view tests run sweeps that save a CSV."""
    for path in (user_preset_dir(), results_dir()):
        assert _inside(str(path), tmp_path), path
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME"):
        assert _inside(os.environ[name], tmp_path), name


def test_a_subprocess_sees_the_same_directories(tmp_path):
    code = (
        "from engine.presets import user_preset_dir\n"
        "from spectui.widgets.common import results_dir\n"
        "print(user_preset_dir()); print(results_dir())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    for line in out.stdout.splitlines():
        assert _inside(line, tmp_path), line


def test_the_working_directory_is_the_tests_own(tmp_path):
    assert os.path.realpath(os.getcwd()) == os.path.realpath(tmp_path)
