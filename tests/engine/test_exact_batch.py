"""The batched exact values (engine.simulate.exact.exact_metrics_many) are the plain-float dynamic
program's, bit for bit (==, never approx), for batches that mix every field: K 1..1024, T
1..thousands, both tail rules, every draft model and every cost model.

The reference below is the program as it was before batching, one configuration at a time
in Python floats, each expectation added j = 0, 1, ...; the committed results came from it.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

import engine.simulate.exact as exact
from engine.acceptance.draft_models import get_model
from engine.core.config import SpecConfig
from engine.core.kernel import cycle_costs, draft_count
from engine.presets import load_preset
from engine.simulate.exact import (
    EXACT_METRIC_NAMES,
    exact_metrics,
    exact_metrics_many,
    expected_sequence_time_us,
    speedup_curve,
    speedup_exact,
    speedup_limit,
    tokens_per_cycle,
    tokens_per_cycle_at_length,
)
from engine.simulate.sequence_dp import CHECKPOINT_ROWS, expected_over_sequence

REPO = Path(__file__).resolve().parents[2]
TABLE_CSV = REPO / "tests" / "engine" / "cost" / "fixtures" / "latency_table.csv"
COST_MODELS = {
    "linear": {"cost.model": "linear", "cost.verify_token_us": 12.0},
    "roofline": {"cost.model": "roofline", "cost.gpu": "h100", "cost.draft": "llama-3.2-1b"},
    "roofline_max": {"cost.model": "roofline_max", "cost.gpu": "a100-80gb"},
    "table": {"cost.model": "table", "cost.table": str(TABLE_CSV)},
}
DRAFT_MODELS = ("fixed", "position_decay", "entropy_aware")


# ---- The reference: one configuration, plain floats ------------------------------------


def _reference_survival(config: SpecConfig) -> list[float]:
    """P(n >= j) for j = 0..K, from numpy's sequential cumulative product (as before)."""
    probs = get_model(config.draft_model).position_probs(config, config.k)
    return [1.0, *np.cumprod(probs).tolist()]


def _reference_dp(config: SpecConfig, per_cycle) -> list[float]:
    """f(0..T): f(r) = per_cycle(r, k_r, P_r) + sum_j P_r(n = j) f(max(r - j - 1, 0)), the
    sum added j = 0, 1, ... in Python floats, P_r the tail rule's distribution for k_r."""
    surv = _reference_survival(config)
    f = [0.0] * (config.tokens_per_seq + 1)
    for r in range(1, config.tokens_per_seq + 1):
        k = draft_count(config, r)
        dist = [surv[j] - surv[j + 1] for j in range(k)] + [surv[k]]
        total = 0.0
        for j in range(k + 1):
            total += dist[j] * f[max(r - 1 - j, 0)]
        f[r] = per_cycle(r, k, dist) + total
    return f


def _reference_metrics(config: SpecConfig) -> dict[str, float]:
    costs = cycle_costs(config)
    cycle_us = costs.cycle_us.tolist()
    sequence_us = _reference_dp(config, lambda r, k, dist: cycle_us[r])[-1]
    per_cycle_tokens = float(1.0 + np.array(_reference_survival(config)[1:]).sum())
    k = config.k
    return {
        "speedup_exact": costs.baseline_us / sequence_us,
        "speedup_limit": per_cycle_tokens * costs.limit_step_us / costs.limit_cycle_us,
        "tokens_per_cycle_exact": per_cycle_tokens,
        "breakeven_cost_ratio": (per_cycle_tokens - 1.0) / k,
        "compute_overhead_limit": (k + 1 + costs.cost_ratio * k) / per_cycle_tokens - 1.0,
    }


def _reference_tokens_per_cycle_at_length(config: SpecConfig) -> float:
    cycles = _reference_dp(config, lambda r, k, dist: 1.0)[-1]

    def emitted(r: int, k: int, dist: list[float]) -> float:
        total = 0.0
        for j, p in enumerate(dist):
            total += p * (j + 1)
        return total

    return _reference_dp(config, emitted)[-1] / cycles


