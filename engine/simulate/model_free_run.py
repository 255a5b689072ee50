"""Monte Carlo of a model-free proposer (n-gram / prompt lookup, suffix decoding;
docs/model.md, "Proposers"): the vectorised engine (sampler :data:`SAMPLER`) and the literal
per-token loop (:func:`simulate_model_free_reference`), the independent check.

Each step of each sequence draws from the configuration's own generator
(:func:`engine.core.runs.config_rng`): whether its context has a match (``U < h``), for
suffix decoding how many tokens the match proposes (``L = #{j <= K : P(L >= j) > U}``), and
its accepted prefix (``n = #{i <= K : S_i > U}``, the acceptance model's survival). A step
with a match drafts ``d = min(L, k_r)`` and accepts ``min(n, d)``; one without drafts
nothing and emits one token. Every step is priced by the kernel
(:func:`engine.core.kernel.proposer_step_us`, :class:`engine.core.kernel.CycleCosts`). A
draft model's configurations never come here: their draws are as they were.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pandas as pd

from engine.acceptance.draft_models import get_model
from engine.core.config import SpecConfig
from engine.core.kernel import Totals, cycle_costs, metrics_from_totals, proposer_step_us
from engine.core.parts import COST, PROPOSER
from engine.core.runs import (
    RECORD_DTYPES,
    CycleSink,
    KeptRecords,
    ProgressSink,
    RunResult,
    RunStopped,
    config_rng,
    records_frame,
)

__all__ = ["SAMPLER", "simulate_model_free", "simulate_model_free_reference"]

# What made a model-free run's Monte Carlo values (as a sweep row's sampler column says).
SAMPLER = "proposer/1"
# A block of steps drawn at once holds at most this many cells (sequences x steps).
BLOCK_CELLS = 1 << 18


def _empty_frame() -> pd.DataFrame:
    return pd.DataFrame({name: np.zeros(0, dtype=dtype) for name, dtype in RECORD_DTYPES.items()})


def simulate_model_free(
    config: SpecConfig,
    *,
    records: bool = False,
    on_cycles: CycleSink | None = None,
    max_records: int | None = None,
    position_counts: bool = False,
    should_stop: Callable[[], bool] | None = None,
    on_progress: ProgressSink | None = None,
) -> RunResult:
    """Monte Carlo run of a model-free proposer's ``config`` (the arguments as
    :func:`engine.simulate.simulator.simulate`'s). Sequences run in chunks; each block draws
    the three uniforms of a row of steps for every running sequence (hit, length, accepted
    prefix, in that order), and a sequence uses its row up to the step that completes it."""
    from engine.simulate.exact import exact_metrics
    from engine.simulate.model_free_exact import hit_survival

    proposer = PROPOSER.of(config)
    big_k, total, clamp = config.k, config.tokens_per_seq, config.tail == "clamp"
    h = proposer.hit_rate(config)
    accept = np.cumprod(np.asarray(get_model(config.draft_model).position_probs(config, big_k)))
    lengths = np.asarray(proposer.length_survival(config, big_k), dtype=np.float64)
    variable = not bool(np.all(lengths == 1.0))
    costs = cycle_costs(config)
    assert costs.miss_us is not None and costs.lookup_us is not None
    cost = COST.of(config).build(config) if variable else None
    mean_emitted = 1.0 + h * float(hit_survival(config).sum())
    per_sequence = max(1, min(total, math.ceil(total / mean_emitted)))
    chunk = max(1, min(config.n_sequences, BLOCK_CELLS // per_sequence))
    totals = Totals()
    if position_counts:
        totals.count_positions_up_to(big_k)
    kept_records = KeptRecords(records, max_records, on_cycles)
    rng = config_rng(config)
    neg_accept, neg_lengths = -accept, -lengths
    for first in range(0, config.n_sequences, chunk):
        n_seq = min(chunk, config.n_sequences - first)
        remaining = np.full(n_seq, total, dtype=np.int64)
        elapsed = np.zeros(n_seq)
        steps_done = np.zeros(n_seq, dtype=np.int64)
        active = np.arange(n_seq)
        keep = on_cycles is not None or (
            records and (max_records is None or kept_records.rows < max_records)
        )
        parts: list[tuple[np.ndarray, ...]] = []
        while active.size:
            if should_stop is not None and should_stop():
                raise RunStopped
            rows = active.size
            left = remaining[active]
            width = math.ceil(int(left.max()) / mean_emitted * 1.2) + 4
            width = int(min(width, total, max(1, BLOCK_CELLS // rows)))
            u_hit = rng.random((rows, width))
            u_length = rng.random((rows, width)) if variable else None
            u_accept = rng.random((rows, width))
            if u_length is None:
                cap = np.where(u_hit < h, big_k, 0)
            else:
                drawn = np.searchsorted(neg_lengths, -u_length, side="left")
                cap = np.where(u_hit < h, drawn, 0)
            accepted_full = np.searchsorted(neg_accept, -u_accept, side="left")
            emitted_full = np.minimum(accepted_full, cap) + 1
            before = np.cumsum(emitted_full, axis=1) - emitted_full
            r_start = left[:, None] - before
            valid = r_start > 0
            # Only a sequence's last step can meet the tail: the clamp rule cuts its drafts.
            room = np.minimum(big_k, r_start - 1) if clamp else big_k
            drafted = np.where(valid, np.minimum(cap, room), 0)
            accepted = np.minimum(accepted_full, drafted)
            kept = np.where(valid, np.minimum(accepted + 1, r_start), 0)
            at = np.where(valid, r_start, 1)
            if cost is None:
                step = np.where(drafted > 0, costs.cycle_us[at], costs.miss_us[at])
            else:
                step = np.asarray(proposer_step_us(config, cost, drafted, at), dtype=np.float64)
            step = np.where(valid, step, 0.0)
            steps = int(valid.sum())
            totals.add_cycles(
                steps,
                int(drafted.sum()),
                int(accepted.sum()),
                int(np.minimum(accepted, kept).sum()),
                costs.lookup_us * steps,
            )
            totals.drafting_cycles += int((drafted > 0).sum())
            if position_counts:
                totals.count_positions(accepted[valid], (accepted < drafted)[valid])
            if keep:
                row, col = np.nonzero(valid)
                done_before = total - left
                parts.append(
                    (
                        first + active[row],
                        steps_done[active][row] + col,
                        drafted[row, col],
                        accepted[row, col],
                        kept[row, col],
                        step[row, col],
                        (done_before[:, None] + np.cumsum(kept, axis=1))[row, col],
                        (elapsed[active][:, None] + np.cumsum(step, axis=1))[row, col],
                    )
                )
            elapsed[active] += step.sum(axis=1)
            remaining[active] = left - kept.sum(axis=1)
            steps_done[active] += valid.sum(axis=1)
            active = active[remaining[active] > 0]
        totals.add_sequences(elapsed)
        if parts:
            kept_records.take(_frame(parts))
        if on_progress is not None:
            on_progress(first + n_seq, (first + n_seq) * total)
    cycles = kept_records.frame(_empty_frame()) if records else None
    return RunResult(
        config, metrics_from_totals(config, totals, exact_metrics(config)), cycles, totals
    )


def _frame(parts: list[tuple[np.ndarray, ...]]) -> pd.DataFrame:
    """A chunk's records ordered by sequence then step (later blocks hold later steps)."""
    columns = {
        name: np.concatenate([p[i] for p in parts]).astype(dtype, copy=False)
        for i, (name, dtype) in enumerate(RECORD_DTYPES.items())
    }
    order = np.lexsort((columns["cycle"], columns["sequence"]))
    return pd.DataFrame({name: col[order] for name, col in columns.items()})


