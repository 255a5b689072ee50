"""Speedup vs K: the exact curve, Monte Carlo points with intervals, break-even and K*.

The title (which configuration: for a sweep cell, its row values too) and the legend are
lines of text above and under the chart, not drawn over the curves.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.geometry import Size
from textual.widgets import Static
from textual.worker import Worker, get_current_worker

from engine.analysis.formatting import speedup_text
from engine.core.config import BATCH_MAX, K_MAX, SpecConfig, part_fields
from engine.core.parts import ACCEPTANCE
from spectui.messages import CurveReady
from spectui.plotting.terminal import (
    GLYPHS,
    Drawing,
    LegendEntry,
    legend_lines,
    nice_ticks,
    spaced_ticks,
)
from spectui.widgets.common import ReportsWorkerErrors
from spectui.widgets.plot import Plot

OVERLAYS = ("off", "models", "costs")
MC_BUDGET = 2 * 10**7  # sequences x tokens x K values: above it, skip the Monte Carlo points
MARKERS = ("hd", "dot", "x", "+", "sd")
CURVE_COLORS = ("blue+", "green+", "cyan+", "magenta+", "yellow")
MC_COLOR = "red+"
MC_GLYPH = "┼"  # how plotext draws a point with its error bar
BREAKEVEN_COLOR = "gray"
K_STAR_COLOR = "orange"
PINNED_MARKER = "o"  # the pinned curve (F9), drawn first: behind the others
PINNED_COLOR = "gray+"
BUSY_TEXT = "computing…"


# Dynamic-program steps allowed for finding K* over every K up to tokens_per_seq.
PEAK_SEARCH_BUDGET = 200_000


def curve_ks(config: SpecConfig) -> list[int]:
    return list(range(1, min(max(15, config.k + 5), 64) + 1))


def prices_draft_pass(config: SpecConfig) -> bool:
    """Whether the cost model prices a draft pass by its own field (``draft_cost_us``), as
    the linear model does; the others price a cycle by batch and context."""
    return "draft_cost_us" in part_fields("cost.model", config.cost_model)


def config_label(config: SpecConfig) -> str:
    """Which configuration a curve is: model and its parameters (a sweep cell's row), draft
    cost and cost ratio, e.g. 'position_decay (base=0.9, factor=0.6), draft 20 us, c=0.1';
    under another cost model its setting (engine.analysis.formatting.cost_setting_text: the GPU, the
    target, the draft, batch and prompt)."""
    from engine.acceptance.draft_models import DRAFT_MODELS
    from engine.analysis.formatting import cost_setting_text
    from engine.analysis.plot_data import _line_label

    reads = DRAFT_MODELS[config.draft_model].reads
    model = _line_label(config.draft_model, {p: config.get(p) for p in reads}, ())
    if prices_draft_pass(config):
        return f"{model}, draft {config.draft_cost_us:g} us, c={config.cost_ratio:.3g}"
    return f"{model}, {cost_setting_text(config)}"


def exact_curve(
    config: SpecConfig, cancelled: Callable[[], bool] = lambda: False
) -> tuple[list[int], list[float]] | None:
    """The form curve's K values and exact speedups, over a range that holds K* (None if
    ``cancelled()`` turned true meanwhile)."""
    from engine.simulate.exact import speedup_curve

    ks = curve_ks(config)
    exact = speedup_curve(config, ks)["speedup_exact"].tolist()
    # Make sure the range holds K*: at short lengths the curve can have several peaks
    # (K+1 = T/2 and K+1 = T both fit the sequence in whole cycles), so look at every
    # K up to T when that is cheap (O(T) each), else widen until the peak is inside.
    end = min(config.tokens_per_seq, K_MAX)
    if end > ks[-1] and end * config.tokens_per_seq <= PEAK_SEARCH_BUDGET:
        every = speedup_curve(config, range(1, end + 1))["speedup_exact"].tolist()
        k_best = every.index(max(every)) + 1
        ks = list(range(1, max(ks[-1], min(k_best + 5, end)) + 1))
        exact = every[: len(ks)]
    while ks[-1] < K_MAX and exact.index(max(exact)) == len(ks) - 1:
        if cancelled():
            return None
        ks = list(range(1, min(2 * ks[-1], K_MAX) + 1))
        exact = speedup_curve(config, ks)["speedup_exact"].tolist()
    return ks, exact


def validated_text(config: SpecConfig) -> str | None:
    """The published measurement nearest the scenario (same hardware, target and draft) and
    how far the prediction from specs was from it (docs/validation.md); None if there is
    none, or the specs cannot be read (a broken user file is reported by the form)."""
    from engine.validate.nearest import nearest_text

    try:
        return nearest_text(config)
    except (ValueError, OSError):
        return None


class SpeedupPlot(Plot):
    """The chart itself; ``draw`` replaces everything plotted and returns the legend."""

    data: CurveReady | None = None
    # The pinned result's curve (label, ks, exact speedups), drawn behind the others.
    pinned: tuple[str, list[int], list[float]] | None = None

    def draw(self, data: CurveReady) -> Drawing:
        self.data = data
        color = not self.app.no_color
        drawing = Drawing()
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        plt.xlabel("K (draft tokens per cycle)")
        plt.ylabel("speedup")
        all_ks: list[int] = []
        all_ys: list[float] = [1.0]
        if self.pinned is not None:
            _, pinned_ks, pinned_ys = self.pinned
            plt.plot(pinned_ks, pinned_ys, marker=PINNED_MARKER, color=PINNED_COLOR)
            all_ks += pinned_ks
            all_ys += pinned_ys
        for i, (label, ks, ys) in enumerate(data.curves):
            marker = MARKERS[i % len(MARKERS)]
            curve_color = CURVE_COLORS[i % len(CURVE_COLORS)]
            plt.plot(ks, ys, marker=marker, color=curve_color)
            drawing.legend.append(LegendEntry(label, GLYPHS.get(marker, marker), curve_color))
            all_ks += ks
            all_ys += ys
        if self.pinned is not None:
            drawing.legend.append(LegendEntry(self.pinned[0], PINNED_MARKER, PINNED_COLOR))
        if data.points:
            ks = [p[0] for p in data.points]
            ys = [p[1] for p in data.points]
            errs = [p[2] if p[2] == p[2] else 0.0 for p in data.points]
            plt.error(ks, ys, yerr=errs, color=MC_COLOR)
            drawing.legend.append(LegendEntry("Monte Carlo ±95%", MC_GLYPH, MC_COLOR))
            all_ys += [y + e for y, e in zip(ys, errs, strict=True)]
            all_ys += [y - e for y, e in zip(ys, errs, strict=True)]
        if all_ks:
            plt.hline(1.0, color=BREAKEVEN_COLOR)
            drawing.notes.append("line at 1: break-even")
            ks_shown = sorted(set(all_ks))
            columns = max(10, self.size.width - 8)
            star = {data.k_star: f"{data.k_star}*"}
            labels = [star.get(k, str(k)) for k in ks_shown]
            plt.xticks(*spaced_ticks(ks_shown, labels, columns))
            low, high = min(all_ys), max(all_ys)
            ticks = nice_ticks(low, high, max(2, self.size.height - 4))
            plt.yticks(ticks, [f"{t:g}" for t in ticks])
        if data.k_star is not None:
            plt.vline(data.k_star, color=K_STAR_COLOR)
            drawing.notes.append(f"{data.k_star}*: K* (vertical line)")
        if not color:
            for index, entry in enumerate(drawing.legend):
                drawing.legend[index] = LegendEntry(entry.label, entry.glyph)
        self.refresh()
        return drawing

    def on_resize(self) -> None:
        # Tick spacing depends on the size: draw again for the new one.
        view = self.parent
        if self.data is not None and isinstance(view, SpeedupView):
            view.show_curve(self.data)


class SpeedupView(ReportsWorkerErrors, Vertical, can_focus=True):
    """Recomputes (in a thread worker) when the form changes or a sweep cell is chosen."""

    DEFAULT_CSS = """
    SpeedupView #speedup-title {
        height: auto;
        padding: 0 1;
        text-style: bold;
    }
    SpeedupView #speedup-legend {
        height: auto;
        padding: 0 1;
    }
    """

    BINDINGS = [
        Binding("c", "cycle_overlay", "Compare", tooltip="Overlay: other models, other costs"),
        Binding("f", "follow_form", "Form curve", tooltip="Show the form's configuration again"),
    ]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.config: SpecConfig | None = None
        self.overlay = "off"
        self.sweep_rows: Any = None
        self.dirty = True
        self.last: CurveReady | None = None
        # (the view's size, the chart's size) when the curve was last drawn.
        self.drawn_at: tuple[Size, Size] | None = None

    def compose(self) -> ComposeResult:
        yield Static("", id="speedup-title")
        yield SpeedupPlot(id="speedup-plot")
        yield Static("", id="speedup-legend")
        yield Static("", id="speedup-status")

    def set_config(self, config: SpecConfig | None, sweep_rows: Any = None) -> None:
        """Show ``config``'s curve (``sweep_rows``: a sweep's rows of its cell, as MC points)."""
        self.config = config
        self.sweep_rows = sweep_rows
        self.dirty = True
        if self.is_visible_tab():
            self.refresh_curve()

    def is_visible_tab(self) -> bool:
        return self.display and self.parent is not None and self.parent.display

    def on_mount(self) -> None:
        self.refresh_curve()

    def refresh_curve(self) -> None:
        if not self.query("#speedup-status"):
            return  # not composed yet: on_mount draws it
        if self.config is None:
            self.query_one("#speedup-status", Static).update("form invalid: nothing to plot")
            return
        self.dirty = False
        self.query_one("#speedup-status", Static).update(BUSY_TEXT)
        self._compute(self.config, self.overlay, self.sweep_rows)

    @work(thread=True, exclusive=True, group="curve", exit_on_error=False)
    def _compute(self, config: SpecConfig, overlay: str, sweep_rows: Any) -> None:
        from engine.simulate.exact import speedup_curve

        worker = get_current_worker()
        if sweep_rows is None:
            found = exact_curve(config, lambda: worker.is_cancelled)
            if found is None:
                return
            ks, exact = found
        else:
            ks = list(range(1, int(sweep_rows["k"].max()) + 1)) if len(sweep_rows) else None
            ks = ks or curve_ks(config)
            exact = speedup_curve(config, ks)["speedup_exact"].tolist()
        curves = [(f"exact {config.draft_model}", ks, exact)]
        variants: list[tuple[str, SpecConfig]] = []
        if overlay == "models":
            # The original's three models at their defaults (and the form's own).
            variants = [
                (m, config.replace(draft_model=m))
                for m in ACCEPTANCE.where(lambda model: model.original)
            ]
            variants = [v for v in variants if v[0] != config.draft_model]
        elif overlay == "costs" and prices_draft_pass(config):
            for factor in (0.5, 2.0):
                cost = config.draft_cost_us * factor
                variants.append((f"draft {cost:g} us", config.replace(draft_cost_us=cost)))
        elif overlay == "costs":
            # Other cost models price a cycle by batch and context: overlay the batch instead.
            for batch in (config.batch_size // 4, config.batch_size * 4):
                if 1 <= batch <= BATCH_MAX and batch != config.batch_size:
                    variants.append((f"batch {batch}", config.replace(batch_size=batch)))
        for label, variant in variants:
            if worker.is_cancelled:
                return
            curves.append((label, ks, speedup_curve(variant, ks)["speedup_exact"].tolist()))
        points: list[tuple[int, float, float]] | None = None
        if sweep_rows is not None and len(sweep_rows):
            points = [
                (int(r.k), float(r.speedup), float(r.speedup_ci95))
                for r in sweep_rows.itertuples()
                if r.speedup == r.speedup
            ]
            source = "sweep cell"
        elif config.n_sequences * config.tokens_per_seq * len(ks) <= MC_BUDGET:
            from engine.simulate.simulator import simulate

            points = []
            for k in ks:
                if worker.is_cancelled:
                    return
                metrics = simulate(config.replace(k=k)).metrics
                points.append((k, metrics["speedup"], metrics["speedup_ci95"]))
            source = "form"
        else:
            source = "form (Monte Carlo skipped: run too large)"
        k_star = ks[max(range(len(ks)), key=lambda i: exact[i])]
        title = f"{source}: {config_label(config)}"
        trust = validated_text(config)
        if trust is not None:
            title += f"\n{trust}"
        self.post_message(CurveReady(title, curves, points, k_star))

    def on_curve_ready(self, message: CurveReady) -> None:
        message.stop()
        self.last = message
        self.show_curve(message)
        best = max(zip(message.curves[0][2], message.curves[0][1], strict=True))
        self.query_one("#speedup-status", Static).update(
            f"K*={message.k_star} (exact {speedup_text(best[0], 3)}) · {self._hints()}"
        )

    def show_curve(self, data: CurveReady) -> None:
        """Draw ``data``: its title above the chart, its legend under it."""
        self.query_one("#speedup-title", Static).update(data.title)
        drawing = self.query_one(SpeedupPlot).draw(data)
        width = max(10, self.size.width - 2)
        lines = legend_lines(drawing, width, color=not self.app.no_color)
        self.query_one("#speedup-legend", Static).update(Text.from_ansi("\n".join(lines)))
        self.drawn_at = (self.size, self.query_one(SpeedupPlot).size)

    def on_resize(self) -> None:
        # The legend wraps at the view's width (and the chart gets the rest of its height):
        # a curve drawn before the view had its final size is drawn again at that size.
        if self.last is not None:
            self.show_curve(self.last)

    def set_pinned(self, pinned: tuple[str, list[int], list[float]] | None) -> None:
        """Draw ``pinned`` (label, ks, exact speedups) behind the curves, or no pinned curve."""
        self.query_one(SpeedupPlot).pinned = pinned
        if self.last is not None:
            self.show_curve(self.last)

    def _hints(self) -> str:
        return f"overlay {self.overlay} (c) · f: form"

    def worker_failed(self, worker: Worker[Any]) -> None:
        """A curve computation raised: leave the busy state (the app notifies the reason)."""
        if worker.group != "curve":
            return
        self.query_one("#speedup-status", Static).update(
            f"could not compute this curve (see the notification) · {self._hints()}"
        )

    def action_cycle_overlay(self) -> None:
        self.overlay = OVERLAYS[(OVERLAYS.index(self.overlay) + 1) % len(OVERLAYS)]
        self.refresh_curve()

    def action_follow_form(self) -> None:
        self.sweep_rows = None
        self.config = getattr(self.app, "config", self.config)
        self.refresh_curve()
