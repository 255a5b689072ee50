"""Levels, policies and replications: paired differences on common random numbers, where
speculation stops paying, the best policy, the best k by batch size."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from engine.core.config import SpecConfig
from engine.cost.models import build_cost
from engine.serve.load import Cell, LoadResult, Plan, half_width, run_load
from engine.serve.schedule import (
    best_k_by_batch,
    best_k_by_batch_and_context,
    context_ranges,
    trtllm_yaml,
    vllm_flag,
)
from engine.serve.server import Server
from engine.serve.workload import Lengths, Workload


def test_the_student_t_half_width_by_hand():
    values = np.array([1.0, 2.0, 3.0])  # mean 2, sd 1, t(2) = 4.303
    assert half_width(values) == pytest.approx(4.303 / math.sqrt(3))
    assert math.isnan(half_width(np.array([5.0])))


def test_pairing_on_common_random_numbers_narrows_the_interval():
    config = SpecConfig().replace(**{"cost.model": "roofline", "k": 3, "acceptance_rate": 0.7})
    plan = Plan(
        workload=Workload(requests=80, prompt=Lengths("uniform", low=100, high=2000),
                          output=Lengths("uniform", low=20, high=300)),
        server=Server(),
        levels=(6.0,),
        policies=("off", "fixed"),
        replications=6,
    )  # fmt: skip
    result = run_load(config, build_cost(config), plan)
    diff, paired = result.paired(6.0, "fixed", "e2e_p50_ms")
    off, fixed = result.cells[(6.0, "off")], result.cells[(6.0, "fixed")]
    unpaired = math.hypot(off.half_width("e2e_p50_ms"), fixed.half_width("e2e_p50_ms"))
    assert diff < 0 and paired < 0.5 * unpaired


def cell(level, policy, **figures):
    made = Cell(level, policy)
    made.values = {name: [value] for name, value in figures.items()}
    return made


def test_where_speculation_stops_paying_and_the_best_policy():
    plan = Plan(Workload(), Server(), levels=(1.0, 4.0, 16.0), policies=("off", "fixed", "goodput"))
    result = LoadResult(plan)
    table = {  # throughput, p99 TPOT by level: off, fixed, goodput
        1.0: ((100, 9.0), (100, 4.0), (101, 4.5)),
        4.0: ((400, 9.5), (410, 9.8), (405, 9.6)),
        16.0: ((900, 20.0), (850, 30.0), (880, 25.0)),
    }
    for level, rows in table.items():
        for policy, (tput, tpot) in zip(plan.policies, rows, strict=True):
            result.cells[(level, policy)] = cell(
                level, policy, throughput_tok_s=tput, tpot_p99_ms=tpot, goodput_req_s=0.0
            )
    assert result.stops_paying("throughput_tok_s") == 16.0
    assert result.stops_paying("tpot_p99_ms") == 4.0
    assert [result.best_policy(level) for level in (1.0, 4.0, 16.0)] == ["goodput", "fixed", "off"]


def test_the_best_k_falls_with_the_batch_and_is_written_for_each_engine():
    config = SpecConfig().replace(
        **{"cost.model": "roofline", "acceptance_rate": 0.8, "cost.draft": "eagle-llama-3.1-8b"}
    )
    ranges = best_k_by_batch(config, build_cost(config), 256, 1024.0, 8)
    assert ranges[0][0] == 1 and ranges[-1][1] == 256
    ks = [k for _, _, k in ranges]
    assert ks == sorted(ks, reverse=True) and ks[0] > ks[-1]
    assert '"num_speculative_tokens_per_batch_size": [[1, ' in vllm_flag(ranges)
    assert trtllm_yaml(ranges).splitlines()[1] == f"  max_draft_len: {ks[0]}"
    rising = [(1, 1, 1), (2, 256, 4)]
    assert trtllm_yaml(rising).startswith("# TensorRT-LLM: not expressible")


def test_the_best_k_by_batch_and_context_rises_with_the_context_at_a_large_batch():
    """At batch 256 the KV read grows with the context while the weights' read does not:
    the verify pass is more memory-bound, and drafting pays for more tokens (MagicDec's
    argument, vllm-project/vllm RFC 48627)."""
    assert context_ranges(15_050) == [
        (0, 1023),
        (1024, 2047),
        (2048, 4095),
        (4096, 8191),
        (8192, 16383),
    ]
    assert context_ranges(1023) == [(0, 1023)]
    config = SpecConfig().replace(
        **{"cost.model": "roofline", "acceptance_rate": 0.8, "cost.draft": "eagle-llama-3.1-8b"}
    )
    table = best_k_by_batch_and_context(config, build_cost(config), 256, 15_050, 8)
    contexts = sorted({(c_low, c_high) for _, _, c_low, c_high, _ in table})
    assert contexts[0][0] == 0 and contexts[-1][1] == 16383
    for c_low, c_high in contexts:  # each context range covers batch sizes 1..256 once
        rows = [
            (b_low, b_high) for b_low, b_high, lo, hi, _ in table if (lo, hi) == (c_low, c_high)
        ]
        assert rows[0][0] == 1 and rows[-1][1] == 256
        assert all(b == a + 1 for (_, a), (b, _) in itertools.pairwise(rows))
    at_256 = [k for _, b_high, _, _, k in table if b_high == 256]
    assert at_256 == sorted(at_256) and at_256[-1] > at_256[0]
    flag = vllm_flag(table)
    assert '"num_speculative_tokens_per_batch_size": [[1, ' in flag and ", 0, 1023, " in flag
