"""Two predictions of each published measurement, neither with a parameter of its own.

- :func:`from_specs`: the ``roofline`` cost model (additive form) on the entry's shipped
  hardware and model data with one global set of efficiencies, today's defaults (the
  ``roofline`` part's ``cost.eta_w``, ``cost.eta_kv`` and ``cost.eta_f``, ``t0_us = 0``),
  and the tokens per cycle the source reports. A chain's cycle is K draft passes and one
  verify pass of K + 1 tokens; a tree's is its draft passes (``draft_passes`` of
  ``draft_width`` tokens, or heads that read the verify pass's hidden states: one pass over
  ``draft_width`` tokens at context 0) and one verify pass of ``verify_width`` tokens. The
  predicted speedup is the tokens per cycle over the cycle's time in plain decoding steps
  (one target pass of one token), at the entry's batch and mean context; a cost ratio is
  one draft pass over one step.
- :func:`calibrated`: the entry left out, its cost fitted to the other entries of its
  series: in a K sweep of one method (two other K or more), the linear cycle cost
  ``fixed + per_token x K`` by least squares
  (:func:`engine.calibrate.linear_cost.fit_linear_cost`); otherwise, over the other entries
  of the series on its hardware and target (other methods, drafts or batch sizes), one
  overhead per pass (:func:`fit_overhead`) added to the roofline above.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine.calibrate.linear_cost import fit_linear_cost, linear_speedup
from engine.validate.prediction import Prediction, scenario_fields
from engine.validate.table import Entry
from engine.validate.under_load import calibrated_under_load, under_load

if TYPE_CHECKING:
    from engine.cost.roofline import RooflineCost

# Mean context (tokens in the KV cache while decoding) when the source states no lengths.
DEFAULT_CONTEXT = 512
METHODS = ("specs", "calibrated")
METHOD_TITLES = {"specs": "from specs", "calibrated": "calibrated"}


def context_of(entry: Entry) -> int:
    """Mean tokens in the KV cache while decoding: the prompt and half the output (where
    the source states the prompt; an unstated output counts 0); else
    :data:`DEFAULT_CONTEXT`."""
    if entry.prompt is not None:
        return int(entry.prompt) + int(entry.output or 0) // 2
    return DEFAULT_CONTEXT


def roofline_of(entry: Entry) -> RooflineCost:
    """The engine's ``roofline`` cost model for the entry's hardware, target and draft."""
    from engine.core.config import SpecConfig
    from engine.cost.models import build_cost
    from engine.cost.roofline import RooflineCost

    cost = build_cost(SpecConfig().replace(**scenario_fields(entry)))
    assert isinstance(cost, RooflineCost)
    return cost


@dataclass(frozen=True)
class Cycle:
    """The roofline's times for an entry, without per-pass overhead: a cycle's passes take
    ``work_us`` in all (or, for a cost ratio, the draft pass), ``passes`` of them pay a fixed
    overhead each, and a plain decoding step takes ``step_us``. With an overhead of ``t0``
    microseconds a pass (``cost.t0_us``), the cycle takes ``work_us + passes x t0`` and a
    step ``step_us + t0``."""

    work_us: float
    passes: int
    step_us: float

    def steps(self, t0_us: float = 0.0) -> float:
        """The cycle (or draft pass) in decoding steps."""
        return (self.work_us + self.passes * t0_us) / (self.step_us + t0_us)


@dataclass(frozen=True)
class PassShape:
    """A published tree's passes, as the kernel prices a tree (``cycle_times(tree=...)``):
    its draft passes' widths, and the nodes it verifies besides the root."""

    level_sizes: tuple[int, ...]
    nodes: int

    @property
    def depth(self) -> int:
        return len(self.level_sizes)


def cycle_of(entry: Entry, cost: RooflineCost) -> Cycle:
    """The cycle of ``entry`` by ``cost`` (a roofline cost model with ``t0_us = 0``), added up
    by the kernel (:func:`engine.core.kernel.cycle_times`): a chain's K draft passes and its
    verify pass of K + 1 tokens; a tree's ``draft_passes`` passes of ``draft_width`` tokens
    and its verify pass of ``verify_width``. Heads that read the verify pass's hidden states
    (Medusa) make no pass of their own: their weights, read once over ``draft_width`` tokens
    at context 0, lengthen the verify pass. A cost ratio's is one draft pass of one token."""
    from engine.core.kernel import cycle_times

    batch, context = entry.batch or 1, context_of(entry)
    step = float(cost.verify_us(1, batch, context))
    if entry.quantity == "cost ratio":
        return Cycle(float(cost.draft_pass_us(1, batch, context)), 1, step)
    if entry.proposer is not None:
        return model_free_cycle(entry, cost, batch, context, step)
    if not entry.is_tree:
        k = int(entry.k)
        return Cycle(float(cycle_times(cost, k, batch, context)[2]), 1 + k, step)
    passes = 0 if entry.drafts_in_verify else int(entry.draft_passes)
    shape = PassShape((int(entry.draft_width),) * passes, int(entry.verify_width) - 1)
    cycle = float(cycle_times(cost, 0, batch, context, tree=shape)[2])
    if entry.drafts_in_verify:
        cycle += float(cost.draft_pass_us(entry.draft_width, batch, 0))  # the heads' weights
    return Cycle(cycle, 1 + passes, step)


