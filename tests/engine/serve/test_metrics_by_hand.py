"""The serving metrics on their own (engine.serve.metrics), on requests made by hand: TTFT,
TPOT, inter-token latency, end-to-end latency, goodput against both SLOs and the percentiles
of the histogram, each worked out by hand from docs/model.md's definitions ("Serving under
load"): TPOT = (last token - first token) / (output - 1), vLLM's."""

from __future__ import annotations

import numpy as np
import pytest

from engine.serve.metrics import Summary

# A percentile is a histogram bin's geometric middle: within 0.05 % of the value in the bin.
BIN = 1e-3


def summary_of(rows, slo_ttft_s=np.inf, slo_tpot_s=np.inf):
    """A Summary of requests given as (arrival, first token, last token, output tokens,
    steps that gave them tokens), times in seconds."""
    arrival, first, last, output, chunks = (np.array(column) for column in zip(*rows, strict=True))
    summary = Summary()
    summary.add_requests(
        arrival.astype(float), first.astype(float), last.astype(float),
        output.astype(np.int64), chunks.astype(np.int64), slo_ttft_s, slo_tpot_s,
    )  # fmt: skip
    return summary


def test_one_request_s_latencies_by_hand():
    # Arrives at 1 s, first token at 1.25 s, fifth and last at 3.25 s, from 3 steps.
    figures = summary_of([(1.0, 1.25, 3.25, 5, 3)]).figures(gpus=2, usd_per_gpu_hour=3.6)
    assert figures["requests"] == 1.0
    assert figures["ttft_mean_ms"] == 250.0  # 1.25 - 1
    # (3.25 - 1.25) / (5 - 1) = 0.5 s; from the arrival it would be 2.25 / 4 = 562.5 ms.
    assert figures["tpot_mean_ms"] == 500.0
    assert figures["tpot_p50_ms"] == pytest.approx(500.0, rel=BIN)
    assert figures["itl_mean_ms"] == 1000.0  # 2 s over the 2 gaps between 3 steps
    assert figures["e2e_mean_ms"] == 2250.0  # 3.25 - 1
    assert figures["e2e_p99_ms"] == pytest.approx(2250.0, rel=BIN)
    # 5 tokens over the 2.25 s from the arrival to the last token.
    assert figures["throughput_tok_s"] == pytest.approx(5 / 2.25, rel=1e-12)
    # 2 GPUs at $3.6 an hour: $0.002 a second, over 20/9 tokens a second: $900 a million.
    assert figures["usd_per_m_tokens"] == pytest.approx(900.0, rel=1e-12)


def test_a_one_token_request_has_a_ttft_and_no_tpot():
    figures = summary_of([(0.0, 0.5, 0.5, 1, 1)]).figures(1, 0.0)
    assert figures["ttft_mean_ms"] == 500.0 and figures["e2e_mean_ms"] == 500.0
    assert np.isnan(figures["tpot_mean_ms"]) and np.isnan(figures["itl_mean_ms"])


def test_goodput_counts_only_the_requests_meeting_both_slos():
    # SLOs: TTFT <= 0.3 s and TPOT <= 0.4 s.
    rows = [
        (0.0, 0.25, 2.25, 5, 5),  # TTFT 0.25 meets, TPOT 2 / 4 = 0.5 misses
        (1.0, 1.5, 1.9, 5, 5),  # TTFT 0.5 misses, TPOT 0.4 / 4 = 0.1 meets
        (2.0, 2.1, 10.0, 41, 41),  # TTFT 0.1 and TPOT 7.9 / 40 = 0.1975: both met
    ]
    figures = summary_of(rows, slo_ttft_s=0.3, slo_tpot_s=0.4).figures(1, 0.0)
    # One good request over the 10 s from the first arrival to the last token.
    assert figures["goodput_req_s"] == pytest.approx(0.1, rel=1e-12)
    assert figures["throughput_tok_s"] == pytest.approx(51 / 10, rel=1e-12)
    # Without SLOs every request is good.
    assert summary_of(rows).figures(1, 0.0)["goodput_req_s"] == pytest.approx(0.3, rel=1e-12)


def test_an_slo_met_exactly_counts():
    rows = [(0.0, 0.25, 1.25, 5, 5)]  # TTFT 0.25 s, TPOT 1 / 4 = 0.25 s: both on the SLO
    figures = summary_of(rows, slo_ttft_s=0.25, slo_tpot_s=0.25).figures(1, 0.0)
    assert figures["goodput_req_s"] == pytest.approx(1 / 1.25, rel=1e-12)


def test_the_percentiles_of_four_values():
    # TTFTs 100, 200, 300 and 400 ms (one-token requests). The percentile q is the value
    # of rank q (n - 1) rounded up (0-based, sorted): p50 is rank 1.5 -> 2, the third
    # value; p90 rank 2.7 -> 3 and p99 rank 2.97 -> 3, the fourth.
    rows = [(0.0, t, t, 1, 1) for t in (0.4, 0.1, 0.3, 0.2)]
    figures = summary_of(rows).figures(1, 0.0)
    assert figures["ttft_p50_ms"] == pytest.approx(300.0, rel=BIN)
    assert figures["ttft_p90_ms"] == pytest.approx(400.0, rel=BIN)
    assert figures["ttft_p99_ms"] == pytest.approx(400.0, rel=BIN)
    assert figures["ttft_mean_ms"] == pytest.approx(250.0, rel=1e-12)


def test_the_percentiles_of_one_value_and_of_a_hundred():
    one = summary_of([(0.0, 0.2, 0.2, 1, 1)]).figures(1, 0.0)
    assert one["ttft_p50_ms"] == one["ttft_p99_ms"] == pytest.approx(200.0, rel=BIN)
    # 1 to 100 ms: p50 is rank 49.5 -> 50, the 51st value; p99 rank 98.01 -> 99, the 100th.
    rows = [(0.0, t / 1e3, t / 1e3, 1, 1) for t in range(1, 101)]
    figures = summary_of(rows).figures(1, 0.0)
    assert figures["ttft_p50_ms"] == pytest.approx(51.0, rel=BIN)
    assert figures["ttft_p90_ms"] == pytest.approx(91.0, rel=BIN)  # rank 89.1 -> 90
    assert figures["ttft_p99_ms"] == pytest.approx(100.0, rel=BIN)


def test_requests_added_in_blocks_count_once_each():
    summary = Summary()
    for start in (0.0, 10.0):
        summary.add_requests(
            np.array([start]), np.array([start + 0.5]), np.array([start + 2.5]),
            np.array([5]), np.array([5]), np.inf, np.inf,
        )  # fmt: skip
    figures = summary.figures(1, 0.0)
    assert figures["requests"] == 2.0
    assert figures["tpot_mean_ms"] == 500.0  # (2.5 - 0.5) / 4 each
    assert figures["throughput_tok_s"] == pytest.approx(10 / 12.5, rel=1e-12)
