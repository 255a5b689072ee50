"""Vectorised Monte Carlo simulation of speculative decoding (numpy).

All sequences of a chunk advance together, one cycle per step; each step draws the
token-level accept tests of every active sequence at once. Aggregates are always
computed; per-cycle records only on request, in compact numpy columns.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .config import SpecConfig, seed_key_values
from .draft_models import get_model
from .exact import tokens_per_cycle
from .kernel import (
    METRIC_NAMES,
    Z95,
    CycleCosts,
    Totals,
    cycle_costs,
    draft_count,
    emitted_and_kept,
    metrics_from_totals,
)

__all__ = [
    "METRIC_NAMES",
    "RECORD_DTYPES",
    "Z95",
    "RunResult",
    "RunStopped",
    "Totals",
    "config_rng",
    "metrics_from_totals",
    "seed_key",
    "simulate",
]

# Sequences simulated together. Fixed, so that results never depend on anything but the
# configuration; it bounds the memory of one step to CHUNK_SEQUENCES x K accept tests.
CHUNK_SEQUENCES = 4096

# Accept tests drawn at once in the full-tail block sampler (bounds its memory: ~5 bytes each).
BLOCK_ELEMENTS = 1 << 22


# How often a run asks ``should_stop`` and reports progress (seconds of simulation work).
CHECK_EVERY_S = 0.05

RECORD_DTYPES: dict[str, str] = {
    "sequence": "int32",
    "cycle": "int32",
    "k": "int32",
    "accepted": "int32",
    "kept": "int32",
    "cycle_time_us": "float64",
    "cum_tokens": "int32",
    "cum_time_us": "float64",
}


def seed_key(config: SpecConfig) -> list[int]:
    """A stable key of the configuration, from the fields that key its draws
    (:func:`engine.config.seed_key_values`: not the seed, no parameter its parts ignore,
    no newer field). Two configurations that differ only in a parameter their model ignores
    draw the same random numbers, so an inert sweep axis shows identical results, not noise.
    """
    canonical = seed_key_values(config)
    digest = hashlib.sha256(json.dumps(canonical, sort_keys=True).encode()).digest()
    return [int.from_bytes(digest[i : i + 4], "little") for i in range(0, 16, 4)]


def config_rng(config: SpecConfig) -> np.random.Generator:
    """The generator of one configuration, derived from its seed and its own key."""
    return np.random.default_rng(np.random.SeedSequence(config.seed, spawn_key=seed_key(config)))


class RunStopped(Exception):
    """A run's ``should_stop`` turned true: the run was abandoned, no result."""


@dataclass
class RunResult:
    """The metrics of one run (names as in docs/model.md) and, if asked for, its cycles."""

    config: SpecConfig
    metrics: dict[str, float]
    cycles: pd.DataFrame | None = None
    totals: Totals | None = None

    def position_acceptance(self, positions: int) -> np.ndarray:
        """Observed P(accept) at positions 1..``positions`` over every cycle of the run
        (needs ``position_counts=True``, or else every record)."""
        if self.totals is not None and self.totals.accepted_counts is not None:
            assert self.totals.rejected_counts is not None
            return acceptance_by_position(
                self.totals.accepted_counts, self.totals.rejected_counts, positions
            )
        if self.cycles is None or len(self.cycles) != self.metrics["cycles"]:
            raise ValueError("position acceptance needs position_counts=True or every record")
        return position_acceptance(self.cycles, positions)

    def to_dict(self) -> dict[str, Any]:
        """Configuration and metrics in one flat mapping (NaN kept as float NaN)."""
        return {**self.config.to_dict(), **self.metrics}


CycleSink = Callable[[pd.DataFrame], None]
ProgressSink = Callable[[int, int], None]


class _Checkpoint:
    """Where a run may stop, and reports progress: called often, acts every CHECK_EVERY_S."""

    def __init__(
        self, should_stop: Callable[[], bool] | None, on_progress: ProgressSink | None
    ) -> None:
        self.should_stop = should_stop
        self.on_progress = on_progress
        self.sequences = 0  # finished before the current chunk
        self.tokens = 0
        self._last = time.monotonic()

    @property
    def active(self) -> bool:
        return self.should_stop is not None or self.on_progress is not None

    def due(self) -> bool:
        now = time.monotonic()
        if now - self._last < CHECK_EVERY_S:
            return False
        self._last = now
        return True

    def __call__(self, sequences: int, tokens: int, force: bool = False) -> None:
        """``sequences`` finished and ``tokens`` kept so far in the current chunk."""
        if not force and not self.due():
            return
        if self.should_stop is not None and self.should_stop():
            raise RunStopped
        if self.on_progress is not None:
            self.on_progress(self.sequences + sequences, self.tokens + tokens)


