"""Fixtures of the app tests: presets and results in temporary directories, timings hidden.

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
def isolated_dirs(tmp_path, monkeypatch):
    """Never touch ~/.config or ~/.local: user presets and results go to tmp dirs."""
    presets = tmp_path / "presets"
    results = tmp_path / "results"
    monkeypatch.setenv("SPECTUI_PRESET_DIR", str(presets))
    monkeypatch.setenv("SPECTUI_RESULTS_DIR", str(results))
    monkeypatch.setenv("SPECTUI_HIDE_TIMINGS", "1")
    return presets, results
