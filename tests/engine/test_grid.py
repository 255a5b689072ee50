"""One K* grid for every view; speedups and cells formatted once; ties by the exact gap;
sweeps scheduled cell by cell. (Issue 9, items 8-11 and the analysis part of 12.)"""

from __future__ import annotations

import math

import pandas as pd
import pytest

from engine.analysis import analysis as A
from engine.analysis import plot_data as P
from engine.analysis.formatting import HEATMAP_LEGEND, TIE_RULE, k_star_cell, speedup_text
from engine.analysis.report import analysis_sections, findings_markdown
from engine.core.config import SpecConfig
from engine.presets import load_preset
from engine.sweep.grid import SweepSpec
from engine.sweep.sweep import cell_key, cell_order, run_sweep
from tests.engine.test_plot_data import frame, row


def decay_sweep() -> pd.DataFrame:
    """position_decay varying decay_base x decay_factor: a grid of 4 rows (exact values)."""
    spec = SweepSpec(
        SpecConfig(draft_model="position_decay", n_sequences=20, tokens_per_seq=32),
        (
            {
                "k": [1, 2, 4],
                "decay_base": [0.8, 0.9],
                "decay_factor": [0.6, 0.9],
                "draft_cost_us": [10.0, 50.0],
            },
        ),
    )
    return run_sweep(spec.configs(), exact_only=True)


# --- speedup text (item 10) -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "kwargs", "expected"),
    [
        (0.997, {}, "0.99x"),
        (0.9999, {"digits": 3, "unit": ""}, "0.999"),
        (0.996, {"near_one_digits": 3}, "0.996x"),
        (1.0, {}, "1.00x"),
        (1.004, {}, "1.00x"),
        (2.416, {"unit": ""}, "2.42"),
        (math.nan, {}, "n/a"),
    ],
)
def test_speedup_text_never_reads_one_for_a_loss(value, kwargs, expected):
    assert speedup_text(value, **kwargs) == expected


def test_losing_cell_text_never_reads_one():
    # The heatmap printed "1 ✗1.00" for 0.997.
    assert k_star_cell(1, 0.997, tie=False, loses=True) == "1✗ 0.99"
    assert k_star_cell(1, 0.997, tie=False, loses=True, aligned=True) == " 1 ✗ 0.99 "
    assert k_star_cell(4, 2.41, tie=True, loses=False, complete=False) == "4≈ 2.41…"
    assert len(k_star_cell(4, 2.41, tie=True, loses=True, complete=False, aligned=True)) == 10


def test_report_shows_a_losing_cell_below_one():
    f = frame(
        row(k=1, acceptance_rate=0.5, draft_cost_us=100, speedup=0.997, exact=0.996, ci=0.001),
        row(k=2, acceptance_rate=0.5, draft_cost_us=100, speedup=0.90, exact=0.90, ci=0.001),
    )
    text = findings_markdown(f)
    assert "1✗ 0.99" in text and "1.00" not in text.split("## Optimal K, fixed")[1][:600]


# --- one grid (item 8) ----------------------------------------------------------------------


def test_grid_rows_are_every_varying_parameter_together():
    f = decay_sweep()
    grid = P.optimal_k_heatmap(f, "position_decay")
    assert grid.attrs["row_parameters"] == ["decay_base", "decay_factor"]
    assert grid.attrs["row_labels"] == [
        "base=0.8, factor=0.6",
        "base=0.8, factor=0.9",
        "base=0.9, factor=0.6",
        "base=0.9, factor=0.9",
    ]
    assert len(grid) == 8 and grid["complete"].all()
    # Each cell is the K* of its own rows, not the first row of a pivot on decay_base.
    for _, cell in grid.iterrows():
        rows = P.heatmap_cell_rows(f, grid, int(cell["row"]), int(cell["column"]))
        assert rows["k"].tolist() == [1, 2, 4]
        assert (rows["decay_base"] == cell["decay_base"]).all()
        assert (rows["decay_factor"] == cell["decay_factor"]).all()
        best = rows.sort_values(["speedup_exact", "k"], ascending=[False, True]).iloc[0]
        assert int(best["k"]) == int(cell["k_opt"])


