"""The views: mounted when first needed, shown by tab or key, focused; the form panel."""

from __future__ import annotations

import asyncio
import os

from textual import work
from textual.widgets import Static, TabbedContent, TabPane

from spectui.messages import CellChosen
from spectui.mixins.base import AppBase
from spectui.widgets.analysis_view import AnalysisView
from spectui.widgets.sweep_view import SweepView
from spectui.widgets.view_tabs import ViewTabs


class ViewsMixin(AppBase):
    """Mount each view once, lazily (only the Run view is in the first screen); show and
    focus views (1..8, F3); show, hide and focus the form (F2, Ctrl+B)."""

    async def _mount_lazy(self, pane_id: str) -> None:
        """Mount a view in place of its pane's placeholder, once; return when it is mounted.

        Only the Run view is in the first screen. The sweep view mounts as soon as the form is
        on screen; the other views when first shown (or, for the sweep, first needed). A
        caller that comes while another mounts the view waits for that mount.
        """
        if pane_id in self._mounts:
            await self._mounts[pane_id]
            return
        done = self._mounts[pane_id] = asyncio.get_running_loop().create_future()
        try:
            await self._mount_view(pane_id)
        finally:
            done.set_result(None)

    async def _mount_view(self, pane_id: str) -> None:
        pane = self.query_one(f"#{pane_id}", TabPane)
        await pane.query(".lazy").remove()
        if pane_id == "sweep":
            await pane.mount(SweepView(self._sweep_preset, id="sweep-view"))
        elif pane_id == "analysis":  # picks up self.sweep_frame itself
            await pane.mount(AnalysisView(id="analysis-view", classes="main-view"))
        elif pane_id == "regime":
            from spectui.widgets.regime_view import RegimeView

            regime = RegimeView(id="regime-view")
            regime.config = self.config
            await pane.mount(regime)
        elif pane_id == "arena":
            from spectui.widgets.arena_view import ArenaView

            arena = ArenaView(id="arena-view")
            arena.config = self.config
            await pane.mount(arena)
        elif pane_id == "trees":
            from spectui.widgets.tree_view import TreeView

            tree = TreeView(id="tree-view")
            tree.config = self.config
            await pane.mount(tree)
        elif pane_id == "speedup":
            from spectui.widgets.speedup_view import SpeedupView

            view = SpeedupView(id="speedup-view", classes="main-view")
            view.config = self.config
            await pane.mount(view)
            if self.pinned is not None:
                view.set_pinned(self.pinned.curve())
        else:
            try:
                from spectui.widgets.plots_view import PlotsView
            except ImportError:
                await pane.mount(Static("Plots view not available yet.", id="plots-view"))
                return
            plots = PlotsView(id="plots-view", classes="main-view")
            await pane.mount(plots)
            if self.sweep_frame is not None:
                plots.update_results(self.sweep_frame)

    async def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        pane_id = event.pane.id or ""
        if pane_id == "sweep":
            self._warm_pool()
        if pane_id != "run":
            await self._mount_lazy(pane_id)
        if pane_id == "speedup":
            view = self._speedup_view()
            if view is not None and view.dirty:
                view.refresh_curve()
        elif pane_id == "analysis":
            for analysis in self.query(AnalysisView):
                analysis.render_now()
        elif pane_id == "regime":
            for regime in self.query("#regime-view"):
                if regime.dirty:  # type: ignore[attr-defined]
                    regime.refresh_map()  # type: ignore[attr-defined]
        elif pane_id == "trees":
            for tree in self.query("#tree-view"):
                if tree.dirty:  # type: ignore[attr-defined]
                    tree.refresh_view()  # type: ignore[attr-defined]

    async def action_show_view(self, view: str) -> None:
        self.query_one(TabbedContent).active = view
        if view != "run":
            await self._mount_lazy(view)
        self.call_after_refresh(self.action_focus_view)

    def action_focus_view(self) -> None:
        pane = self.query_one(TabbedContent).active_pane
        if pane is None:
            return
        # The main widget of each view: the table, the chart, the heatmap, the text.
        found = pane.query(".main-view")
        if found and found.first().focusable:
            found.first().focus()

    def action_focus_form(self) -> None:
        self.query_one("#side").display = True
        self.form.focus_field("k")
        self._fit_tabs()

    def action_toggle_form(self) -> None:
        side = self.query_one("#side")
        side.display = not side.display
        self._fit_tabs()

    def _fit_tabs(self) -> None:
        """The tab labels for the views' new width, once laid out (their resize event alone
        sometimes came before the width changed, and the tabs kept the narrow labels)."""
        self.call_after_refresh(self.query_one(ViewTabs).fit_labels)

    @work(thread=True, group="warm", exit_on_error=False)
    def _warm_pool(self) -> None:
        """Start the sweep processes once the Sweep view is shown: F6 then need not wait.
        Not when $SPECTUI_SCHEDULER sends every sweep to Dask (they would sit idle)."""
        from engine.sweep.cluster import SCHEDULER_ENV

        if not os.environ.get(SCHEDULER_ENV, "").strip():
            self.pool.warm()

    async def on_cell_chosen(self, message: CellChosen) -> None:
        self.query_one(TabbedContent).active = "speedup"
        await self._mount_lazy("speedup")
        view = self._speedup_view()
        if view is not None:
            view.set_config(message.config, message.rows)
            view.refresh_curve()
            view.focus()  # so the view's own keys (c, f) work at once
