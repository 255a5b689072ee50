"""The Sweep view in a small host app: what its picker, title, legend and count line say,
and that a big sweep costs the screen little per update (issue 22)."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import replace
from types import SimpleNamespace

import pandas as pd
import pytest
from textual.app import App, ComposeResult
from textual.coordinate import Coordinate
from textual.widgets import Select

import spectui.widgets.sweep_view as sweep_view
from engine.core.config import SpecConfig
from engine.presets import load_preset
from engine.sweep.grid import SweepSpec
from spectui.widgets.heatmap import Heatmap
from spectui.widgets.sweep_view import SweepView
from tests.app.helpers import until
from tests.app.hosts_sweep import finished, laid_out


class Host(App):
    """The Sweep view alone (no worker processes: sweeps run in a thread of the app)."""

    def __init__(self, preset) -> None:
        super().__init__()
        self.preset = load_preset(preset) if isinstance(preset, str) else preset

    def compose(self) -> ComposeResult:
        yield SweepView(self.preset, id="sweep-view")


def text(app: App, selector: str) -> str:
    return str(app.query_one(selector).render())


def heatmap_rows(app: App) -> list[str]:
    return [str(row.label) for row in app.query_one(Heatmap).ordered_rows]


def cell_texts(app: App) -> list[str]:
    heatmap = app.query_one(Heatmap)
    return [
        heatmap.get_cell_at(Coordinate(r, c)).plain
        for r in range(heatmap.row_count)
        for c in range(len(heatmap.columns))
    ]


async def _until(condition) -> None:
    for _ in range(3000):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("never happened")


@pytest.fixture
def gate(monkeypatch):
    """Planning (``engine.sweep.sweep.plan_sweep``) and the evaluation of configurations pause at
    the gate the test opens; ``gate.clock`` is the Sweep view's clock: planning takes
    ``gate.planning_s`` of it, each configuration ``gate.per_config_s``."""
    import engine.sweep.sweep

    gate = SimpleNamespace(
        planned=threading.Event(),
        plan_open=threading.Event(),
        after=10**9,
        reached=threading.Event(),
        release=threading.Event(),
        done=0,
        now=1000.0,
        planning_s=0.0,
        per_config_s=0.0,
    )
    gate.plan_open.set()
    real_plan, real_evaluate = engine.sweep.sweep.plan_sweep, engine.sweep.sweep.evaluate_many

    def plan_sweep(configs, *args, **kwargs):
        plan = real_plan(configs, *args, **kwargs)
        gate.now += gate.planning_s
        gate.planned.set()
        gate.plan_open.wait(30)
        return plan

    def evaluate_many(configs, *args, **kwargs):
        if gate.done >= gate.after:
            gate.reached.set()
            gate.release.wait(30)
        rows = real_evaluate(configs, *args, **kwargs)
        gate.done += len(rows)
        gate.now += gate.per_config_s * len(rows)
        return rows

    monkeypatch.setattr(engine.sweep.sweep, "plan_sweep", plan_sweep)
    monkeypatch.setattr(engine.sweep.sweep, "evaluate_many", evaluate_many)
    monkeypatch.setattr(sweep_view, "time", SimpleNamespace(perf_counter=lambda: gate.now))
    yield gate
    gate.plan_open.set()
    gate.release.set()


async def test_the_first_progress_figure_comes_before_planning_ends(
    isolated_dirs, gate, monkeypatch
):
    monkeypatch.setattr(sweep_view, "PLANNING_STEP", 8)  # tiny's 24 configurations
    gate.plan_open.clear()
    app = Host("tiny")
    async with app.run_test(size=(120, 40)) as pilot:
        await laid_out(pilot, app)
        view = app.query_one(SweepView)
        view.action_start()
        await _until(gate.planned.is_set)  # planning has seen every configuration
        view._poll_progress()  # the count line's timer, driven from here
        await pilot.pause()
        assert text(app, "#sweep-count") == "planning 16/24 configurations…"
        gate.plan_open.set()
        await finished(pilot, app)
        assert text(app, "#sweep-count").startswith("24/24 done")


async def _at_the_gate(pilot, app, gate, rows: int) -> None:
    """Start the sweep, wait until ``rows`` rows came and the gate holds the rest, and let
    the view's progress timer read them once."""
    await laid_out(pilot, app)
    view = app.query_one(SweepView)
    view.action_start()
    await _until(gate.reached.is_set)
    await _until(lambda: view.live[1] == rows)
    view._poll_progress()
    await pilot.pause()


