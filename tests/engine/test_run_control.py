"""Runs can be stopped, report progress, keep bounded records, and stream their aggregates."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import engine.simulate.simulator as simulator
from engine.core.config import SpecConfig
from engine.core.runs import RunStopped, position_acceptance
from engine.simulate.simulator import Z95, chunk_sequences, simulate

# One sequence of a million tokens, one token per cycle: a single chunk of a million steps
# (clamp) or of many blocks (full); stopping only between chunks would never stop it.
ENDLESS = {
    "clamp": SpecConfig(
        n_sequences=1, tokens_per_seq=10**6, k=1, acceptance_rate=0.0, tail="clamp"
    ),
    "full": SpecConfig(n_sequences=2, tokens_per_seq=10**6, k=64, acceptance_rate=0.0),
}


@pytest.mark.parametrize("tail", list(ENDLESS))
def test_should_stop_is_asked_inside_a_chunk(tail, monkeypatch):
    monkeypatch.setattr(simulator, "CHECK_EVERY_S", 0.0)  # ask at every step
    asked = []

    def should_stop() -> bool:
        asked.append(1)
        return len(asked) >= 3

    with pytest.raises(RunStopped):
        simulate(ENDLESS[tail], records=True, max_records=100, should_stop=should_stop)
    assert len(asked) == 3


def test_progress_counts_up_to_the_whole_run(monkeypatch):
    monkeypatch.setattr(simulator, "CHECK_EVERY_S", 0.0)
    base = SpecConfig(tokens_per_seq=40, tail="clamp")
    chunk = chunk_sequences(base)
    config = base.replace(n_sequences=chunk + 500)
    seen: list[tuple[int, int]] = []
    quiet = simulate(config)
    told = simulate(config, on_progress=lambda s, t: seen.append((s, t)))
    assert told.metrics == quiet.metrics  # reporting draws nothing
    assert len(seen) > 2
    assert seen == sorted(seen)  # never goes back
    assert seen[-1] == (config.n_sequences, config.n_sequences * config.tokens_per_seq)
    assert any(0 < t < config.tokens_per_seq * chunk for _, t in seen)  # in a chunk


@pytest.mark.parametrize("tail", ["full", "clamp"])
def test_max_records_keeps_the_first_records_and_every_metric(tail):
    base = SpecConfig(tokens_per_seq=30, tail=tail)
    config = base.replace(n_sequences=chunk_sequences(base) + 300)
    full = simulate(config, records=True)
    capped = simulate(config, records=True, max_records=777, position_counts=True)
    assert capped.metrics == full.metrics
    assert full.cycles is not None and capped.cycles is not None
    assert len(capped.cycles) == 777
    expected = full.cycles.iloc[:777].reset_index(drop=True)
    assert capped.cycles.equals(expected)
    # Per-position acceptance counted over every cycle equals the one from every record.
    positions = config.k + 2
    np.testing.assert_array_equal(
        capped.position_acceptance(positions), position_acceptance(full.cycles, positions)
    )


def test_records_stay_bounded_for_a_big_run():
    config = SpecConfig(n_sequences=100_000, tokens_per_seq=128)  # about 3.4 million cycles
    tracemalloc.start()
    try:
        result = simulate(config, records=True, max_records=10_000, position_counts=True)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.cycles is not None and len(result.cycles) == 10_000
    assert result.metrics["cycles"] > 3_000_000
    # Every record would take over 100 MB (36 bytes each); the capped run a fraction.
    assert peak < 40e6, peak


def test_streamed_sequence_statistics_match_the_records():
    base = SpecConfig(tokens_per_seq=24, tail="clamp")
    config = base.replace(n_sequences=3 * chunk_sequences(base) + 17)
    result = simulate(config, records=True)
    assert result.cycles is not None
    per_seq = result.cycles.groupby("sequence")["cycle_time_us"].sum().to_numpy()
    speedup = result.metrics["speedup"]
    ci95 = Z95 * speedup * per_seq.std(ddof=1) / np.sqrt(per_seq.size) / per_seq.mean()
    assert result.metrics["speedup_ci95"] == pytest.approx(ci95, rel=1e-9)
    assert result.metrics["spec_time_us"] == pytest.approx(per_seq.sum(), rel=1e-12)


@pytest.mark.parametrize("tail", ["full", "clamp"])
def test_records_and_position_counts_never_change_a_metric(tail):
    """A run that keeps records or counts positions looks at every cycle; its metrics are
    those of the plain run bit for bit (under clamp the last cycles' prices are corrected
    the same way either way)."""
    config = SpecConfig(n_sequences=3000, tokens_per_seq=77, k=6, tail=tail)
    plain = simulate(config).metrics
    assert simulate(config, records=True).metrics == plain
    assert simulate(config, records=True, max_records=50, position_counts=True).metrics == plain
    assert simulate(config, position_counts=True).metrics == plain
