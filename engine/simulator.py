"""Vectorised Monte Carlo simulation of speculative decoding (numpy).

All sequences of a chunk advance together, one cycle per step; each step draws the
token-level accept tests of every active sequence at once. Aggregates are always
computed; per-cycle records only on request, in compact numpy columns.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .config import SpecConfig
from .draft_models import get_model, inert_parameters
from .exact import exact_metrics, tokens_per_cycle

# Sequences simulated together. Fixed, so that results never depend on anything but the
# configuration; it bounds the memory of one step to CHUNK_SEQUENCES x K accept tests.
CHUNK_SEQUENCES = 4096

# Accept tests drawn at once in the full-tail block sampler (bounds its memory: ~5 bytes each).
BLOCK_ELEMENTS = 1 << 22

Z95 = 1.959963984540054

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

METRIC_NAMES: tuple[str, ...] = (
    "speedup",
    "speedup_ci95",
    "speedup_exact",
    "speedup_limit",
    "cycles",
    "tokens_per_cycle",
    "acceptance_observed",
    "waste",
    "draft_time_fraction",
    "compute_overhead",
    "spec_time_us",
    "baseline_time_us",
    "cost_ratio",
    "tokens_per_cycle_exact",
    "breakeven_cost_ratio",
    "compute_overhead_limit",
    "drafted_tokens",
    "accepted_tokens",
)


def seed_key(config: SpecConfig) -> list[int]:
    """A stable key of the configuration, without the seed and the model's inert parameters.

    Two configurations that differ only in a parameter their model ignores draw the same
    random numbers, so an inert sweep axis shows identical results, not noise.
    """
    values = config.to_dict()
    values.pop("seed")
    inert = set(inert_parameters(config.draft_model))
    canonical = {name: repr(v) for name, v in sorted(values.items()) if name not in inert}
    digest = hashlib.sha256(json.dumps(canonical, sort_keys=True).encode()).digest()
    return [int.from_bytes(digest[i : i + 4], "little") for i in range(0, 16, 4)]


def config_rng(config: SpecConfig) -> np.random.Generator:
    """The generator of one configuration, derived from its seed and its own key."""
    return np.random.default_rng(np.random.SeedSequence(config.seed, spawn_key=seed_key(config)))


@dataclass
class Totals:
    """What a run adds up, from which every Monte Carlo metric follows."""

    sequence_time_us: list[np.ndarray] = field(default_factory=list)
    cycles: int = 0
    drafted: int = 0
    accepted: int = 0
    accepted_kept: int = 0
    emitted: int = 0
    target_positions: int = 0
    draft_time_us: float = 0.0


@dataclass
class RunResult:
    """The metrics of one run (names as in docs/model.md) and, if asked for, its cycles."""

    config: SpecConfig
    metrics: dict[str, float]
    cycles: pd.DataFrame | None = None

    def to_dict(self) -> dict[str, Any]:
        """Configuration and metrics in one flat mapping (NaN kept as float NaN)."""
        return {**self.config.to_dict(), **self.metrics}


def _ratio(num: float, den: float) -> float:
    return num / den if den else math.nan


def metrics_from_totals(config: SpecConfig, totals: Totals) -> dict[str, float]:
    """Monte Carlo metrics of docs/model.md from a run's totals, plus the exact figures."""
    seq_time = np.concatenate(totals.sequence_time_us)
    n_seq = seq_time.size
    spec_time = float(seq_time.sum())
    baseline_seq = config.tokens_per_seq * config.verify_cost_us
    baseline_time = baseline_seq * n_seq
    speedup = baseline_time / spec_time
    # Delta method for the ratio of totals; sequences are the independent units.
    if n_seq > 1:
        rel_se = float(seq_time.std(ddof=1)) / math.sqrt(n_seq) / float(seq_time.mean())
        ci95 = Z95 * speedup * rel_se
    else:
        ci95 = math.nan
    metrics = {
        "speedup": speedup,
        "speedup_ci95": ci95,
        "cycles": totals.cycles,
        "tokens_per_cycle": _ratio(totals.emitted, totals.cycles),
        "acceptance_observed": _ratio(totals.accepted, totals.drafted),
        "waste": 1.0 - _ratio(totals.accepted_kept, totals.drafted) if totals.drafted else math.nan,
        "draft_time_fraction": totals.draft_time_us / spec_time,
        "compute_overhead": (totals.target_positions + config.cost_ratio * totals.drafted)
        / totals.emitted
        - 1.0,
        "spec_time_us": spec_time,
        "baseline_time_us": baseline_time,
        "cost_ratio": config.cost_ratio,
        "drafted_tokens": totals.drafted,
        "accepted_tokens": totals.accepted,
    }
    metrics.update(exact_metrics(config))
    return {name: metrics[name] for name in METRIC_NAMES}


