"""The Sweep view in a small host app, at the place and size it has in the app.

``ViewHost`` (tests/app/hosts_views.py): the app's stylesheet, header, side panel, tab bar
and key bar, with the Sweep view in its tab ("3 Sweep") on the preset the app would give
it. The host has no worker processes (``app.pool``): sweeps run in a thread of the host,
as in the app with ``SPECTUI_SWEEP_WORKERS=0``. Tests where the app's keys or other views
take part (F6 from another view, escape, ``enter`` opening the Speedup view, the Analysis
view of the sweep) boot the whole app instead.
"""

from __future__ import annotations

from typing import Any

from engine.presets import load_preset
from spectui.widgets.sweep_view import SweepView
from tests.app.helpers import until
from tests.app.hosts_views import ViewHost


def sweep_host(preset: Any, *, form: bool = True) -> ViewHost:
    """The Sweep view on ``preset`` (a preset, or its name or path), beside the side panel
    unless ``form`` is False (ctrl+b)."""
    chosen = load_preset(preset) if isinstance(preset, str) else preset
    return ViewHost(SweepView(chosen, id="sweep-view"), "sweep", "3 Sweep", form=form)


def sweep_view(app) -> SweepView:
    return app.query_one(SweepView)


async def laid_out(pilot, app) -> SweepView:
    """Wait until the chosen preset's grid is laid out (every cell pending, the title
    naming the preset); return the view."""
    view = sweep_view(app)
    await until(pilot, lambda: view.planned is not None and view.shown_name is not None)
    await pilot.pause()
    return view


async def finished(pilot, app) -> SweepView:
    """Wait until the sweep started has ended and its end is drawn; return the view."""
    view = sweep_view(app)
    await until(pilot, lambda: view.finished is not None and not view.running)
    await pilot.pause()
    return view
