"""Issue #41, the app's rough edges: a burst of keys into a form field (an unbracketed paste
arrives as one key event each) costs one validation and one computation, not one per key,
and ctrl+q after it quits without handling the keys still queued.

The keys go in as a terminal's do: through the driver (``send_message``), all queued before
the app handles the first.
"""

from __future__ import annotations

from textual import events

from spectui.app import create_app
from spectui.widgets.param_form import FieldInput
from tests.app.app_waits import booted
from tests.app.helpers import notifications, until
from tests.app.hosts_form import FormHost, caught_up


def _burst(app, text: str) -> None:
    """Queue one key event per character, as the terminal's driver does."""
    for char in text:
        key = events.Key(char, char)
        key.set_sender(app)
        app._driver.send_message(key)


async def test_a_burst_of_750_keys_is_validated_and_posted_once_and_refused_once():
    """750 digits into K (at most 64 characters): the first 64 are taken, the text is read
    a handful of times (not once per key), the form posts a few times (not 64) and one
    toast (not 686) says the rest was not taken."""
    app = FormHost("tiny")
    async with app.run_test(size=(80, 24)) as pilot:
        await caught_up(pilot, app)
        field = app.query_one("#k", FieldInput)
        field.focus()
        field.value = ""
        await caught_up(pilot, app)
        settled, posted = app.form.settled, app.posted
        _burst(app, "7" * 750)
        await until(pilot, lambda: app.form.reasons.get("k") is not None)
        await caught_up(pilot, app)
        assert field.value == "7" * 64
        expected = f"{'7' * 64} is not allowed; expected an integer in [1, 1024]"
        assert app.form.reasons["k"] == expected
        assert app.form.settled - settled <= 3
        assert app.posted - posted <= 3
        refused = [m for m in notifications(app) if "not taken" in m]
        assert refused == ["K: at most 64 characters: the text was not taken"]


async def test_a_burst_is_typed_as_one_text_and_ctrl_q_drops_the_keys_queued_before_it(
    monkeypatch,
):
    """In the app, 100 keys queued into K are typed as one text (not key by key, each
    through the bindings); then 5,000 keys queued, and ctrl+q: the app quits and the field
    handles none of them (before: all 5,000, before the quit was seen)."""
    handled: list[str] = []  # keys the field handled one by one
    typed: list[str] = []  # texts typed into it at once
    on_key, type_text = FieldInput._on_key, FieldInput.type_text

    async def counted(self, event):  # type: ignore[no-untyped-def]
        handled.append(event.key)
        await on_key(self, event)

    def counted_text(self, text):  # type: ignore[no-untyped-def]
        typed.append(text)
        type_text(self, text)

    monkeypatch.setattr(FieldInput, "_on_key", counted)
    monkeypatch.setattr(FieldInput, "type_text", counted_text)
    app = create_app("tiny", replay_autoplay=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await booted(pilot, app)
        field = app.query_one("#k", FieldInput)
        field.focus()
        field.value = ""
        await pilot.pause()
        _burst(app, "12" + "7" * 98)
        await until(pilot, lambda: field.value == "12" + "7" * 62)
        assert handled == [] and typed == ["12" + "7" * 98]
        refused = [m for m in notifications(app) if "not taken" in m]
        assert refused == ["K: at most 64 characters: the text was not taken"]
        field.value = "5"
        await pilot.pause()
        _burst(app, "7" * 5000)
        quit_key = events.Key("ctrl+q", None)
        quit_key.set_sender(app)
        app._driver.send_message(quit_key)
        await until(pilot, lambda: app._exit)
    assert app.return_code == 0
    assert handled == [] and len(typed) == 1
    assert field.value == "5"


async def test_the_terminal_driver_hands_each_key_over_with_a_callback(monkeypatch):
    """Textual's driver ran a coroutine per key (a task and two futures: most of the cost
    of reading 100 KB of keys); the app's posts each with one callback, in order, and
    printable keys that come one after another are typed as one text."""
    import asyncio

    from spectui.app import quick_driver

    def refused(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("a coroutine per key")

    app = FormHost("tiny")
    async with app.run_test(size=(80, 24)) as pilot:
        await caught_up(pilot, app)
        field = app.query_one("#k", FieldInput)
        field.focus()
        field.value = ""
        await caught_up(pilot, app)
        driver = app._driver
        monkeypatch.setattr(asyncio, "run_coroutine_threadsafe", refused)
        send = quick_driver(type(driver)).send_message
        for char in "12":
            key = events.Key(char, char)
            key.set_sender(app)
            send(driver, key)
        await until(pilot, lambda: field.value == "12")
        await caught_up(pilot, app)
        assert app.config is not None and app.config.k == 12
