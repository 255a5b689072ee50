"""Analysis on small hand-built sweep frames whose answers are worked out here."""

import numpy as np
import pandas as pd
import pytest

from engine.analysis import analysis as A
from engine.analysis.plot_data import optimal_k_heatmap
from engine.core.config import SpecConfig


def frame_of(rows):
    """A sweep frame from (config changes, speedup, ci, exact, overhead) tuples."""
    out = []
    for changes, speedup, ci, exact, overhead in rows:
        c = SpecConfig(**changes)
        out.append(
            {
                **c.to_dict(),
                "speedup": speedup,
                "speedup_ci95": ci,
                "speedup_exact": exact,
                "speedup_limit": exact,
                "compute_overhead": overhead,
                "cost_ratio": c.cost_ratio,
                "breakeven_cost_ratio": 0.5,
            }
        )
    return pd.DataFrame(out)


def test_optimal_k_ties_and_losers():
    f = frame_of(
        [
            # cell A (acc 0.8, 20 us): K=3 best, K=5 within noise (diff 0.02 < hypot(0.05,0.05))
            ({"k": 1, "acceptance_rate": 0.8}, 1.50, 0.05, 1.50, 0.1),
            ({"k": 3, "acceptance_rate": 0.8}, 2.00, 0.05, 1.97, 0.3),
            ({"k": 5, "acceptance_rate": 0.8}, 1.98, 0.05, 1.99, 0.5),
            # cell B (acc 0.5, 100 us): all lose, K=1 best by far
            ({"k": 1, "acceptance_rate": 0.5, "draft_cost_us": 100}, 0.95, 0.01, 0.95, 0.6),
            ({"k": 3, "acceptance_rate": 0.5, "draft_cost_us": 100}, 0.60, 0.01, 0.60, 1.5),
        ]
    )
    opt = A.optimal_k(f).set_index("acceptance_rate")
    a, b = opt.loc[0.8], opt.loc[0.5]
    assert (a["k_opt"], a["k_second"], a["tie"], a["tied_ks"]) == (3, 5, True, "3,5")
    assert a["k_opt_exact"] == 5 and not a["loses"]
    assert (b["k_opt"], b["tie"], b["loses"], b["tied_ks"]) == (1, False, True, "1")
    assert b["cost_ratio"] == pytest.approx(0.5)
    grid = optimal_k_heatmap(f, "fixed").set_index(["acceptance_rate", "draft_cost_us"])
    assert grid.loc[(0.8, 20.0), "k_opt"] == 3 and grid.loc[(0.5, 100.0), "k_opt"] == 1
    assert (0.8, 100.0) not in grid.index


def test_equal_exact_speedups_tie_in_an_exact_only_sweep():
    # No Monte Carlo (no noise): K=3 and K=5 have the same exact speedup, so both are K*.
    f = frame_of(
        [
            ({"k": 1}, np.nan, np.nan, 1.25, 0.1),
            ({"k": 3}, np.nan, np.nan, 1.75, 0.3),
            ({"k": 5}, np.nan, np.nan, 1.75, 0.5),
        ]
    )
    cell = A.optimal_k(f).iloc[0]
    assert (cell["k_opt"], cell["tie"], cell["tied_ks"]) == (3, True, "3,5")


def test_equal_speedups_without_intervals_tie():
    # Monte Carlo speedups with no interval (NaN) and no exact values: the intervals are
    # points, and two equal points overlap.
    f = frame_of(
        [
            ({"k": 1}, 1.25, np.nan, np.nan, 0.1),
            ({"k": 3}, 1.75, np.nan, np.nan, 0.3),
            ({"k": 5}, 1.75, np.nan, np.nan, 0.5),
        ]
    )
    cell = A.optimal_k(f).iloc[0]
    assert (cell["k_opt"], cell["tie"], cell["tied_ks"]) == (3, True, "3,5")


def test_a_speedup_of_exactly_one_does_not_lose():
    # Even K* only matches the baseline: not slower, so not a losing cell.
    f = frame_of(
        [
            ({"k": 1}, 1.0, 0.01, 1.0, 0.1),
            ({"k": 2}, 0.75, 0.01, 0.75, 0.2),
        ]
    )
    cell = A.optimal_k(f).iloc[0]
    assert cell["speedup_opt"] == 1.0 and not cell["loses"]


def test_inert_axis_is_merged_not_presented():
    # position_decay ignores acceptance_rate: two rows that differ only there are one config.
    f = frame_of(
        [
            (
                {"draft_model": "position_decay", "k": 2, "acceptance_rate": 0.5},
                1.8,
                0.01,
                1.8,
                0.2,
            ),
            (
                {"draft_model": "position_decay", "k": 2, "acceptance_rate": 0.9},
                1.8,
                0.01,
                1.8,
                0.2,
            ),
            (
                {"draft_model": "position_decay", "k": 4, "acceptance_rate": 0.5},
                2.1,
                0.01,
                2.1,
                0.4,
            ),
            (
                {"draft_model": "position_decay", "k": 4, "acceptance_rate": 0.9},
                2.1,
                0.01,
                2.1,
                0.4,
            ),
        ]
    )
    assert len(A.effective(f)) == 2
    opt = A.optimal_k(f)
    assert len(opt) == 1
    assert opt.iloc[0]["k_opt"] == 4 and opt.iloc[0]["n_k"] == 2
    assert optimal_k_heatmap(f, "position_decay").attrs["row_parameters"] == ["decay_base"]