async def test_the_eta_counts_from_the_end_of_planning(isolated_dirs, gate, monkeypatch):
    monkeypatch.delenv("SPECTUI_HIDE_TIMINGS")
    gate.planning_s, gate.per_config_s, gate.after = 100.0, 1.0, 12
    app = Host("tiny")
    async with app.run_test(size=(120, 40)) as pilot:
        await _at_the_gate(pilot, app, gate, 12)
        # 12 configurations in 12 s of work (planning's 100 s not counted): 12 s to go.
        assert text(app, "#sweep-count") == "12/24 · 1/s · ETA 12s"
        gate.release.set()
        await finished(pilot, app)


async def test_a_burst_of_rows_shows_its_last_count_not_its_first(isolated_dirs, gate):
    """Rows come in bursts (a batch's); the count line shows the last of a burst (before,
    a progress message on its first row stayed: "1/46080 · ETA 173512s")."""
    gate.after = 12
    app = Host("tiny")
    async with app.run_test(size=(120, 40)) as pilot:
        await _at_the_gate(pilot, app, gate, 12)
        assert text(app, "#sweep-count") == "12/24"
        gate.release.set()
        await finished(pilot, app)


def _grid(rows: int, changed: int = -1) -> pd.DataFrame:
    """A K* grid of ``rows`` rows and one column, every cell K*=2 at 1.5x but row
    ``changed`` (K*=3 at 2.0x): the frame engine.analysis.plot_data.optimal_k_heatmap gives."""
    grid = pd.DataFrame(
        {
            "row": range(rows),
            "column": 0,
            "k_opt": [3 if i == changed else 2 for i in range(rows)],
            "speedup_opt": [2.0 if i == changed else 1.5 for i in range(rows)],
            "tie": False,
            "loses": False,
            "complete": True,
        }
    )
    labels = [f"a={i}" for i in range(rows)]
    grid.attrs.update(
        model="fixed", row_labels=labels, row_keys=[(i,) for i in range(rows)], costs=[20.0]
    )
    grid.attrs.update(row_parameters=["acceptance_rate"], k_count=4, held={})
    return grid


class HeatmapHost(App):
    def compose(self) -> ComposeResult:
        yield Heatmap()


@pytest.mark.parametrize("rows", [10, 960])
async def test_a_new_grid_redraws_only_the_cells_it_changed(monkeypatch, rows):
    """The UI's work per snapshot is the cells that changed, whatever the grid's size."""
    app = HeatmapHost()
    async with app.run_test(size=(80, 24)) as pilot:
        heatmap = app.query_one(Heatmap)
        heatmap.show(_grid(rows))
        await pilot.pause()
        written: list[tuple[int, int]] = []  # the cells written to the table
        put = heatmap._put
        monkeypatch.setattr(
            heatmap, "_put", lambda changes: (written.extend(c[:2] for c in changes), put(changes))
        )
        heatmap.show(_grid(rows, changed=3))
        await pilot.pause()
        assert written == [(3, 0)]
        assert heatmap.get_cell_at(Coordinate(3, 0)).plain == " 3   2.00 "
        assert heatmap.get_cell_at(Coordinate(2, 0)).plain == " 2   1.50 "
        heatmap.show(_grid(rows, changed=3))  # the same grid again: nothing to redraw
        assert written == [(3, 0)]


async def test_choosing_another_preset_while_a_sweep_runs_names_both(isolated_dirs, gate):
    gate.after = 0
    app = Host("tiny")
    async with app.run_test(size=(160, 40)) as pilot:
        await laid_out(pilot, app)
        view = app.query_one(SweepView)
        assert text(app, "#heatmap-title").startswith("tiny · K* of fixed")
        view.action_start()
        await _until(gate.reached.is_set)
        app.query_one("#sweep-preset", Select).value = "seed-576"
        await pilot.pause()
        await pilot.pause()
        gate.release.set()
        await finished(pilot, app)
        # tiny's results stay on screen, and the title says so: s runs the one chosen.
        assert view.finished is not None and heatmap_rows(app)[0] == "a=0.5"
        assert text(app, "#heatmap-title").startswith("tiny (s runs seed-576) · K* of fixed")


