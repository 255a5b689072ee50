"""The literal per-token loop: slow and obviously right. The oracle for the fast simulator.

One sequence at a time, one cycle at a time, one accept test per drafted position in
order, stopping at the first rejection, exactly as docs/model.md describes a cycle.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .config import SpecConfig
from .draft_models import get_model
from .simulator import RECORD_DTYPES, RunResult, Totals, config_rng, metrics_from_totals


def simulate_reference(config: SpecConfig, *, records: bool = False) -> RunResult:
    """Monte Carlo run of ``config`` by the plain loop; same result shape as ``simulate``."""
    model = get_model(config.draft_model)
    rng = config_rng(config)
    totals = Totals()
    rows: list[tuple[int | float, ...]] = []
    seq_times = np.zeros(config.n_sequences)
    for seq in range(config.n_sequences):
        tokens, elapsed, cycle = 0, 0.0, 0
        while tokens < config.tokens_per_seq:
            remaining = config.tokens_per_seq - tokens
            k = config.k if config.tail == "full" else min(config.k, remaining - 1)
            accepted = 0
            for position in range(1, k + 1):
                if not model.accept_token(config, rng, position):
                    break
                accepted += 1
            emitted = accepted + 1
            kept = min(emitted, remaining)
            cycle_time = k * config.draft_cost_us + config.verify_cost_us
            tokens += kept
            elapsed += cycle_time

            totals.cycles += 1
            totals.drafted += k
            totals.accepted += accepted
            totals.accepted_kept += min(accepted, kept)
            totals.emitted += emitted
            totals.target_positions += k + 1
            totals.draft_time_us += k * config.draft_cost_us
            if records:
                rows.append((seq, cycle, k, accepted, kept, cycle_time, tokens, elapsed))
            cycle += 1
        seq_times[seq] = elapsed
    totals.add_sequences(seq_times)
    cycles = None
    if records:
        cycles = pd.DataFrame(rows, columns=list(RECORD_DTYPES)).astype(RECORD_DTYPES)
    return RunResult(config, metrics_from_totals(config, totals), cycles)
