"""Model-free proposers under load (docs/model.md, "Serving under load"): no draft pass, a
CPU look-up per decoding request a step, a draft only on a hit, by hand and against the
per-sequence engine at one request at a time."""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine.core.config import SpecConfig
from engine.core.fields import ConfigError
from engine.cost.models import build_cost
from engine.serve.server import Server, kv_capacity
from engine.serve.sim import simulate_load
from engine.serve.workload import Lengths, Workload
from engine.simulate.model_free_exact import model_free_exact

PROMPT, OUTPUT = 200, 48


def one_at_a_time(config, requests, compiled=True, policy="fixed", seed=5):
    """Each request's end-to-end microseconds and the run's summary, one request at a
    time, without prefill or a KV limit (the per-sequence engine's setting)."""
    rows = []
    workload = Workload(
        requests=requests,
        rate=None,
        concurrency=1,
        prompt=Lengths(median=PROMPT),
        output=Lengths(median=OUTPUT),
        warmup=0.0,
    )
    outcome = simulate_load(
        config,
        build_cost(config),
        workload.draw(seed, 0),
        policy,
        Server(kv_limit=False, prefill=False, max_num_seqs=1),
        closed=1,
        seed=seed,
        on_finish=rows.append,
        compiled=compiled,
    )
    table = np.concatenate(rows)
    return 1e6 * (table[:, 3] - table[:, 1]), outcome.summary


def ngram(**fields):
    # The default cost model prices a target pass at verify_cost_us = 200 us, any width.
    values = {"proposer.name": "ngram", "k": 4, "acceptance_rate": 0.8, "tokens_per_seq": OUTPUT}
    return SpecConfig().replace(**{"workload.prompt_len": PROMPT, **values, **fields})


@pytest.mark.parametrize("compiled", [True, False])
def test_no_hit_is_plain_decoding_plus_the_look_up(compiled):
    # h = 0: every step is one target pass (200 us) plus one look-up (7 us), one token.
    e2e, summary = one_at_a_time(
        ngram(**{"proposer.hit_rate": 0.0, "proposer.cpu_us": 7.0}), 5, compiled
    )
    assert e2e == pytest.approx(np.full(5, OUTPUT * 207.0), rel=1e-12)
    assert summary.spec_tokens == 0 and summary.steps == 5 * OUTPUT


@pytest.mark.parametrize("compiled", [True, False])
def test_every_hit_drafts_k_with_no_draft_pass(compiled):
    # h = 1: every step drafts K = 4 and costs 200 + 7 us (no 4 x 20 us of draft passes);
    # it emits 1 + min(n, 4) tokens, P(n >= j) = 0.8^j: 1 + 0.8 + 0.64 + 0.512 + 0.4096 =
    # 3.3616 a step, so about 48 / 3.3616 + ~0.5 = 14.8 steps a request.
    e2e, summary = one_at_a_time(
        ngram(**{"proposer.hit_rate": 1.0, "proposer.cpu_us": 7.0}), 300, compiled
    )
    steps = e2e / 207.0
    assert steps == pytest.approx(np.round(steps), abs=1e-9)  # whole steps of 207 us
    assert summary.spec_tokens == 4 * summary.steps
    rate = summary.accepted_tokens / summary.spec_tokens  # (0.8 + ... + 0.4096) / 4
    assert rate == pytest.approx(2.3616 / 4, abs=4 * math.sqrt(0.25 / summary.steps))


@pytest.mark.parametrize(
    "fields",
    [
        {"proposer.name": "ngram", "proposer.hit_rate": 0.55},
        {"proposer.name": "suffix", "proposer.hit_rate": 0.7, "proposer.mean_match": 2.5},
    ],
)
def test_one_request_at_a_time_is_the_per_sequence_engine_at_batch_1(fields):
    # SEMANTICS: with one request at a time the server reduces to the per-sequence engine
    # at batch 1: its time per request is model_free_exact's time_us, within 4 standard
    # errors of the mean over 400 requests (roofline prices: the context grows).
    config = ngram(**{"cost.model": "roofline", **fields})
    e2e, _ = one_at_a_time(config, 400)
    expected = model_free_exact(config)["time_us"]
    assert abs(e2e.mean() - expected) < 4 * e2e.std(ddof=1) / math.sqrt(e2e.size)


def test_the_look_up_is_paid_by_each_decoding_request():
    # Two requests in lockstep, h = 0: a step is one pass over 2 tokens plus 2 look-ups.
    config = ngram(**{"proposer.hit_rate": 0.0, "proposer.cpu_us": 50.0})
    workload = Workload(
        requests=2,
        rate=None,
        concurrency=2,
        prompt=Lengths(median=PROMPT),
        output=Lengths(median=OUTPUT),
        warmup=0.0,
    )
    outcome = simulate_load(
        config,
        build_cost(config),
        workload.draw(0, 0),
        "fixed",
        Server(kv_limit=False, prefill=False, max_num_seqs=2),
        closed=2,
    )
    assert outcome.end_s == pytest.approx(OUTPUT * (200.0 + 2 * 50.0) * 1e-6, rel=1e-12)


def test_a_policy_it_does_not_serve_is_one_line():
    with pytest.raises(ConfigError) as err:
        one_at_a_time(ngram(), 2, policy="goodput")
    assert err.value.field == "policies"
    assert str(err.value).count("\n") == 0
    assert "supports policies off, fixed, schedule, not goodput" in str(err.value)


def test_no_draft_weights_or_draft_kv_for_a_model_free_proposer():
    from engine.cost.placement import model_bytes, usable_bytes

    config = ngram(**{"cost.model": "roofline"})
    cost = build_cost(config)
    server = Server()
    free = usable_bytes(cost.hardware, server.gpu_memory_utilization, server.reserve_gb)
    free -= model_bytes(cost.target, cost.target_run)
    per_token = cost.target.kv_bytes_per_token(cost.bytes_per_kv) / cost.target.kv_shards(
        cost.target_run.tp
    )
    assert kv_capacity(cost, server, config) == math.floor(free / per_token)
    assert kv_capacity(cost, server, config) > kv_capacity(cost, server)


@pytest.mark.parametrize("compiled", [True, False])
def test_the_speculation_tax_is_paid_only_by_steps_that_drafted(compiled):
    # Roofline with a 40 us tax a speculative step: h = 0 and a free look-up is plain
    # decoding to the last bit (speculation off's times); h = 1 pays 40 us on every step.
    fields = {"cost.model": "roofline", "cost.spec_overhead_us": 40.0, "proposer.cpu_us": 0.0}
    plain, _ = one_at_a_time(ngram(**fields), 3, compiled, policy="off")
    missed, _ = one_at_a_time(ngram(**fields, **{"proposer.hit_rate": 0.0}), 3, compiled)
    assert np.array_equal(missed, plain)
    free, summary = one_at_a_time(
        ngram(**{**fields, "cost.spec_overhead_us": 0.0, "proposer.hit_rate": 1.0}), 3, compiled
    )
    taxed, taxed_summary = one_at_a_time(ngram(**fields, **{"proposer.hit_rate": 1.0}), 3, compiled)
    assert taxed_summary.steps == summary.steps
    assert taxed.sum() - free.sum() == pytest.approx(40.0 * summary.steps, rel=1e-9)
