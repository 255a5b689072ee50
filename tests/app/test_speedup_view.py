"""The Speedup vs K view at 80x24: legend beside, not over, the curves; a sweep cell's title
names its row; a failed computation leaves the busy state (issue 9, items 6 and 12).

The view runs alone in a host app, at its place beside the form (tests.app.hosts_run); a
sweep cell reaches it as the app's ``on_cell_chosen`` passes it (``set_config(config,
rows)``; the whole app's path from the heatmap is tests/app/test_grid_view.py's).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.worker import WorkerState

from engine.analysis.analysis import read_sweep_csv
from engine.core.config import CONFIG_FIELDS, SpecConfig
from tests.app.helpers import until
from tests.app.hosts_run import curve_drawn, speedup_host, tiny
from tests.app.screen import region_text, screen_text

SEED_576 = Path(__file__).parents[2] / "results" / "sweep_summary.csv"


async def test_legend_is_under_the_chart_and_names_the_monte_carlo_points():
    app = speedup_host(tiny())
    async with app.run_test(size=(80, 24)) as pilot:
        view = await curve_drawn(pilot, app)
        view.focus()  # as key 2 does
        chart = region_text(app, app.query_one("#speedup-plot"))
        assert "exact" not in chart and "break-even" not in chart
        legend = region_text(app, app.query_one("#speedup-legend"))
        assert "exact fixed" in legend and "Monte Carlo ±95%" in legend
        before = view.last
        await pilot.press("c")  # overlay the other models: three curves, still beside
        await curve_drawn(pilot, app, after=before)
        chart = region_text(app, app.query_one("#speedup-plot"))
        assert "position_decay" not in chart and "entropy_aware" not in chart
        legend = region_text(app, app.query_one("#speedup-legend"))
        assert "position_decay" in legend and "entropy_aware" in legend


async def test_the_k_star_tick_is_marked_and_ticks_are_whole_k():
    app = speedup_host(tiny())
    async with app.run_test(size=(80, 24)) as pilot:
        view = await curve_drawn(pilot, app)
        chart = region_text(app, app.query_one("#speedup-plot")).splitlines()
        labels = chart[-2].split()
        assert f"{view.last.k_star}*" in labels
        assert all(label.rstrip("*").isdigit() for label in labels), labels


def _cell(frame, **where):
    rows = frame
    for column, value in where.items():
        rows = rows[rows[column] == value]
    best = rows.loc[rows["speedup"].idxmax()]
    config = SpecConfig.from_dict(
        {f: best[f].item() if hasattr(best[f], "item") else best[f] for f in CONFIG_FIELDS}
    )
    return config, rows.drop_duplicates(subset=["k"]).sort_values("k")


async def test_a_sweep_cells_title_names_its_row_value():
    frame = read_sweep_csv(SEED_576)
    app = speedup_host(tiny())
    async with app.run_test(size=(80, 24)) as pilot:
        view = await curve_drawn(pilot, app)
        config, rows = _cell(frame, draft_model="position_decay", draft_cost_us=20.0)
        before = view.last
        view.set_config(config, rows)  # a sweep cell chosen
        await curve_drawn(pilot, app, after=before)
        expected = "sweep cell: position_decay (base=0.9, factor=0.95), draft 20 us"
        assert view.last.title.startswith(expected)
        title = region_text(app, app.query_one("#speedup-title"))
        assert expected in " ".join(line.strip() for line in title.splitlines())
        config, rows = _cell(frame, draft_model="fixed", acceptance_rate=0.7, draft_cost_us=50.0)
        before = view.last
        view.set_config(config, rows)
        await curve_drawn(pilot, app, after=before)
        assert view.last.title.startswith("sweep cell: fixed (a=0.7), draft 50 us")
        assert "sweep cell: fixed (a=0.7), draft 50 us" in screen_text(app)


async def test_a_failed_curve_leaves_the_busy_state():
    """Draft cost 6e8, then `c` twice: doubling it to 1.2e9 raises in the worker."""
    app = speedup_host(tiny())
    async with app.run_test(size=(80, 24)) as pilot:
        view = await curve_drawn(pilot, app)
        view.focus()  # as key 2 does
        started = []
        compute = view._compute
        view._compute = lambda *args: started.append(compute(*args)) or started[-1]
        before = view.last
        view.set_config(tiny().replace(draft_cost_us=6e8))
        await curve_drawn(pilot, app, after=before)
        await pilot.press("c", "c")
        await until(pilot, lambda: any(w.state == WorkerState.ERROR for w in started))
        failed = [w for w in started if w.state == WorkerState.ERROR]
        assert failed  # the 1.2e9 draft cost raised in the worker
        await until(pilot, lambda: "could not compute this curve" in screen_text(app))
        shown = screen_text(app)
        assert "computing" not in shown
        assert "could not compute this curve" in shown


@pytest.mark.parametrize("model", ["per_position", "beta_round", "markov", "confidence"])
async def test_the_models_beyond_the_original_draw_their_curve(model):
    """Their parameters have dotted keys (acceptance.*): the title names them, the exact
    curve is drawn (markov's from the program over (r, regime)) and the view is not busy."""
    app = speedup_host(tiny().replace(draft_model=model))  # the form, its model changed
    async with app.run_test(size=(100, 30)) as pilot:
        view = await curve_drawn(pilot, app)
        assert view.last is not None and view.last.curves[0][0] == f"exact {model}"
        assert view.last.title.startswith(f"form: {model} (")
        legend = region_text(app, app.query_one("#speedup-legend"))
        assert f"exact {model}" in legend


async def test_a_roofline_sweep_cells_title_names_its_gpu_and_draft():
    """A regime-study cell (issue 22): the GPU and the draft model are part of its identity."""
    from engine.presets import load_preset
    from engine.sweep.sweep import run_sweep

    configs = load_preset("regime-study").sweep.lazy()
    cell = next(
        c
        for c in configs
        if c.draft_model == "beta_round" and c.gpu == "a100-80gb" and c.draft == "qwen2.5-0.5b"
    )
    rows = run_sweep([cell.replace(k=k, n_sequences=2) for k in (1, 2, 3)])
    app = speedup_host(tiny())
    async with app.run_test(size=(80, 24)) as pilot:
        view = await curve_drawn(pilot, app)
        before = view.last
        view.set_config(cell.replace(n_sequences=2), rows)  # the cell chosen
        await curve_drawn(pilot, app, after=before)
        title = region_text(app, app.query_one("#speedup-title"))
        shown = " ".join(line.strip() for line in title.splitlines())
        assert shown.startswith("sweep cell: beta_round (")
        assert (
            "roofline on a100-80gb: llama-3.1-8b verifies, qwen2.5-0.5b drafts, batch 1," in shown
        )


async def test_the_title_names_the_nearest_validated_measurement_and_its_error():
    # vLLM #20780's EAGLE-1 sweep on an H100 (docs/validation.md): K = 3 is nearest K = 3.
    roofline = tiny().replace(
        **{"cost.model": "roofline", "cost.draft": "eagle-llama-3.1-8b", "k": 3}
    )
    app = speedup_host(roofline)
    async with app.run_test(size=(80, 24)) as pilot:
        view = await curve_drawn(pilot, app)
        title = " ".join(region_text(app, app.query_one("#speedup-title")).split())
        assert "nearest validated: vllm-20780-eagle1-k3 (K=3, batch 1):" in title
        assert ": default roofline +6.9 % (within 10 %)" in title
        before = view.last
        view.set_config(roofline.replace(**{"cost.draft": "llama-3.2-1b"}))  # none measured
        await curve_drawn(pilot, app, after=before)
        title = region_text(app, app.query_one("#speedup-title"))
        assert "validated" not in title and "roofline" in title