def _further(lengths: np.ndarray, drafted: int) -> float:
    """P(L >= drafted + 1 | L >= drafted) from the survival ``lengths`` (index j: L > j)."""
    reached = float(lengths[drafted - 1])
    return float(lengths[drafted]) / reached if reached > 0.0 else 0.0


def simulate_model_free_reference(config: SpecConfig, *, records: bool = False) -> RunResult:
    """The literal loop for a model-free proposer: one sequence, one step at a time; a
    uniform for the match, then (suffix decoding) one test per further token the match
    proposes (``P(L >= j + 1 | L >= j)``) up to the room the step has, then one accept test
    per drafted position in order, stopping at the first rejection."""
    from engine.simulate.exact import exact_metrics

    proposer = PROPOSER.of(config)
    model = get_model(config.draft_model)
    big_k, total = config.k, config.tokens_per_seq
    h = proposer.hit_rate(config)
    lengths = np.append(np.asarray(proposer.length_survival(config, big_k), float), 0.0)
    costs = cycle_costs(config)
    assert costs.lookup_us is not None
    cost = COST.of(config).build(config)
    rng = config_rng(config)
    totals = Totals()
    rows: list[tuple[int | float, ...]] = []
    seq_times = np.zeros(config.n_sequences)
    for seq in range(config.n_sequences):
        tokens, elapsed, step_index = 0, 0.0, 0
        while tokens < total:
            remaining = total - tokens
            room = min(big_k, remaining - 1) if config.tail == "clamp" else big_k
            drafted = 0
            if rng.random() < h and room > 0:
                drafted = 1
                while drafted < room and rng.random() < _further(lengths, drafted):
                    drafted += 1
            accepted = 0
            for position in range(1, drafted + 1):
                if not model.accept_token(config, rng, position):
                    break
                accepted += 1
            kept = min(accepted + 1, remaining)
            step = float(proposer_step_us(config, cost, drafted, remaining))
            tokens += kept
            elapsed += step
            totals.add_cycles(1, drafted, accepted, min(accepted, kept), costs.lookup_us)
            totals.drafting_cycles += int(drafted > 0)
            if records:
                rows.append((seq, step_index, drafted, accepted, kept, step, tokens, elapsed))
            step_index += 1
        seq_times[seq] = elapsed
    totals.add_sequences(seq_times)
    cycles = records_frame(rows) if records else None
    return RunResult(
        config, metrics_from_totals(config, totals, exact_metrics(config)), cycles, totals
    )
