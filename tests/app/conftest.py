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
def _hidden_timings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rates, ETAs and durations vary from run to run: snapshots and asserts do without."""
    monkeypatch.setenv("SPECTUI_HIDE_TIMINGS", "1")
