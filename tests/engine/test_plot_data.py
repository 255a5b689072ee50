"""The data behind the six plots, on small hand-built sweep frames worked out here."""

import math
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from engine.analysis import plot_data as P
from engine.core.config import SpecConfig

EXPECTED_IDS = (
    "01_speedup_vs_k_fixed",
    "02_acceptance_vs_k_by_model",
    "03_waste_vs_k",
    "04_speedup_vs_cost_ratio",
    "05_pareto_speedup_vs_overhead",
    "06_optimal_k_heatmap",
)


def row(
    speedup=1.5,
    ci=0.01,
    exact=None,
    overhead=0.2,
    acceptance=0.5,
    waste=0.5,
    tokens_exact=1.5,
    **changes,
):
    """One sweep row: a configuration (``changes`` to the defaults) and chosen metrics."""
    config = SpecConfig(**changes)
    return {
        **config.to_dict(),
        "speedup": speedup,
        "speedup_ci95": ci,
        "speedup_exact": speedup if exact is None else exact,
        "speedup_limit": speedup,
        "acceptance_observed": acceptance,
        "waste": waste,
        "tokens_per_cycle_exact": tokens_exact,
        "compute_overhead": overhead,
        "compute_overhead_limit": overhead,
        "cost_ratio": config.cost_ratio,
        "breakeven_cost_ratio": 0.5,
    }


def frame(*rows):
    return pd.DataFrame(list(rows))


def test_registry_lists_the_six_plots_in_order():
    assert tuple(p.plot_id for p in P.PLOTS) == EXPECTED_IDS
    assert P.PLOT_IDS == EXPECTED_IDS
    assert all(p.title for p in P.PLOTS)
    assert P.get_plot("03_waste_vs_k").data is P.waste_vs_k
    with pytest.raises(KeyError, match="01_speedup_vs_k_fixed"):
        P.get_plot("07_nope")


# --- plot 1 -------------------------------------------------------------------------------


def test_speedup_vs_k_one_line_per_acceptance_other_models_left_out():
    f = frame(
        row(k=1, acceptance_rate=0.5, speedup=1.40, exact=1.42, ci=0.01),
        row(k=2, acceptance_rate=0.5, speedup=1.55, exact=1.56, ci=0.02),
        row(k=1, acceptance_rate=0.9, speedup=1.80, exact=1.81, ci=0.01),
        row(k=2, acceptance_rate=0.9, speedup=2.50, exact=2.49, ci=0.03),
        row(k=1, draft_model="position_decay", speedup=9.0),
    )
    out = P.speedup_vs_k_fixed(f)
    assert list(out.columns) == list(P.SPEEDUP_VS_K_COLUMNS)
    # Sorted by cost, acceptance, K; each value is the row's own.
    assert out["acceptance_rate"].tolist() == [0.5, 0.5, 0.9, 0.9]
    assert out["k"].tolist() == [1, 2, 1, 2]
    assert out["speedup"].tolist() == [1.40, 1.55, 1.80, 2.50]
    assert out["speedup_exact"].tolist() == [1.42, 1.56, 1.81, 2.49]
    assert out["speedup_ci95"].tolist() == [0.01, 0.02, 0.01, 0.03]
    assert set(out["draft_cost_us"]) == {20.0} and set(out["cost_ratio"]) == {0.1}
    assert out.attrs["speedup_column"] == "speedup" and out.attrs["notes"] == []


def test_speedup_vs_k_holds_an_unshown_axis_at_its_most_common_value():
    f = frame(
        row(k=1, tokens_per_seq=128, speedup=1.4),
        row(k=2, tokens_per_seq=128, speedup=1.5),
        row(k=1, tokens_per_seq=32, speedup=1.1),
    )
    out = P.speedup_vs_k_fixed(f)
    assert out["speedup"].tolist() == [1.4, 1.5]
    assert out.attrs["notes"] == [
        "tokens_per_seq varies in this sweep; showing tokens_per_seq=128 only"
    ]


def test_speedup_vs_k_of_an_exact_only_sweep_uses_the_exact_speedup():
    f = frame(
        row(k=1, speedup=math.nan, ci=math.nan, exact=1.3),
        row(k=2, speedup=math.nan, ci=math.nan, exact=1.6),
    )
    out = P.speedup_vs_k_fixed(f)
    assert out["speedup"].tolist() == [1.3, 1.6]
    assert out["speedup_ci95"].isna().all()
    assert out.attrs["speedup_column"] == "speedup_exact"


# --- plots 2 and 3 --------------------------------------------------------------------------


