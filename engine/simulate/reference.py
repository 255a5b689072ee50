"""The literal per-token loop: slow and obviously right. The oracle for the fast simulator.

One sequence at a time, one cycle at a time, one accept test per drafted position in
order, stopping at the first rejection, exactly as docs/model.md describes a cycle.
"""

from __future__ import annotations

import numpy as np

from engine.acceptance.draft_models import get_model
from engine.core.config import ConfigError, SpecConfig
from engine.core.kernel import (
    Totals,
    cycle_costs,
    draft_count,
    emitted_and_kept,
    metrics_from_totals,
)
from engine.core.parts import ACCEPTANCE, POLICY, PROPOSER, SHAPE
from engine.core.runs import RunResult, config_rng, records_frame
from engine.simulate.exact import exact_metrics


def simulate_reference(config: SpecConfig, *, records: bool = False) -> RunResult:
    """Monte Carlo run of ``config`` by the plain loop; same result shape as ``simulate``.

    Fixed K on acceptance whose cycles are independent only (ConfigError otherwise): K
    policies and markov run on the stepwise engine (engine.simulate.policies), token trees on
    their own (engine.simulate.tree_scenario)."""
    from engine.simulate.policies import needs_stepwise

    if PROPOSER.of(config).model_free:  # a match per step, then the same per-token tests
        from engine.simulate.model_free_run import simulate_model_free_reference

        return simulate_model_free_reference(config, records=records)
    if SHAPE.of(config).tree:
        raise ConfigError(
            "shape.name", "the reference engine runs chains, not a tree; use the fast engine"
        )

    if needs_stepwise(config):
        field = POLICY.selector if POLICY.of(config).stepwise else ACCEPTANCE.selector
        raise ConfigError(
            field,
            f"the reference engine runs a fixed K on independent cycles, not "
            f"{config.get(field)}; use the fast engine",
        )
    model = get_model(config.draft_model)
    costs = cycle_costs(config)
    rng = config_rng(config)
    totals = Totals()
    rows: list[tuple[int | float, ...]] = []
    seq_times = np.zeros(config.n_sequences)
    for seq in range(config.n_sequences):
        tokens, elapsed, cycle = 0, 0.0, 0
        while tokens < config.tokens_per_seq:
            remaining = config.tokens_per_seq - tokens
            k = draft_count(config, remaining)
            accepted = 0
            for position in range(1, k + 1):
                if not model.accept_token(config, rng, position):
                    break
                accepted += 1
            _, kept = emitted_and_kept(accepted, remaining)
            cycle_time = float(costs.cycle_us[remaining])
            tokens += kept
            elapsed += cycle_time
            totals.add_cycles(1, k, accepted, min(accepted, kept), float(costs.draft_us[remaining]))
            if records:
                rows.append((seq, cycle, k, accepted, kept, cycle_time, tokens, elapsed))
            cycle += 1
        seq_times[seq] = elapsed
    totals.add_sequences(seq_times)
    cycles = records_frame(rows) if records else None
    return RunResult(config, metrics_from_totals(config, totals, exact_metrics(config)), cycles)