def test_report_draws_the_same_grid():
    f = decay_sweep()
    grid = P.optimal_k_heatmap(f, "position_decay")
    (section,) = [s for s in analysis_sections(f) if s.title == "Optimal K, position_decay"]
    assert section.grid is not None
    table = section.table
    assert table is not None and len(table) == 4  # was 2: only the first decay_factor
    assert list(table.index) == grid.attrs["row_labels"]
    assert table.index.name == "decay_base, decay_factor"
    assert HEATMAP_LEGEND in section.lines[0]


def test_an_axis_not_shown_is_held_constant_and_said():
    spec = SweepSpec(
        SpecConfig(n_sequences=20),
        ({"k": [1, 2], "acceptance_rate": [0.6, 0.9], "tokens_per_seq": [32, 64, 64]},),
    )
    configs = spec.configs()
    f = run_sweep(configs, exact_only=True)
    planned = pd.DataFrame([c.to_dict() for c in configs])
    grid = P.optimal_k_heatmap(f, "fixed", planned)
    assert grid.attrs["held"] == {"tokens_per_seq": 32}
    assert grid.attrs["notes"] == [
        "tokens_per_seq varies in this sweep; showing tokens_per_seq=32 only"
    ]
    assert len(grid) == 2
    rows = P.heatmap_cell_rows(f, grid, 1, 0)
    assert rows["tokens_per_seq"].tolist() == [32, 32] and rows["k"].tolist() == [1, 2]
    (section,) = [s for s in analysis_sections(f) if s.title == "Optimal K, fixed"]
    assert grid.attrs["notes"][0] in section.lines


def test_planned_grid_has_its_shape_before_results():
    spec = SweepSpec(
        SpecConfig(n_sequences=20, tokens_per_seq=32),
        ({"k": [1, 2, 4], "acceptance_rate": [0.6, 0.9], "draft_cost_us": [10.0, 50.0]},),
    )
    configs = spec.configs()
    planned = pd.DataFrame([c.to_dict() for c in configs])
    empty = P.optimal_k_heatmap(pd.DataFrame(), "fixed", planned)
    assert empty.empty and empty.attrs["row_labels"] == ["a=0.6", "a=0.9"]
    assert empty.attrs["costs"] == [10.0, 50.0] and empty.attrs["k_count"] == 3
    part = run_sweep([c for c in configs if c.acceptance_rate == 0.9 and c.k < 4])
    grid = P.optimal_k_heatmap(part, "fixed", planned)
    assert grid[["row", "column", "n_k"]].values.tolist() == [[1, 0, 2], [1, 1, 2]]
    assert not grid["complete"].any()  # best so far: K=4 still to come


# --- ties (item 11) -------------------------------------------------------------------------


def test_tie_by_exact_gap_within_monte_carlo_noise():
    # Seed 42's case: MC gap 0.022 > noise 0.019, exact gap 0.016 inside it -> a tie.
    ci = 0.019 / math.sqrt(2)
    f = frame(
        row(k=4, acceptance_rate=0.6, draft_cost_us=10, speedup=1.922, exact=1.916, ci=ci),
        row(k=5, acceptance_rate=0.6, draft_cost_us=10, speedup=1.900, exact=1.900, ci=ci),
        # Another cell: MC gap 0.010 inside the noise, exact gap 0.05 outside -> no tie.
        row(k=4, acceptance_rate=0.9, draft_cost_us=10, speedup=2.51, exact=2.55, ci=ci),
        row(k=5, acceptance_rate=0.9, draft_cost_us=10, speedup=2.50, exact=2.50, ci=ci),
    )
    opt = A.optimal_k(f).set_index("acceptance_rate")
    assert opt.loc[0.6, ["k_opt", "tie", "tied_ks"]].tolist() == [4, True, "4,5"]
    assert opt.loc[0.9, ["k_opt", "tie", "tied_ks"]].tolist() == [4, False, "4"]


def test_tie_without_exact_values_needs_overlapping_intervals():
    nan = math.nan
    f = frame(
        # intervals [1.95, 2.05] and [1.87, 1.97] overlap: a tie
        row(k=1, acceptance_rate=0.6, speedup=2.00, exact=nan, ci=0.05),
        row(k=2, acceptance_rate=0.6, speedup=1.92, exact=nan, ci=0.05),
        # [1.95, 2.05] and [1.80, 1.90] do not
        row(k=1, acceptance_rate=0.9, speedup=2.00, exact=nan, ci=0.05),
        row(k=2, acceptance_rate=0.9, speedup=1.85, exact=nan, ci=0.05),
    )
    opt = A.optimal_k(f).set_index("acceptance_rate")
    assert opt.loc[0.6, "tie"] and not opt.loc[0.9, "tie"]


