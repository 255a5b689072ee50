"""Fixtures of the app tests: timings hidden (user directories: see tests/conftest.py).

The tests are ``async def`` (Textual's ``run_test`` is async); without an async pytest
plugin in the dependencies, the hook below runs each one in a fresh event loop.
"""

from __future__ import annotations

import asyncio
import inspect
from pathlib import Path

import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    if not inspect.iscoroutinefunction(pyfuncitem.obj):
        return None
    names = pyfuncitem._fixtureinfo.argnames
    asyncio.run(pyfuncitem.obj(**{name: pyfuncitem.funcargs[name] for name in names}))
    return True


@pytest.fixture(autouse=True)
def _app_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rates, ETAs and durations vary from run to run: snapshots and asserts do without.
    One sweep process per app (as on a 2-core machine): with pytest-xdist on N cores, N
    apps at once would otherwise start N - 1 processes each."""
    monkeypatch.setenv("SPECTUI_HIDE_TIMINGS", "1")
    monkeypatch.setenv("SPECTUI_SWEEP_WORKERS", "1")
    monkeypatch.delenv("SPECTUI_SCHEDULER", raising=False)  # a developer's own cluster


@pytest.fixture(autouse=True)
def _notification_log(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every notification an app shows is also kept in ``app.notified`` (read it with
    ``helpers.notifications``). A toast leaves ``app._notifications`` once its timeout has
    passed in wall-clock time, which a loaded machine can exceed before a test looks."""
    from textual.app import App

    show = App._on_notify

    def show_and_keep(self: App, event) -> None:  # type: ignore[no-untyped-def]
        self.__dict__.setdefault("notified", []).append(event.notification)
        show(self, event)

    monkeypatch.setattr(App, "_on_notify", show_and_keep)


# Each shipped preset, parsed and checked once per test process: the Sweep view lists every
# preset when it mounts, just after each app's start, and regime-study alone is ~0.4 s of
# checks (5,760 combinations). Only while the user's directory has no hardware.toml or
# models.toml (their ids change what a shipped preset may name); a preset that fails to
# load is never kept, and user presets are always read afresh.
_SHIPPED_PRESETS: dict[tuple[str, str], object] = {}


@pytest.fixture(autouse=True)
def _shipped_presets_checked_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from engine import presets
    from engine.cost.specs import HARDWARE_FILE, MODELS_FILE, user_config_dir

    load = presets.load_preset_file

    def load_once(path: Path) -> presets.Preset:
        user = user_config_dir()
        if Path(path).parent != presets.SHIPPED_DIR or any(
            (user / name).exists() for name in (HARDWARE_FILE, MODELS_FILE)
        ):
            return load(path)
        key = (str(path), Path(path).read_text(encoding="utf-8"))
        if key not in _SHIPPED_PRESETS:
            _SHIPPED_PRESETS[key] = load(path)
        return _SHIPPED_PRESETS[key]  # type: ignore[return-value]

    monkeypatch.setattr(presets, "load_preset_file", load_once)
