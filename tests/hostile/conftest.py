"""The hostile cases run apps too: the app tests' hook and fixtures (tests/app/conftest.py)."""

from tests.app.conftest import (  # noqa: F401  (pytest finds hooks and fixtures by name)
    _app_environment,
    _notification_log,
    _shipped_presets_checked_once,
    pytest_pyfunc_call,
)
