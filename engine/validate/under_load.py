"""Predictions of measurements made under load: a closed loop of requests on the serving
simulator (engine.serve), for entries that name a ``concurrency`` (docs/validation.md).

The entry's ``concurrency`` requests are in the system at once until ``requests`` have been
served (8 per slot when the source does not say), with the entry's prompt and output
lengths (512 and 256 tokens when it states none), once with speculation off and once with
K drafts whose acceptance is the constant rate giving the reported mean acceptance length.
The predicted speedup is the ratio of what the source compares: wall times (the two runs'
makespans), tokens per second, or TPOT. Both runs draw the same requests and numbers.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from engine.validate.prediction import Prediction, scenario_fields

if TYPE_CHECKING:
    from engine.validate.table import Entry

PROMPT, OUTPUT, PER_SLOT = 512, 256, 8
# A calibrated load prediction's overhead a pass is found by bisection in [0, this] to
# within a microsecond or so (each try is a pair of simulated runs).
LOAD_OVERHEAD_MAX_US = 3000.0
LOAD_OVERHEAD_STEPS = 11


def scenario_of(entry: Entry, t0_us: float = 0.0) -> Any:
    """The scenario of ``entry``: its hardware, target, draft and runs on the roofline,
    K, and the constant acceptance rate of its mean acceptance length."""
    from engine.acceptance.fitting import rate_from_mean_length
    from engine.core.config import SpecConfig

    k = int(entry.k)
    return SpecConfig().replace(
        **{
            **scenario_fields(entry),
            "cost.t0_us": t0_us,
            "draft_model": "fixed",
            "acceptance_rate": rate_from_mean_length(entry.tokens_per_cycle or 1.0, k),
            "k": max(k, 1),
            "tail": "clamp",
        }
    )


@lru_cache(maxsize=256)  # an entry's runs are the same every time: a report asks often
def runs_of(entry: Entry, t0_us: float = 0.0) -> tuple[Any, Any]:
    """The (off, speculating) outcomes of the entry's closed loop."""
    from engine.cost.models import build_cost
    from engine.serve.server import Server
    from engine.serve.sim import simulate_load
    from engine.serve.workload import Lengths, Workload

    concurrency = int(entry.concurrency)
    config = scenario_of(entry, t0_us)
    cost = build_cost(config)
    workload = Workload(
        requests=int(entry.requests or PER_SLOT * concurrency),
        rate=None,
        concurrency=concurrency,
        prompt=Lengths(median=int(entry.prompt if entry.prompt is not None else PROMPT)),
        output=Lengths(median=int(entry.output or OUTPUT)),
        warmup=0.0,
    )
    requests = workload.draw(0, 0)
    server = Server(max_num_seqs=max(concurrency, 1), max_num_batched_tokens=8192)
    return tuple(  # type: ignore[return-value]
        simulate_load(config, cost, requests, policy, server, closed=concurrency)
        for policy in ("off", "fixed")
    )


def speedup_of(entry: Entry, off: Any, spec: Any) -> float:
    """The speedup the entry's source compares, from the two runs."""
    if entry.values.get("wall_s") is not None:
        return float(off.end_s / spec.end_s)
    one, two = off.summary.figures(1, 0.0), spec.summary.figures(1, 0.0)
    if entry.values.get("tpot_ms") is not None:
        return one["tpot_mean_ms"] / two["tpot_mean_ms"]
    return two["throughput_tok_s"] / one["throughput_tok_s"]


def under_load(entry: Entry, t0_us: float = 0.0) -> Prediction:
    """The serving simulator's prediction of ``entry`` (module docstring)."""
    if entry.tokens_per_cycle is None:
        return Prediction(None, "the source reports no acceptance")
    value = speedup_of(entry, *runs_of(entry, t0_us))
    return Prediction(value if math.isfinite(value) else None, "")


def calibrated_under_load(entry: Entry, others: list[Entry]) -> Prediction:
    """``entry`` with one overhead per pass fitted to the ``others`` (its series' other load
    entries on its hardware and target): the overhead in [0, :data:`LOAD_OVERHEAD_MAX_US`]
    at which their mean log error is zero, by bisection (a longer overhead slows the
    speculating run more, which makes more passes); 0 if even none predicts too little."""
    usable = [e for e in others if e.tokens_per_cycle is not None]
    if not usable:
        return Prediction(None, "no other entry of its series under load")

    def bias(t0: float) -> float:
        return sum(math.log(speedup_of(e, *runs_of(e, t0)) / e.measured) for e in usable)

    low, high = 0.0, LOAD_OVERHEAD_MAX_US
    if bias(low) <= 0.0:
        return under_load(entry, 0.0)
    if bias(high) >= 0.0:
        return under_load(entry, high)
    for _ in range(LOAD_OVERHEAD_STEPS):
        middle = (low + high) / 2.0
        if bias(middle) > 0.0:
            low = middle
        else:
            high = middle
    return under_load(entry, (low + high) / 2.0)