def _assert_batch_is_reference(configs: list[SpecConfig]) -> None:
    batch = exact_metrics_many(configs)
    assert list(batch) == list(EXACT_METRIC_NAMES)
    for i, config in enumerate(configs):
        expected = _reference_metrics(config)
        for name in EXACT_METRIC_NAMES:
            assert batch[name][i] == expected[name], (i, name, config)


# ---- The grids -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def seed_configs() -> list[SpecConfig]:
    return load_preset("seed-576").sweep.configs()


def _mixed_configs(count: int, seed: int) -> list[SpecConfig]:
    """Configurations that differ in everything, K up to 1024 and T up to a few thousand
    (the total work T x K kept small enough for the reference)."""
    rng = np.random.default_rng(seed)
    configs = []
    for _ in range(count):
        k = int(rng.choice([1, 2, 3, 5, 8, 16, 40, 128, 1024]))
        longest = max(1, min(3000, 60_000 // k))
        tokens = int(rng.choice([1, 2, 3, k, k + 1, k + 2, rng.integers(1, longest + 1)]))
        tokens = min(max(tokens, 1), longest)
        cost = COST_MODELS[str(rng.choice(list(COST_MODELS)))]
        configs.append(
            SpecConfig(
                k=k,
                tokens_per_seq=tokens,
                tail=str(rng.choice(["full", "clamp"])),
                draft_model=str(rng.choice(DRAFT_MODELS)),
                acceptance_rate=float(rng.choice([0.0, 0.3, 0.77, 0.95, 1.0])),
                decay_base=float(rng.uniform(0.5, 1.0)),
                decay_factor=float(rng.uniform(0.7, 1.0)),
                entropy_frac=float(rng.uniform()),
                entropy_low=float(rng.uniform(0.0, 0.5)),
                entropy_high=float(rng.uniform(0.5, 1.0)),
                draft_cost_us=float(rng.choice([0.0, 10.0, 37.5])),
                verify_cost_us=float(rng.choice([200.0, 1234.5])),
            ).replace(
                **cost,
                **{
                    "workload.batch_size": int(rng.choice([1, 3, 64])),
                    "workload.prompt_len": int(rng.choice([0, 500, 4096])),
                },
            )
        )
    return configs


def test_seed_576_is_the_reference_bit_for_bit(seed_configs):
    _assert_batch_is_reference(seed_configs)


def test_seed_576_is_the_committed_results_bit_for_bit(seed_configs):
    """results/sweep_summary.csv holds these values (written in full, read back exactly)."""
    with (REPO / "results" / "sweep_summary.csv").open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    batch = exact_metrics_many(seed_configs)
    for i, row in enumerate(rows):
        for name in EXACT_METRIC_NAMES:
            assert batch[name][i] == float(row[name]), (i, name)


def test_seed_576_clamp_is_the_reference(seed_configs):
    _assert_batch_is_reference([c.replace(tail="clamp") for c in seed_configs])


@pytest.mark.parametrize("cost_model", list(COST_MODELS))
@pytest.mark.parametrize("tail", ["full", "clamp"])
def test_every_cost_model_and_tail(cost_model, tail):
    base = SpecConfig(tail=tail).replace(**COST_MODELS[cost_model])
    configs = [
        base.replace(k=k, tokens_per_seq=t, draft_model=m, batch_size=b, prompt_len=p)
        for k, t in ((1, 1), (2, 3), (4, 5), (7, 300), (16, 17))
        for m in DRAFT_MODELS
        for b, p in ((1, 0), (8, 1000))
    ]
    _assert_batch_is_reference(configs)


@pytest.mark.parametrize("seed", range(3))
def test_mixed_batches_are_the_reference(seed):
    """Every field differs within one batch, K up to 1024, T up to 3000."""
    configs = _mixed_configs(40, seed)
    assert {c.tail for c in configs} == {"full", "clamp"}
    assert {c.draft_model for c in configs} == set(DRAFT_MODELS)
    assert {c.cost_model for c in configs} == set(COST_MODELS)
    _assert_batch_is_reference(configs)


@pytest.mark.parametrize(
    ("k", "tokens"),
    [(1, 1), (1, 4000), (5, 2), (5, 6), (5, 7), (64, 64), (64, 65), (1024, 1), (1024, 60)],
)
@pytest.mark.parametrize("tail", ["full", "clamp"])
def test_k_and_t_edges(k, tokens, tail):
    """T below, at and just above K + 1 (where the tail rule changes the cycles), alone
    (one column: the accumulate sum) and in a batch of 200 (a sum call per row)."""
    config = SpecConfig(k=k, tokens_per_seq=tokens, tail=tail, acceptance_rate=0.9)
    expected = _reference_metrics(config)
    assert exact_metrics(config) == expected
    others = [config.replace(acceptance_rate=a) for a in np.linspace(0.0, 1.0, 199).tolist()]
    batch = exact_metrics_many([config, *others])
    assert {name: float(values[0]) for name, values in batch.items()} == expected


def test_the_scalar_functions_are_the_batch_of_one(seed_configs):
    for config in [*seed_configs[::97], *_mixed_configs(8, 11)]:
        expected = _reference_metrics(config)
        assert exact_metrics(config) == expected
        assert speedup_exact(config) == expected["speedup_exact"]
        assert speedup_limit(config) == expected["speedup_limit"]
        assert tokens_per_cycle(config) == expected["tokens_per_cycle_exact"]
        cycle_us = cycle_costs(config).cycle_us.tolist()
        times = _reference_dp(config, lambda r, k, dist, c=cycle_us: c[r])
        assert expected_sequence_time_us(config) == times[-1]


@pytest.mark.parametrize("tail", ["full", "clamp"])
@pytest.mark.parametrize("model", DRAFT_MODELS)
def test_tokens_per_cycle_at_length_is_the_reference(tail, model):
    for k, tokens in ((1, 1), (3, 2), (5, 8), (10, 40), (100, 99)):
        config = SpecConfig(k=k, tokens_per_seq=tokens, tail=tail, draft_model=model)
        assert tokens_per_cycle_at_length(config) == _reference_tokens_per_cycle_at_length(config)


def test_speedup_curve_is_the_batch_over_k():
    config = SpecConfig(tail="clamp", tokens_per_seq=50).replace(**COST_MODELS["roofline"])
    curve = speedup_curve(config, range(1, 70))
    for i, k in enumerate(range(1, 70)):
        expected = _reference_metrics(config.replace(k=k))
        assert curve["k"][i] == k
        assert curve["speedup_exact"][i] == expected["speedup_exact"]
        assert curve["speedup_limit"][i] == expected["speedup_limit"]


def test_order_of_the_results_is_the_order_given(seed_configs):
    shuffled = [seed_configs[i] for i in np.random.default_rng(5).permutation(576).tolist()]
    batch = exact_metrics_many(shuffled)
    one_by_one = exact_metrics_many(seed_configs)
    position = {id(c): i for i, c in enumerate(seed_configs)}
    for i, config in enumerate(shuffled):
        for name in EXACT_METRIC_NAMES:
            assert batch[name][i] == one_by_one[name][position[id(config)]]


def test_no_configuration_gives_empty_arrays():
    batch = exact_metrics_many([])
    assert list(batch) == list(EXACT_METRIC_NAMES)
    assert all(values.shape == (0,) for values in batch.values())


# ---- Summation order and memory -----------------------------------------------------------


@pytest.mark.parametrize("rows", [1, 2, 3, 200])
def test_row_sums_of_a_grouped_array_are_the_sums_of_each_vector(rows):
    """tokens_per_cycle sums the survival probabilities of configurations with the same K
    along the rows of one C-contiguous array: numpy's pairwise sum of each row is the sum
    of that row alone (as one configuration's vector), for every K 1..1024."""
    rng = np.random.default_rng(rows)
    # Every K with a few rows; with many, every fifth K (every remainder of numpy's blocks of
    # 8 and 128, both sides of each block's edge), a tenth of the time.
    for k in range(1, 1025, 5 if rows > 3 else 1):
        array = rng.uniform(size=(rows, k)) ** rng.uniform(1, 30)
        sums = array.sum(axis=1)
        for i in range(rows):
            assert sums[i] == np.ascontiguousarray(array[i]).sum(), (rows, k, i)


@pytest.mark.parametrize("columns", [1, 2, 129, 300])
def test_the_program_adds_each_expectation_in_the_order_j(columns):
    """On values of every sign and magnitude, where the order of additions shows in the
    last bits, the program is the float recurrence f(r) = v(r) + d_0 f(r - 1) + d_1 f(r - 2)
    + ..., added left to right: with one column (np.add.accumulate) and with many (a call
    per row)."""
    rng = np.random.default_rng(columns)
    width, total = 20, 60
    # Terms of 16 orders of magnitude; the weights of each column sum to 0.9 in absolute
    # value, so that f stays bounded.
    dist = rng.normal(size=(width, columns)) * 10.0 ** rng.integers(-8, 9, size=(width, 1))
    dist *= 0.9 / np.abs(dist).sum(axis=0)
    per_cycle = rng.normal(size=(total + 1, columns)) * 10.0 ** rng.integers(-8, 9, (total + 1, 1))
    f = expected_over_sequence(dist, per_cycle)
    for c in range(columns):
        d, v = dist[:, c].tolist(), per_cycle[:, c].tolist()
        reference = [0.0] * (total + 1)
        for r in range(1, total + 1):
            expectation = 0.0
            for j in range(width):
                expectation += d[j] * (reference[r - 1 - j] if r - 1 - j > 0 else 0.0)
            reference[r] = v[r] + expectation
        assert f[:, c].tolist() == reference, c


def test_checkpoint_is_called_every_so_many_rows():
    seen: list[int] = []
    dist = np.array([[0.5], [0.5]])
    total = 3 * CHECKPOINT_ROWS + 5
    expected_over_sequence(dist, np.ones((total + 1, 1)), seen.append)
    assert seen == [CHECKPOINT_ROWS, 2 * CHECKPOINT_ROWS, 3 * CHECKPOINT_ROWS]


def test_chunks_cover_every_configuration_once_in_bounded_memory():
    """A 46,080-configuration grid (K 1..1024, T up to 10^4) runs in chunks whose tables
    stay within the budget; each configuration is in exactly one chunk."""
    rng = np.random.default_rng(0)
    ks = rng.choice([1, 2, 4, 8, 16, 64, 1024], size=46_080).astype(np.int64)
    lengths = rng.choice([1, 128, 1000, 10_000], size=46_080).astype(np.int64)
    chunks = exact._chunks(ks, lengths)
    covered = np.sort(np.concatenate(chunks))
    assert np.array_equal(covered, np.arange(46_080))
    for chunk in chunks:
        size = (lengths[chunk].max() + ks[chunk].max() + 1) * chunk.size
        assert size <= exact._CHUNK_FLOATS
    # One configuration longer than the budget still runs, alone.
    assert exact._chunks(np.array([1024]), np.array([10**6]))[0].tolist() == [0]


def test_small_chunks_give_the_same_bits(monkeypatch, seed_configs):
    configs = [*seed_configs[::5], *_mixed_configs(10, 7)]
    whole = exact_metrics_many(configs)
    monkeypatch.setattr(exact, "_CHUNK_FLOATS", 2000)
    ks = np.array([c.k for c in configs])
    lengths = np.array([c.tokens_per_seq for c in configs])
    assert len(exact._chunks(ks, lengths)) > 10
    pieces = exact_metrics_many(configs)
    for name in EXACT_METRIC_NAMES:
        assert np.array_equal(pieces[name], whole[name]), name
