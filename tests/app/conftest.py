"""Fixtures of the app tests: timings hidden (user directories: see tests/conftest.py).

The tests are ``async def`` (Textual's ``run_test`` is async); without an async pytest
plugin in the dependencies, the hook below runs each one in a fresh event loop.
"""

from __future__ import annotations

import asyncio
import inspect

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