def _leading_accepts(accepts: np.ndarray) -> np.ndarray:
    """Per row of accept tests: the index of the first rejection, or the width if none."""
    n = accepts.argmin(axis=1)
    # argmin finds the first False; it points at a True only when the row has no False.
    n[accepts[np.arange(accepts.shape[0]), n]] = accepts.shape[1]
    return n


@dataclass
class _Recording:
    """Which cycles of a chunk to record: sequences below ``sequences`` (chunk-local index),
    cycles below ``cycles`` (no record past a sequence's ``cycles``-th cycle can be among
    the first ``cycles`` records of the run)."""

    sequences: int
    cycles: int


def _simulate_chunk_stepwise(
    config: SpecConfig,
    costs: CycleCosts,
    rng: np.random.Generator,
    first_sequence: int,
    n_seq: int,
    totals: Totals,
    record: _Recording | None,
    check: _Checkpoint,
) -> pd.DataFrame | None:
    model = get_model(config.draft_model)
    target = config.tokens_per_seq
    clamp = config.tail == "clamp"

    tokens = np.zeros(n_seq, dtype=np.int64)
    seq_time = np.zeros(n_seq)
    active = np.arange(n_seq)
    parts: list[tuple[np.ndarray, ...]] = []
    cycle_index = 0
    while active.size:
        remaining = target - tokens[active]
        k = draft_count(config, remaining)
        width = int(k.max()) if clamp else config.k
        if width:
            accepts = model.sample_accepts(config, rng, active.size, width)
            if clamp:
                accepts &= np.arange(width) < k[:, None]
            n = _leading_accepts(accepts)
        else:
            n = np.zeros(active.size, dtype=np.int64)
        _, kept = emitted_and_kept(n, remaining)
        cycle_time = costs.cycle_us[remaining]
        tokens[active] += kept
        seq_time[active] += cycle_time

        drafted = int(k.sum())
        totals.add_cycles(
            active.size,
            drafted,
            int(n.sum()),
            int(np.minimum(n, kept).sum()),
            drafted * costs.draft_per_token_us
            if costs.draft_per_token_us is not None
            else float(costs.draft_us[remaining].sum()),
        )
        totals.count_positions(n, n < k)
        if record is not None and cycle_index < record.cycles:
            columns: tuple[np.ndarray, ...] = (
                active + first_sequence,
                np.full(active.size, cycle_index),
                k,
                n,
                kept,
                cycle_time,
                tokens[active],
                seq_time[active],
            )
            if record.sequences < n_seq:
                keep = active < record.sequences
                columns = tuple(c[keep] for c in columns)
            if columns[0].size:
                parts.append(columns)
        active = active[tokens[active] < target]
        cycle_index += 1
        if check.active and check.due():
            check(n_seq - active.size, int(tokens.sum()), force=True)
    totals.add_sequences(seq_time)
    return _sorted_frame(parts) if record is not None else None


def _sorted_frame(parts: list[tuple[np.ndarray, ...]]) -> pd.DataFrame:
    columns = {
        name: (np.concatenate([p[i] for p in parts]) if parts else np.zeros(0)).astype(
            dtype, copy=False
        )
        for i, (name, dtype) in enumerate(RECORD_DTYPES.items())
    }
    order = np.lexsort((columns["cycle"], columns["sequence"]))
    return pd.DataFrame({name: col[order] for name, col in columns.items()})


