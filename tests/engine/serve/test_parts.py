"""The serving simulator's parts: arrivals, lengths and traces, the policies' choices worked
by hand, percentiles with bounded memory, the KV cache's capacity and preemption."""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine.core.config import ConfigError, SpecConfig
from engine.cost.models import build_cost
from engine.serve.draws import uniforms
from engine.serve.metrics import LogHistogram
from engine.serve.policies import POLICIES, StepView
from engine.serve.server import Server, kv_capacity
from engine.serve.sim import simulate_load
from engine.serve.workload import Lengths, Workload, read_trace


def test_poisson_arrivals_have_the_rate_and_bursty_ones_the_cv():
    for cv in (1.0, 3.0):
        requests = Workload(requests=20_000, rate=5.0, cv=cv).draw(seed=1, replication=0)
        gaps = np.diff(requests.arrival_s)
        # 20,000 gaps: the mean within 4 standard errors of 1/rate, the cv within 5 %.
        assert abs(gaps.mean() - 0.2) < 4 * 0.2 * cv / math.sqrt(gaps.size)
        assert gaps.std() / gaps.mean() == pytest.approx(cv, rel=0.05)


def test_every_policy_sees_the_same_requests():
    workload = Workload(requests=50, rate=2.0, prompt=Lengths("uniform", low=10, high=900))
    one, two = workload.draw(7, 3), workload.draw(7, 3)
    assert np.array_equal(one.arrival_s, two.arrival_s)
    assert np.array_equal(one.prompt, two.prompt) and one.prompt.min() >= 10
    other = workload.draw(7, 4)
    assert not np.array_equal(one.arrival_s, other.arrival_s)


def test_a_requests_uniforms_do_not_depend_on_who_runs_beside_it():
    ids, counters = np.array([5, 9, 12]), np.array([0, 4, 2])
    alone = uniforms(11, ids[1:2], counters[1:2], 1)
    together = uniforms(11, ids, counters, 1)
    assert together[1] == alone[0] and together.min() >= 0.0 and together.max() < 1.0
    assert uniforms(11, ids, counters, 2)[1] != alone[0]  # another stream


def test_lognormal_lengths_have_their_median_and_stay_in_bounds():
    lengths = Lengths("lognormal", median=200, sigma=1.0, low=4, high=2000)
    drawn = lengths.draw(np.random.default_rng(0), 50_000)
    assert np.median(drawn) == pytest.approx(200, rel=0.03)
    assert drawn.min() >= 4 and drawn.max() <= 2000


def test_a_trace_is_read_and_bad_ones_are_one_line(tmp_path):
    good = tmp_path / "trace.csv"
    good.write_text("arrival_s,prompt_tokens,output_tokens\n1.5,100,20\n2.0,50,7\n")
    requests = read_trace(good, 10)
    assert list(requests.arrival_s) == [0.0, 0.5] and list(requests.output) == [20, 7]
    cases = {
        "nohead.csv": ("1,2,3\n", "line 1 must be the header"),
        "text.csv": ("arrival_s,prompt_tokens,output_tokens\n1,a,3\n", "line 2 must be three"),
        "back.csv": ("arrival_s,prompt_tokens,output_tokens\n2,1,1\n1,1,1\n", "line 3: arrival"),
        "zero.csv": ("arrival_s,prompt_tokens,output_tokens\n1,1,0\n", "line 2: tokens"),
        "empty.csv": ("arrival_s,prompt_tokens,output_tokens\n", "no requests"),
    }
    for name, (text, message) in cases.items():
        path = tmp_path / name
        path.write_text(text)
        with pytest.raises(ConfigError, match=message) as caught:
            read_trace(path, 10)
        assert "\n" not in str(caught.value)
    with pytest.raises(ConfigError, match="not a regular file"):
        read_trace(tmp_path, 10)


def test_bad_load_values_name_their_field():
    bad = [
        (Workload(rate=0.0), "rate: must be a number in \\(0, 10000\\]"),
        (Workload(rate=None, concurrency=0), "concurrency: must be a whole number"),
        (Workload(rate=1.0, concurrency=4), "rate: give a rate"),
        (Workload(requests=0), "requests: must be a whole number"),
        (Workload(cv=math.inf), "cv: must be a number"),
        (Workload(output=Lengths(median=0)), "output_len: must be a whole number in \\[1"),
    ]
    for workload, message in bad:
        with pytest.raises(ConfigError, match=message):
            workload.check()
    with pytest.raises(ConfigError, match="max_num_batched_tokens: must be at least"):
        Server(max_num_seqs=512, max_num_batched_tokens=256).check()


