"""Drawing the six plots: PNG files, plotext on stdout, and the Plots view of the app."""

import asyncio
import io
import sys
from types import SimpleNamespace

import pandas as pd
import pytest

from engine.analysis.analysis import SweepDataError
from engine.analysis.formatting import SHORT_LEGEND
from engine.analysis.plot_data import PLOTS
from engine.presets import load_preset
from engine.sweep.sweep import run_sweep
from spectui.plotting import plot_command
from spectui.plotting.terminal import draw, print_all, render_text

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
PNG_NAMES = [f"{p.plot_id}.png" for p in PLOTS]


@pytest.fixture(scope="module")
def tiny_frame() -> pd.DataFrame:
    return run_sweep(load_preset("tiny").sweep.configs())


def test_png_names_are_the_originals():
    assert PNG_NAMES == [
        "01_speedup_vs_k_fixed.png",
        "02_acceptance_vs_k_by_model.png",
        "03_waste_vs_k.png",
        "04_speedup_vs_cost_ratio.png",
        "05_pareto_speedup_vs_overhead.png",
        "06_optimal_k_heatmap.png",
    ]


def test_write_pngs_of_a_sweep_without_the_fixed_model_still_writes_six(tiny_frame, tmp_path):
    pytest.importorskip("matplotlib")
    from spectui.plotting.images import write_pngs

    decay = tiny_frame.assign(draft_model="position_decay")
    paths = write_pngs(decay, tmp_path)
    assert [p.name for p in paths] == PNG_NAMES
    assert all(p.read_bytes().startswith(PNG_SIGNATURE) for p in paths)