CycleSink = Callable[[pd.DataFrame], None]


def _leading_accepts(accepts: np.ndarray) -> np.ndarray:
    """Per row of accept tests: the index of the first rejection, or the width if none."""
    n = accepts.argmin(axis=1)
    # argmin finds the first False; it points at a True only when the row has no False.
    n[accepts[np.arange(accepts.shape[0]), n]] = accepts.shape[1]
    return n


def _simulate_chunk_stepwise(
    config: SpecConfig,
    rng: np.random.Generator,
    first_sequence: int,
    n_seq: int,
    totals: Totals,
    want_records: bool,
) -> pd.DataFrame | None:
    model = get_model(config.draft_model)
    big_k, target = config.k, config.tokens_per_seq
    draft_us, verify_us = config.draft_cost_us, config.verify_cost_us
    clamp = config.tail == "clamp"

    tokens = np.zeros(n_seq, dtype=np.int64)
    seq_time = np.zeros(n_seq)
    active = np.arange(n_seq)
    parts: list[tuple[np.ndarray, ...]] = []
    cycle_index = 0
    while active.size:
        remaining = target - tokens[active]
        if clamp:
            k = np.minimum(big_k, remaining - 1)
            width = int(k.max())
        else:
            k = np.full(active.size, big_k)
            width = big_k
        if width:
            accepts = model.sample_accepts(config, rng, active.size, width)
            if clamp:
                accepts &= np.arange(width) < k[:, None]
            n = _leading_accepts(accepts)
        else:
            n = np.zeros(active.size, dtype=np.int64)
        emitted = n + 1
        kept = np.minimum(emitted, remaining)
        cycle_time = k * draft_us + verify_us
        tokens[active] += kept
        seq_time[active] += cycle_time

        drafted = int(k.sum())
        totals.cycles += active.size
        totals.drafted += drafted
        totals.accepted += int(n.sum())
        totals.accepted_kept += int(np.minimum(n, kept).sum())
        totals.emitted += int(emitted.sum())
        totals.target_positions += drafted + active.size
        totals.draft_time_us += drafted * draft_us
        if want_records:
            parts.append(
                (
                    active + first_sequence,
                    np.full(active.size, cycle_index),
                    k,
                    n,
                    kept,
                    cycle_time,
                    tokens[active],
                    seq_time[active],
                )
            )
        active = active[tokens[active] < target]
        cycle_index += 1
    totals.sequence_time_us.append(seq_time)
    return _sorted_frame(parts) if want_records else None


def _sorted_frame(parts: list[tuple[np.ndarray, ...]]) -> pd.DataFrame:
    columns = {
        name: np.concatenate([p[i] for p in parts]).astype(dtype, copy=False)
        for i, (name, dtype) in enumerate(RECORD_DTYPES.items())
    }
    order = np.lexsort((columns["cycle"], columns["sequence"]))
    return pd.DataFrame({name: col[order] for name, col in columns.items()})


