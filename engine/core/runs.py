"""What a run is and gives, whatever engine makes it: the per-cycle record columns, each
configuration's random generator, a stopped run, a run's result (metrics, records, totals)
and the acceptance by position read from its counts or records.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd

from engine.core.config import SpecConfig, seed_key_values
from engine.core.kernel import Totals
from engine.core.parts import on_change

__all__ = [
    "RECORD_DTYPES",
    "CycleSink",
    "KeptRecords",
    "ProgressSink",
    "RunResult",
    "RunStopped",
    "accept_pattern",
    "acceptance_by_position",
    "config_rng",
    "position_acceptance",
    "records_frame",
    "seed_key",
]

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
    (:func:`engine.core.config.seed_key_values`: not the seed, no parameter its parts ignore,
    no newer field). Two configurations that differ only in a parameter their model ignores
    draw the same random numbers, so an inert sweep axis shows identical results, not noise.
    """
    return list(_seed_key(config))


# A sweep asks for each configuration's key several times (its draws, its sharing group).
@lru_cache(maxsize=4096)
def _seed_key(config: SpecConfig) -> tuple[int, ...]:
    canonical = seed_key_values(config)
    digest = hashlib.sha256(json.dumps(canonical, sort_keys=True).encode()).digest()
    return tuple(int.from_bytes(digest[i : i + 4], "little") for i in range(0, 16, 4))


on_change(_seed_key.cache_clear)  # a part registered or gone changes what a key reads


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


def records_frame(rows: list[tuple[int | float, ...]]) -> pd.DataFrame:
    """Per-cycle records made one row at a time (a literal loop's), in the order made: one
    tuple a cycle, in the columns and dtypes of :data:`RECORD_DTYPES`."""
    return pd.DataFrame(rows, columns=list(RECORD_DTYPES)).astype(RECORD_DTYPES)


class KeptRecords:
    """A run's cycle records as they come, in chunks: each chunk is streamed to
    ``on_cycles`` (when given) and, when ``records``, kept up to ``max_records`` rows
    (None: all)."""

    def __init__(
        self,
        records: bool,
        max_records: int | None,
        on_cycles: Callable[[pd.DataFrame], None] | None,
    ) -> None:
        self.records, self.max_records, self.on_cycles = records, max_records, on_cycles
        self.frames: list[pd.DataFrame] = []
        self.rows = 0

    def take(self, chunk: pd.DataFrame) -> None:
        if self.on_cycles is not None:
            self.on_cycles(chunk)
        if self.records and (self.max_records is None or self.rows < self.max_records):
            if self.max_records is not None:
                chunk = chunk.iloc[: self.max_records - self.rows]
            self.frames.append(chunk)
            self.rows += len(chunk)

    def frame(self, empty: pd.DataFrame) -> pd.DataFrame:
        """The kept records as one frame (``empty`` when none were kept)."""
        return pd.concat(self.frames, ignore_index=True) if self.frames else empty


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
