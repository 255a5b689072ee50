"""The app tests' own helpers do not depend on how fast the machine is."""

from __future__ import annotations

import asyncio

from textual.app import App, ComposeResult
from textual.message import Message
from textual.widgets import Label

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


class _SlowLabel(Label):
    """A label whose text changes in a handler that waits part-way (as a handler awaiting a
    mount or a worker does)."""

    class Go(Message):
        pass

    async def on__slow_label_go(self, message: Message) -> None:
        # The label's queue is empty all along: only its handler is busy.
        await asyncio.sleep(0.05)
        self.update("after")


class _Slow(App[None]):
    def compose(self) -> ComposeResult:
        yield _SlowLabel("before")


async def test_a_pause_waits_for_a_handler_in_progress_and_the_screen_shows_its_result(
    monkeypatch,
):
    """tests/conftest.py's pause asks only the widgets that are not idle: one in the middle
    of a handler, with nothing queued, is not idle, so the pause waits for it; and the
    screen read after it shows what the handler did (headless updates are rendered when
    read). The pause's other wait, for an idle CPU, is left out here: on a quiet machine
    it would hide a widget that was not waited for."""
    import textual.pilot

    from tests.app.screen import screen_text

    async def at_once(*_: object) -> None:  # Textual's wait for an idle CPU: none here
        await asyncio.sleep(0)

    monkeypatch.setattr(textual.pilot, "wait_for_idle", at_once)
    app = _Slow()
    async with app.run_test(size=(20, 3)) as pilot:
        await pilot.pause()
        assert "before" in screen_text(app)
        app.query_one(_SlowLabel).post_message(_SlowLabel.Go())
        for _ in range(3):  # the label takes the message: its queue is empty again
            await asyncio.sleep(0)
        await pilot.pause()
        assert "after" in screen_text(app)