def test_missing_matplotlib_is_a_clear_error(tiny_frame, tmp_path, monkeypatch):
    from spectui.errors import UsageError
    from spectui.plotting.images import MatplotlibMissingError, write_pngs

    assert issubclass(MatplotlibMissingError, UsageError)  # one line from the CLI, exit 2
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(MatplotlibMissingError, match=r"pip install 'spectui\[images\]'"):
        write_pngs(tiny_frame, tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_print_all_prints_every_plot_with_its_title(tiny_frame, capsys):
    print_all(tiny_frame, width=100, height=30)
    out = capsys.readouterr().out
    sections = out.split("Plot ")[1:]
    assert len(sections) == len(PLOTS)
    for number, (spec, section) in enumerate(zip(PLOTS, sections, strict=True), start=1):
        assert section.startswith(f"{number}/{len(PLOTS)} [{spec.plot_id}]: {spec.title}")
        body = section.split("\n", 1)[1]
        assert len(body.strip().splitlines()) >= 10  # a drawn plot, not a blank
    assert "\x1b[" not in out  # no colour codes when stdout is not a terminal


@pytest.mark.parametrize("spec", PLOTS, ids=lambda s: s.plot_id)
def test_each_plot_draws_on_stdout_with_plotext(tiny_frame, spec):
    text = render_text(spec.plot_id, tiny_frame, width=90, height=28)
    lines = text.splitlines()
    assert len(lines) >= 20
    assert any(ch in text for ch in "┌└│")


def test_heatmap_in_the_terminal_shows_k_star_and_the_legend(tiny_frame):
    text = render_text("06_optimal_k_heatmap", tiny_frame, width=110, height=30)
    assert "K* and its speedup, fixed model" in text
    assert "a=0.95" in text and "10us" in text
    assert SHORT_LEGEND in text  # the one legend of every K* grid


def test_heatmap_of_a_roofline_sweep_names_the_cost_model_not_the_draft_cost():
    frame = run_sweep(load_preset("batch-size").sweep.configs(), exact_only=True)
    text = render_text("06_optimal_k_heatmap", frame, width=110, height=30)
    assert "roofline" in text and "cost model" in text
    assert "20us" not in text  # the linear draft cost is inert under a roofline
    assert "batch=128" in text


def test_empty_frame_draws_an_empty_message(tiny_frame):
    text = render_text("01_speedup_vs_k_fixed", tiny_frame.iloc[:0], width=80, height=20)
    assert "No data for this plot" in text


def test_draw_works_on_a_textual_plotext_plot_object(tiny_frame):
    from textual_plotext import PlotextPlot

    plt = PlotextPlot().plt
    for spec in PLOTS:
        draw(plt, spec.plot_id, tiny_frame, width=90, height=30)
        assert plt.build().strip()


def test_plot_command_reads_the_csv_and_writes_and_prints(tiny_frame, tmp_path, capsys):
    """Also the test of :func:`write_pngs` on the tiny sweep (which plot_command calls): six
    valid PNGs, named as the originals, and no temporary file left (one drawing of the six,
    ~2 s, for both)."""
    pytest.importorskip("matplotlib")
    csv = tmp_path / "sweep.csv"
    tiny_frame.to_csv(csv, index=False)
    out = tmp_path / "out"
    paths = plot_command(csv, out, terminal=True)
    assert [p.name for p in paths] == PNG_NAMES
    assert sorted(p.name for p in out.iterdir()) == sorted(PNG_NAMES)  # no temporary left
    for path in paths:
        data = path.read_bytes()
        assert data.startswith(PNG_SIGNATURE) and len(data) > 5000
    printed = capsys.readouterr().out
    assert all(spec.title in printed for spec in PLOTS)
    assert plot_command(csv, None, terminal=False) == []


def test_plot_command_on_a_bad_file_raises_sweep_data_error(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n")
    with pytest.raises(SweepDataError, match="not a sweep file"):
        plot_command(bad, tmp_path, terminal=False)
    with pytest.raises(SweepDataError, match="no such file"):
        plot_command(tmp_path / "missing.csv", None, terminal=True)


# --- the Plots view ----------------------------------------------------------------------------


def test_plots_view_empty_state_then_cycles_through_the_plots(tiny_frame, monkeypatch):
    from spectui.widgets import plots_view

    # Redraw on every update rather than at most every REDRAW_INTERVAL_S: each step below
    # is on screen after one pause, with no timer to wait for. The view's clock stands
    # still, so a draw costs nothing on it: a slow draw (the heatmap, under load) never
    # stretches the interval (seen in CI: the empty frame's redraw left to a timer).
    monkeypatch.setattr(plots_view, "REDRAW_INTERVAL_S", 0.0)
    monkeypatch.setattr(plots_view, "time", SimpleNamespace(monotonic=lambda: 100.0))
    asyncio.run(_drive_plots_view(tiny_frame))


async def _drive_plots_view(tiny_frame):
    from textual.app import App, ComposeResult
    from textual.widgets import Footer, Static

    from spectui.widgets.plots_view import EMPTY_TEXT, PlotsView

    class PlotsApp(App[None]):
        def compose(self) -> ComposeResult:
            yield PlotsView(id="plots-view")
            yield Footer()

    def title(app: App[None]) -> str:
        return str(app.query_one("#plots-title", Static).render())

    app = PlotsApp()
    async with app.run_test(size=(110, 36)) as pilot:
        view = app.query_one(PlotsView)
        view.focus()
        await pilot.pause()
        assert title(app) == EMPTY_TEXT
        assert view.has_class("-empty")

        view.update_results(tiny_frame)
        await pilot.pause()
        assert title(app).startswith("Plot 1/6: " + PLOTS[0].title)
        assert not view.has_class("-empty")

        await pilot.press("n")
        await pilot.pause()
        assert title(app).startswith("Plot 2/6: " + PLOTS[1].title)
        await pilot.press("p", "p")
        await pilot.pause()
        assert title(app).startswith("Plot 6/6: ")
        await pilot.press("right_square_bracket")
        await pilot.pause()
        assert title(app).startswith("Plot 1/6: ")

        # a growing frame while a sweep runs: redraws keep the current plot
        for rows in (3, 10, len(tiny_frame)):
            view.update_results(tiny_frame.iloc[:rows])
            await pilot.pause()
            assert title(app).startswith("Plot 1/6: ")
            assert f"({rows} sweep rows" in title(app)

        # on the heatmap, m cycles the draft model (when the sweep has more than one)
        mixed = pd.concat([tiny_frame, tiny_frame.assign(draft_model="entropy_aware")])
        view.update_results(mixed)
        await pilot.press("p")
        await pilot.pause()
        assert "fixed model" in title(app)
        await pilot.press("m")
        await pilot.pause()
        assert "entropy_aware model" in title(app)
        await pilot.press("m")
        await pilot.pause()
        assert "fixed model" in title(app)

        view.update_results(tiny_frame.iloc[:0])
        await pilot.pause()
        assert title(app) == EMPTY_TEXT


def test_print_all_to_a_file_object(tiny_frame):
    buffer = io.StringIO()
    print_all(tiny_frame, width=80, height=24, file=buffer)
    assert buffer.getvalue().count("Plot ") >= len(PLOTS)


def test_heatmap_in_the_terminal_has_every_row_of_a_two_parameter_grid():
    # Plot 6 draws the same grid as the Sweep view: 4 rows for decay_base x decay_factor.
    from tests.engine.test_grid import decay_sweep

    text = render_text("06_optimal_k_heatmap", decay_sweep(), width=120, height=30)
    for label in ("base=0.8, factor=0.6", "base=0.8, factor=0.9", "base=0.9, factor=0.6"):
        assert label in text
    assert "base=0.9, factor=0.9" in text


def test_narrow_heatmap_keeps_every_tick_and_a_legend(tiny_frame):
    # At 80x24 with the form shown the plot is ~54 columns: "10us r=0.05" ticks collided
    # and plotext dropped some; the long legend did not fit and was dropped.
    from engine.analysis.formatting import MARKS_LEGEND

    text = render_text("06_optimal_k_heatmap", tiny_frame, width=54, height=18)
    assert "10us" in text and "50us" in text
    assert MARKS_LEGEND in text


def test_print_all_gives_every_heatmap_row_a_line_of_its_own(capsys):
    """`spectui plot --terminal` on a sweep with more heatmap rows than 30 lines (issue 22:
    cells were written over each other)."""
    from tests.app.test_plots_view import _many_rows_frame

    print_all(_many_rows_frame(40), width=80)
    heatmap = capsys.readouterr().out.split("[06_optimal_k_heatmap]")[1]
    lines = [line for line in heatmap.splitlines() if "┤" in line]
    assert len(lines) == 40
    for i, line in enumerate(lines):
        a = round(0.5 + i / 100, 2)
        label, cells = line.split("┤")
        assert label.strip() == f"a={a:g}" and cells.strip(" │") == f"2 {1 + a:.2f}", line


def test_paging_the_heatmap_does_not_derive_its_grid_again(monkeypatch):
    """d (next rows) and a resize redraw plot 6 from the grid already derived: deriving it
    costs 0.5 s on a regime sweep's 46,080 rows, on the app's thread."""
    import plotext as plt

    import spectui.plotting.terminal as terminal
    from tests.app.test_plots_view import _many_rows_frame

    calls = []
    real = terminal.optimal_k_heatmap
    monkeypatch.setattr(terminal, "optimal_k_heatmap", lambda *a: calls.append(a) or real(*a))
    frame = _many_rows_frame(40)
    for page, size in ((0, (80, 20)), (1, (80, 20)), (1, (100, 30))):
        drawing = draw(plt, "06_optimal_k_heatmap", frame, *size, page=page)
        assert drawing.pages > 1
    assert len(calls) == 1
    draw(plt, "06_optimal_k_heatmap", _many_rows_frame(41), 80, 20, page=0)  # a new frame
    assert len(calls) == 2
    plt.main().clear_figure()
