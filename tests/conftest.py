"""Shared fixtures: user presets never touch the real ~/.config."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _isolated_user_presets(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("SPECTUI_PRESET_DIR", str(tmp_path_factory.mktemp("user-presets")))


# Property tests draw the same examples on every run: a red test is reproducible, and
# statistical tolerances are judged on a fixed set of seeds.
from hypothesis import settings  # noqa: E402

settings.register_profile("spectui", derandomize=True, deadline=None, print_blob=True)
settings.load_profile("spectui")