def test_percentiles_from_the_histogram_are_within_a_tenth_of_a_percent():
    values = np.random.default_rng(2).lognormal(-3.0, 1.0, 100_000)
    hist = LogHistogram()
    hist.add(values[:50_000])
    hist.add(values[50_000:])
    for q in (0.5, 0.9, 0.99):
        exact = float(np.quantile(values, q, method="inverted_cdf"))
        assert hist.quantile(q) == pytest.approx(exact, rel=1.1e-3)
    assert hist.counts.nbytes < 300_000  # a fixed size, for any number of values


def view(contexts, regimes, survival, **fields):
    config = SpecConfig().replace(**{"cost.model": "roofline", **fields})
    return StepView(
        np.asarray(contexts),
        np.asarray(regimes),
        np.asarray(survival),
        build_cost(config),
        config,
        fields.get("budget", 5),
        0.0,
    )


def test_the_budget_goes_to_the_likeliest_drafts():
    # Two regimes: easy (0.9 a token) and hard (0.3). Budget 5 over three requests, two
    # hard and one easy: the easy one's 0.9, 0.81, 0.729, 0.656 beat the hard ones' 0.3.
    easy = np.cumprod([1.0, 0.9, 0.9, 0.9, 0.9])
    hard = np.cumprod([1.0, 0.3, 0.3, 0.3, 0.3])
    survival = np.stack([easy, hard])
    config = SpecConfig().replace(**{"cost.model": "roofline", "policy.k_max": 4})
    cost = build_cost(config)
    step = StepView(np.array([10, 10, 10]), np.array([1, 0, 1]), survival, cost, config, 5, 0.0)
    assert list(POLICIES["budget"].choose(step)) == [1, 4, 0]


def test_goodput_picks_the_most_tokens_per_microsecond():
    config = SpecConfig().replace(**{"cost.model": "roofline", "policy.k_max": 6})
    cost = build_cost(config)
    survival = np.cumprod([1.0] + [0.7] * 6)[None, :]
    step = StepView(np.full(32, 1000), np.zeros(32, dtype=np.int64), survival, cost, config, 0, 0.0)
    # A mean context of 1,000 read in steps of 256: the middle of [768, 1024), 896.
    rates = [
        survival[0, : k + 1].sum()
        / (float(cost.verify_us(k + 1, 32, 896.0)) + float(cost.draft_us(k, 32, 896.0)))
        for k in range(7)
    ]
    assert list(POLICIES["goodput"].choose(step)) == [int(np.argmax(rates))] * 32


def test_the_kv_cache_holds_what_the_weights_leave():
    config = SpecConfig().replace(**{"cost.model": "roofline"})  # 8B and 1B on an H100
    free = 0.9 * 80e9 - 2e9 - (8_030_261_248 + 1_235_814_400) * 2
    per_token = 2 * 32 * 8 * 128 * 2 + 2 * 16 * 8 * 64 * 2
    assert kv_capacity(build_cost(config), Server()) == math.floor(free / per_token)
    with pytest.raises(ConfigError, match="cost.target: llama-3.1-405b and llama-3.2-1b take"):
        SpecConfig().replace(**{"cost.model": "roofline", "cost.target": "llama-3.1-405b"})
    # The server's own setting: 0.2 x 80 - 2 = 14.0 GB for (8.03e9 + 1.24e9) x 2 bytes.
    with pytest.raises(ConfigError, match=r"take 18\.5 GB a GPU of h100's 14\.0 GB usable"):
        kv_capacity(build_cost(config), Server(gpu_memory_utilization=0.2))


def test_a_full_kv_cache_preempts_and_every_request_still_finishes():
    config = SpecConfig().replace(**{"cost.model": "roofline", "k": 3, "acceptance_rate": 0.7})
    workload = Workload(
        requests=40,
        rate=None,
        concurrency=40,
        prompt=Lengths(median=2000),
        output=Lengths(median=400),
        warmup=0.0,
    )
    # gpu_memory_utilization leaves about 40,000 tokens: 40 requests of 2,400 do not fit.
    server = Server(gpu_memory_utilization=0.3, reserve_gb=0.0)
    assert 20_000 < kv_capacity(build_cost(config), server) < 60_000
    rows = []
    outcome = simulate_load(
        config,
        build_cost(config),
        workload.draw(0, 0),
        "fixed",
        server,
        closed=40,
        on_finish=rows.append,
    )
    assert outcome.summary.preemptions > 0
    assert sum(len(r) for r in rows) == 40 and outcome.summary.requests == 40
