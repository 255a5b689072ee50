"""Sweeps over any field: newer (dotted) keys in presets, grids, CSV columns, reading back,
and K* per value of a newer axis (one K* per batch size)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from engine.analysis.analysis import (
    SweepDataError,
    check_sweep_frame,
    effective,
    optimal_k,
    read_sweep_csv,
    row_config,
)
from engine.analysis.plot_data import heatmap_cell_rows, optimal_k_heatmap
from engine.analysis.report import analysis_sections
from engine.core.config import CONFIG_FIELDS, ConfigError, SpecConfig
from engine.core.files import SweepWriter
from engine.core.kernel import METRIC_NAMES, cycle_costs
from engine.presets import PresetError, load_preset, load_preset_file, preset_to_toml
from engine.sweep.grid import SweepSpec
from engine.sweep.sweep import SWEEP_COLUMNS, config_frame, run_sweep, sweep_columns

BATCHES = [1, 8, 32, 128]

QUOTED = """
[config]
"cost.model" = "roofline"
"workload.prompt_len" = 1024
[[grid]]
"workload.batch_size" = [1, 8]
k = [1, 2]
"""
# TOML's own dotted keys: parsed as nested tables {"workload": {"prompt_len": 1024}}.
DOTTED = """
[config]
cost.model = "roofline"
workload.prompt_len = 1024
[[grid]]
workload.batch_size = [1, 8]
k = [1, 2]
"""
TABLES = """
[config]
[config.cost]
model = "roofline"
[config.workload]
prompt_len = 1024
[[grid]]
k = [1, 2]
[grid.workload]
batch_size = [1, 8]
"""


def write(tmp_path, text, name="p.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize("text", [QUOTED, DOTTED, TABLES], ids=["quoted", "dotted", "tables"])
def test_presets_read_newer_keys_in_every_spelling(tmp_path, text):
    preset = load_preset_file(write(tmp_path, text))
    assert preset.config.cost_model == "roofline" and preset.config.prompt_len == 1024
    assert preset.sweep.grids == ({"workload.batch_size": (1, 8), "k": (1, 2)},) or (
        preset.sweep.grids == ({"k": (1, 2), "workload.batch_size": (1, 8)},)
    )
    got = sorted((c.batch_size, c.k) for c in preset.sweep.configs())
    assert got == [(1, 1), (1, 2), (8, 1), (8, 2)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[config]\nworkload.batch_sz = 8\n", "config.workload.batch_sz: unknown key; known: "),
        ('[config]\n"cost.gpuu" = "h100"\n', "config.cost.gpuu: unknown key; known: "),
        ("[config.bogus]\nx = 1\n", "config.bogus.x: unknown key; known: "),
        ("[[grid]]\nworkload.batch = [1]\n", "grid[1].workload.batch: unknown key; known: "),
        ("[config]\nworkload.batch_size = 0\n", "config.workload.batch_size: 0 is not allowed"),
        ('[config]\nworkload.batch_size = "8"\n', "config.workload.batch_size: expected an "),
        ("[config]\ncost.gpu = 3\n", "config.cost.gpu: expected a string"),
        ("[[grid]]\nworkload.batch_size = [1, 9999]\n", "grid[1].workload.batch_size: 9999 is"),
        (
            '[config]\n"workload.batch_size" = 8\nworkload.batch_size = 9\n',
            "config.workload.batch_size: given twice",
        ),
        (
            '[config]\ncost.model = "roofline"\ncost.gpu = "nope"\n',
            "config.cost.gpu: unknown hardware 'nope'",
        ),
        (
            '[config]\ncost.model = "roofline"\n[[grid]]\ncost.gpu = ["h100", "nope"]\n',
            "grid: cost.gpu: unknown hardware 'nope'",
        ),
        (
            '[[grid]]\ncost.model = ["linear", "table"]\n',
            "grid: cost.table: a file is required by this cost model",
        ),
    ],
)
def test_bad_newer_keys_are_one_line_naming_the_key(tmp_path, text, expected):
    path = write(tmp_path, text)
    with pytest.raises(PresetError) as info:
        load_preset_file(path)
    message = str(info.value)
    assert message.startswith(f"{path}: ") and "\n" not in message
    assert expected in message
    if "unknown key" in expected:  # the known keys are listed, newer ones among them
        assert "workload.batch_size" in message and "acceptance_rate" in message


def test_saved_preset_writes_quoted_dotted_keys_and_round_trips(tmp_path):
    config = SpecConfig(k=3).replace(**{"cost.model": "roofline", "workload.prompt_len": 4096})
    grids = ({"workload.batch_size": [1, 8, 32], "k": [1, 2], "cost.gpu": ["h100", "a100-80gb"]},)
    text = preset_to_toml(config, "batch sweep", grids)
    assert '"workload.prompt_len" = 4096' in text and '"cost.model" = "roofline"' in text
    assert '"workload.batch_size" = [1, 8, 32]' in text
    assert "\nk = 3\n" in text  # the original's keys stay bare
    loaded = load_preset_file(write(tmp_path, text))
    assert loaded.config == config
    assert loaded.sweep.grids == (
        {"workload.batch_size": (1, 8, 32), "k": (1, 2), "cost.gpu": ("h100", "a100-80gb")},
    )
    assert len(loaded.sweep.configs()) == 12
    assert preset_to_toml(loaded.config, "batch sweep", grids) == text


def test_grids_accept_every_field_and_name_the_known_ones():
    spec = SweepSpec(
        SpecConfig(), ({"workload.batch_size": [1, 8], "cost.verify_token_us": [0, 5]},)
    )
    assert sorted((c.batch_size, c.verify_token_us) for c in spec.configs()) == [
        (1, 0.0),
        (1, 5.0),
        (8, 0.0),
        (8, 5.0),
    ]
    with pytest.raises(ConfigError, match=r"^workload\.batch: unknown parameter in grid; known: "):
        SweepSpec(SpecConfig(), ({"workload.batch": [1]},))


def _batch_configs(exact_ks=range(1, 9)):
    base = SpecConfig(n_sequences=60, tokens_per_seq=64, seed=3).replace(
        **{"cost.model": "roofline", "workload.prompt_len": 1024}
    )
    spec = SweepSpec(base, ({"workload.batch_size": BATCHES, "k": list(exact_ks)},))
    return spec.configs()


def test_sweep_columns_add_exactly_the_newer_fields_set():
    configs = _batch_configs()
    columns = sweep_columns(configs)
    newer = ("workload.prompt_len", "workload.batch_size", "cost.model")
    assert columns == ("config_id", *CONFIG_FIELDS, *newer, *METRIC_NAMES, "sampler")
    assert sweep_columns(load_preset("seed-576").sweep.configs()) == SWEEP_COLUMNS
    # A field set by only some configurations is a column; the others hold its default.
    mixed = [SpecConfig(k=2), SpecConfig(k=2).replace(**{"workload.batch_size": 8})]
    frame = run_sweep(mixed, exact_only=True)
    assert list(frame.columns) == [
        "config_id",
        *CONFIG_FIELDS,
        "workload.batch_size",
        *METRIC_NAMES,
        "sampler",
    ]
    assert frame["workload.batch_size"].tolist() == [1, 8]


def test_csv_of_a_batch_sweep_round_trips_and_is_checked(tmp_path):
    configs = _batch_configs()
    out = tmp_path / "s.csv"
    writer = SweepWriter(out, sweep_columns(configs))
    run_sweep(configs, exact_only=True, on_result=lambda row, *_: writer.write(row))
    partial = pd.read_csv(writer.partial)
    assert sorted(partial["workload.batch_size"].unique()) == BATCHES
    writer.finish()
    header = out.read_text().splitlines()[0].split(",")
    assert header[15:18] == ["workload.prompt_len", "workload.batch_size", "cost.model"]
    back = read_sweep_csv(out)
    assert back["workload.batch_size"].tolist() == [b for b in BATCHES for _ in range(8)]
    # Every row rebuilds its own configuration from the columns.
    assert [row_config(row) for _, row in back.iterrows()] == configs
    bad = back.copy()
    bad.loc[5, "workload.batch_size"] = 0
    with pytest.raises(SweepDataError, match=r"^x: row 7: workload\.batch_size: 0 is not allowed"):
        check_sweep_frame(bad, "x")
    bad = back.copy()
    bad["cost.model"] = bad["cost.model"].astype(object)
    bad.loc[2, "cost.model"] = "abacus"
    with pytest.raises(
        SweepDataError, match=r"row 4: cost\.model: not allowed; expected one of linear"
    ):
        check_sweep_frame(bad, "x")


def test_exact_only_rows_carry_the_cost_models_cost_ratio():
    config = _batch_configs()[-1]  # batch 128, K 8
    exact = run_sweep([config], exact_only=True)
    simulated = run_sweep([config])
    assert exact["cost_ratio"].iloc[0] == cycle_costs(config).cost_ratio
    assert exact["cost_ratio"].iloc[0] == simulated["cost_ratio"].iloc[0]
    assert not math.isclose(exact["cost_ratio"].iloc[0], config.cost_ratio)  # not 20 / 200


def test_a_batch_axis_gives_one_k_star_per_batch():
    frame = run_sweep(_batch_configs(), exact_only=True)
    assert len(effective(frame)) == len(frame)  # no batch merged away as a duplicate
    opt = optimal_k(frame)
    assert sorted(opt["workload.batch_size"]) == BATCHES
    expected = {}
    for batch in BATCHES:
        rows = frame[frame["workload.batch_size"] == batch]
        expected[batch] = int(rows.loc[rows["speedup_exact"].idxmax(), "k"])
    assert dict(zip(opt["workload.batch_size"], opt["k_opt"], strict=True)) == expected
    assert expected[1] > expected[128]  # verification stops being free as the batch grows
    # The K* grid (every view of K*) has a row per batch size, labelled as a person reads it.
    grid = optimal_k_heatmap(frame, "fixed", config_frame(_batch_configs()))
    assert grid.attrs["row_labels"] == [f"batch={b}" for b in BATCHES]
    assert grid["k_opt"].tolist() == [expected[b] for b in BATCHES]
    assert grid.attrs["held"] == {}
    cell = heatmap_cell_rows(frame, grid, 3, 0)
    assert cell["workload.batch_size"].unique().tolist() == [128] and len(cell) == 8
    section = next(s for s in analysis_sections(frame) if s.title == "Optimal K, fixed")
    assert "rows: workload.batch_size;" in section.lines[0]


def test_any_newer_field_that_varies_is_a_row_axis_of_the_k_star_grid():
    configs = [
        c.replace(**{"workload.prompt_len": p})
        for c in SweepSpec(SpecConfig(tokens_per_seq=16), ({"k": [1, 2]},)).configs()
        for p in (0, 512, 512)
    ]
    configs = list(dict.fromkeys(configs))
    frame = run_sweep(configs, exact_only=True)
    grid = optimal_k_heatmap(frame, "fixed")
    # prompt_len varies, so it is a row axis (a newer field is never held silently).
    assert grid.attrs["row_labels"] == ["prompt=0", "prompt=512"]


def test_a_file_name_some_rows_leave_empty_reads_back(tmp_path):
    table = tmp_path / "lat.csv"
    table.write_text("batch_size,tokens,verify_us,draft_us\n1,1,100,0\n1,9,120,40\n")
    spec = SweepSpec(
        SpecConfig(tokens_per_seq=16),
        (
            {"k": [1, 2]},
            {"k": [1, 2], "cost.model": ["table"], "cost.table": [str(table)]},
        ),
    )
    out = tmp_path / "s.csv"
    configs = spec.configs()
    writer = SweepWriter(out, sweep_columns(configs))
    run_sweep(configs, exact_only=True, on_result=lambda row, *_: writer.write(row))
    writer.finish()
    back = read_sweep_csv(out)  # the linear rows' file name is an empty cell
    assert back["cost.table"].tolist() == ["", "", str(table), str(table)]
    assert [row_config(row) for _, row in back.iterrows()] == configs
