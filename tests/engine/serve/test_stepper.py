"""The compiled step loop (engine.serve.stepper) gives, number for number, what the
simulator's numpy steps give one at a time: the same requests finish at the same times,
with the same summary, whatever stops it makes to ask for prices or hand over rows."""

from __future__ import annotations

import numpy as np
import pytest

from engine.core.config import SpecConfig
from engine.serve import compiled, stepper
from engine.serve.server import Server
from engine.serve.sim import _fit_budget
from engine.serve.workload import Lengths, Workload
from tests.engine.serve.helpers import served as run

WORKLOAD = Workload(
    requests=150,
    rate=12.0,
    prompt=Lengths("uniform", low=50, high=3000),
    output=Lengths("uniform", low=20, high=400),
)


def served(config, policy, server, closed=None, workload=WORKLOAD, **how):
    # the first ones are preempted too, and not counted
    return run(config, policy, server, workload, closed, warmup=30, **how)


SUMMED = ("steps", "preemptions", "spec_tokens", "accepted_tokens", "busy_s", "kv_time")

CASES = {
    "clamped tails": ({"tail": "clamp"}, "fixed", {}),
    "a schedule by batch": (
        {"tail": "full", "policy.schedule": "1:5,8:3,16:1"},
        "schedule",
        {},
    ),
    "off": ({}, "off", {}),
    "a small KV cache": ({"k": 3}, "fixed", {"gpu_memory_utilization": 0.27, "reserve_gb": 0.0}),
    "parallel drafting": ({"cost.drafting": "parallel", "k": 6}, "fixed", {}),
    "the max form (priced step by step)": ({"cost.model": "roofline_max"}, "fixed", {}),
    "no prefill, no KV limit": ({}, "fixed", {"prefill": False, "kv_limit": False}),
    "a token budget that cuts drafts": ({"k": 6}, "fixed", {"max_num_batched_tokens": 60}),
    "goodput by context": (
        {"policy.k_max": 8, "cost.draft": "eagle-llama-3.1-8b"},
        "goodput",
        {},
    ),
    "a verify budget": ({"policy.k_max": 6}, "budget", {"verify_budget": 10}),
    "hidden regimes": (
        {"draft_model": "markov", "acceptance.stay": 0.8, "k": 5},
        "fixed",
        {},
    ),
}


