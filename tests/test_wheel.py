"""The built wheel works once installed: the shipped presets are package data, not repo files.

Builds the sdist and the wheel from it (``python -m build``, with build isolation: the build
backend comes from the index), installs the wheel into a fresh venv without pip, and runs
``spectui`` from outside the repository. The runtime dependencies are not downloaded again: a
.pth file points the fresh venv at this interpreter's site-packages, *after* its own, so the
code that runs is the wheel's and never the checkout.

The presets live in the checkout's top-level ``presets/``; the wheel holds them inside the
engine package (``engine/shipped_presets/``), never as a top-level ``presets``.

Marked ``wheel`` (about 10 s); it runs in ``make test`` and in CI. Deselect with ``-m "not wheel"``.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from collections.abc import Iterator
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


# Every shipped preset, by file name: what the sdist, the wheel and `spectui presets` must hold.
PRESET_FILES = sorted(path.name for path in (REPO / "presets").glob("*.toml"))


@contextlib.contextmanager
def _shared(tmp_path_factory: pytest.TempPathFactory, name: str) -> Iterator[tuple[Path, bool]]:
    """A directory every test process of this run shares (xdist's workers have one base
    temporary directory above their own), held under a lock: (its path, whether an earlier
    holder made it whole). This module's tests may run in two workers at once; the build and
    the venv are then made once, not once in each."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent
    where, done = root / name, root / f"{name}.done"
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            ready = done.exists()
            if not ready:
                shutil.rmtree(where, ignore_errors=True)  # an earlier holder's failed try
                where.mkdir()
            yield where, ready
            done.touch()
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The sdist and the wheel built from it, as ``python -m build`` makes them."""
    with _shared(tmp_path_factory, "wheel-dist") as (tmp, ready):
        if not ready:
            _build(tmp)
    dist = tmp / "dist"
    (sdist,) = dist.glob("spectui-*.tar.gz")
    (wheel,) = dist.glob("spectui-*.whl")
    return sdist, wheel


def _build(tmp: Path) -> None:
    # Built from a copy: setuptools writes build/ beside the sources and reuses what it finds.
    source = tmp / "source"
    skip = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("engine", "spectui", "presets"):
        shutil.copytree(REPO / name, source / name, ignore=skip)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    _run(sys.executable, "-m", "build", "--outdir", tmp / "dist", source, cwd=tmp)


@pytest.fixture(scope="module")
def installed(built: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel installed; returns its bin directory."""
    _, wheel = built
    with _shared(tmp_path_factory, "wheel-venv") as (tmp, ready):
        if not ready:
            _install(wheel, tmp)
    return tmp / "venv" / "bin"


def _install(wheel: Path, tmp: Path) -> None:
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


def test_the_sdist_holds_the_presets(built: tuple[Path, Path]):
    sdist, _ = built
    with tarfile.open(sdist) as archive:
        names = {Path(name).relative_to(Path(name).parts[0]) for name in archive.getnames()}
    assert PRESET_FILES
    missing = [name for name in PRESET_FILES if Path("presets", name) not in names]
    assert not missing, f"not in the sdist: {missing}"


def test_the_wheel_holds_the_presets_inside_the_engine_package(built: tuple[Path, Path]):
    _, wheel = built
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    assert PRESET_FILES
    missing = [name for name in PRESET_FILES if f"engine/shipped_presets/{name}" not in names]
    assert not missing, f"not in the wheel: {missing}"
    # Not a top-level `presets` in site-packages, which any project could also install.
    assert not [name for name in names if name.startswith("presets/")]


def test_the_wheel_holds_every_package_of_the_checkout(built: tuple[Path, Path]):
    """pyproject.toml lists the packages (mapping presets/ into one needs it): a new
    sub-package missing from that list fails here."""
    _, wheel = built
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    packages = [
        init.relative_to(REPO).as_posix()
        for top in ("engine", "spectui")
        for init in sorted((REPO / top).rglob("__init__.py"))
        if "__pycache__" not in init.parts
    ]
    assert "engine/__init__.py" in packages
    missing = [init for init in packages if init not in names]
    assert not missing, f"add to [tool.setuptools] packages in pyproject.toml: {missing}"


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


def test_installed_spectui_lists_every_shipped_preset(installed: Path, tmp_path: Path):
    out = _run(installed / "spectui", "presets", cwd=tmp_path, env=_env(tmp_path))
    # The table's name column: the first cell of each row that starts a preset.
    listed = {
        cells[1].strip()
        for line in out.stdout.splitlines()
        if len(cells := line.split("│")) > 2 and cells[1].strip()
    }
    assert listed == {Path(name).stem for name in PRESET_FILES}


def test_installed_spectui_runs_the_default_preset(installed: Path, tmp_path: Path):
    out = _run(
        installed / "spectui", "run", "--preset", "default", cwd=tmp_path, env=_env(tmp_path)
    )
    assert "speedup (exact)" in out.stdout


def test_installed_spectui_validates_against_the_shipped_table(installed: Path, tmp_path: Path):
    """The measurements table, the specs its entries name and the temperature table are
    package data too (one entry of each table asked for; the overhead is fitted to the whole
    measurements table all the same)."""
    only = "--only", "vllm-20780-eagle1-k3,lev-gpt-6m"
    out = _run(installed / "spectui", "validate", *only, cwd=tmp_path, env=_env(tmp_path))
    assert "vllm-20780-eagle1-k3    1.648" in out.stdout and "from specs, all" in out.stdout
    assert "lev-gpt-6m           0.88" in out.stdout


def test_installed_engine_reads_the_shipped_acceptance_catalog(installed: Path, tmp_path: Path):
    """The acceptance catalog (engine/acceptance/data/catalog.toml) is package data too."""
    from engine.acceptance.catalog import load_catalog

    code = "from engine.acceptance.catalog import load_catalog; print(len(load_catalog().rows))"
    out = _run(installed / "python", "-c", code, cwd=tmp_path, env=_env(tmp_path))
    assert out.stdout.strip() == str(len(load_catalog().rows))
