"""Scenarios beyond the original (docs/model.md, "Beyond the original"), checked end to end:

- the reduction: ``linear`` with ``verify_token_us = 0`` is the original, exact values and
  Monte Carlo draws, on all 576 configurations of the seed sweep;
- a few Monte Carlo values of the committed results pinned as literals;
- the seed key: fields that do not change the draws leave them as they are, fields that
  do change them;
- Monte Carlo agrees with the exact values under every cost model, both tails, batch > 1
  and a prompt; the reference loop too, under a roofline.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from engine.core.config import CONFIG_FIELDS, SpecConfig
from engine.presets import load_preset
from engine.simulate.exact import exact_metrics
from engine.simulate.reference import simulate_reference
from engine.simulate.simulator import METRIC_NAMES, Z95, simulate
from tests.engine.stats import Z_STRICT

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "results" / "sweep_summary.csv"
TABLE_CSV = REPO / "tests" / "engine" / "cost" / "fixtures" / "latency_table.csv"
VLLM_PROFILE = REPO / "tests" / "engine" / "cost" / "fixtures" / "vllm_dynamic_sd_profile.json"

EXACT_COLUMNS = (
    "speedup_exact",
    "speedup_limit",
    "tokens_per_cycle_exact",
    "breakeven_cost_ratio",
    "compute_overhead_limit",
)
MC_COLUMNS = tuple(name for name in METRIC_NAMES if name not in EXACT_COLUMNS)


def _committed_rows() -> list[dict[str, str]]:
    with RESULTS.open(newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.fixture(scope="module")
def seed_sweep() -> list[tuple[SpecConfig, dict[str, str]]]:
    """The seed-576 configurations, each as ``linear`` with ``verify_token_us = 0`` set
    explicitly, beside its committed row (matched by config_id, and checked field by field)."""
    configs = load_preset("seed-576").sweep.configs()
    rows = _committed_rows()
    assert len(configs) == len(rows) == 576
    pairs = []
    for index, (config, row) in enumerate(zip(configs, rows, strict=True)):
        assert int(row["config_id"]) == index
        scenario = config.replace(**{"cost.model": "linear", "cost.verify_token_us": 0.0})
        for key in CONFIG_FIELDS:
            assert str(scenario.get(key)) == row[key], (index, key)
        pairs.append((scenario, row))
    return pairs


def test_reduction_exact_values_match_the_committed_sweep(seed_sweep):
    worst = 0.0
    for config, row in seed_sweep:
        exact = exact_metrics(config)
        for name in EXACT_COLUMNS:
            committed = float(row[name])
            assert exact[name] == pytest.approx(committed, rel=0, abs=1e-12), (
                row["config_id"],
                name,
            )
            worst = max(worst, abs(exact[name] - committed))
    # Not merely close: the same arithmetic gives the same bits almost everywhere.
    assert worst <= 1e-12


@pytest.mark.parametrize("part", range(4))
def test_reduction_monte_carlo_is_identical_on_all_576(seed_sweep, part):
    """Same seeds, same draws, same numbers: every Monte Carlo column equal as written.
    In four parts of 144 configurations, so that test workers share them."""
    for config, row in seed_sweep[part::4]:
        metrics = simulate(config).metrics
        for name in MC_COLUMNS:
            assert metrics[name] == float(row[name]), (row["config_id"], name)


# Four rows of today's results/sweep_summary.csv, as literals: each draft model, the cheapest
# and the dearest draft. A change of seeds, of the seed key or of the sampler changes them
# (sampler "prefix/2", issue #11: one uniform per cycle; the seed key no longer holds the
# linear costs).
PINNED = {
    # (model, K, acceptance_rate, draft_cost_us): (speedup, speedup_ci95, cycles, accepted)
    ("fixed", 5, 0.8, 10.0): (2.9173789173789175, 0.022460793863279194, 17550, 47381),
    ("fixed", 15, 0.5, 100.0): (0.23241077151297596, 0.0018069093268938596, 32397, 32140),
    ("position_decay", 3, 0.9, 10.0): (2.8225477462617783, 0.013031287984798566, 19717, 44944),
    ("entropy_aware", 7, 0.7, 100.0): (0.9445588246146126, 0.009137928588802835, 15057, 50166),
}


@pytest.mark.parametrize("key", list(PINNED), ids=lambda k: f"{k[0]}-K{k[1]}-d{k[3]:g}")
def test_pinned_monte_carlo_values(key):
    model, k, acceptance, draft_cost = key
    speedup, ci95, cycles, accepted = PINNED[key]
    config = SpecConfig(
        draft_model=model, k=k, acceptance_rate=acceptance, draft_cost_us=draft_cost
    )
    metrics = simulate(config).metrics
    assert (metrics["speedup"], metrics["speedup_ci95"]) == (speedup, ci95)
    assert (metrics["cycles"], metrics["accepted_tokens"]) == (cycles, accepted)


def test_pinned_value_is_what_the_cli_prints():
    """The same pinned figure as a user gets it: ``spectui run --json``, the original's flags."""
    out = subprocess.run(
        [
            *(sys.executable, "-m", "spectui", "run", "--json"),
            *("--draft-model", "fixed", "--k", "5", "--acceptance-rate", "0.8"),
            *("--draft-cost-us", "10", "--verify-cost-us", "200"),
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    document = json.loads(out)
    metrics = document.get("metrics", document)
    assert metrics["speedup"] == PINNED[("fixed", 5, 0.8, 10.0)][0]
    assert metrics["cycles"] == PINNED[("fixed", 5, 0.8, 10.0)][2]


# --- The seed key ---------------------------------------------------------------------

DRAW_COLUMNS = ["sequence", "cycle", "k", "accepted", "kept", "cum_tokens"]
BASE = SpecConfig(n_sequences=150, tokens_per_seq=64, k=4, acceptance_rate=0.7)


def _draws(config: SpecConfig) -> tuple[dict[str, float], np.ndarray]:
    run = simulate(config, records=True)
    assert run.cycles is not None
    counts = {
        name: run.metrics[name]
        for name in ("cycles", "tokens_per_cycle", "accepted_tokens", "drafted_tokens")
    }
    return counts, run.cycles[DRAW_COLUMNS].to_numpy()


ROOFLINE = {"cost.model": "roofline", "workload.batch_size": 16, "workload.prompt_len": 2048}
INERT_CHANGES = {
    "linear costs": {"draft_cost_us": 70.0, "verify_cost_us": 900.0},
    "batch size": {"workload.batch_size": 64},
    "prompt": {"workload.prompt_len": 8192},
    "verify per token": {"cost.verify_token_us": 25.0},
    "all workload and linear": {
        "workload.batch_size": 7,
        "workload.prompt_len": 100,
        "cost.verify_token_us": 3.0,
    },
}
# Within the non-linear cost models: the model and every one of its fields.
INERT_BETWEEN_COST_MODELS = {
    "roofline_max": {"cost.model": "roofline_max"},
    "table": {"cost.model": "table", "cost.table": str(TABLE_CSV)},
    "gpu": {"cost.gpu": "a100-80gb"},
    "target and draft": {"cost.target": "qwen2.5-7b", "cost.draft": "qwen2.5-0.5b"},
    "efficiencies and t0": {"cost.eta_w": 0.5, "cost.eta_f": 0.6, "cost.t0_us": 15.0},
    "linear costs, inert here": {"draft_cost_us": 70.0, "verify_cost_us": 900.0},
}
DRAW_CHANGES = {
    "K": {"k": 5},
    "acceptance": {"acceptance_rate": 0.71},
    "draft model": {"draft_model": "position_decay"},
    "tokens per sequence": {"tokens_per_seq": 65},
    "sequences": {"n_sequences": 151},
    "tail": {"tail": "clamp"},
    "seed": {"seed": 43},
}


@pytest.mark.parametrize("tail", ["full", "clamp"])
@pytest.mark.parametrize("change", list(INERT_CHANGES))
def test_newer_fields_leave_the_draws_identical(change, tail):
    base = BASE.replace(tail=tail)
    counts, draws = _draws(base)
    counts2, draws2 = _draws(base.replace(**INERT_CHANGES[change]))
    assert counts2 == counts
    np.testing.assert_array_equal(draws2, draws)


@pytest.mark.parametrize("change", list(INERT_BETWEEN_COST_MODELS))
def test_cost_model_fields_leave_the_draws_identical(change):
    base = BASE.replace(**ROOFLINE)
    counts, draws = _draws(base)
    counts2, draws2 = _draws(base.replace(**INERT_BETWEEN_COST_MODELS[change]))
    assert counts2 == counts
    np.testing.assert_array_equal(draws2, draws)


def test_switching_from_linear_to_another_cost_model_keeps_the_draws():
    counts, draws = _draws(BASE)
    counts2, draws2 = _draws(BASE.replace(**ROOFLINE))
    assert counts2 == counts
    np.testing.assert_array_equal(draws2, draws)


@pytest.mark.parametrize("change", list(DRAW_CHANGES))
def test_fields_of_the_draws_change_them(change):
    _, draws = _draws(BASE)
    _, draws2 = _draws(BASE.replace(**DRAW_CHANGES[change]))
    # Compare the accept counts of the cycles both runs have, sequence 0 and 1 onwards.
    rows = min(len(draws), len(draws2), 400)
    accepted = DRAW_COLUMNS.index("accepted")
    assert not np.array_equal(draws[:rows, accepted], draws2[:rows, accepted])


# --- Monte Carlo agrees with exact, every cost model -----------------------------------

SCENARIOS = {
    "linear per-token verify": {"cost.verify_token_us": 40.0, "k": 6, "acceptance_rate": 0.75},
    "linear, batch and prompt": {
        "cost.verify_token_us": 15.0,
        "workload.batch_size": 8,
        "workload.prompt_len": 500,
        "draft_model": "entropy_aware",
    },
    "roofline batch 32, 2k prompt": {
        "cost.model": "roofline",
        "workload.batch_size": 32,
        "workload.prompt_len": 2048,
        "k": 4,
        "draft_model": "position_decay",
    },
    "roofline batch 1, EAGLE head": {
        "cost.model": "roofline",
        "cost.draft": "eagle-llama-3.1-8b",
        "cost.t0_us": 20.0,
        "k": 7,
        "acceptance_rate": 0.8,
    },
    "roofline_max compute-bound": {
        "cost.model": "roofline_max",
        "workload.batch_size": 128,
        "workload.prompt_len": 1024,
        "k": 5,
        "acceptance_rate": 0.85,
    },
    "roofline_max long context": {
        "cost.model": "roofline_max",
        "cost.gpu": "mi300x",
        "workload.batch_size": 64,
        "workload.prompt_len": 32768,
        "k": 3,
        "draft_model": "entropy_aware",
    },
    "table interpolated": {
        "cost.model": "table",
        "cost.table": str(TABLE_CSV),
        "workload.batch_size": 3,
        "k": 4,
        "acceptance_rate": 0.65,
    },
    "table batch 10, prompt": {
        "cost.model": "table",
        "cost.table": str(TABLE_CSV),
        "workload.batch_size": 10,
        "workload.prompt_len": 4000,
        "k": 6,
        "draft_model": "position_decay",
    },
    "vLLM profile batch 24": {
        "cost.model": "table",
        "cost.table": str(VLLM_PROFILE),
        "workload.batch_size": 24,
        "k": 4,
        "acceptance_rate": 0.7,
    },
}


def _within_sampling_error(metrics: dict[str, float]) -> tuple[bool, str]:
    sigma = metrics["speedup_ci95"] / Z95
    gap = abs(metrics["speedup"] - metrics["speedup_exact"])
    text = (
        f"MC {metrics['speedup']:.5f} +- {metrics['speedup_ci95']:.5f}, exact "
        f"{metrics['speedup_exact']:.5f}, {gap / sigma:.2f} sigma"
    )
    return gap <= Z_STRICT * sigma, text


@pytest.mark.parametrize("tail", ["full", "clamp"])
@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_monte_carlo_agrees_with_exact(scenario, tail):
    config = SpecConfig(n_sequences=2000, tokens_per_seq=96, seed=7, tail=tail).replace(
        **SCENARIOS[scenario]
    )
    metrics = simulate(config).metrics
    ok, text = _within_sampling_error(metrics)
    assert ok, text
    # The interval is informative: narrow against the speedup itself.
    assert metrics["speedup_ci95"] < 0.02 * metrics["speedup_exact"]


@pytest.mark.parametrize("tail", ["full", "clamp"])
def test_reference_loop_agrees_with_exact_under_a_roofline(tail):
    config = SpecConfig(
        n_sequences=400,
        tokens_per_seq=40,
        seed=11,
        tail=tail,
        k=4,
        draft_model="position_decay",
    ).replace(**ROOFLINE)
    metrics = simulate_reference(config).metrics
    ok, text = _within_sampling_error(metrics)
    assert ok, text
