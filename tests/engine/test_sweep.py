from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor

import numpy as np
import pandas as pd
import pytest

from engine.core.config import ConfigError, SpecConfig
from engine.presets import load_preset
from engine.sweep.grid import SweepSpec
from engine.sweep.sweep import SWEEP_COLUMNS, evaluate, run_sweep


def small_configs():
    spec = SweepSpec(
        SpecConfig(n_sequences=40, tokens_per_seq=24),
        (
            {"k": [1, 3], "acceptance_rate": [0.5, 0.9]},
            {"draft_model": ["position_decay", "entropy_aware"], "k": [2, 4]},
        ),
    )
    return spec.configs()


def test_grid_is_a_union_of_products_without_duplicates():
    base = SpecConfig()
    spec = SweepSpec(
        base, ({"k": [1, 2], "draft_cost_us": [10, 20, 50]}, {"k": [1], "draft_cost_us": [10]})
    )
    configs = spec.configs()
    assert len(configs) == 6
    assert configs[0] == base.replace(k=1, draft_cost_us=10)
    assert configs[-1] == base.replace(k=2, draft_cost_us=50)
    assert SweepSpec(base, ()).configs() == [base]


def test_grid_errors_name_the_axis():
    with pytest.raises(ConfigError, match="^speed: unknown"):
        SweepSpec(SpecConfig(), ({"speed": [1]},))
    with pytest.raises(ConfigError, match="^k: a grid axis"):
        SweepSpec(SpecConfig(), ({"k": []},))
    with pytest.raises(ConfigError, match="^k: "):
        SweepSpec(SpecConfig(), ({"k": [0]},)).configs()


def test_seed_576_is_the_original_sweep():
    configs = load_preset("seed-576").sweep.configs()
    assert len(configs) == 576
    frame = pd.DataFrame([c.to_dict() for c in configs])
    assert sorted(frame["k"].unique()) == [1, 2, 3, 4, 5, 7, 10, 15]
    assert sorted(frame["acceptance_rate"].unique()) == [0.5, 0.6, 0.7, 0.8, 0.9, 0.95]
    assert sorted(frame["draft_cost_us"].unique()) == [10, 20, 50, 100]
    assert set(frame["draft_model"]) == {"fixed", "position_decay", "entropy_aware"}
    assert (
        (frame[["verify_cost_us", "n_sequences", "tokens_per_seq", "seed"]] == [200, 500, 128, 42])
        .all()
        .all()
    )


def test_results_do_not_depend_on_workers_order_or_grid():
    configs = small_configs()
    serial = run_sweep(configs)
    with ThreadPoolExecutor(3) as pool:
        threaded = run_sweep(configs, executor=pool, batch_size=2)
    with ProcessPoolExecutor(2) as pool:
        processes = run_sweep(configs, executor=pool, batch_size=3)
    pd.testing.assert_frame_equal(serial, threaded)
    pd.testing.assert_frame_equal(serial, processes)
    reversed_rows = run_sweep(configs[::-1]).drop(columns="config_id")
    by_config = serial.drop(columns="config_id").iloc[::-1].reset_index(drop=True)
    pd.testing.assert_frame_equal(reversed_rows, by_config)
    alone = evaluate(configs[5])
    assert alone["speedup"] == serial.loc[5, "speedup"]
    assert list(serial.columns) == list(SWEEP_COLUMNS)


def test_progress_callback_and_stop_keep_finished_rows():
    configs = small_configs()
    seen = []

    def on_result(row, done, total):
        seen.append((row["config_id"], done, total))

    stop_after = 5
    partial = run_sweep(configs, on_result=on_result, should_stop=lambda: len(seen) >= stop_after)
    assert len(partial) == stop_after
    assert [d for _, d, _ in seen] == list(range(1, stop_after + 1))
    assert all(t == len(configs) for *_, t in seen)
    full = run_sweep(configs)
    pd.testing.assert_frame_equal(partial, full.iloc[:stop_after])


class _TwoThenIdle(Executor):
    """Runs the first two batches at once; the others stay queued until cancelled (no
    timing involved: a real pool may finish a small sweep before anyone asks to stop)."""

    def __init__(self) -> None:
        self.queued: list[Future] = []

    def submit(self, fn, /, *args, **kwargs):
        future: Future = Future()
        if len(self.queued) < 2:
            future.set_result(fn(*args, **kwargs))
        self.queued.append(future)
        return future