@pytest.mark.parametrize("closed", [None, 16], ids=["open loop", "closed loop"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_the_compiled_loop_is_the_numpy_steps(case, closed):
    fields, policy, limits = CASES[case]
    config = SpecConfig().replace(
        **{"cost.model": "roofline", "acceptance_rate": 0.75, "k": 4, **fields}
    )
    server = Server(max_num_seqs=48, **limits)
    slow, slow_out = served(config, policy, server, closed, segments=False, compiled=False)
    fast, fast_out = served(config, policy, server, closed)
    assert len(fast) == WORKLOAD.requests
    assert np.array_equal(fast, slow, equal_nan=True)  # who, when, tokens, chunks: exactly
    assert fast_out.end_s == slow_out.end_s
    for name in SUMMED:
        assert getattr(fast_out.summary, name) == getattr(slow_out.summary, name), name
    if case == "a small KV cache":
        assert slow_out.summary.preemptions > 0
    if case == "a token budget that cuts drafts" and closed:  # 16 decoders want 112 tokens
        assert fast_out.summary.spec_tokens < 6 * 0.9 * fast_out.summary.batch_time / (
            fast_out.summary.busy_s / fast_out.summary.steps
        )


def test_rows_are_handed_over_a_block_at_a_time(monkeypatch):
    """A run longer than a block stops to hand rows over (progress and cancel) and resumes
    where it stopped."""
    monkeypatch.setattr(compiled, "FLUSH_ROWS", 7)
    seen = []
    config = SpecConfig().replace(**{"cost.model": "roofline", "k": 3})
    rows, _ = served(config, "fixed", Server(max_num_seqs=8), check=seen.append)
    whole, _ = served(config, "fixed", Server(max_num_seqs=8), compiled=False, segments=False)
    assert np.array_equal(rows, whole, equal_nan=True)
    assert len(seen) >= WORKLOAD.requests // (7 + 8)
    assert seen == sorted(seen) and seen[-1] == WORKLOAD.requests


def test_a_cancel_stops_the_compiled_loop():
    class Stop(Exception):
        pass

    def check(done):
        if done >= 20:
            raise Stop

    config = SpecConfig().replace(**{"cost.model": "roofline", "k": 3})
    with pytest.raises(Stop):
        served(config, "fixed", Server(), check=check)


def test_a_kv_cache_too_small_for_any_request_is_an_error():
    config = SpecConfig().replace(**{"cost.model": "roofline"})
    workload = Workload(requests=3, concurrency=1, prompt=Lengths(median=10**6, high=10**6))
    server = Server(gpu_memory_utilization=0.3, reserve_gb=0.0, prefill=False)
    with pytest.raises(RuntimeError, match="no request could be scheduled"):
        served(config, "fixed", server, closed=1, workload=workload)


def test_drafts_are_cut_to_the_budget_as_the_numpy_steps_cut_them():
    rng = np.random.default_rng(7)
    for _ in range(300):
        n = int(rng.integers(1, 30))
        run = np.zeros((n, stepper.RUN_COLUMNS), dtype=np.int64)
        run[:, stepper.PREFILL] = rng.integers(0, 3, n) * (rng.random(n) < 0.3)
        run[:, stepper.OUT] = rng.integers(1, 12, n)
        run[:, stepper.DONE_TOKENS] = rng.integers(0, run[:, stepper.OUT])
        table = rng.integers(0, 9, n + 1)
        lines = compiled._Lines()
        for count in range(1, n + 1):
            lines.put(stepper.line_key(2, 0, count), (float(table[count]), 0.0))
        tail_full = bool(rng.random() < 0.5)
        budget = int(rng.integers(n, 8 * n))
        ints = np.zeros(stepper.INT_STATE, dtype=np.int64)
        assert stepper._choose(run, n, lines.keys, lines.values, ints, 0, tail_full, budget)
        decoding = run[:, stepper.PREFILL] == 0
        k = np.where(decoding, table[decoding.sum()], 0)
        if not tail_full:
            k = np.minimum(k, run[:, stepper.OUT] - run[:, stepper.DONE_TOKENS] - 1)
        expected = _fit_budget(np.maximum(k, 0) * decoding, decoding, budget)
        assert run[:, stepper.K].tolist() == expected.tolist()


def test_a_policy_that_reads_the_context_is_asked_at_the_decoders_mean_contexts_step():
    """Two decoders at contexts 1,000 and 2,000 (mean 1,500: step 5 of 256 tokens) and a
    request in prefill: the loop stops to ask for the k of 2 decoders in step 5."""
    run = np.zeros((3, stepper.RUN_COLUMNS), dtype=np.int64)
    run[:, stepper.CTX] = [1000, 2000, 40]
    run[:, stepper.PREFILL] = [0, 0, 300]
    run[:, stepper.OUT] = 50
    lines = compiled._Lines()
    ints = np.zeros(stepper.INT_STATE, dtype=np.int64)
    assert not stepper._choose(run, 3, lines.keys, lines.values, ints, 256, True, 100)
    assert stepper.key_parts(int(ints[stepper.ASK_KEY])) == (2, 5, 2)
    lines.put(int(ints[stepper.ASK_KEY]), (3.0, 1.0))  # the first decoder drafts one more
    assert stepper._choose(run, 3, lines.keys, lines.values, ints, 256, True, 100)
    assert run[:, stepper.K].tolist() == [4, 3, 0]


def test_a_policy_registered_by_count_that_is_not_is_refused(monkeypatch):
    from engine.serve import policies

    def odd(view):
        return np.arange(view.contexts.size) % 2  # 0, 1, 0, 1: not a prefix of ones

    fake = policies.LoadPolicy("odd", "k by parity", odd, True, False, 0, True)
    monkeypatch.setitem(policies.POLICIES, "odd", fake)
    config = SpecConfig().replace(**{"cost.model": "roofline"})
    with pytest.raises(ValueError, match="'odd' is not by_count"):
        served(config, "odd", Server(), closed=4)


@pytest.mark.parametrize("closed", [None, 16], ids=["open loop", "closed loop"])
def test_requests_read_a_few_at_a_time_give_the_same_run(monkeypatch, closed):
    """The loop reads the requests through windows a block long, moved on as it scans the
    arrivals and admits requests: with blocks of 7 requests (a window refilled mid-queue,
    preempted requests from blocks long gone), the same run as the numpy steps, and the same
    requests as blocks of 4,096."""
    from engine.serve import workload as workload_module

    config = SpecConfig().replace(**{"cost.model": "roofline", "k": 3})
    server = Server(max_num_seqs=48, gpu_memory_utilization=0.27, reserve_gb=0.0)
    whole = WORKLOAD.draw(4, 1)
    assert whole.prompt.size == WORKLOAD.requests  # drawn now, in blocks of 4,096
    slow, slow_out = served(config, "fixed", server, closed, segments=False, compiled=False)
    monkeypatch.setattr(workload_module, "BLOCK", 7)
    assert [b[0].size for b in WORKLOAD.draw(4, 1).blocks()][:2] == [7, 7]
    small = WORKLOAD.draw(4, 1)
    for mine, theirs in zip(
        (small.arrival_s, small.prompt, small.output),
        (whole.arrival_s, whole.prompt, whole.output),
        strict=True,
    ):
        assert np.array_equal(mine, theirs)
    fast, fast_out = served(config, "fixed", server, closed)
    assert np.array_equal(fast, slow, equal_nan=True)
    assert fast_out.end_s == slow_out.end_s
    assert fast_out.summary.preemptions == slow_out.summary.preemptions > 0


def test_a_full_table_of_lines_is_emptied_and_the_loop_asks_again(monkeypatch):
    """The loop's lines are a cache of bounded size: emptied when full, the run is the same.
    Here after 6 of them, the most a step of K 3 may need (its k, three draft passes when
    clamped tails draft 1, 2 and 3, and the verify pass): the floor it is given."""
    monkeypatch.setattr(compiled, "LINES_MAX", 0)
    table = compiled._Lines(size=8, most=5)
    for key in range(40):
        table.put(key, (1.0, 0.0))
        assert (table.keys >= 0).sum() == table.count <= 5 and table.keys.size <= 16
    config = SpecConfig().replace(**{"cost.model": "roofline", "k": 3, "tail": "clamp"})
    rows, outcome = served(config, "fixed", Server(max_num_seqs=8))
    whole, whole_out = served(
        config, "fixed", Server(max_num_seqs=8), compiled=False, segments=False
    )
    assert np.array_equal(rows, whole, equal_nan=True)
    assert outcome.end_s == whole_out.end_s
