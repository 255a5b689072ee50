"""Runs of decode steps simulated as one segment give what the steps give one at a time:
the same requests finish at the same times, with the same summary. Both runs take the numpy
path (a policy by count would otherwise run the compiled loop, which has no segments)."""

from __future__ import annotations

import numpy as np
import pytest

from engine.core.config import SpecConfig
from engine.serve.server import Server
from engine.serve.workload import Lengths, Workload
from tests.engine.serve.helpers import served

CASES = {
    "poisson, fixed, clamp": ({"tail": "clamp"}, "fixed", {}),
    "poisson, schedule, full": (
        {"tail": "full", "policy.schedule": "1:5,8:3,16:1"},
        "schedule",
        {},
    ),
    "poisson, budget": ({"policy.k_max": 6}, "budget", {"verify_budget": 10}),
    "a small KV cache": ({"k": 3}, "fixed", {"gpu_memory_utilization": 0.27, "reserve_gb": 0.0}),
    "parallel drafting": ({"cost.drafting": "parallel", "k": 6}, "fixed", {}),
    "goodput by context": ({"policy.k_max": 8, "cost.draft": "eagle-llama-3.1-8b"}, "goodput", {}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_segment_is_its_steps(case):
    fields, policy, limits = CASES[case]
    config = SpecConfig().replace(
        **{"cost.model": "roofline", "acceptance_rate": 0.75, "k": 4, **fields}
    )
    workload = Workload(
        requests=120,
        rate=12.0,
        prompt=Lengths("uniform", low=50, high=3000),
        output=Lengths("uniform", low=20, high=400),
    )
    server = Server(max_num_seqs=48, **limits)
    one, first = served(config, policy, server, workload, segments=False, compiled=False)
    many, second = served(config, policy, server, workload, segments=True, compiled=False)
    first, second = first.summary, second.summary
    assert np.array_equal(one[:, [0, 4, 5]], many[:, [0, 4, 5]])  # who, tokens, chunks
    assert many[:, 1:4] == pytest.approx(one[:, 1:4], rel=1e-9)
    assert (second.steps, second.preemptions, second.accepted_tokens) == (
        first.steps,
        first.preemptions,
        first.accepted_tokens,
    )
    assert second.busy_s == pytest.approx(first.busy_s, rel=1e-9)
    if case == "a small KV cache":
        assert first.preemptions > 0