def test_stop_with_an_executor_cancels_the_rest():
    configs = small_configs() * 1  # 8 configs
    count = []
    executor = _TwoThenIdle()
    partial = run_sweep(
        configs,
        executor=executor,
        batch_size=1,
        on_result=lambda *a: count.append(1),
        should_stop=lambda: len(count) >= 2,
    )
    assert len(partial) == 2
    assert partial["speedup"].notna().all()
    assert all(f.cancelled() for f in executor.queued[2:])


def test_exact_only_and_reference_engine():
    configs = small_configs()[:3]
    exact = run_sweep(configs, exact_only=True)
    assert exact["speedup"].isna().all()
    assert exact["speedup_exact"].notna().all()
    assert np.allclose(exact["cost_ratio"], [c.cost_ratio for c in configs])
    ref = run_sweep(configs, engine="reference")
    fast = run_sweep(configs)
    assert not ref["speedup"].equals(fast["speedup"])  # different draws, same exact values
    assert np.allclose(ref["speedup_exact"], fast["speedup_exact"])
    with pytest.raises(ValueError, match="engine"):
        evaluate(configs[0], engine="warp")


def test_configurations_differing_only_in_cost_share_draws_and_equal_their_own_runs(
    monkeypatch,
):
    """A sweep draws once per group of configurations that differ only in cost (linear
    draft and verify times, per-token verify, roofline batch and context) and prices the
    draws for each; every row equals the configuration run alone, metric for metric."""
    import engine.simulate.simulator as simulator
    from engine.core.kernel import METRIC_NAMES
    from engine.simulate.simulator import simulate
    from engine.sweep.sweep import draw_groups

    base = SpecConfig(n_sequences=300, tokens_per_seq=48, k=4, acceptance_rate=0.7)
    spec = SweepSpec(
        base,
        (
            {"draft_cost_us": [5.0, 40.0], "verify_cost_us": [100.0, 300.0]},
            {"cost.verify_token_us": [0.0, 30.0], "tail": ["full", "clamp"]},
            {"cost.model": ["roofline"], "workload.batch_size": [1, 64], "tail": ["clamp"]},
            {"k": [2]},
        ),
    )
    configs = spec.configs()
    groups = draw_groups(configs, range(len(configs)))
    assert sorted(len(g) for g in groups) == [1, 4, 6]  # K = 2 alone; clamp; full
    rngs = []
    real_rng = simulator.config_rng
    monkeypatch.setattr(simulator, "config_rng", lambda c: rngs.append(c) or real_rng(c))
    frame = run_sweep(configs)
    assert len(rngs) == len(groups)  # one generator, one set of draws, per group
    monkeypatch.undo()
    for index, config in enumerate(configs):
        alone = simulate(config).metrics
        for name in METRIC_NAMES:
            assert frame.loc[index, name] == alone[name], (index, name)
    # The costs do change the results: the shared draws are priced per configuration.
    assert frame["speedup"].nunique() == len(configs)


def test_sweep_rows_name_their_sampler(tmp_path):
    from engine.acceptance.draft_models import SAMPLER

    configs = small_configs()[:3]
    assert set(run_sweep(configs)["sampler"]) == {SAMPLER}
    assert set(run_sweep(configs, engine="reference")["sampler"]) == {"token/reference"}
    assert set(run_sweep(configs, exact_only=True)["sampler"]) == {"none"}


def test_a_stop_in_the_calling_thread_stops_a_group_of_shared_draws_midway():
    """One group of configurations that share draws is one step of a serial sweep; a stop
    asked for while it runs ends it there (its rows dropped, none half-made)."""
    base = SpecConfig(n_sequences=20_000, tokens_per_seq=64).replace(**{"cost.model": "roofline"})
    configs = [base.replace(**{"workload.batch_size": b}) for b in (1, 2, 4, 8)]
    asked = []

    def should_stop() -> bool:
        asked.append(1)
        return len(asked) > 1  # not before the group starts; at its first check inside

    seen = []
    frame = run_sweep(configs, should_stop=should_stop, on_result=lambda *a: seen.append(a))
    assert len(frame) == 0 and seen == []
    assert len(asked) == 2


def test_a_serial_exact_only_sweep_of_long_sequences_goes_in_steps_it_can_stop_between():
    from engine.sweep.sweep import EXACT_BATCH_TOKENS

    configs = [c.replace(tokens_per_seq=40_000) for c in small_configs()]
    per_batch = EXACT_BATCH_TOKENS // 40_000  # 26 configurations' worth
    configs = (configs * 8)[: per_batch + 5]
    seen = []
    frame = run_sweep(
        configs,
        exact_only=True,
        on_result=lambda row, done, total: seen.append(done),
        should_stop=lambda: len(seen) > 0,
    )
    assert len(frame) == per_batch  # the first step only