async def test_choosing_another_preset_shows_its_grid_not_the_last_sweeps(isolated_dirs):
    app = Host("tiny")
    async with app.run_test(size=(120, 40)) as pilot:
        await laid_out(pilot, app)
        view = app.query_one(SweepView)
        view.action_start()
        await finished(pilot, app)
        assert "24/24 done" in text(app, "#sweep-count")
        app.query_one("#sweep-preset", Select).value = "seed-576"
        await until(pilot, lambda: app.query_one(SweepView).shown_name == "seed-576")
        await pilot.pause()
        assert heatmap_rows(app)[:2] == ["a=0.5", "a=0.6"]  # seed-576's acceptances
        assert "0/576 · not started" in text(app, "#sweep-count")
        assert set(cell_texts(app)) == {"    ·     "}  # none of tiny's results
        assert text(app, "#heatmap-title").startswith("seed-576 · K* of fixed")


async def test_the_blank_entry_says_no_preset_and_shows_no_grid(isolated_dirs):
    app = Host("seed-576")
    async with app.run_test(size=(120, 40)) as pilot:
        await laid_out(pilot, app)
        assert "0/576 · not started" in text(app, "#sweep-count")
        select = app.query_one("#sweep-preset", Select)
        select.value = Select.NULL
        await until(pilot, lambda: "no sweep preset chosen" in text(app, "#sweep-info"))
        await pilot.pause()
        assert "no preset" in str(select.query_one("SelectCurrent #label").render())
        assert "576" not in text(app, "#sweep-count")
        assert heatmap_rows(app) == []
        assert "no sweep preset chosen" in text(app, "#sweep-info")
        assert text(app, "#heatmap-title") == "choose a sweep preset above"


async def test_a_grid_whose_k_is_fixed_says_so_instead_of_losing(isolated_dirs):
    base = SpecConfig().replace(k=5, n_sequences=20, tokens_per_seq=32, draft_cost_us=20.0)
    fixed_k = replace(
        load_preset("tiny"),
        name="fixed-k",
        sweep=SweepSpec(base, ({"acceptance_rate": [0.1, 0.9]},)),
    )
    app = Host(fixed_k)
    async with app.run_test(size=(160, 40)) as pilot:
        await laid_out(pilot, app)
        app.query_one(SweepView).action_start()
        await finished(pilot, app)
        speedups = app.query_one(SweepView).frame["speedup"].tolist()
        assert speedups[0] < 1 < speedups[1]  # the first one loses to the baseline
        assert "K=5 only: K does not vary" in text(app, "#heatmap-title")
        assert not [t for t in cell_texts(app) if "✗" in t]


async def test_the_legend_says_the_speedups_are_monte_carlo(isolated_dirs):
    app = Host("tiny")
    async with app.run_test(size=(160, 40)) as pilot:
        await laid_out(pilot, app)
        app.query_one(SweepView).action_start()
        await finished(pilot, app)
        assert text(app, "#heatmap-legend").startswith("K* and its Monte Carlo speedup per cell")


def _let_through(gate, after: int) -> None:
    """Open the gate until ``after`` configurations are done (then it holds again)."""
    held, gate.release, gate.reached = gate.release, threading.Event(), threading.Event()
    gate.after = after
    held.set()


