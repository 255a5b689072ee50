"""Waits on the whole app's states (``create_app(...)``), for tests that boot it: each waits
only as long as the state takes to come (helpers.until), not a fixed number of rounds."""

from __future__ import annotations

from tests.app.helpers import until


def is_up(app) -> bool:
    """The form is on screen and the app has handled the first values it posted (before
    that, the form's first values would replace a configuration a test posts)."""
    return bool(app._up) and app.form.ready


async def booted(pilot, app) -> None:
    """Wait until the app is up (:func:`is_up`)."""
    await until(pilot, lambda: is_up(app))