def model_free_cycle(
    entry: Entry, cost: RooflineCost, batch: int, context: int, step: float
) -> Cycle:
    """A model-free proposer's mean step (n-gram, suffix decoding: no draft pass), priced by
    the kernel (:func:`engine.core.kernel.cycle_times` with the look-up): with the entry's
    hit rate h a step drafts ``min(L, K)`` tokens (the proposer's lengths; an n-gram's is
    K) and verifies them in one target pass, else it is a plain decoding step; every step
    pays the proposer's look-up (``proposer.cpu_us``, its default). One pass a step."""
    import numpy as np

    from engine.core.config import FIELD_SPECS, SpecConfig
    from engine.core.kernel import cycle_times
    from engine.core.parts import PROPOSER

    k, h = int(entry.k), float(entry.hit_rate)
    config = SpecConfig().replace(**{"proposer.name": entry.proposer, "k": max(k, 1)})
    lookup = float(FIELD_SPECS["proposer.cpu_us"].default)
    survival = np.append(np.asarray(PROPOSER.of(config).length_survival(config, k), float), 0.0)
    lengths = np.arange(1, k + 1, dtype=np.int64)
    hits = np.asarray(cycle_times(cost, lengths, batch, context, lookup_us=lookup)[2], float)
    hit = float(((survival[:-1] - survival[1:]) * hits).sum())
    miss = float(cycle_times(cost, 0, batch, context, lookup_us=lookup)[2])
    return Cycle(h * hit + (1.0 - h) * miss, 1, step)


def entry_cycle(entry: Entry) -> Cycle:
    """The roofline's cycle of ``entry`` (:func:`cycle_of`). A chain that drafts nothing
    (K = 0: speculation on, no draft) is one decoding step whatever the specs: no cost
    model is built, and the entry may name hardware and models not in the spec files."""
    if entry.k == 0 and entry.quantity == "speedup":
        return Cycle(1.0, 1, 1.0)
    return cycle_of(entry, roofline_of(entry))


def from_specs(entry: Entry, t0_us: float = 0.0) -> Prediction:
    """The roofline's prediction of ``entry`` (module docstring), with a fixed overhead of
    ``t0_us`` on every pass (0: today's defaults)."""
    if entry.pending:
        return Prediction(None, entry.status)
    if entry.concurrency is not None:  # measured under load: the serving simulator
        return under_load(entry, t0_us)
    cycle = entry_cycle(entry)
    if entry.quantity == "cost ratio":
        return Prediction(cycle.steps(t0_us))
    tokens = entry.tokens_per_cycle
    if tokens is None:
        return Prediction(None, "the source reports no acceptance")
    return Prediction(tokens / cycle.steps(t0_us))


# The overheads tried when fitting one per-pass overhead to every entry (microseconds).
OVERHEAD_GRID_US = tuple(range(0, 3001, 10))


@dataclass(frozen=True)
class OverheadFit:
    """One fixed overhead per pass, the same for every entry, fitted once to all of them:
    the smallest ``t0_us`` of :data:`OVERHEAD_GRID_US` with the least median absolute
    error of the predictions from specs; ``errors`` the entries' errors with it."""

    t0_us: float
    median: float
    errors: dict[str, float]


def fit_overhead(table: Sequence[Entry]) -> OverheadFit | None:
    """The overhead per pass (kernel launches, the runtime) that brings the predictions from
    specs closest to the measurements, over every entry predicted; None if none is."""
    import statistics

    # (entry, its cycle, tokens per cycle: None for a cost ratio, a pass over a step)
    cycles: list[tuple[Entry, Cycle, float | None]] = []
    for entry in table:
        ratio = entry.quantity == "cost ratio"
        tokens = None if ratio else entry.tokens_per_cycle
        # Entries under load are predicted by simulation, not by one cycle: not in this fit.
        if entry.pending or (not ratio and tokens is None) or entry.concurrency is not None:
            continue
        cycles.append((entry, entry_cycle(entry), tokens))
    if not cycles:
        return None

    def errors(t0: float) -> dict[str, float]:
        out = {}
        for entry, cycle, tokens in cycles:
            value = cycle.steps(t0) if tokens is None else tokens / cycle.steps(t0)
            out[entry.id] = value / entry.measured - 1.0
        return out

    best = min(
        OVERHEAD_GRID_US,
        key=lambda t0: (statistics.median(abs(e) for e in errors(t0).values()), t0),
    )
    found = errors(best)
    return OverheadFit(float(best), statistics.median(abs(e) for e in found.values()), found)