async def test_a_model_not_on_screen_when_its_rows_came_is_drawn_when_shown_again(
    isolated_dirs, gate
):
    """Snapshots build the grid of the model on screen only; a model whose rows came while
    another was shown gets its grid at the next snapshot after it is shown again."""
    gate.after, gate.per_config_s = 0, 1.0  # a snapshot after every group of rows
    app = Host("seed-576")  # the fixed model's 192 rows first, in groups of 4
    async with app.run_test(size=(120, 40)) as pilot:
        await laid_out(pilot, app)
        view = app.query_one(SweepView)
        view.action_start()
        await _until(gate.reached.is_set)
        await _until(lambda: bool(view.models))
        view.action_next_model()  # position_decay on screen while fixed's rows come
        await pilot.pause()
        _let_through(gate, 196)  # fixed's rows and position_decay's first group
        await _until(gate.reached.is_set)
        view.action_next_model()
        view.action_next_model()  # fixed again: its grid is the one laid out, all pending
        await pilot.pause()
        assert view.model == "fixed" and not app.query_one(Heatmap).cells
        _let_through(gate, 200)  # one more group (position_decay's) and its snapshot
        await _until(gate.reached.is_set)
        await _until(lambda: len(app.query_one(Heatmap).cells) > 0)
        assert len(app.query_one(Heatmap).cells) == 24  # fixed's every cell
        gate.release.set()
        await finished(pilot, app)


async def test_escape_while_planning_stops_at_once(isolated_dirs, monkeypatch):
    """Cancelled while its configurations are being planned, a sweep stops there (46,080
    of them take seconds): nothing runs, nothing is saved, and the view says so."""
    _, results = isolated_dirs
    monkeypatch.setattr(sweep_view, "PLANNING_STEP", 4)
    blocked, resume = threading.Event(), threading.Event()

    class Slow(list):  # the configurations; iterating them stalls at the 10th once armed
        armed = False

        def __iter__(self):
            for i, config in enumerate(list.__iter__(self)):
                if self.armed and i == 10:
                    blocked.set()
                    resume.wait(30)
                yield config

    app = Host("tiny")
    async with app.run_test(size=(120, 40)) as pilot:
        await laid_out(pilot, app)
        view = app.query_one(SweepView)
        configs = Slow(view._configs(view._selected()))
        configs.armed = True
        monkeypatch.setattr(view, "_configs", lambda preset: configs)
        view.action_start()
        await _until(blocked.is_set)
        view.action_cancel()
        resume.set()
        await until(pilot, lambda: "cancelled while planning" in text(app, "#sweep-count"))
        await until(pilot, lambda: not view.running)
        assert not view.running and view.finished is None
        assert text(app, "#sweep-count") == "tiny: cancelled while planning, nothing ran"
        assert not list(results.glob("*"))


async def test_row_labels_show_when_a_frame_is_drawn_before_the_table_is_idle():
    """A sweep's first grid and its results can come in one go, and the screen be drawn
    before the table measures its new rows: the row labels must still show (they did not
    on a terminal: the table cached rows drawn without labels and measured those)."""
    app = HeatmapHost()
    async with app.run_test(size=(80, 24)) as pilot:
        heatmap = app.query_one(Heatmap)
        heatmap.show(_grid(3))
        heatmap.show(_grid(3, changed=1))
        for y in range(4):  # a frame drawn before the table's idle handler ran
            heatmap.render_line(y)
        await pilot.pause()
        await pilot.pause()
        lines = ["".join(s.text for s in heatmap.render_line(y)) for y in range(4)]
        assert [line.split()[0] for line in lines[1:]] == ["a=0", "a=1", "a=2"], lines


class BesideTheForm(App):
    """The Sweep view where the app puts it at 80 columns: beside the side panel's 27."""

    def __init__(self, preset) -> None:
        super().__init__()
        self.preset = preset

    def compose(self) -> ComposeResult:
        from textual.containers import Horizontal
        from textual.widgets import Static

        with Horizontal():
            yield Static("form", id="side-stand-in")
            yield SweepView(self.preset, id="sweep-view")

    def on_mount(self) -> None:
        self.query_one("#side-stand-in").styles.width = 27


def _preset_of(name: str, grid: dict) -> object:
    """A preset ``name`` whose one grid is ``grid`` over tiny's configuration."""
    base = load_preset("tiny").sweep.base
    return replace(load_preset("tiny"), name=name, sweep=SweepSpec(base, (grid,)))


def _shown(app: App, selector: str) -> str:
    from tests.app.screen import region_text

    widget = app.query_one(selector)
    return region_text(app, widget) if widget.display else ""


COSTS = [5.0, 10.0, 20.0, 30.0, 50.0, 75.0, 100.0, 150.0]  # 8 columns of 10: wider than 53


