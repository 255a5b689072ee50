"""Helpers of the keys, calibrate, presets and pool tests (tests/app/test_keys.py and
others): a form field set at once where typing it is not what a test is about."""

from __future__ import annotations

from textual.widgets import Input


async def set_field(pilot, app, field: str, text: str) -> Input:
    """Focus a form field and put ``text`` in it at once, as a paste would: the form reads
    it as it reads keys typed (its Input posts Changed). ``helpers.type_into`` types it key
    by key (~0.1 s a key), for tests about typing."""
    field_input = app.query_one(f"#{field}", Input)
    field_input.focus()
    field_input.value = text
    await pilot.pause()
    return field_input