# What a sweep varies: the other fields of its setup stay the same.
SWEPT = ("k", "batch")
_SETUP = ("hardware", "target", "method", "draft", "k", "batch", "prompt", "output")


def _setup(entry: Entry, swept: str) -> tuple[object, ...]:
    """``entry``'s setup, but for the field ``swept``: the verify shape counts too."""
    shape = (entry.verify_width, entry.draft_passes, entry.draft_width, entry.drafts_in_verify)
    return (*(entry.values.get(f) for f in _SETUP if f != swept), *shape)


def sweep_key(entry: Entry, swept: str) -> tuple[object, ...]:
    """What the entries of one sweep of ``swept`` (K or the batch) share: their series and
    every field of their setup but ``swept`` (:func:`sweep_points`)."""
    return (entry.series, *_setup(entry, swept))


def _others(entry: Entry, table: Sequence[Entry]) -> list[Entry]:
    """The other measured (not pending) entries of ``entry``'s series, of its proposer (a
    draft model's, or the same model-free one)."""
    if entry.series is None:
        return []
    return [
        e
        for e in table
        if e.series == entry.series
        and e.id != entry.id
        and not e.pending
        and e.proposer == entry.proposer  # a model-free step has no draft pass to calibrate
    ]


def sweep_points(entry: Entry, table: Sequence[Entry], swept: str) -> list[Entry]:
    """The other measured speedups of ``entry``'s series whose setup differs from its own
    only in ``swept`` (K or the batch), with their tokens per cycle."""
    if entry.values.get(swept) is None:
        return []
    return [
        e
        for e in _others(entry, table)
        if e.quantity == "speedup"
        and e.tokens_per_cycle is not None
        and e.values.get(swept) is not None
        and _setup(e, swept) == _setup(entry, swept)
    ]


def same_bench(entry: Entry, table: Sequence[Entry]) -> list[Entry]:
    """The other entries of ``entry``'s series on its hardware and target (any method,
    draft, batch or lengths: a batch sweep is a series too); :func:`fit_overhead` uses
    those the roofline predicts."""
    bench = (entry.hardware, entry.target)
    return [e for e in _others(entry, table) if (e.hardware, e.target) == bench]


def calibrated(entry: Entry, table: Sequence[Entry]) -> Prediction:
    """``entry`` predicted from the rest of its series, left out of the fit. In a sweep of K
    or of the batch (two other values or more, the rest of the setup the same), the cycle
    cost in decoding steps, linear in the swept value, fitted by least squares
    (:func:`engine.calibrate.linear_cost.fit_linear_cost`); otherwise the other entries of
    the series on its hardware and target (other methods or drafts) fit one overhead per
    pass to the roofline (:func:`fit_overhead`)."""
    if entry.pending:
        return Prediction(None, entry.status)
    if entry.concurrency is not None:
        others = [e for e in same_bench(entry, table) if e.concurrency is not None]
        return calibrated_under_load(entry, others)
    tokens = entry.tokens_per_cycle
    for swept in SWEPT:
        others = sweep_points(entry, table, swept)
        if tokens is None or len({e.values[swept] for e in others}) < 2:
            continue
        # Each point's cycle in decoding steps is M / speedup: (x, M, TPOT) over a step of 1.
        points = [
            (int(e.values[swept]), e.tokens_per_cycle or 0.0, 1.0 / e.measured) for e in others
        ]
        cost = fit_linear_cost(points, 1.0)
        return Prediction(linear_speedup(tokens, int(entry.values[swept]), cost))
    own = from_specs(entry)
    if own.value is None:
        return own
    fit = fit_overhead(same_bench(entry, table))
    if fit is None:
        return Prediction(None, "no other entry of its series")
    return from_specs(entry, fit.t0_us)


def predict(entry: Entry, table: Sequence[Entry]) -> dict[str, Prediction]:
    """Both methods' predictions of ``entry`` (keys :data:`METHODS`)."""
    return {"specs": from_specs(entry), "calibrated": calibrated(entry, table)}