async def test_every_heatmap_column_is_reached_by_keys_and_the_hint_says_what_is_hidden(
    isolated_dirs,
):
    wide = _preset_of("wide", {"acceptance_rate": [0.5, 0.9], "draft_cost_us": COSTS, "k": [1, 2]})
    app = BesideTheForm(wide)
    async with app.run_test(size=(80, 24)) as pilot:
        await laid_out(pilot, app)
        heatmap = app.query_one(Heatmap)
        headings = [f"{c:g}us" for c in COSTS]

        def header() -> list[str]:
            return _shown(app, "#heatmap").splitlines()[0].split()

        first = header()
        assert first[0] == "5us" and "150us" not in first
        # Columns of 12 (10 and a space each side) after the labels' 7 ("a=0.5" padded):
        # those not whole in sight are hidden.
        hidden = len(COSTS) - (heatmap.scrollable_content_region.width - 7) // 12
        assert hidden > 0
        assert _shown(app, "#heatmap-more").strip() == (
            f"→ {hidden} more columns (Tab, then → or End)"
        )
        heatmap.focus()
        await pilot.pause()
        assert _shown(app, "#heatmap-more").strip() == f"→ {hidden} more columns (→ or End)"
        seen = set(first)
        for _ in COSTS:
            await pilot.press("right")
            await pilot.pause()
            shown = header()
            assert all(name in headings for name in shown), shown  # whole columns only
            seen.update(shown)
        assert seen == set(headings)
        assert _shown(app, "#heatmap-more").strip().endswith("(← or Home)")
        await pilot.press("home")
        await pilot.pause()
        assert header() == first
        await pilot.press("end")
        await pilot.pause()
        assert header()[-1] == "150us"


async def test_no_columns_hint_when_the_heatmap_fits(isolated_dirs):
    app = BesideTheForm(load_preset("tiny"))
    async with app.run_test(size=(80, 24)) as pilot:
        await laid_out(pilot, app)
        assert "·" in _shown(app, "#heatmap")  # its cells, pending
        assert _shown(app, "#heatmap-more") == ""
        assert _shown(app, "#heatmap-row") == ""  # tiny's labels are whole


async def test_regime_study_long_row_labels_leave_cells_in_sight(isolated_dirs):
    """regime-study's row labels ("prompt=128, batch=1, gpu=a100-80gb, draft=eagle-llama-
    3.1-8b") are wider than the view at 80 columns: cut, they leave its cells in sight, and
    the line under the heatmap names the highlighted row whole."""
    study = load_preset("regime-study")
    grid = {
        "workload.batch_size": [1, 512],
        "workload.prompt_len": [128, 16384],
        "cost.gpu": ["a100-80gb", "h100"],
        "cost.draft": ["eagle-llama-3.1-8b", "qwen2.5-0.5b"],
        "draft_model": ["fixed"],
        "k": [1, 2],
    }
    small = replace(study, name="small-study", sweep=SweepSpec(study.sweep.base, (grid,)))
    app = BesideTheForm(small)
    # 80 columns (what the test is about) and 30 rows: the title above the heatmap is laid
    # out on one line or, depending on when a layout comes, on three; at 24 rows the three
    # pushed the row line's end off the screen (a loaded clean-clone run, and CI).
    async with app.run_test(size=(80, 30)) as pilot:
        await laid_out(pilot, app)
        # The grid is laid out once the plan is in: wait for its cells, under load too.
        await until(pilot, lambda: "·" in _shown(app, "#heatmap"))
        lines = _shown(app, "#heatmap").splitlines()
        assert "roofline" in lines[0]  # the column's heading...
        assert "·" in lines[1]  # ...and its first cell (pending)
        assert lines[1].split()[0] == "128,"  # the label: its values, cut with …
        assert "…" in lines[1]
        heatmap = app.query_one(Heatmap)
        heatmap.focus()
        await pilot.press("down")

        def row() -> str:  # the line wraps: its second row once the layout has followed
            return " ".join(_shown(app, "#heatmap-row").split())

        await until(pilot, lambda: row().endswith("draft=qwen2.5-0.5b"))
        assert row() == "row: prompt=128, batch=1, gpu=a100-80gb, draft=qwen2.5-0.5b"
