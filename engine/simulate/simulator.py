"""Vectorised Monte Carlo simulation of speculative decoding (numpy).

One uniform draw per cycle gives its accepted prefix (:class:`engine.acceptance.draft_models.
PrefixSampler`, sampler :data:`SAMPLER`). The sequences of a chunk each get a row of cycles
at once; a sequence uses its row up to the cycle that completes it (see
:func:`engine.simulate.prefix_chunks._simulate_chunk`). Aggregates are always computed;
per-cycle records only on request, in compact numpy columns. Configurations that differ
only in their cost share the draws (:func:`simulate_shared`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from functools import partial

from engine.acceptance.draft_models import SAMPLER, get_model
from engine.core.config import SpecConfig
from engine.core.kernel import (
    METRIC_NAMES,
    Z95,
    Totals,
    cycle_costs,
    metrics_from_totals,
)
from engine.core.parts import PROPOSER, SHAPE
from engine.core.runs import (
    CycleSink,
    KeptRecords,
    ProgressSink,
    RunResult,
    RunStopped,
    config_rng,
    seed_key,
)
from engine.simulate.exact import exact_metrics
from engine.simulate.prefix_chunks import (
    _chunk_sequences,
    _Priced,
    _Recording,
    _simulate_chunk,
    _sorted_frame,
)

__all__ = [
    "METRIC_NAMES",
    "SAMPLER",
    "Z95",
    "Totals",
    "chunk_sequences",
    "draw_key",
    "metrics_from_totals",
    "simulate",
    "simulate_shared",
]


# How often a run asks ``should_stop`` and reports progress (seconds of simulation work).
CHECK_EVERY_S = 0.05


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


def chunk_sequences(config: SpecConfig) -> int:
    """Sequences of ``config`` simulated together in one chunk (records stream per chunk)."""
    sampler = get_model(config.draft_model).prefix_sampler(config)
    return _chunk_sequences(sampler, config.tokens_per_seq)


def _own_engine(config: SpecConfig) -> Callable[..., RunResult] | None:
    """The engine of a configuration the prefix sampler does not run (None: it does); it
    takes :func:`simulate`'s arguments."""
    from engine.simulate.policies import needs_stepwise, simulate_run

    if PROPOSER.of(config).model_free:  # no draft pass; a match per step, drawn
        from engine.simulate.model_free_run import simulate_model_free

        return simulate_model_free
    if SHAPE.of(config).tree:  # the accepted path of a token tree, sampled
        from engine.simulate.tree_scenario import simulate_tree

        return simulate_tree
    if needs_stepwise(config):  # a K policy, or cycles tied together (markov)
        return partial(simulate_run, exact=exact_metrics(config))
    return None


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
    run_alone = _own_engine(config)
    if run_alone is not None:
        return run_alone(
            config,
            records=records,
            on_cycles=on_cycles,
            max_records=max_records,
            position_counts=position_counts,
            should_stop=should_stop,
            on_progress=on_progress,
        )
    sampler = get_model(config.draft_model).prefix_sampler(config)
    rng = config_rng(config)
    totals = Totals()
    if position_counts:
        totals.count_positions_up_to(config.k)
    priced = [_Priced.of(cycle_costs(config), totals)]
    check = _Checkpoint(should_stop, on_progress)
    kept = KeptRecords(records, max_records, on_cycles)
    record_cycles = config.tokens_per_seq if max_records is None else max_records
    record_sequences = config.n_sequences
    if max_records is not None:
        # Enough sequences for about max_records cycles, at the expected cycles per sequence.
        per_sequence = max(1.0, config.tokens_per_seq / sampler.mean_emitted)
        record_sequences = min(record_sequences, math.ceil(max_records / per_sequence) + 1)
    chunk_size = _chunk_sequences(sampler, config.tokens_per_seq)
    for first in range(0, config.n_sequences, chunk_size):
        n_seq = min(chunk_size, config.n_sequences - first)
        record = None
        if on_cycles is not None:
            record = _Recording(n_seq, config.tokens_per_seq)
        elif records and first < record_sequences:
            record = _Recording(min(n_seq, record_sequences - first), record_cycles)
        chunk = _simulate_chunk(sampler, config, priced, rng, first, n_seq, record, check)
        check.sequences += n_seq
        check.tokens += n_seq * config.tokens_per_seq
        if check.active:
            check(0, 0, force=True)
        if chunk is not None:
            kept.take(chunk)
    cycles = None
    if records:
        cycles = kept.frame(_sorted_frame([]))
    return RunResult(
        config, metrics_from_totals(config, totals, exact_metrics(config)), cycles, totals
    )


def draw_key(config: SpecConfig) -> tuple[int, list[int]]:
    """What a configuration's draws depend on: its seed and its seed key. Configurations
    with the same draw key draw the same numbers (they differ only in their cost)."""
    return config.seed, seed_key(config)


def simulate_shared(
    configs: Sequence[SpecConfig],
    *,
    should_stop: Callable[[], bool] | None = None,
    exact: Sequence[dict[str, float]] | None = None,
) -> list[RunResult]:
    """Monte Carlo runs of configurations that share their draws (one :func:`draw_key`;
    they differ only in what prices a cycle): the accepted prefixes are drawn once and
    priced for each. Every result equals ``simulate(config)`` of that configuration alone.

    ``exact``: each configuration's exact figures, when the caller has them (a sweep
    computes them for all its configurations at once). ValueError if the configurations
    do not share their draws.
    """
    if not configs:
        return []
    first_config = configs[0]
    from engine.simulate.policies import needs_stepwise

    key = draw_key(first_config)
    if any(needs_stepwise(c) or SHAPE.of(c).tree for c in configs) and len(configs) > 1:
        raise ValueError("simulate_shared: a K policy or markov acceptance runs alone")
    if needs_stepwise(first_config) or SHAPE.of(first_config).tree:  # cycle by cycle
        return [simulate(first_config, should_stop=should_stop)]
    if any(draw_key(c) != key for c in configs[1:]):
        raise ValueError("simulate_shared: the configurations do not share their draws")
    if PROPOSER.of(first_config).model_free:
        # Each alone, from the same generator (their steps are priced as they are drawn).
        return [simulate(c, should_stop=should_stop) for c in configs]
    sampler = get_model(first_config.draft_model).prefix_sampler(first_config)
    rng = config_rng(first_config)
    priced = [_Priced.of(cycle_costs(c), Totals()) for c in configs]
    check = _Checkpoint(should_stop, None)
    chunk_size = _chunk_sequences(sampler, first_config.tokens_per_seq)
    for first in range(0, first_config.n_sequences, chunk_size):
        n_seq = min(chunk_size, first_config.n_sequences - first)
        _simulate_chunk(sampler, first_config, priced, rng, first, n_seq, None, check)
        if check.active:
            check(0, 0, force=True)
    return [
        RunResult(
            config,
            metrics_from_totals(
                config, member.totals, exact_metrics(config) if exact is None else exact[i]
            ),
            None,
            member.totals,
        )
        for i, (config, member) in enumerate(zip(configs, priced, strict=True))
    ]