def acceptance_frame():
    return frame(
        # fixed, a = 0.5 and 0.8, K = 1 and 2, two draft costs (averaged over)
        row(k=1, acceptance_rate=0.5, draft_cost_us=10, acceptance=0.48, waste=0.52),
        row(k=1, acceptance_rate=0.5, draft_cost_us=50, acceptance=0.52, waste=0.48),
        row(k=2, acceptance_rate=0.5, draft_cost_us=10, acceptance=0.36, waste=0.64),
        row(k=2, acceptance_rate=0.5, draft_cost_us=50, acceptance=0.38, waste=0.62),
        row(k=1, acceptance_rate=0.8, draft_cost_us=10, acceptance=0.79, waste=0.21),
        row(k=1, acceptance_rate=0.8, draft_cost_us=50, acceptance=0.81, waste=0.19),
        # position_decay: acceptance_rate is inert, so these two rows are one configuration
        # and the first one is kept; it is not split into lines by acceptance_rate
        row(
            k=1,
            draft_model="position_decay",
            acceptance_rate=0.5,
            acceptance=0.90,
            waste=0.10,
            tokens_exact=1.9,
        ),
        row(k=1, draft_model="position_decay", acceptance_rate=0.8, acceptance=0.99, waste=0.0),
    )


def test_acceptance_lines_per_model_and_quality_mean_over_costs():
    out = P.acceptance_vs_k_by_model(acceptance_frame())
    lines = {
        (line, k): value
        for line, k, value in out[["line", "k", "acceptance_observed"]].itertuples(index=False)
    }
    decay = "position_decay (base=0.9, factor=0.95)"
    assert lines == pytest.approx(
        {
            ("fixed a=0.5", 1): (0.48 + 0.52) / 2,
            ("fixed a=0.5", 2): (0.36 + 0.38) / 2,
            ("fixed a=0.8", 1): (0.79 + 0.81) / 2,
            (decay, 1): 0.90,
        }
    )
    assert out.loc[out["line"] == "fixed a=0.5", "n_configs"].tolist() == [2, 2]
    # expected acceptance = (tokens_per_cycle_exact - 1) / K
    decay_row = out[out["draft_model"] == "position_decay"].iloc[0]
    assert decay_row["acceptance_expected"] == pytest.approx(0.9)
    assert out.loc[
        (out["line"] == "fixed a=0.5") & (out["k"] == 2), "acceptance_expected"
    ].item() == (pytest.approx(0.25))
    assert any("averaged over draft and verify costs" in n for n in out.attrs["notes"])
    # model order follows the registry: fixed first, then position_decay
    assert out["draft_model"].tolist()[-1] == "position_decay"


def test_waste_lines_mean_over_costs():
    out = P.waste_vs_k(acceptance_frame())
    got = out.set_index(["line", "k"])["waste"]
    assert got[("fixed a=0.5", 1)] == pytest.approx(0.50)
    assert got[("fixed a=0.5", 2)] == pytest.approx(0.63)
    assert got[("fixed a=0.8", 1)] == pytest.approx(0.20)
    assert got[("position_decay (base=0.9, factor=0.95)", 1)] == pytest.approx(0.10)
    # expected waste (infinite sequence) = 1 - E[accepted] / K
    assert out.set_index(["line", "k"])["waste_expected"][("fixed a=0.5", 2)] == pytest.approx(0.75)


def test_waste_of_an_exact_only_sweep_is_the_expected_waste():
    f = frame(row(k=2, speedup=math.nan, ci=math.nan, exact=1.2, waste=math.nan, tokens_exact=2.0))
    out = P.waste_vs_k(f)
    assert out["waste"].tolist() == [pytest.approx(0.5)]
    assert out.attrs["metric_source"] == "_exact"


# --- plot 4 ---------------------------------------------------------------------------------


def test_speedup_vs_cost_ratio_best_k_and_the_mean_line():
    f = frame(
        row(k=1, acceptance_rate=0.8, draft_cost_us=10, speedup=1.5, exact=1.51),
        row(k=2, acceptance_rate=0.8, draft_cost_us=10, speedup=1.8, exact=1.79),
        row(k=1, acceptance_rate=0.8, draft_cost_us=100, speedup=1.1, exact=1.09),
        row(k=2, acceptance_rate=0.8, draft_cost_us=100, speedup=0.9, exact=0.91),
        # a tie in speedup goes to the smaller K
        row(k=1, acceptance_rate=0.5, draft_cost_us=10, speedup=1.2),
        row(k=2, acceptance_rate=0.5, draft_cost_us=10, speedup=1.2),
    )
    out = P.speedup_vs_cost_ratio(f)
    best = out[out["statistic"] == "best K"].set_index(["acceptance_rate", "cost_ratio"])
    assert best.loc[(0.8, 0.05), "k_best"] == 2 and best.loc[(0.8, 0.05), "speedup"] == 1.8
    assert best.loc[(0.8, 0.05), "speedup_exact"] == 1.79
    assert best.loc[(0.8, 0.5), "k_best"] == 1 and best.loc[(0.8, 0.5), "speedup"] == 1.1
    assert best.loc[(0.5, 0.05), "k_best"] == 1
    assert best.loc[(0.8, 0.05), "line"] == "a=0.8"
    mean = out[out["statistic"] == P.MEAN_LINE].set_index("cost_ratio")
    assert mean.loc[0.05, "speedup"] == pytest.approx((1.5 + 1.8 + 1.2 + 1.2) / 4)
    assert mean.loc[0.5, "speedup"] == pytest.approx((1.1 + 0.9) / 2)
    assert mean["acceptance_rate"].isna().all()
    assert mean.loc[0.05, "speedup_ci95"] == pytest.approx(math.sqrt(4 * 0.01**2) / 4)


