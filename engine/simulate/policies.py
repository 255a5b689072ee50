"""K policies on a scenario: the glue between configurations and the two policy engines.

``engine.simulate.stepwise`` simulates any policy cycle by cycle on common random numbers, and
``engine.simulate.policy_exact`` gives exact expectations where a policy's state can be enumerated;
both take plain arrays. This module builds those arrays from a :class:`SpecConfig`:

- :func:`acceptance_of`: the acceptance model's regimes (one for every model but markov) or
  its per-token confidences;
- :func:`price_table`: what a cycle costs at every r (tokens still needed) and every k in
  0..K_max, k = 0 being a plain decoding step (the baseline's step), from the kernel's one
  cycle time (:func:`engine.core.kernel.cycle_times`);
- :func:`crn_entropy`: the random stream every policy on a scenario shares: the seed and the
  acceptance model with its parameters, and nothing a policy chooses (not K, not the policy,
  not the length, the tail rule or any cost), so that every contender sees the same draws.

A configuration goes to the stepwise engine (:func:`needs_stepwise`) when its policy is not
fixed, or its acceptance ties cycles together (markov); every other configuration keeps the
original's block sampler (engine.simulate.simulator), so that its results stay as they were.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np

from engine.acceptance.draft_models import get_model
from engine.core.config import (
    FIELD_SPECS,
    SpecConfig,
    needs_stepwise,
    policy_k_max,
    reads,
    stream_width,
)
from engine.core.parts import ACCEPTANCE, POLICY
from engine.cost.models import build_cost

if TYPE_CHECKING:
    from engine.core.runs import RunResult
    from engine.simulate.policy_exact import PolicyExact
    from engine.simulate.stepwise import Acceptance, Policy, StepwiseResult

# The sampler of the stepwise engine, as results name it (engine.sweep.sweep.sampler_name).
STEPWISE_SAMPLER = "stepwise/1"
__all__ = ["needs_stepwise"]  # re-exported: engine.core.config's, where the parts are read


def has_exact(config: SpecConfig) -> bool:
    """Whether the configuration's policy has an exact value (fixed, hf_heuristic,
    schedule, oracle: those with an exact program); threshold and goodput are Monte Carlo
    only."""
    return POLICY.of(config).exact_program(config) is not None


def acceptance_of(config: SpecConfig, k_max: int) -> Acceptance:
    """The stepwise engine's acceptance process for the configuration, up to k_max drafts."""
    from engine.simulate.stepwise import Acceptance

    model = get_model(config.draft_model)
    if model.confidences:
        return Acceptance(survival=None, beta=(config.beta_a, config.beta_b))
    survival, stay, mix = model.regimes(config, k_max)
    return Acceptance(survival=survival, stay=stay, mix=mix)


def regimes_of(config: SpecConfig, k_max: int) -> tuple[np.ndarray, float, np.ndarray]:
    """(survival, stay, mix) for the exact program: the model's regimes; a confidence
    model's marginal (the q's are unseen by every policy the program enumerates)."""
    return get_model(config.draft_model).regimes(config, k_max)


def price_table(config: SpecConfig, k_max: int) -> tuple[np.ndarray, np.ndarray]:
    """(draft_us, cycle_us), each (T + 1, k_max + 1): the cost of a cycle that starts with r
    tokens still needed and drafts k (k = 0: one plain decoding step), by
    :func:`engine.simulate.stepwise.price_tables` (the kernel's one cycle time). Row 0 is unused."""
    from engine.simulate.stepwise import price_tables

    return price_tables(
        build_cost(config), config.tokens_per_seq, k_max, config.batch_size, config.prompt_len
    )


def crn_key_values(config: SpecConfig) -> dict[str, str]:
    """The fields that key the common random numbers: the acceptance model and the
    parameters it reads (see the module docstring)."""
    return {
        key: repr(config.get(key))
        for key, spec in sorted(FIELD_SPECS.items())
        if spec.part is not None and spec.part[0] == ACCEPTANCE.selector and reads(config, key)
    } | {ACCEPTANCE.selector: config.draft_model}


def crn_entropy(config: SpecConfig) -> list[int]:
    """The seed and the common-random-number key of the scenario, as entropy words."""
    digest = hashlib.sha256(json.dumps(crn_key_values(config), sort_keys=True).encode()).digest()
    words = [int.from_bytes(digest[i : i + 4], "little") for i in range(0, 16, 4)]
    return [config.seed & 0xFFFFFFFF, config.seed >> 32, *words]


def policy_of(config: SpecConfig, oracle_k: np.ndarray | None = None) -> Policy:
    """The stepwise engine's policy for the configuration (``oracle_k``: the oracle's
    table, from :func:`exact_policy`)."""
    return POLICY.of(config).stepwise_policy(config, oracle_k)


# The exact program's work above which a configuration has no exact value: hf_heuristic and
# the oracle sum over every (r, K or k, n, regime), about T x (K_max + 1)^2 x G terms
# (T = 4,096, K_max = 32, two regimes: 8.9 M terms, 0.3 s); beyond this, several seconds.
EXACT_WORK_MAX = 1 << 27


def exact_work(tokens: int, k_max: int, regimes: int, policy: str) -> int:
    """Terms the exact program ``policy`` sums (see :data:`EXACT_WORK_MAX`)."""
    per_r = (k_max + 1) ** 2 if policy in ("hf_heuristic", "oracle") else k_max + 1
    return tokens * per_r * regimes


