"""One chunk of the chain Monte Carlo (:mod:`engine.simulate.simulator`): rounds of draws for
many sequences at once, one uniform per cycle giving its accepted prefix, priced for every
configuration that shares the draws; the per-cycle records of the cycles asked for.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import pandas as pd

from engine.acceptance.draft_models import PrefixSampler
from engine.core.config import SpecConfig
from engine.core.kernel import CycleCosts, Totals, emitted_and_kept
from engine.core.runs import RECORD_DTYPES

# Cycles drawn per chunk of sequences (about 10 bytes each while a chunk runs), and at most
# so many sequences per chunk (:func:`engine.simulate.simulator.chunk_sequences`).
BLOCK_CYCLES = 1 << 19
MAX_CHUNK_SEQUENCES = 4096
# At most so many cycles of one sequence per round: a very long sequence takes several
# rounds, and a run can stop between them.
ROUND_CYCLES_MAX = 1 << 16
# Cycles priced at a time when every cycle is looked at (records, a varying price).
CELL_SLAB = 1 << 16


class StopCheck(Protocol):
    """Where a chunk may stop and report progress (the simulator's checkpoint): ``active``
    when anyone listens; called with the sequences finished and tokens kept so far in the
    chunk."""

    @property
    def active(self) -> bool: ...

    def __call__(self, sequences: int, tokens: int, force: bool = False) -> None: ...


@dataclass
class _Recording:
    """Which cycles of a chunk to record: sequences below ``sequences`` (chunk-local index),
    cycles below ``cycles`` (no record past a sequence's ``cycles``-th cycle can be among
    the first ``cycles`` records of the run)."""

    sequences: int
    cycles: int


def _width(sampler: PrefixSampler, remaining: int) -> int:
    """Cycles to draw per sequence in a round for ``remaining`` tokens: the expected number
    plus two standard deviations (renewal theory: mean r / mu, variance r sigma^2 / mu^3), so
    that few sequences need another round; never more than ``remaining`` (a cycle emits at
    least one token) nor :data:`ROUND_CYCLES_MAX`."""
    mu, var = sampler.mean_emitted, sampler.var_emitted
    wanted = math.ceil(remaining / mu + 2.0 * math.sqrt(remaining * var / mu**3)) + 1
    return max(1, min(wanted, remaining, ROUND_CYCLES_MAX))


def _chunk_sequences(sampler: PrefixSampler, tokens: int) -> int:
    """Sequences simulated together: about :data:`BLOCK_CYCLES` cycles' worth. A function of
    the configuration only, so a result never depends on anything else."""
    return max(1, min(MAX_CHUNK_SEQUENCES, BLOCK_CYCLES // _width(sampler, tokens)))


@dataclass
class _Priced:
    """One configuration's prices, padded so that index 0 (a cell past a sequence's end)
    costs nothing and drafts nothing. ``steady_us``: the price of every cycle with more
    than K tokens to go when they all cost the same (a context-free cost under the clamp
    rule: only the last few cycles of a sequence, r <= K, draft fewer), else None."""

    costs: CycleCosts
    totals: Totals
    cycle_us: np.ndarray
    draft_us: np.ndarray
    steady_us: float | None

    @classmethod
    def of(cls, costs: CycleCosts, totals: Totals) -> _Priced:
        cycle_us, draft_us = costs.cycle_us.copy(), costs.draft_us.copy()
        cycle_us[0] = draft_us[0] = 0.0
        big_k = int(costs.k.max()) if costs.k.size > 1 else 0
        beyond = costs.cycle_us[big_k + 1 :]
        steady = float(beyond[0]) if beyond.size and bool(np.all(beyond == beyond[0])) else None
        return cls(costs, totals, cycle_us, draft_us, steady)


def _simulate_chunk(
    sampler: PrefixSampler,
    config: SpecConfig,
    priced: list[_Priced],
    rng: np.random.Generator,
    first_sequence: int,
    n_seq: int,
    record: _Recording | None,
    check: StopCheck,
) -> pd.DataFrame | None:
    """Simulate ``n_seq`` sequences of ``config`` for every configuration in ``priced`` (they
    share the draws: same acceptance, K, T, tail rule; only their prices differ).

    Rounds: each still-running sequence gets a row of ``w`` cycles, one uniform each
    (:meth:`PrefixSampler.emitted`: n_full + 1 tokens for K drafts). A sequence runs through
    its row until its tokens reach what it still needs; the cycle that gets there is its
    last. Cycles of a row past that are never used. Sequences that did not finish in their
    row get another round. The tail rule acts only through the tokens still needed, r, at
    the start of a cycle: a cycle drafts k_r (the kernel's rule) and accepts
    min(n_full, k_r) drafts; before the last cycle r - 1 >= n_full + 1 > n_full, so only the
    last cycle can be cut, and every cycle is priced by r (engine.core.kernel.cycle_costs).
    """
    big_k, target = config.k, config.tokens_per_seq
    k_by_r = priced[0].costs.k.copy()  # the same for every member: K, T and tail agree
    k_by_r[0] = 0
    constant = all(p.costs.constant_cycle_us is not None for p in priced)
    per_token = all(p.costs.draft_per_token_us is not None for p in priced)
    positions = priced[0].totals.accepted_counts is not None
    clamp = config.tail == "clamp"
    # Under clamp with steady prices only the cycles with r <= K differ: each sequence's
    # last few, found from the end of its row (the same arithmetic with or without records).
    tailed = clamp and per_token and all(p.steady_us is not None for p in priced)
    # Per-cycle work (each cycle's r, price, draft count) only when something needs it.
    cells_needed = (
        not (constant or tailed) or not per_token or record is not None or (clamp and positions)
    )
    # Full tail, every cycle priced alike: per-position counts need only which cycles a
    # sequence used (every cycle drafts K and accepts n = emitted - 1).
    quick_positions = positions and not cells_needed

    remaining = np.full(n_seq, target, dtype=np.int64)
    cycles_done = np.zeros(n_seq, dtype=np.int64)
    seq_time = [np.zeros(n_seq) for _ in priced]
    active = np.arange(n_seq)
    parts: list[tuple[np.ndarray, ...]] = []
    while active.size:
        rem = remaining[active]
        rows, width = active.size, _width(sampler, int(rem.max()))
        emitted = sampler.emitted(rng, rows * width)
        wide = rows * width * (big_k + 1) + target >= 2**31
        cum = np.cumsum(emitted, dtype=np.int64 if wide else np.int32)
        starts = np.arange(0, rows * width, width)
        offset = np.zeros(rows, dtype=cum.dtype)
        offset[1:] = cum[starts[1:] - 1]
        need = offset + rem.astype(cum.dtype)
        end = np.searchsorted(cum, need, side="left")  # first cycle reaching r tokens
        last = np.minimum(end, starts + width - 1)
        finished = end == last
        used = last - starts + 1
        gained = (cum[last] - offset).astype(np.int64)
        n_cycles = int(used.sum())
        accepted = int(gained.sum()) - n_cycles  # every used cycle, before the tail's cut
        # The last cycle of a finished sequence: r_last tokens needed when it began.
        fin = np.flatnonzero(finished)
        n_full_last = emitted[last[fin]].astype(np.int64) - 1
        r_last = rem[fin] - (gained[fin] - n_full_last - 1)
        n_last = np.minimum(n_full_last, k_by_r[r_last])
        accepted -= int((n_full_last - n_last).sum())
        _, kept_last = emitted_and_kept(n_last, r_last)  # only the last cycle may discard
        accepted_kept = accepted - int((n_last - np.minimum(n_last, kept_last)).sum())

        if quick_positions:
            used_cells = (np.arange(width) < used[:, None]).ravel()
            n_used = emitted[used_cells].astype(np.int64) - 1
            for member in priced:
                member.totals.count_positions(n_used, n_used < big_k)
        # Each member's time for this round and its drafting time: from the cycle count
        # where every cycle costs the same, else cycle by cycle (the same either way,
        # whatever else asks for the cycles: records never change a result).
        round_time: list[np.ndarray] = [np.zeros(rows) for _ in priced]
        draft_time = [0.0 for _ in priced]
        drafted = n_cycles * big_k
        if tailed:
            drafted, round_time = _tail_prices(
                priced, emitted, cum, need, last, used, big_k, k_by_r
            )
        if cells_needed:
            priced_by_cell = not (constant or tailed)
            if priced_by_cell:
                drafted = 0
            slab = max(1, CELL_SLAB // width)  # rows at a time: bounded memory
            for lo in range(0, rows, slab):
                hi = min(rows, lo + slab)
                cells = slice(lo * width, hi * width)
                # r at the start of every cell's cycle; <= 0 past a sequence's last cycle.
                before = np.repeat(need[lo:hi], width) - (cum[cells] - emitted[cells])
                r_cell = np.maximum(before, 0)
                k_cell = k_by_r[r_cell]
                if priced_by_cell:
                    drafted += int(k_cell.sum())
                    for index, member in enumerate(priced):
                        if member.costs.constant_cycle_us is None:
                            times = member.cycle_us[r_cell].reshape(hi - lo, width)
                            round_time[index][lo:hi] = times.sum(axis=1)
                # Drafting not proportional to k (a fixed cost per drafting cycle, a
                # measured table): added cycle by cycle, whether the cycle times are.
                for index, member in enumerate(priced):
                    if member.costs.draft_per_token_us is None:
                        draft_time[index] += float(member.draft_us[r_cell].sum())
                if positions or record is not None:
                    valid = before > 0
                    n_cell = np.minimum(emitted[cells].astype(k_cell.dtype) - 1, k_cell)
                    if positions:
                        used_n, used_k = n_cell[valid], k_cell[valid]
                        for member in priced:
                            member.totals.count_positions(used_n, used_n < used_k)
                    if record is not None:
                        part = _records(
                            record,
                            first_sequence,
                            active[lo:hi],
                            cycles_done,
                            seq_time[0],
                            priced[0],
                            width,
                            valid,
                            r_cell,
                            k_cell,
                            n_cell,
                            target,
                        )
                        if part is not None:
                            parts.append(part)
        for index, member in enumerate(priced):
            costs = member.costs
            if costs.constant_cycle_us is not None:
                round_time[index] = used * costs.constant_cycle_us
            seq_time[index][active] += round_time[index]
            if costs.draft_per_token_us is not None:
                draft_time[index] = drafted * costs.draft_per_token_us
            member.totals.add_cycles(n_cycles, drafted, accepted, accepted_kept, draft_time[index])

        remaining[active] = np.where(finished, 0, rem - gained)
        cycles_done[active] += used
        active = active[~finished]
        if check.active:
            check(n_seq - active.size, n_seq * target - int(remaining.sum()))
    for index, member in enumerate(priced):
        member.totals.add_sequences(seq_time[index])
    return _sorted_frame(parts) if record is not None else None


def _tail_prices(
    priced: list[_Priced],
    emitted: np.ndarray,
    cum: np.ndarray,
    need: np.ndarray,
    last: np.ndarray,
    used: np.ndarray,
    big_k: int,
    k_by_r: np.ndarray,
) -> tuple[int, list[np.ndarray]]:
    """Drafted tokens and each member's time per row of one round under the clamp rule with
    steady prices: every used cycle at the steady price, corrected for the cycles that
    began with r <= K tokens to go. Those are a row's last ones (r falls by at least one a
    cycle), so only its last min(K, used) cycles are looked at, added from the last back."""
    window = min(big_k, int(used.max()))
    drafted = int(used.sum()) * big_k
    times = [used * member.steady_us for member in priced]  # type: ignore[operator]
    for back in range(window):  # the row's last cycle, the one before, ...
        here = last - back
        inside = back < used
        r = np.where(inside, need - (cum[here] - emitted[here]), 0)
        tail = inside & (r <= big_k)
        if not tail.any():
            break
        r = np.where(tail, r, 0)
        drafted -= int((big_k - k_by_r[r])[tail].sum())
        for index, member in enumerate(priced):
            extra = np.where(tail, member.cycle_us[r] - member.steady_us, 0.0)  # type: ignore[operator]
            times[index] = times[index] + extra
    return drafted, times


def _records(
    record: _Recording,
    first_sequence: int,
    active: np.ndarray,
    cycles_done: np.ndarray,
    seq_time: np.ndarray,
    member: _Priced,
    width: int,
    valid: np.ndarray,
    r_cell: np.ndarray,
    k_cell: np.ndarray,
    n_cell: np.ndarray,
    target: int,
) -> tuple[np.ndarray, ...] | None:
    """The per-cycle records of some rows of one round (columns of :data:`RECORD_DTYPES`),
    for the cycles ``record`` asks for; ``active``: those rows' sequences. ``seq_time``:
    every sequence's time before this round."""
    rows = active.size
    col = np.tile(np.arange(width), rows)
    row = np.repeat(np.arange(rows), width)
    cycle = cycles_done[active][row] + col
    wanted = valid & (active[row] < record.sequences) & (cycle < record.cycles)
    if not wanted.any():
        return None
    _, kept = emitted_and_kept(n_cell, r_cell)
    times = member.cycle_us[r_cell]
    cum_time = np.cumsum(times.reshape(rows, width), axis=1).ravel()
    return (
        (active[row] + first_sequence)[wanted],
        cycle[wanted],
        k_cell[wanted],
        n_cell[wanted],
        kept[wanted],
        times[wanted],
        (target - r_cell + kept)[wanted],
        (seq_time[active][row] + cum_time)[wanted],
    )


def _sorted_frame(parts: list[tuple[np.ndarray, ...]]) -> pd.DataFrame:
    """The records of a chunk, ordered by sequence then cycle. Each part lists its
    sequences in order and a later part only later cycles of a sequence (a round after
    another), so a stable sort by sequence orders them; one part needs no sort. The columns
    are not copied into blocks."""
    columns = {
        name: (np.concatenate([p[i] for p in parts]) if parts else np.zeros(0)).astype(
            dtype, copy=False
        )
        for i, (name, dtype) in enumerate(RECORD_DTYPES.items())
    }
    if len(parts) > 1:
        order = np.argsort(columns["sequence"], kind="stable")
        columns = {name: col[order] for name, col in columns.items()}
    return pd.DataFrame(columns, copy=False)
