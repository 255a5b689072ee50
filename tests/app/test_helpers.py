"""The app tests' own helpers do not depend on how fast the machine is."""

from __future__ import annotations

from textual.app import App

from tests.app.helpers import notifications


async def test_notifications_keeps_a_toast_that_has_expired(monkeypatch):
    # As on a loaded machine where a test looks only after the toast's timeout has passed.
    monkeypatch.setattr(App, "NOTIFICATION_TIMEOUT", 0.0)
    app: App[None] = App()
    async with app.run_test(size=(40, 10)) as pilot:
        app.notify("first")
        app.notify("second", severity="warning")
        await pilot.pause()
        assert list(app._notifications) == []  # gone from the screen
        assert notifications(app) == ["first", "second"]  # but the user was told
