"""Grids built fast and on demand: SpecConfig.derive is replace (values and refusals), a lazy
grid is its list, duplicates go as they always have, and batches go out a few at a time."""

from __future__ import annotations

import pickle
import threading
from concurrent.futures import Future, ThreadPoolExecutor

import pytest

from engine.core.config import ConfigError, SpecConfig
from engine.presets import Preset, list_presets
from engine.sweep.grid import SweepSpec
from engine.sweep.sweep import ExecutorRunner

BASE = SpecConfig()


@pytest.mark.parametrize(
    "changes",
    [
        {"k": 3, "acceptance_rate": 0.5},
        {"k": 3.0, "draft_cost_us": 7},  # numbers of another type, normalised alike
        {"draft_model": "per_position", "acceptance.rates": "0.9, 0.8"},
        {"acceptance.rates": [0.9, 0.8], "draft_model": "per_position"},  # unhashable
        {"cost.model": "roofline", "cost.gpu": "a100-80gb", "workload.batch_size": 64},
        {"policy.name": "hf_heuristic", "policy.k_max": 12},
        {"draft_cost_us": -0.0},
    ],
)
def test_derive_is_replace(changes):
    memo: dict = {}
    derived = BASE.derive(changes, memo)
    assert derived == BASE.replace(**changes)
    assert repr(derived) == repr(BASE.replace(**changes))
    assert BASE.derive(changes, memo) == derived  # from the memo too


@pytest.mark.parametrize(
    "changes",
    [
        {"k": 0},  # a value out of range
        {"acceptance_rate": 1.5, "k": 0},  # two bad values: the first in field order
        {"k": 0, "no_such_field": 1},  # an unknown name before any value
        {"cost.model": "roofline", "cost.gpu": "tpu-9000"},  # a part's spec id
        {"policy.name": "threshold"},  # the policy's check across fields
        {
            "policy.name": "threshold",
            "draft_model": "confidence",
            "policy.k_min": 9,
            "policy.k_max": 4,
        },
    ],
)
def test_derive_refuses_as_replace_does(changes):
    with pytest.raises(ConfigError) as replaced:
        BASE.replace(**changes)
    memo: dict = {}
    for _ in range(2):  # the second time from the memo
        with pytest.raises(ConfigError) as derived:
            BASE.derive(changes, memo)
        assert str(derived.value) == str(replaced.value)


def test_minus_zero_is_not_zero_from_the_memo():
    memo: dict = {}
    assert repr(BASE.derive({"draft_cost_us": 0.0}, memo).draft_cost_us) == "0.0"
    assert repr(BASE.derive({"draft_cost_us": -0.0}, memo).draft_cost_us) == "-0.0"


def _slow_configs(spec: SweepSpec) -> list[SpecConfig]:
    """What SweepSpec.configs() gave before it was built fast: replace, then dedupe."""
    import itertools

    seen: dict[SpecConfig, None] = {}
    for grid in spec.grids:
        names = list(grid)
        for values in itertools.product(*(grid[n] for n in names)):
            seen.setdefault(spec.base.replace(**dict(zip(names, values, strict=True))))
    return list(seen) if spec.grids else [spec.base]


GRIDS = {
    "one grid with duplicates": ({"k": [3, 3, 4], "acceptance.rates": ["0.9,0.8", "0.9, 0.8"]},),
    "two grids sharing configurations": (
        {"k": [1, 2, 3], "acceptance_rate": [0.6, 0.8]},
        {"k": [2, 3, 4], "acceptance_rate": [0.8]},
    ),
    "three grids, other axes": (
        {"k": [1, 2]},
        {"draft_cost_us": [20.0, 30.0], "k": [5]},
        {"k": [5, 1], "acceptance_rate": [0.8, 0.7]},
    ),
}


@pytest.mark.parametrize("name", GRIDS)
def test_a_grid_is_its_old_list_eagerly_and_lazily(name):
    spec = SweepSpec(BASE.replace(draft_model="per_position"), GRIDS[name])
    expected = _slow_configs(spec)
    assert spec.configs() == expected
    assert spec.size() == len(expected)
    lazy = spec.lazy()
    assert len(lazy) == len(expected)
    assert [lazy[i] for i in range(len(lazy))] == expected
    assert list(lazy) == expected and lazy[-1] == expected[-1]
    assert lazy[1:3] == expected[1:3]
    with pytest.raises(IndexError):
        lazy[len(expected)]


def test_every_shipped_grid_is_its_old_list():
    for preset in list_presets():
        if isinstance(preset, Preset) and preset.sweep.size() < 5000:
            spec = preset.sweep
            assert spec.configs() == _slow_configs(spec), preset.name
            lazy = spec.lazy()
            assert [lazy[i] for i in range(0, len(lazy), 7)] == spec.configs()[::7]


def test_a_refusal_survives_a_worker_process():
    error = pickle.loads(pickle.dumps(ConfigError("shape.tree", "too large")))
    assert isinstance(error, ConfigError)
    assert (error.field, str(error)) == ("shape.tree", "shape.tree: too large")


def test_an_executor_gets_a_few_batches_per_worker_at_a_time():
    """A sweep of 100,000 configurations is never all submitted: at most ``window``."""
    in_flight, most = [0], [0]
    lock = threading.Lock()
    gate = threading.Semaphore(0)

    def work(batch):
        gate.acquire()
        with lock:
            in_flight[0] -= 1
        return [(i, {}) for i, _ in batch]

    class Counting(ThreadPoolExecutor):
        def submit(self, fn, /, *args, **kwargs) -> Future:
            with lock:
                in_flight[0] += 1
                most[0] = max(most[0], in_flight[0])
            gate.release()
            return super().submit(fn, *args, **kwargs)

    with Counting(max_workers=2) as executor:
        runner = ExecutorRunner(executor)
        assert runner.window == 8
        batches = iter([[(i, None)] for i in range(100)])
        results = list(runner.map_unordered(work, batches, lambda: False))
    assert len(results) == 100
    assert most[0] <= runner.window
