"""The built wheel works once installed: shipped presets are package data, not repo files.

Builds the wheel (pip, with build isolation: the build backend comes from the index), installs
it into a fresh venv without pip, and runs ``spectui`` from outside the repository. The runtime
dependencies are not downloaded again: a .pth file points the fresh venv at this interpreter's
site-packages, *after* its own, so the code that runs is the wheel's and never the checkout.

Marked ``wheel`` (about 10 s); it runs in ``make test`` and in CI. Deselect with ``-m "not wheel"``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.wheel


def _run(*args: str | Path, cwd: Path, env: dict[str, str] | None = None):
    out = subprocess.run(
        [str(a) for a in args], capture_output=True, text=True, cwd=cwd, env=env, timeout=300
    )
    assert out.returncode == 0, f"{args}: {out.stdout}\n{out.stderr}"
    return out


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel installed; returns its bin directory."""
    tmp = tmp_path_factory.mktemp("wheel")
    # Built from a copy: setuptools writes build/ beside the sources and reuses what it finds.
    source = tmp / "source"
    skip = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("engine", "spectui"):
        shutil.copytree(REPO / name, source / name, ignore=skip)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    dist = tmp / "dist"
    _run(
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "--no-deps",
        "--quiet",
        "--wheel-dir",
        dist,
        source,
        cwd=tmp,
    )
    (wheel,) = dist.glob("spectui-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        assert any(name.endswith("default.toml") for name in archive.namelist())

    venv = tmp / "venv"
    _run(sys.executable, "-m", "venv", "--without-pip", venv, cwd=tmp)
    python = venv / "bin" / "python"
    purelib = _run(
        python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])", cwd=tmp
    ).stdout.strip()
    # Dependencies from the test environment, searched after the venv's own site-packages.
    Path(purelib, "zz_test_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    _run(
        sys.executable,
        "-m",
        "pip",
        "--python",
        python,
        "install",
        "--no-deps",
        "--no-index",
        "--quiet",
        wheel,
        cwd=tmp,
    )
    return venv / "bin"


def _env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(NO_COLOR="1", COLUMNS="120", SPECTUI_PRESET_DIR=str(tmp / "no-user-presets"))
    return env


def test_the_installed_package_is_the_wheel_not_the_checkout(installed: Path, tmp_path: Path):
    out = _run(
        installed / "python",
        "-c",
        "import engine, spectui; print(engine.__file__); print(spectui.__file__)",
        cwd=tmp_path,
        env=_env(tmp_path),
    )
    for line in out.stdout.splitlines():
        assert Path(line).is_relative_to(installed.parent), line


def test_installed_spectui_lists_the_shipped_presets(installed: Path, tmp_path: Path):
    out = _run(installed / "spectui", "presets", cwd=tmp_path, env=_env(tmp_path))
    for name in ("default", "seed-576", "tiny"):
        assert name in out.stdout


def test_installed_spectui_runs_the_default_preset(installed: Path, tmp_path: Path):
    out = _run(
        installed / "spectui", "run", "--preset", "default", cwd=tmp_path, env=_env(tmp_path)
    )
    assert "speedup (exact)" in out.stdout
