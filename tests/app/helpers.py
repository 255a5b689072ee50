"""Helpers shared by the app tests."""

from __future__ import annotations

import time
from pathlib import Path

from textual.widgets import Input

import spectui

# The app's own stylesheet, for the small host apps that show one of its views or screens.
APP_CSS = str(Path(spectui.__file__).with_name("app.tcss"))


async def settle(pilot, app, rounds: int = 3) -> None:
    """Wait until every worker finished and the messages they posted were handled."""
    for _ in range(rounds):
        await pilot.pause()
        await app.workers.wait_for_complete()
    await pilot.pause()


async def until(pilot, condition, rounds: int = 200, patience_s: float = 30.0) -> None:
    """Let the app run until ``condition()`` holds: a worker's messages, a lazily mounted
    view or a layout that follows a change of content take a few rounds of the event loop,
    more on a loaded machine. At least ``rounds`` rounds and ``patience_s`` seconds of
    waiting (a round can be 20 ms when the machine is busy with other tests: rounds alone
    ran out in 4 s under CI's load). Never asserts how long it took; fails, showing the
    screen, if it never holds."""
    from tests.app.screen import screen_text

    deadline = time.monotonic() + patience_s
    done = 0
    while done < rounds or time.monotonic() < deadline:
        if condition():
            return
        await pilot.pause()
        done += 1
    assert condition(), "never held; the screen:\n" + screen_text(pilot.app)


async def type_into(pilot, app, field: str, text: str) -> Input:
    """Focus a form field, clear it and type ``text`` key by key."""
    field_input = app.query_one(f"#{field}", Input)
    field_input.focus()
    field_input.value = ""
    await pilot.pause()
    for char in text:
        await pilot.press(char)
    await pilot.pause()
    return field_input


async def set_field(pilot, app, field: str, text: str) -> Input:
    """Focus a form field and put ``text`` in it at once, as a paste would: the form reads
    it as it reads keys typed (its Input posts Changed). ``helpers.type_into`` types it key
    by key (~0.1 s a key), for tests about typing."""
    field_input = app.query_one(f"#{field}", Input)
    field_input.focus()
    field_input.value = text
    await pilot.pause()
    return field_input


def notifications(app) -> list[str]:
    """Every notification the app has shown, oldest first, expired or not (the toasts on
    screen now: ``app._notifications``)."""
    return [n.message for n in app.__dict__.get("notified", [])]