def test_tie_rule_is_in_the_legend():
    assert TIE_RULE in HEATMAP_LEGEND
    assert "exact" in TIE_RULE and "overlap" in TIE_RULE


# --- schedule (item 9) ----------------------------------------------------------------------


def test_sweep_runs_in_cell_order_group_by_group_and_returns_grid_order():
    spec = SweepSpec(
        SpecConfig(n_sequences=10, tokens_per_seq=16),
        # K is the outer axis, as in seed-576: grid order finishes no cell before the end.
        ({"k": [1, 2, 3], "acceptance_rate": [0.6, 0.9], "draft_cost_us": [10.0, 50.0]},),
    )
    configs = spec.configs()
    order = cell_order(configs)
    assert sorted(order) == list(range(len(configs)))
    keys = [cell_key(configs[i]) for i in order]
    # every cell's K are consecutive
    assert all(keys[i] == keys[i - i % 3] for i in range(len(keys)))
    seen: list[int] = []
    frame_ = run_sweep(configs, on_result=lambda r, done, total: seen.append(r["config_id"]))
    # Configurations that differ only in cost (here the draft cost) share their draws and
    # finish together: groups come in cell order, so cells still complete as the sweep goes.
    ran = [(configs[i].acceptance_rate, configs[i].k, configs[i].draft_cost_us) for i in seen]
    assert ran == [(a, k, d) for a in (0.6, 0.9) for k in (1, 2, 3) for d in (10.0, 50.0)]
    assert frame_["config_id"].tolist() == list(range(len(configs)))
    half = seen[: len(seen) // 2]
    complete = [key for key in set(keys) if sum(cell_key(configs[i]) == key for i in half) == 3]
    assert len(complete) == 2  # of 4 cells; in grid order (K outer) none before row 9 of 12
    first_cell = frame_.loc[[i for i in seen if cell_key(configs[i]) == keys[0]]]
    assert first_cell["k"].tolist() == [1, 2, 3]
    # Same rows whatever the order: each configuration has its own generator.
    again = run_sweep(list(reversed(configs)))
    assert again["speedup"].tolist()[::-1] == frame_["speedup"].tolist()


def test_running_sweep_fills_cells_early():
    """Cells complete one after another: after a quarter of seed-576's fixed model, some
    cells are complete (grid order completed none before 97 % of it). The four draft costs
    of an acceptance share their draws and finish together, K by K."""
    configs = [c.replace(n_sequences=20) for c in load_preset("seed-576").sweep.configs()]
    planned = pd.DataFrame([c.to_dict() for c in configs])
    seen: list[dict] = []

    def stop() -> bool:
        return len(seen) >= 48

    done = run_sweep(configs, on_result=lambda r, *_: seen.append(r), should_stop=stop)
    grid = P.optimal_k_heatmap(done, "fixed", planned)
    # 48 configurations: every K of a = 0.5 at the four costs (4 cells), K 1-5 of a = 0.6
    assert grid["complete"].sum() == 4


def test_inert_axes_do_not_split_a_cell():
    a = SpecConfig(draft_model="position_decay", acceptance_rate=0.5)
    b = SpecConfig(draft_model="position_decay", acceptance_rate=0.9, k=7)
    assert cell_key(a) == cell_key(b)


# --- analysis never describes a constant axis (item 12) -------------------------------------


def test_losers_are_not_described_by_a_constant_axis():
    f = frame(
        row(k=1, draft_model="position_decay", decay_base=0.9, decay_factor=0.6, speedup=0.9),
        row(k=2, draft_model="position_decay", decay_base=0.9, decay_factor=0.6, speedup=1.2),
        row(k=1, acceptance_rate=0.5, speedup=0.8),
        row(k=1, acceptance_rate=0.9, speedup=1.8),
    )
    losing = A.losing_configurations(f)
    assert losing["by_model"]["position_decay"] == 1
    assert "position_decay" not in losing["max_quality"]  # decay_base is 0.9 throughout
    assert losing["max_quality"]["fixed"] == ("acceptance_rate", 0.5)
    text = findings_markdown(f)
    assert "decay_base" not in text.split("## Configurations that lose")[1].split("##")[0]