# --- plot 5 ---------------------------------------------------------------------------------


def test_pareto_marks_the_known_front():
    f = frame(
        row(k=1, overhead=0.1, speedup=1.2),  # A: front
        row(k=2, overhead=0.2, speedup=1.5),  # B: front
        row(k=3, overhead=0.3, speedup=1.4),  # C: dominated by B
        row(k=4, overhead=0.5, speedup=2.0),  # D: front
        row(k=5, overhead=0.5, speedup=1.9),  # E: same overhead as D, slower
        row(k=1, draft_model="entropy_aware", overhead=0.4, speedup=1.45),  # dominated by B
    )
    out = P.pareto_speedup_vs_overhead(f)
    assert len(out) == 6
    front = out[out["on_front"]].sort_values("front_order")
    assert front["k"].tolist() == [1, 2, 4]
    assert front["front_order"].tolist() == [0.0, 1.0, 2.0]
    assert out.loc[~out["on_front"], "front_order"].isna().all()
    assert out["draft_model"].tolist() == ["fixed"] * 5 + ["entropy_aware"]


def test_pareto_merges_rows_that_differ_only_in_an_inert_parameter():
    f = frame(
        row(k=1, draft_model="position_decay", acceptance_rate=0.5, overhead=0.1, speedup=1.2),
        row(k=1, draft_model="position_decay", acceptance_rate=0.9, overhead=0.1, speedup=1.2),
    )
    out = P.pareto_speedup_vs_overhead(f)
    assert len(out) == 1 and out["on_front"].all()
    assert out.attrs["notes"] == ["1 distinct configurations (2 sweep rows)"]


# --- plot 6 ---------------------------------------------------------------------------------


def heatmap_frame():
    return frame(
        # (a=0.6, 10 us): K=2 best by 0.02, inside hypot(0.05, 0.05) = 0.071 -> tie "1,2"
        row(k=1, acceptance_rate=0.6, draft_cost_us=10, speedup=1.50, ci=0.05),
        row(k=2, acceptance_rate=0.6, draft_cost_us=10, speedup=1.52, ci=0.05),
        row(k=3, acceptance_rate=0.6, draft_cost_us=10, speedup=1.20, ci=0.05),
        # (a=0.6, 100 us): every K below 1 -> loses, K*=1
        row(k=1, acceptance_rate=0.6, draft_cost_us=100, speedup=0.95, ci=0.01),
        row(k=2, acceptance_rate=0.6, draft_cost_us=100, speedup=0.80, ci=0.01),
        row(k=3, acceptance_rate=0.6, draft_cost_us=100, speedup=0.70, ci=0.01),
        # (a=0.9, 10 us): K*=3 clearly
        row(k=1, acceptance_rate=0.9, draft_cost_us=10, speedup=1.8, ci=0.01),
        row(k=2, acceptance_rate=0.9, draft_cost_us=10, speedup=2.5, ci=0.01),
        row(k=3, acceptance_rate=0.9, draft_cost_us=10, speedup=3.0, ci=0.01),
        # (a=0.9, 100 us): K*=2, 0.05 ahead of K=3 with noise 0.014 -> no tie
        row(k=1, acceptance_rate=0.9, draft_cost_us=100, speedup=1.20, ci=0.01),
        row(k=2, acceptance_rate=0.9, draft_cost_us=100, speedup=1.30, ci=0.01),
        row(k=3, acceptance_rate=0.9, draft_cost_us=100, speedup=1.25, ci=0.01),
    )