def test_losing_configurations_described_from_data():
    f = frame_of(
        [
            ({"k": 15, "acceptance_rate": 0.5, "draft_cost_us": 20}, 0.8, 0.01, 0.8, 2.0),
            ({"k": 15, "acceptance_rate": 0.9, "draft_cost_us": 100}, 0.96, 0.01, 0.96, 2.0),
            ({"k": 1, "acceptance_rate": 0.9, "draft_cost_us": 10}, 1.8, 0.01, 1.8, 0.1),
            ({"draft_model": "entropy_aware", "k": 15, "draft_cost_us": 100}, 0.9, 0.01, 0.9, 2.0),
        ]
    )
    lose = A.losing_configurations(f)
    assert (lose["count"], lose["total"], lose["distinct"]) == (3, 4, 3)
    assert lose["min_cost_ratio"] == pytest.approx(0.1)
    assert lose["max_quality"]["fixed"] == ("acceptance_rate", 0.9)
    assert lose["by_model"] == {"fixed": 2, "position_decay": 0, "entropy_aware": 1}


def test_pareto_front():
    f = frame_of(
        [
            ({"k": 1}, 1.5, 0.0, 1.5, 0.1),  # front
            ({"k": 2}, 1.4, 0.0, 1.4, 0.2),  # dominated by k=1
            ({"k": 3}, 2.0, 0.0, 2.0, 0.3),  # front
            ({"k": 4}, 2.0, 0.0, 2.0, 0.4),  # same speed, more overhead: dominated
            ({"k": 5}, 2.5, 0.0, 2.5, 0.9),  # front
        ]
    )
    assert A.pareto_front(f)["k"].tolist() == [1, 3, 5]


def test_breakeven_tables():
    f = frame_of(
        [
            ({"k": 1, "draft_cost_us": 10}, 2.0, 0.0, 2.0, 0.1),
            ({"k": 2, "draft_cost_us": 10}, 3.0, 0.0, 3.0, 0.1),
            ({"k": 1, "draft_cost_us": 100}, 0.5, 0.0, 0.5, 0.1),
            ({"k": 2, "draft_cost_us": 100}, 0.9, 0.0, 0.9, 0.1),
        ]
    )
    table = A.breakeven_by_cost_ratio(f)
    assert table["cost_ratio"].tolist() == pytest.approx([0.05, 0.5])
    assert table["mean_speedup"].tolist() == pytest.approx([2.5, 0.7])
    assert table["losing"].tolist() == [0, 2]
    # mean goes 2.5 -> 0.7 between 0.05 and 0.5: crosses 1.0 at 0.05 + 1.5/1.8 * 0.45
    assert A.mean_breakeven_ratio(table) == pytest.approx(0.05 + 1.5 / 1.8 * 0.45)


def test_exact_only_frames_use_exact_values():
    f = frame_of([({"k": 1}, np.nan, np.nan, 1.2, 0.1), ({"k": 2}, np.nan, np.nan, 1.4, 0.2)])
    f["compute_overhead_limit"] = f["compute_overhead"]
    assert A.speedup_column(f) == "speedup_exact"
    assert A.best_configuration(f)["k"] == 2
    assert A.optimal_k(f).iloc[0]["k_opt"] == 2


def test_read_sweep_csv_errors(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n")
    with pytest.raises(A.SweepDataError, match="missing columns"):
        A.read_sweep_csv(bad)
    with pytest.raises(A.SweepDataError, match="no such file"):
        A.read_sweep_csv(tmp_path / "none.csv")


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        ("k", "abc", "row 3: k: not a number"),
        ("k", "", "row 3: k: an empty cell is not allowed"),
        ("k", "0", "row 3: k: 0 is not allowed"),
        ("acceptance_rate", "1.5", "row 3: acceptance_rate: 1.5 is not allowed"),
        ("draft_model", "big", "row 3: draft_model: not allowed; expected one of"),
        ("speedup", "fast", "column speedup holds non-numeric values"),
    ],
)
def test_read_sweep_csv_rejects_bad_cells(tmp_path, column, value, message):
    from engine.sweep.sweep import run_sweep

    frame = run_sweep([SpecConfig(k=k, n_sequences=20, tokens_per_seq=16) for k in (1, 2, 3)])
    frame[column] = frame[column].astype(object)
    frame.loc[1, column] = value
    path = tmp_path / "s.csv"
    frame.to_csv(path, index=False)
    with pytest.raises(A.SweepDataError) as info:
        A.read_sweep_csv(path)
    assert message in str(info.value)


def test_heatmap_rows_use_the_parameter_that_varies():
    from engine.acceptance.draft_models import quality_parameter

    assert quality_parameter("entropy_aware") == "entropy_high"
    assert quality_parameter("entropy_aware", {"entropy_high": 1, "entropy_frac": 4}) == (
        "entropy_frac"
    )
    assert quality_parameter("position_decay", {"decay_base": 2, "decay_factor": 2}) == (
        "decay_base"
    )
    f = frame_of(
        [
            ({"draft_model": "entropy_aware", "k": k, "entropy_frac": frac}, s, 0.01, s, 0.1)
            for frac, k, s in [(0.1, 1, 1.5), (0.1, 2, 1.8), (0.5, 1, 1.3), (0.5, 2, 1.2)]
        ]
    )
    grid = optimal_k_heatmap(f, "entropy_aware")
    assert grid.attrs["row_parameters"] == ["entropy_frac"]
    assert grid[grid["draft_cost_us"] == 20.0]["k_opt"].tolist() == [2, 1]
