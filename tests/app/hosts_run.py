"""Small host apps for the Run view and the Speedup view, at their place and size in the app.

Both are :class:`tests.app.hosts_views.ViewHost`: the app's stylesheet, header, side panel
(an empty panel of the form's width, or hidden), tab bar and key bar, with the one view
mounted. The Run view sits in the "1 Run" tab, as in the app. What F5 does in the app
(``SpectuiApp.action_run``: start the view's run of the form's configuration, focus its
table) is :meth:`RunHost.run`.
"""

from __future__ import annotations

from engine.core.config import SpecConfig
from engine.presets import load_preset
from spectui.widgets.run_view import RunView
from spectui.widgets.speedup_view import SpeedupView
from tests.app.helpers import until
from tests.app.hosts_views import ViewHost


def tiny() -> SpecConfig:
    """The configuration of the preset ``create_app("tiny")`` opens on."""
    return load_preset("tiny").config


class RunHost(ViewHost):
    """The Run view alone (its replay moving only when driven unless ``autoplay``), beside
    the side panel unless ``form`` is False."""

    def __init__(self, *, autoplay: bool = False, form: bool = True) -> None:
        super().__init__(RunView(id="run-view", autoplay=autoplay), "run", "1 Run", form=form)

    @property
    def run_view(self) -> RunView:
        return self.view  # type: ignore[return-value]

    def run(self, config: SpecConfig) -> RunView:
        """Start a run of ``config`` and focus the replay's table, as F5 does."""
        view = self.run_view
        view.start_run(config)
        view.table.focus()
        return view


async def run_finished(pilot, app: RunHost, config: SpecConfig) -> RunView:
    """Run ``config`` (as F5 does) and wait until its result is shown."""
    view = app.run(config)
    await until(pilot, lambda: not view.busy and view.result is not None)
    await pilot.pause()
    return view


def speedup_host(config: SpecConfig | None, *, form: bool = True) -> ViewHost:
    """The Speedup view on ``config`` (the form's configuration), shown as after key 2."""
    view = SpeedupView(id="speedup-view", classes="main-view")
    view.config = config
    return ViewHost(view, "speedup", "2 Speedup", form=form)


async def curve_drawn(pilot, app: ViewHost, after: object = None) -> SpeedupView:
    """Wait until the Speedup view has drawn a curve (a newer one than ``after``), and the
    screen is drawn."""
    view: SpeedupView = app.view  # type: ignore[assignment]
    await until(pilot, lambda: view.last is not None and view.last is not after)
    await pilot.pause()
    return view