def test_heatmap_known_k_star_a_tie_and_a_losing_cell():
    out = P.optimal_k_heatmap(heatmap_frame())
    assert out.attrs["model"] == "fixed"
    assert out.attrs["row_labels"] == ["a=0.6", "a=0.9"] and out.attrs["costs"] == [10.0, 100.0]
    cells = out.set_index(["acceptance_rate", "draft_cost_us"])
    assert cells.loc[(0.6, 10.0), ["k_opt", "tie", "tied_ks", "loses"]].tolist() == [
        2,
        True,
        "1,2",
        False,
    ]
    assert cells.loc[(0.6, 100.0), ["k_opt", "tie", "loses"]].tolist() == [1, False, True]
    assert cells.loc[(0.9, 10.0), ["k_opt", "speedup_opt", "tie"]].tolist() == [3, 3.0, False]
    assert cells.loc[(0.9, 100.0), ["k_opt", "k_second", "tie"]].tolist() == [2, 3, False]
    assert cells.loc[(0.6, 10.0), ["row", "column"]].tolist() == [0, 0]
    assert cells.loc[(0.9, 100.0), ["row", "column"]].tolist() == [1, 1]
    assert cells.loc[(0.9, 100.0), "row_label"] == "a=0.9"


def test_heatmap_of_a_partial_sweep_has_fewer_cells():
    f = heatmap_frame()
    partial = f[~((f["acceptance_rate"] == 0.9) & (f["draft_cost_us"] == 100))]
    out = P.optimal_k_heatmap(partial)
    assert len(out) == 3
    assert out["complete"].all() and out.attrs["k_count"] == 3
    # a cell that has only K=1 while the others have K=1..3 is provisional
    provisional = P.optimal_k_heatmap(pd.concat([partial, f.iloc[[9]]]))
    cell = provisional.set_index(["acceptance_rate", "draft_cost_us"]).loc[(0.9, 100.0)]
    assert (cell["k_opt"], cell["n_k"], cell["complete"]) == (1, 1, False)
    # a cell with only one K finished so far is still drawn, and is no tie
    one_k = P.optimal_k_heatmap(partial.iloc[[0]])
    assert one_k[["k_opt", "tie"]].iloc[0].tolist() == [1, False]


def test_heatmap_other_models_and_missing_models():
    decay = frame(
        row(k=1, draft_model="position_decay", decay_base=0.7, speedup=1.3),
        row(k=2, draft_model="position_decay", decay_base=0.7, speedup=1.4),
        row(k=1, draft_model="position_decay", decay_base=0.9, speedup=1.5),
    )
    out = P.optimal_k_heatmap(decay)  # no fixed rows: falls back to the model present
    assert out.attrs["model"] == "position_decay"
    assert out["row_label"].tolist() == ["base=0.7", "base=0.9"]
    assert out["k_opt"].tolist() == [2, 1]
    assert P.optimal_k_heatmap(decay, model="fixed").empty
    assert P.optimal_k_heatmap(heatmap_frame(), model="entropy_aware").empty


def test_heatmap_rows_follow_the_quality_parameter_that_varies():
    # entropy_frac varies, entropy_high (the first parameter the model reads) does not
    f = frame(
        row(k=1, draft_model="entropy_aware", entropy_frac=0.1, speedup=1.6),
        row(k=1, draft_model="entropy_aware", entropy_frac=0.5, speedup=1.3),
    )
    out = P.optimal_k_heatmap(f)
    assert out["row_label"].tolist() == ["frac=0.1", "frac=0.5"]
    assert out.attrs["row_parameters"] == ["entropy_frac"]


# --- empty and partial frames -----------------------------------------------------------------


@pytest.mark.parametrize("spec", P.PLOTS, ids=lambda s: s.plot_id)
def test_empty_frames_give_empty_data(spec):
    columns_only = heatmap_frame().iloc[:0]
    for empty in (pd.DataFrame(), columns_only):
        out = spec.data(empty)
        assert out.empty
        assert len(out.columns) > 0


def test_a_sweep_without_the_fixed_model_gives_fewer_plots_never_a_crash():
    f = frame(
        row(k=1, draft_model="position_decay", speedup=1.3),
        row(k=2, draft_model="entropy_aware", speedup=1.4),
    )
    assert P.speedup_vs_k_fixed(f).empty
    assert P.speedup_vs_cost_ratio(f).empty
    assert set(P.acceptance_vs_k_by_model(f)["draft_model"]) == {"position_decay", "entropy_aware"}
    assert len(P.waste_vs_k(f)) == 2
    assert len(P.pareto_speedup_vs_overhead(f)) == 2


def test_nan_values_in_a_running_sweep_do_not_break_plots():
    f = heatmap_frame()
    f.loc[0, "compute_overhead"] = np.nan
    out = P.pareto_speedup_vs_overhead(f)
    assert len(out) == len(f) - 1


def test_plot_data_imports_no_drawing_or_terminal_package():
    code = (
        "import sys, engine.analysis.plot_data\n"
        "bad = [m for m in ('matplotlib', 'plotext', 'textual', 'rich', 'spectui') "
        "if m in sys.modules]\n"
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