def _simulate_chunk_blocks(
    config: SpecConfig,
    rng: np.random.Generator,
    first_sequence: int,
    n_seq: int,
    totals: Totals,
    want_records: bool,
) -> pd.DataFrame | None:
    """Full tail: every cycle drafts K, so a sequence's cycles are i.i.d. Draw a block of
    cycles per sequence at once (enough to finish most sequences), keep the cycles each
    sequence needed, and draw again only for the few that did not finish."""
    model = get_model(config.draft_model)
    big_k, target = config.k, config.tokens_per_seq
    cycle_time = big_k * config.draft_cost_us + config.verify_cost_us
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
        # Aggregates from each sequence's last used cycle; only it can discard tokens.
        pick = np.arange(rows), used - 1
        cum_last, n_last = cum[pick], n[pick]
        added = np.where(finished, remaining, cum_last)
        kept_last = added - (cum_last - n_last - 1)

        n_cycles = int(used.sum())
        accepted = int(cum_last.sum()) - n_cycles
        totals.cycles += n_cycles
        totals.drafted += n_cycles * big_k
        totals.accepted += accepted
        totals.accepted_kept += accepted - int((n_last - np.minimum(n_last, kept_last)).sum())
        totals.emitted += accepted + n_cycles
        totals.target_positions += n_cycles * (big_k + 1)
        totals.draft_time_us += n_cycles * big_k * config.draft_cost_us
        if want_records:
            valid = np.arange(width) < used[:, None]
            kept = np.where(valid, np.minimum(n + 1, remaining[:, None] - (cum - n - 1)), 0)
            row, col = np.nonzero(valid)
            parts.append(
                (
                    active[row] + first_sequence,
                    cycles_done[active][row] + col,
                    np.full(row.size, big_k),
                    n[valid],
                    kept[valid],
                    np.full(row.size, cycle_time),
                    tokens[active][row] + np.cumsum(kept, axis=1)[valid],
                    seq_time[active][row] + (col + 1) * cycle_time,
                )
            )
        tokens[active] += added
        seq_time[active] += used * cycle_time
        cycles_done[active] += used
        active = active[~finished]
    totals.sequence_time_us.append(seq_time)
    return _sorted_frame(parts) if want_records else None


def simulate(
    config: SpecConfig,
    *,
    records: bool = False,
    on_cycles: CycleSink | None = None,
) -> RunResult:
    """Monte Carlo run of ``config``.

    ``records=True`` keeps the per-cycle records (columns :data:`RECORD_DTYPES`, one row per
    cycle, ordered by sequence then cycle) in :attr:`RunResult.cycles`. ``on_cycles`` receives
    them chunk by chunk instead (or as well), so a caller can stream them to a file in
    bounded memory.
    """
    rng = config_rng(config)
    totals = Totals()
    frames: list[pd.DataFrame] = []
    want = records or on_cycles is not None
    for first in range(0, config.n_sequences, CHUNK_SEQUENCES):
        n_seq = min(CHUNK_SEQUENCES, config.n_sequences - first)
        simulate_chunk = (
            _simulate_chunk_stepwise if config.tail == "clamp" else _simulate_chunk_blocks
        )
        chunk = simulate_chunk(config, rng, first, n_seq, totals, want)
        if chunk is not None:
            if on_cycles is not None:
                on_cycles(chunk)
            if records:
                frames.append(chunk)
    cycles = pd.concat(frames, ignore_index=True) if records else None
    return RunResult(config, metrics_from_totals(config, totals), cycles)


def position_acceptance(cycles: pd.DataFrame, positions: int) -> np.ndarray:
    """Observed P(accept) at draft positions 1..``positions``, from per-cycle records.

    Position i is tested in a cycle when k >= i and positions 1..i-1 were accepted; it is
    accepted when ``accepted >= i``. NaN where a position was never tested. Compare with
    the model's p_i (``DraftModel.position_probs``).
    """
    k = cycles["k"].to_numpy()
    accepted = cycles["accepted"].to_numpy()
    out = np.full(positions, np.nan)
    for i in range(1, positions + 1):
        tested = int(((k >= i) & (accepted >= i - 1)).sum())
        if tested:
            out[i - 1] = int((accepted >= i).sum()) / tested
    return out


def accept_pattern(k: int, accepted: int, glyphs: str = "✓✗·") -> str:
    """One cycle's drafted positions: accepted, the first rejected one, then unverified ones.

    ``glyphs`` gives the three symbols in that order (for example "AR." for ASCII files).
    """
    yes, no, unverified = glyphs[0], glyphs[1], glyphs[2]
    if accepted >= k:
        return yes * k
    return yes * accepted + no + unverified * (k - accepted - 1)
