"""The serving simulator against the engine that exists (docs/model.md, "Serving under
load"): one request at a time is the per-sequence exact figure at batch 1, a closed loop of
B identical requests is the per-sequence accounting at batch B, k = 0 is plain decoding."""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine.core.config import SpecConfig
from engine.core.kernel import cycle_costs
from engine.cost.models import build_cost
from engine.serve.server import Server
from engine.serve.sim import simulate_load
from engine.serve.workload import Lengths, Workload
from engine.simulate.exact import speedup_exact

PROMPT, OUTPUT = 300, 48


def scenario(**fields):
    values = {
        "cost.model": "roofline",
        "acceptance_rate": 0.8,
        "k": 4,
        "tokens_per_seq": OUTPUT,
        "workload.prompt_len": PROMPT,
        **fields,
    }
    return SpecConfig().replace(**values)


def e2e_times(config, requests, concurrency, policy="fixed", seed=3):
    """Each request's end-to-end seconds, served without prefill or a KV limit."""
    rows = []
    workload = Workload(
        requests=requests,
        rate=None,
        concurrency=concurrency,
        prompt=Lengths(median=PROMPT),
        output=Lengths(median=OUTPUT),
        warmup=0.0,
    )
    simulate_load(
        config,
        build_cost(config),
        workload.draw(seed, 0),
        policy,
        Server(kv_limit=False, prefill=False, max_num_seqs=concurrency),
        closed=concurrency,
        seed=seed,
        on_finish=rows.append,
    )
    table = np.concatenate(rows)
    return table[:, 3] - table[:, 1]


def test_plain_decoding_is_the_baseline_to_the_last_microsecond():
    config = scenario()
    times = e2e_times(config, 3, 1, policy="off")
    baseline_s = cycle_costs(config).baseline_us * 1e-6
    assert times == pytest.approx([baseline_s] * 3, rel=1e-12)


def test_one_request_at_a_time_is_the_exact_expected_time_at_batch_1():
    config = scenario()
    times = e2e_times(config, 300, 1)
    exact_s = cycle_costs(config).baseline_us * 1e-6 / speedup_exact(config)
    error = times.std(ddof=1) / math.sqrt(times.size)
    assert abs(times.mean() - exact_s) < 4 * error, (times.mean(), exact_s, error)
    assert error < 0.01 * exact_s  # the test can tell a 4 % error


@pytest.mark.parametrize("batch", [8, 64])
def test_a_closed_loop_of_identical_requests_is_the_accounting_at_its_batch(batch):
    # A context-free cost: every step of B decoders costs what the per-sequence accounting
    # charges each of their cycles.
    config = scenario(**{"cost.model": "linear", "cost.verify_token_us": 20.0}).replace(
        batch_size=batch
    )
    times = e2e_times(config, 4 * batch + 200, batch)[batch:]  # after the first round
    exact_s = cycle_costs(config).baseline_us * 1e-6 / speedup_exact(config)
    error = times.std(ddof=1) / math.sqrt(times.size)
    assert abs(times.mean() - exact_s) < 4 * error, (times.mean(), exact_s, error)


def test_a_closed_loop_on_the_roofline_is_the_accounting_at_its_batch():
    # The roofline is affine in the context at a fixed batch and width, so a step at the
    # batch's mean context costs the mean of its members' cycles.
    config = scenario().replace(batch_size=16)
    times = e2e_times(config, 16 * 20, 16)[16:]
    exact_s = cycle_costs(config).baseline_us * 1e-6 / speedup_exact(config)
    error = times.std(ddof=1) / math.sqrt(times.size)
    assert abs(times.mean() - exact_s) < 4 * error, (times.mean(), exact_s, error)