@lru_cache(maxsize=32)
def exact_policy(config: SpecConfig) -> PolicyExact | None:
    """Exact expectations of the configuration's policy over one sequence (None for a
    policy with no exact value: threshold, goodput)."""
    program = POLICY.of(config).exact_program(config)
    if program is None:
        return None
    from engine.simulate.policy_exact import Regimes, policy_exact

    name, k = program
    k_max = policy_k_max(config)
    survival, stay, mix = regimes_of(config, k_max)
    if exact_work(config.tokens_per_seq, k_max, survival.shape[0], name) > EXACT_WORK_MAX:
        return None  # more than a few seconds of work: no exact value (n/a)
    _, cycle = price_table(config, k_max)
    return policy_exact(
        Regimes(survival=survival, stay=stay, mix=mix),
        cycle,
        config.tokens_per_seq,
        policy=name,
        k=k,
        k_max=k_max,
        clamp=config.tail == "clamp",
    )


def exact_speedup(config: SpecConfig) -> float:
    """The policy's exact speedup (NaN where it has none)."""
    from engine.core.kernel import cycle_costs

    found = exact_policy(config)
    if found is None:
        return math.nan
    return cycle_costs(config).baseline_us / found.time_us


def simulate_policy_config(
    config: SpecConfig,
    *,
    trace: bool | int = False,
    position_counts: bool = False,
    should_stop: Callable[[], bool] | None = None,
    progress: Callable[[int], None] | None = None,
    width: int | None = None,
) -> StepwiseResult:
    """The stepwise Monte Carlo of the configuration, on the scenario's common random
    numbers (:func:`crn_entropy`). ``width``: the draws' width (at least
    :func:`stream_width`); policies compared on one scenario pass the same.
    ``position_counts``: the totals also count cycles by accepted drafts."""
    from engine.simulate.stepwise import simulate_policy

    width = max(stream_width(config), width or 0)
    draft, cycle = price_table(config, width)
    oracle = exact_policy(config) if POLICY.of(config).uses_plan else None
    return simulate_policy(
        acceptance_of(config, width),
        policy_of(config, None if oracle is None else oracle.oracle_k),
        tokens=config.tokens_per_seq,
        n_sequences=config.n_sequences,
        draft_us=draft,
        cycle_us=cycle,
        batch=config.batch_size,
        clamp=config.tail == "clamp",
        entropy=crn_entropy(config),
        trace=trace,
        position_counts=position_counts,
        should_stop=should_stop,
        progress=progress,
    )


def simulate_run(
    config: SpecConfig,
    *,
    exact: dict[str, float],
    records: bool = False,
    on_cycles: Callable[[Any], None] | None = None,
    max_records: int | None = None,
    position_counts: bool = False,
    should_stop: Callable[[], bool] | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> RunResult:
    """:func:`engine.simulate.simulator.simulate` for a configuration of the stepwise engine: the
    same metrics, and the per-cycle records of its first sequences. ``exact``: the
    configuration's exact figures (:func:`engine.simulate.exact.exact_metrics`), reported beside
    the Monte Carlo ones."""
    import pandas as pd

    from engine.core.kernel import metrics_from_totals
    from engine.core.runs import RECORD_DTYPES, RunResult

    want_records = records or on_cycles is not None
    total = config.tokens_per_seq

    def progress(tokens: int) -> None:
        if on_progress is not None:
            on_progress(tokens // total, tokens)

    traced = config.n_sequences
    if max_records is not None and on_cycles is None:  # enough sequences for them
        traced = min(traced, max(1, max_records * 2 // max(config.tokens_per_seq, 1) + 1))
    result = simulate_policy_config(
        config,
        trace=traced if want_records else False,
        position_counts=position_counts,
        should_stop=should_stop,
        progress=progress if on_progress is not None else None,
    )
    totals = result.totals
    frame = None
    if want_records:
        assert result.trace is not None
        frame = _trace_records(config, result.trace, price_table(config, stream_width(config)))
        frame = frame.astype(RECORD_DTYPES)
        if on_cycles is not None:
            on_cycles(frame)
        if max_records is not None:
            frame = frame.iloc[:max_records]
    cycles = frame if records else None
    if records and cycles is None:
        cycles = pd.DataFrame({n: pd.Series(dtype=d) for n, d in RECORD_DTYPES.items()})
    return RunResult(config, metrics_from_totals(config, totals, exact), cycles, totals)


def _trace_records(
    config: SpecConfig, trace: dict[str, np.ndarray], prices: tuple[np.ndarray, np.ndarray]
) -> Any:
    """The records (engine.core.runs.RECORD_DTYPES) of the traced sequences' cycles."""
    import pandas as pd

    r, k, accepted = trace["r"], trace["k"], trace["accepted"]
    sequence = trace.get("sequence", np.zeros(r.size, dtype=np.int64))
    kept = np.minimum(accepted + 1, r)
    cycle_time = prices[1][r, k]
    starts = np.flatnonzero(np.r_[True, sequence[1:] != sequence[:-1]])
    cycle = np.arange(r.size) - np.repeat(starts, np.diff(np.r_[starts, r.size]))
    cum_time = np.cumsum(cycle_time)
    offset = np.repeat(np.r_[0.0, cum_time[starts[1:] - 1]], np.diff(np.r_[starts, r.size]))
    return pd.DataFrame(
        {
            "sequence": sequence,
            "cycle": cycle,
            "k": k,
            "accepted": accepted,
            "kept": kept,
            "cycle_time_us": cycle_time,
            "cum_tokens": config.tokens_per_seq - r + kept,
            "cum_time_us": cum_time - offset,
        }
    )
