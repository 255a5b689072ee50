"""The load study's bounds (issue #41): its estimated work, the lowest rate its requests can
fill, and the figures of a run that finished no request. Expected values worked by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine.core.fields import ConfigError
from engine.serve.load import Plan, check_work
from engine.serve.metrics import LogHistogram, Summary
from engine.serve.server import Server
from engine.serve.workload import Lengths, Workload, rate_min, read_trace


def _plan(workload: Workload, levels: tuple[float, ...] = (1.0, 2.0), **how) -> Plan:  # type: ignore[no-untyped-def]
    return Plan(workload=workload, server=Server(max_num_batched_tokens=512), levels=levels, **how)


def test_the_work_of_a_study_by_hand():
    # 10 requests, prompts of 1,000 tokens in chunks of 512 (2 chunks), 50 output tokens:
    # 10 x (2 + 50) = 520 request-steps a run; 2 levels x 2 policies x 3 replications.
    fixed = Workload(requests=10, prompt=Lengths(median=1000, high=1000), output=Lengths(median=50))
    assert _plan(fixed).work() == 520 * 2 * 2 * 3
    # Uniform outputs on [10, 30]: a mean of 20; a prompt of 0 still takes a step.
    uniform = Workload(
        requests=4,
        prompt=Lengths(median=0, low=0, high=1),
        output=Lengths("uniform", median=20, low=10, high=30),
    )
    assert _plan(uniform, levels=(1.0,), replications=1, policies=("off",)).work() == 4 * (1 + 20)


def test_the_work_of_a_trace_is_its_own_requests(tmp_path):
    trace = tmp_path / "trace.csv"
    # Prompts of 0, 512 and 513 tokens: 1, 1 and 2 chunks of 512; outputs 3, 4 and 5.
    trace.write_text("arrival_s,prompt_tokens,output_tokens\n0,0,3\n1,512,4\n2,513,5\n")
    workload = Workload(requests=3, rate=None, trace=str(trace))
    plan = _plan(workload, levels=(1.0,), trace=str(trace), replications=1, policies=("off",))
    assert plan.work() == (1 + 3) + (1 + 4) + (2 + 5)
    assert len(read_trace(trace, 3)) == 3


def test_work_beyond_the_bound_is_refused_with_the_estimate_and_the_bound():
    check_work(1e10)  # the bound itself is allowed
    with pytest.raises(ConfigError) as caught:
        check_work(2.5e10)
    assert str(caught.value).startswith(
        "requests: this study is about 2.5e10 simulated request-steps (requests x (prompt "
        "chunks + output tokens) x levels x policies x replications), beyond the bound of 1e10"
    )


def test_the_lowest_rate_is_the_requests_over_a_billion_seconds():
    assert rate_min(300) == 3e-7 and rate_min(1) == 1e-9
    Workload(requests=300, rate=3e-7).check()
    with pytest.raises(ConfigError, match=r"rate: must be numbers in \[3e-07, 10000\]"):
        Workload(requests=300, rate=2.9e-7).check()
    with pytest.raises(ConfigError, match=r"rate: must be numbers in \[3e-07, 10000\]"):
        _plan(Workload(requests=300), levels=(1.0, 5e-324)).check()


def test_every_speed_of_a_trace_is_checked_against_its_span(tmp_path):
    trace = tmp_path / "trace.csv"
    trace.write_text("arrival_s,prompt_tokens,output_tokens\n0,1,1\n1000,1,1\n")
    workload = Workload(requests=2, rate=None, trace=str(trace))
    # 1,000 s of arrivals within 1e9 s: a speed of at least 1e-6.
    _plan(workload, levels=(1.0, 1e-6), trace=str(trace)).check()
    with pytest.raises(ConfigError) as caught:
        _plan(workload, levels=(1.0, 1e-7), trace=str(trace)).check()
    assert str(caught.value) == (
        "speeds: must be numbers in [1e-06, 1000] for this trace: its 1000 s of arrivals "
        "must come within 1e9 s"
    )
    with pytest.raises(ConfigError, match=r"speeds: must be numbers in \(0, 1000\]"):
        _plan(workload, levels=(1.0, 0.0), trace=str(trace)).check()  # not only the first


def test_a_run_that_finished_no_request_has_nan_figures_not_an_error():
    figures = Summary().figures(gpus=1, usd_per_gpu_hour=2.0)
    assert figures["requests"] == 0.0 and figures["preemptions"] == 0.0
    others = {k: v for k, v in figures.items() if k not in ("requests", "preemptions")}
    assert others and all(math.isnan(v) for v in others.values()), others
    assert math.isnan(LogHistogram().quantile(0.99))


def test_a_latency_that_is_not_finite_is_refused_not_binned_anywhere():
    hist = LogHistogram()
    hist.add(np.array([1e-3, 2e-3]))
    with pytest.raises(ValueError, match="latencies must be finite seconds"):
        hist.add(np.array([1e-3, math.nan]))
    # The two values it holds, each within its bin (0.1 % wide): nothing else was counted.
    assert hist.n == 2 and hist.quantile(0) == pytest.approx(1e-3, rel=1e-3)
    assert hist.quantile(1) == pytest.approx(2e-3, rel=1e-3)


def test_a_run_without_output_tokens_has_no_price_a_million_tokens():
    summary = Summary()
    one = np.array([1.0])
    # One request, arrived at 0 s, done at 1 s with no output token: 0 tokens/s.
    summary.add_requests(np.array([0.0]), one, one, np.array([0]), np.array([1]), 1.0, 1.0)
    figures = summary.figures(gpus=1, usd_per_gpu_hour=2.0)
    assert figures["requests"] == 1.0 and figures["throughput_tok_s"] == 0.0
    assert math.isnan(figures["usd_per_m_tokens"])  # not a ZeroDivisionError