def _simulate_chunk_blocks(
    config: SpecConfig,
    costs: CycleCosts,
    rng: np.random.Generator,
    first_sequence: int,
    n_seq: int,
    totals: Totals,
    record: _Recording | None,
    check: _Checkpoint,
) -> pd.DataFrame | None:
    """Full tail: every cycle drafts K, so a sequence's cycles are i.i.d. Draw a block of
    cycles per sequence at once (enough to finish most sequences), keep the cycles each
    sequence needed, and draw again only for the few that did not finish."""
    model = get_model(config.draft_model)
    big_k, target = config.k, config.tokens_per_seq
    constant = costs.constant_cycle_us
    mean_emitted = tokens_per_cycle(config)

    tokens = np.zeros(n_seq, dtype=np.int64)
    seq_time = np.zeros(n_seq)
    cycles_done = np.zeros(n_seq, dtype=np.int64)
    active = np.arange(n_seq)
    parts: list[tuple[np.ndarray, ...]] = []
    while active.size:
        remaining = target - tokens[active]
        wanted = int(np.ceil(remaining.max() / mean_emitted * 1.15)) + 2
        width = max(1, min(wanted, BLOCK_ELEMENTS // (active.size * big_k)))
        rows = active.size
        accepts = model.sample_accepts(config, rng, rows * width, big_k)
        n = _leading_accepts(accepts).reshape(rows, width)
        cum = np.cumsum(n, axis=1)
        cum += np.arange(1, width + 1)  # tokens emitted by the end of each cycle
        reached = cum >= remaining[:, None]
        finished = reached[:, -1]
        used = np.where(finished, reached.argmax(axis=1) + 1, width)
        valid = np.arange(width) < used[:, None]
        # Aggregates from each sequence's last used cycle; only it can discard tokens.
        pick = np.arange(rows), used - 1
        cum_last, n_last = cum[pick], n[pick]
        added = np.where(finished, remaining, cum_last)
        kept_last = added - (cum_last - n_last - 1)

        if constant is None:
            # Cycles priced by the tokens still needed when each began (its context).
            before = np.clip(remaining[:, None] - (cum - n - 1), 1, target)
            times = np.where(valid, costs.cycle_us[before], 0.0)
            block_time = times.sum(axis=1)
        else:
            block_time = used * constant
        n_cycles = int(used.sum())
        accepted = int(cum_last.sum()) - n_cycles
        if costs.draft_per_token_us is not None:
            draft_time = n_cycles * big_k * costs.draft_per_token_us
        else:
            draft_time = float(np.where(valid, costs.draft_us[before], 0.0).sum())
        totals.add_cycles(
            n_cycles,
            n_cycles * big_k,
            accepted,
            accepted - int((n_last - np.minimum(n_last, kept_last)).sum()),
            draft_time,
        )
        if totals.accepted_counts is not None:
            used_n = n[valid]
            totals.count_positions(used_n, used_n < big_k)
        if record is not None:
            wanted_rows = valid & (active < record.sequences)[:, None]
            wanted_rows &= cycles_done[active][:, None] + np.arange(width) < record.cycles
            kept = np.where(wanted_rows, np.minimum(n + 1, remaining[:, None] - (cum - n - 1)), 0)
            row, col = np.nonzero(wanted_rows)
            if row.size:
                if constant is None:
                    cycle_time = times[wanted_rows]
                    cum_time = seq_time[active][row] + np.cumsum(times, axis=1)[wanted_rows]
                else:
                    cycle_time = np.full(row.size, constant)
                    cum_time = seq_time[active][row] + (col + 1) * constant
                parts.append(
                    (
                        active[row] + first_sequence,
                        cycles_done[active][row] + col,
                        np.full(row.size, big_k),
                        n[wanted_rows],
                        kept[wanted_rows],
                        cycle_time,
                        tokens[active][row] + np.cumsum(kept, axis=1)[wanted_rows],
                        cum_time,
                    )
                )
        tokens[active] += added
        seq_time[active] += block_time
        cycles_done[active] += used
        active = active[~finished]
        if check.active:
            check(n_seq - active.size, int(tokens.sum()))
    totals.add_sequences(seq_time)
    return _sorted_frame(parts) if record is not None else None


def simulate(
    config: SpecConfig,
    *,
    records: bool = False,
    on_cycles: CycleSink | None = None,
    max_records: int | None = None,
    position_counts: bool = False,
    should_stop: Callable[[], bool] | None = None,
    on_progress: ProgressSink | None = None,
) -> RunResult:
    """Monte Carlo run of ``config``.

    ``records=True`` keeps the per-cycle records (columns :data:`RECORD_DTYPES`, one row per
    cycle, ordered by sequence then cycle) in :attr:`RunResult.cycles`; ``max_records`` keeps
    only the first that many, in memory bounded by them (the metrics still cover every
    cycle). ``on_cycles`` receives every record chunk by chunk instead (or as well), so a
    caller can stream them to a file in bounded memory.

    ``position_counts=True`` counts cycles by accepted drafts as the run goes, for
    :meth:`RunResult.position_acceptance` (bounded memory, every cycle counted).

    ``should_stop()`` is asked about every :data:`CHECK_EVERY_S` of work, also within a
    chunk; when it turns true the run raises :class:`RunStopped`. ``on_progress(sequences,
    tokens)`` is told as often the sequences finished and tokens kept so far. Neither
    changes the random draws: a run that is not stopped gives the same result without them.
    """
    costs = cycle_costs(config)
    rng = config_rng(config)
    totals = Totals()
    if position_counts:
        totals.accepted_counts = np.zeros(config.k + 1, dtype=np.int64)
        totals.rejected_counts = np.zeros(config.k + 1, dtype=np.int64)
    check = _Checkpoint(should_stop, on_progress)
    frames: list[pd.DataFrame] = []
    kept_rows = 0
    record_cycles = config.tokens_per_seq if max_records is None else max_records
    record_sequences = config.n_sequences
    if max_records is not None:
        # Enough sequences for about max_records cycles, at the expected cycles per sequence.
        per_sequence = max(1.0, config.tokens_per_seq / tokens_per_cycle(config))
        record_sequences = min(record_sequences, math.ceil(max_records / per_sequence) + 1)
    simulate_chunk = _simulate_chunk_stepwise if config.tail == "clamp" else _simulate_chunk_blocks
    for first in range(0, config.n_sequences, CHUNK_SEQUENCES):
        n_seq = min(CHUNK_SEQUENCES, config.n_sequences - first)
        record = None
        if on_cycles is not None:
            record = _Recording(n_seq, config.tokens_per_seq)
        elif records and first < record_sequences:
            record = _Recording(min(n_seq, record_sequences - first), record_cycles)
        chunk = simulate_chunk(config, costs, rng, first, n_seq, totals, record, check)
        check.sequences += n_seq
        check.tokens += n_seq * config.tokens_per_seq
        if check.active:
            check(0, 0, force=True)
        if chunk is not None:
            if on_cycles is not None:
                on_cycles(chunk)
            if records and (max_records is None or kept_rows < max_records):
                if max_records is not None:
                    chunk = chunk.iloc[: max_records - kept_rows]
                frames.append(chunk)
                kept_rows += len(chunk)
    cycles = None
    if records:
        cycles = pd.concat(frames, ignore_index=True) if frames else _sorted_frame([])
    return RunResult(config, metrics_from_totals(config, totals), cycles, totals)


def acceptance_by_position(
    accepted_counts: np.ndarray, rejected_counts: np.ndarray, positions: int
) -> np.ndarray:
    """Observed P(accept) at draft positions 1..``positions`` from per-cycle counts.

    ``accepted_counts[j]``: cycles that accepted j drafts; ``rejected_counts[j]``: those of
    them that then rejected draft j + 1 (j < k). Position i is tested in a cycle when k >= i
    and positions 1..i-1 were accepted, that is when j >= i, or j = i - 1 with a rejection;
    it is accepted when j >= i. NaN where a position was never tested.
    """
    out = np.full(positions, np.nan)
    # at_least[i] = cycles with j >= i
    at_least = np.concatenate([np.cumsum(accepted_counts[::-1])[::-1], [0]])
    for i in range(1, positions + 1):
        accepted = int(at_least[i]) if i < at_least.size else 0
        rejected = int(rejected_counts[i - 1]) if i - 1 < rejected_counts.size else 0
        if accepted + rejected:
            out[i - 1] = accepted / (accepted + rejected)
    return out


def position_acceptance(cycles: pd.DataFrame, positions: int) -> np.ndarray:
    """Observed P(accept) at draft positions 1..``positions``, from per-cycle records.

    Compare with the model's p_i (``DraftModel.position_probs``); see
    :func:`acceptance_by_position`.
    """
    k = cycles["k"].to_numpy()
    accepted = cycles["accepted"].to_numpy()
    size = int(k.max()) + 1 if k.size else 1
    return acceptance_by_position(
        np.bincount(accepted, minlength=size),
        np.bincount(accepted[accepted < k], minlength=size),
        positions,
    )


def accept_pattern(k: int, accepted: int, glyphs: str = "✓✗·") -> str:
    """One cycle's drafted positions: accepted, the first rejected one, then unverified ones.

    ``glyphs`` gives the three symbols in that order (for example "AR." for ASCII files).
    """
    yes, no, unverified = glyphs[0], glyphs[1], glyphs[2]
    if accepted >= k:
        return yes * k
    return yes * accepted + no + unverified * (k - accepted - 1)
