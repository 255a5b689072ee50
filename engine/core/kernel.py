"""The cycle, once: draft k, accept a prefix, emit n + 1, pay the cost, the tail rule; and
every metric of a run (docs/model.md, "One sequence, one cycle" and "Metrics of one run").

The Monte Carlo engine (``engine.simulate.simulator``), the reference loop
(``engine.simulate.reference``) and
the exact dynamic program (``engine.simulate.exact``) all take a cycle from here:

- :func:`draft_count` is the tail rule, :func:`emitted_and_kept` what a cycle yields;
- :func:`cycle_costs` prices every cycle a sequence can run. Under a fixed policy a cycle's
  draft count and context depend only on ``r``, the tokens still needed, so its cost is a
  table by ``r``. The cycle time ``draft_us + verify_us`` is computed in :func:`cycle_times`
  and nowhere else;
- :class:`Totals` adds up a run and :func:`metrics_from_totals` turns it into metrics.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np
import numpy.typing as npt

from engine.core.config import SpecConfig, part_fields
from engine.core.cost_model import CostModel
from engine.core.parts import COST, PROPOSER

Z95 = 1.959963984540054

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

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


def draft_count(config: SpecConfig, remaining: Any) -> Any:
    """Tokens drafted in a cycle with ``remaining`` tokens still needed (int or int array):
    K under the "full" tail rule, ``min(K, r - 1)`` under "clamp"."""
    if config.tail == "clamp":
        return (
            np.minimum(config.k, remaining - 1)
            if isinstance(remaining, np.ndarray)
            else min(config.k, remaining - 1)
        )
    return np.full_like(remaining, config.k) if isinstance(remaining, np.ndarray) else config.k


def emitted_and_kept(accepted: Any, remaining: Any) -> tuple[Any, Any]:
    """A cycle that accepted ``accepted`` drafts emits ``accepted + 1`` tokens (the verifier
    adds one); a sequence keeps at most ``remaining`` of them (int or int arrays)."""
    emitted = accepted + 1
    return emitted, np.minimum(emitted, remaining)


def context_length(config: SpecConfig, remaining: Any) -> Any:
    """Tokens of context at the start of a cycle with ``remaining`` tokens still needed:
    ``prompt_len + (T - r)``."""
    return config.prompt_len + (config.tokens_per_seq - remaining)


def cycle_times(
    cost: CostModel,
    k: Any,
    batch: int,
    context: Any,
    *,
    tree: Any = None,
    lookup_us: float | None = None,
) -> tuple[Any, Any, Any]:
    """(draft_us, verify_us, cycle_us) of cycles drafting ``k`` tokens at context ``context``:
    k draft passes, then one target pass over w = k + 1 tokens per sequence. With ``tree``
    (an ``engine.shapes.trees.Tree``; ``k`` unused), a token tree's cycle: one draft pass per
    level, as wide as the level (``draft_pass_us``; a cost model without one drafts the
    tree's depth like a chain), plus ``draft_fixed_us`` where the model has one, then one
    target pass over ``nodes + 1`` tokens. A cost model's ``spec_overhead_us``, the fixed
    cost of a speculative cycle (paid at k = 0 too, never by the baseline's decoding steps),
    is added to the verify pass. With ``lookup_us`` (a model-free proposer: n-gram, suffix
    decoding), a step has no draft pass: its "draft" time is the CPU look-up, and a step
    that drafts ``k > 0`` tokens verifies them in one target pass over w = k + 1 (plus the
    speculative cycle's tax), while a step that drafts nothing (no match, or the clamp
    tail's last step) is a plain decoding step at the baseline step's cost (w = 1, no tax).
    The one place a cycle's time is added up."""
    tax = getattr(cost, "spec_overhead_us", 0.0)
    if tree is not None:
        draft, verify = _tree_parts(cost, tree, batch, context)
    elif lookup_us is not None:
        draft, verify = _lookup_parts(cost, k, batch, context, lookup_us, tax)
        tax = 0.0  # paid above by the steps that drafted only
    else:
        draft = cost.draft_us(k, batch, context)
        verify = cost.verify_us(np.add(k, 1), batch, context)
    if tax:
        verify = verify + tax
    return draft, verify, draft + verify


def _lookup_parts(
    cost: CostModel, k: Any, batch: int, context: Any, lookup_us: float, tax: float
) -> tuple[Any, Any]:
    """(look-up, verify) of model-free steps drafting ``k`` (see :func:`cycle_times`)."""
    drafts = np.asarray(k, dtype=np.int64)
    checked = np.asarray(cost.verify_us(drafts + 1, batch, context), dtype=np.float64)
    plain = np.asarray(cost.verify_us(np.ones_like(drafts), batch, context), dtype=np.float64)
    verify = np.where(drafts > 0, checked + tax if tax else checked, plain)
    lookup = np.full(np.shape(verify), float(lookup_us))
    if verify.ndim == 0:
        return float(lookup), float(verify)
    return lookup, verify


def _tree_parts(cost: CostModel, tree: Any, batch: Any, context: Any) -> tuple[Any, Any]:
    context = np.asarray(context, dtype=np.float64)
    pass_us = getattr(cost, "draft_pass_us", None)
    if pass_us is not None:
        # Added level by level from zero, as sum() would, holding one pass per distinct
        # width rather than one per level (a chain of 1,024 at 10^6 contexts: 8 GB).
        passes: dict[int, Any] = {}
        draft = np.zeros(np.shape(context))
        for w in tree.level_sizes:
            if w not in passes:
                passes[w] = np.asarray(pass_us(w, batch, context), dtype=float)
            draft = draft + passes[w]
        draft = draft + (getattr(cost, "draft_fixed_us", 0.0) if tree.nodes else 0.0)
    else:
        draft = np.asarray(cost.draft_us(tree.depth, batch, context), dtype=np.float64)
    verify = np.asarray(cost.verify_us(tree.nodes + 1, batch, context), dtype=np.float64)
    return tuple(np.broadcast_arrays(draft, verify))  # type: ignore[return-value]


@dataclass(frozen=True)
class CycleCosts:
    """The price of every cycle a sequence of a configuration can run, in microseconds.

    Arrays are indexed by ``r``, the tokens still needed at the start of the cycle
    (1..tokens_per_seq; index 0 is unused): ``k[r]`` drafted tokens, ``draft_us[r]``,
    ``verify_us[r]``, ``cycle_us[r] = draft_us[r] + verify_us[r]``, and ``step_us[r]``, a
    plain decoding step (w = 1) at the same context, which the baseline pays per token.
    """

    k: IntArray
    draft_us: FloatArray
    verify_us: FloatArray
    cycle_us: FloatArray
    step_us: FloatArray
    baseline_us: float  # one sequence decoded autoregressively: sum of step_us[1..T]
    # Every cycle costs the same (full tail, context-free costs): its time, else None.
    constant_cycle_us: float | None
    # draft_us[r] = k[r] * this at every r (drafting is per token, context-free), else None.
    draft_per_token_us: float | None
    # T -> infinity at the prompt's context: one full cycle (K drafts), one decoding step.
    limit_draft_us: float
    limit_verify_us: float
    limit_cycle_us: float
    limit_step_us: float
    cost_ratio: float  # one draft pass / one decoding step, at the prompt's context
    bound: str  # the verify pass of a full cycle at the prompt's context: memory, compute, -
    warnings: tuple[str, ...] = field(default=())
    # A model-free proposer (engine.proposers): its look-up per step, and the price of a step
    # that drafts nothing (look-up plus the baseline's step) by r; None for a draft model,
    # whose draft_us, verify_us and cycle_us are then those of a step that drafts k[r].
    lookup_us: float | None = None
    miss_us: FloatArray | None = None


# The fields a cycle's price depends on, besides the cost model's own: the draft count (K,
# the tail rule), the context (T, prompt_len) and the batch.
_PRICE_FIELDS = ("k", "tail", "tokens_per_seq", "workload.prompt_len", "workload.batch_size")


# Cycle costs are kept for recent cost settings, up to this many bytes of tables (a table
# holds six arrays of T + 1 numbers: ~6 KB at T = 128, ~0.8 MB at T = 16,384), so a grid of
# thousands of short scenarios prices each setting once while a sweep of long sequences
# keeps little. Sequences longer than CACHED_TOKENS_MAX are priced afresh on every call.
CACHED_TOKENS_MAX = 16_384
PRICE_CACHE_BYTES = 64 * 2**20


def cycle_costs(config: SpecConfig) -> CycleCosts:
    """Every cycle's cost for ``config`` under its cost model (see :class:`CycleCosts`).

    Configurations that differ only in what does not price a cycle (the acceptance model,
    the seed, the number of sequences) share one computation: a sweep over acceptance
    rates prices its cycles once per cost setting. Sequences longer than
    :data:`CACHED_TOKENS_MAX` are priced afresh on each call (bounded memory).

    Raises :class:`engine.core.config.ConfigError` when the cost model cannot be built (an
    unknown hardware id, an unreadable table)."""
    price = _price_key_of(config)
    if config.tokens_per_seq > CACHED_TOKENS_MAX:
        return _price(price)
    return _PRICES.get(price)


@lru_cache(maxsize=4096)  # a configuration's price key: a small tuple
def _price_key_of(config: SpecConfig) -> tuple[tuple[str, Any], ...]:
    return _price_key(config)


def _price_key(config: SpecConfig) -> tuple[tuple[str, Any], ...]:
    keys = (*_PRICE_FIELDS, "cost.model", *part_fields("cost.model", config.cost_model))
    if PROPOSER.of(config).model_free:  # its look-up prices every step
        keys = (*keys, "proposer.name", *part_fields("proposer.name", config.proposer))
    return tuple((key, config.get(key)) for key in keys)


class _PriceCache:
    """Least recently used cycle-cost tables, bounded in bytes (thread-safe: the app prices
    in its sweep thread and its UI thread)."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self._tables: OrderedDict[tuple[tuple[str, Any], ...], CycleCosts] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, price: tuple[tuple[str, Any], ...]) -> CycleCosts:
        with self._lock:
            found = self._tables.get(price)
            if found is not None:
                self._tables.move_to_end(price)
                return found
        costs = _price(price)  # outside the lock: pricing a long table takes a while
        size = _table_bytes(costs)
        with self._lock:
            if price not in self._tables:
                self._tables[price] = costs
                self._bytes += size
            while self._bytes > self.budget and len(self._tables) > 1:
                _, dropped = self._tables.popitem(last=False)
                self._bytes -= _table_bytes(dropped)
            return self._tables.get(price, costs)


def _table_bytes(costs: CycleCosts) -> int:
    arrays = (costs.k, costs.draft_us, costs.verify_us, costs.cycle_us, costs.step_us)
    extra = costs.miss_us.nbytes if costs.miss_us is not None else 0
    return sum(a.nbytes for a in arrays) + extra + 1024


_PRICES = _PriceCache(PRICE_CACHE_BYTES)
_DEFAULT = SpecConfig()


# Values of price fields already validated (SpecConfig.derive), for pricing many settings.
_PRICE_MEMO: dict[Any, Any] = {}
_PRICE_MEMO_MAX = 65536


def _price(price: tuple[tuple[str, Any], ...]) -> CycleCosts:
    if len(_PRICE_MEMO) > _PRICE_MEMO_MAX:
        _PRICE_MEMO.clear()
    config = _DEFAULT.derive(dict(price), _PRICE_MEMO)
    cost = COST.of(config).build(config)
    total, batch = config.tokens_per_seq, config.batch_size
    r = np.arange(total + 1, dtype=np.int64)
    r[0] = 1  # unused; keeps the context and the draft count valid
    k = np.asarray(draft_count(config, r), dtype=np.int64)
    context = context_length(config, r)
    proposer = PROPOSER.of(config)
    lookup = proposer.lookup_us(config) if proposer.model_free else None
    draft, verify, cycle = (
        np.asarray(a, dtype=np.float64)
        for a in cycle_times(cost, k, batch, context, lookup_us=lookup)
    )
    miss = None
    if lookup is not None:
        miss = np.asarray(
            cycle_times(cost, np.zeros_like(k), batch, context, lookup_us=lookup)[2],
            dtype=np.float64,
        )
    step = np.asarray(cost.verify_us(np.ones_like(r), batch, context), dtype=np.float64)
    steps = step[1:]
    # math.fsum rounds the exact sum once: T equal steps give exactly T * step, the
    # original's baseline, bit for bit.
    baseline = math.fsum(steps.tolist())
    cycles = cycle[1:]
    constant = (
        float(cycles[0]) if config.tail == "full" and bool(np.all(cycles == cycles[0])) else None
    )
    per_token = np.asarray(cost.draft_us(np.ones_like(r), batch, context), dtype=np.float64)[1:]
    proportional = bool(np.all(per_token == per_token[0])) and bool(
        np.all(draft[1:] == k[1:] * per_token[0])
    )
    prompt = config.prompt_len
    limit_draft, limit_verify, limit_cycle = cycle_times(
        cost, config.k, batch, prompt, lookup_us=lookup
    )
    limit_step = float(cost.verify_us(1, batch, prompt))
    bound_of = getattr(cost, "bound", None)
    bound = str(bound_of(config.k + 1, batch, prompt)) if bound_of is not None else "-"
    return CycleCosts(
        k=k,
        draft_us=draft,
        verify_us=verify,
        cycle_us=cycle,
        step_us=step,
        baseline_us=baseline,
        constant_cycle_us=constant,
        draft_per_token_us=float(per_token[0]) if proportional and lookup is None else None,
        limit_draft_us=float(limit_draft),
        limit_verify_us=float(limit_verify),
        limit_cycle_us=float(limit_cycle),
        limit_step_us=limit_step,
        # No draft pass without a draft model: its look-up is not a draft pass.
        cost_ratio=float(cost.draft_us(1, batch, prompt)) / limit_step if lookup is None else 0.0,
        bound=bound,
        warnings=tuple(getattr(cost, "warnings", ())),
        lookup_us=lookup,
        miss_us=miss,
    )


def proposer_step_us(config: SpecConfig, cost: CostModel, k: Any, remaining: Any) -> Any:
    """The time of model-free steps (``config``'s proposer has no draft pass) that draft ``k``
    tokens with ``remaining`` tokens still needed (int arrays): the look-up plus one target
    pass (:func:`cycle_times`); ``cost`` is the configuration's built cost model."""
    lookup = PROPOSER.of(config).lookup_us(config)
    context = context_length(config, remaining)
    return cycle_times(cost, k, config.batch_size, context, lookup_us=lookup)[2]


def proposer_hit_steps(config: SpecConfig) -> tuple[FloatArray, FloatArray]:
    """(expected time, expected drafted tokens) of a step that found a match, by r (the
    tokens still needed; index 0 unused), for a model-free proposer: over the proposer's
    draft lengths ``min(L, k_r)`` (:meth:`engine.proposers.base.ProposerPart.length_survival`),
    each step priced by :func:`cycle_times`; added k = 1, 2, ... An n-gram step drafts k_r:
    its time is ``cycle_costs(config).cycle_us``. A step with k_r = 0 (the clamp tail's
    last) drafts nothing: a plain step."""
    costs = cycle_costs(config)
    assert costs.miss_us is not None, "a model-free proposer's configuration"
    proposer = PROPOSER.of(config)
    caps = costs.k
    survival = np.asarray(proposer.length_survival(config, config.k), dtype=np.float64)
    if bool(np.all(survival == 1.0)):
        return costs.cycle_us, caps.astype(np.float64)
    cost = COST.of(config).build(config)
    total = config.tokens_per_seq
    r = np.arange(total + 1, dtype=np.int64)
    r[0] = 1
    extended = np.append(survival, 0.0)
    time = np.zeros(total + 1)
    drafted = np.zeros(total + 1)
    for k in range(1, int(caps.max()) + 1):
        # P(min(L, cap) = k): P(L = k) below the cap, P(L >= k) at it, 0 above.
        p = np.where(
            k < caps, extended[k - 1] - extended[k], np.where(k == caps, extended[k - 1], 0.0)
        )
        step = np.asarray(proposer_step_us(config, cost, np.full_like(r, k), r), dtype=float)
        time = time + p * step
        drafted = drafted + p * k
    plain = caps == 0
    time[plain] = costs.miss_us[plain]
    return time, drafted


def baseline_time_us(config: SpecConfig, tokens: Any) -> Any:
    """Microseconds the autoregressive baseline takes for the first ``tokens`` tokens of a
    sequence (an int or an int array, 0..tokens_per_seq): one decoding step per token, each
    at its own context. The running speedup of a sequence is this over its time so far."""
    costs = cycle_costs(config)
    if bool(np.all(costs.step_us[1:] == costs.step_us[1])):
        return tokens * float(costs.step_us[1])  # the original's tokens x verify_cost_us
    # Token t (0-based) is decoded with r = T - t tokens still needed.
    cumulative = np.concatenate(([0.0], np.cumsum(costs.step_us[:0:-1])))
    return cumulative[tokens]


@dataclass
class Totals:
    """What a run adds up, from which every Monte Carlo metric follows.

    Sequence times stream: each chunk of sequences leaves its count, sum and sum of squared
    deviations, so memory does not grow with the number of sequences.
    """

    sequence_time_parts: list[tuple[int, float, float]] = field(default_factory=list)
    cycles: int = 0
    drafted: int = 0
    accepted: int = 0
    accepted_kept: int = 0
    emitted: int = 0
    target_positions: int = 0
    draft_time_us: float = 0.0
    # Per-position counts, when asked for: cycles by accepted drafts n, and the same for
    # cycles that ended on a rejection (n < k). See engine.core.runs.acceptance_by_position.
    accepted_counts: np.ndarray | None = None
    rejected_counts: np.ndarray | None = None
    # Model-free proposers: the steps that drafted (found a match and had room to draft).
    drafting_cycles: int = 0

    def count_positions_up_to(self, k: int) -> None:
        """Count cycles by accepted drafts n = 0..k from now on (``accepted_counts``,
        ``rejected_counts``, zero until :meth:`count_positions` adds to them)."""
        self.accepted_counts = np.zeros(k + 1, dtype=np.int64)
        self.rejected_counts = np.zeros(k + 1, dtype=np.int64)

    def add_cycles(
        self, cycles: int, drafted: int, accepted: int, accepted_kept: int, draft_time_us: float
    ) -> None:
        """Add ``cycles`` cycles that drafted, accepted and kept so many draft tokens.

        Each cycle emits its accepted drafts plus one, and its verify pass evaluates its
        drafts plus one target position."""
        self.cycles += cycles
        self.drafted += drafted
        self.accepted += accepted
        self.accepted_kept += accepted_kept
        self.emitted += accepted + cycles
        self.target_positions += drafted + cycles
        self.draft_time_us += draft_time_us

    def add_sequences(self, seq_time: np.ndarray) -> None:
        """Add the speculative times of a group of finished sequences."""
        if seq_time.size:
            total = float(seq_time.sum())
            deviations = seq_time - seq_time.mean()
            self.sequence_time_parts.append(
                (seq_time.size, total, float((deviations * deviations).sum()))
            )

    def count_positions(self, accepted: np.ndarray, rejected: np.ndarray) -> None:
        """Count cycles by accepted drafts; ``rejected`` marks the cycles with a rejection."""
        if self.accepted_counts is None or self.rejected_counts is None:
            return
        size = self.accepted_counts.size
        self.accepted_counts += np.bincount(accepted, minlength=size)[:size]
        self.rejected_counts += np.bincount(accepted[rejected], minlength=size)[:size]

    def sequence_time_stats(self) -> tuple[int, float, float]:
        """Number of sequences, total speculative time, and the per-sequence sample std."""
        n = sum(p[0] for p in self.sequence_time_parts)
        total = sum(p[1] for p in self.sequence_time_parts)
        if n < 2:
            return n, total, math.nan
        mean = total / n
        # Chan et al.: the squared deviations of the parts, plus those of their means.
        m2 = sum(p[2] + p[0] * (p[1] / p[0] - mean) ** 2 for p in self.sequence_time_parts)
        return n, total, math.sqrt(m2 / (n - 1))


def _ratio(num: float, den: float) -> float:
    return num / den if den else math.nan


def metrics_from_totals(
    config: SpecConfig, totals: Totals, exact: dict[str, float]
) -> dict[str, float]:
    """Monte Carlo metrics of docs/model.md from a run's totals, plus the exact figures
    ``exact`` (:func:`engine.simulate.exact.exact_metrics` of the configuration: the engine that
    ran it knows them, the kernel does not ask)."""
    costs = cycle_costs(config)
    n_seq, spec_time, seq_std = totals.sequence_time_stats()
    baseline_time = costs.baseline_us * n_seq
    speedup = baseline_time / spec_time
    # Delta method for the ratio of totals; sequences are the independent units.
    if n_seq > 1:
        rel_se = seq_std / math.sqrt(n_seq) / (spec_time / n_seq)
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
        "compute_overhead": (totals.target_positions + costs.cost_ratio * totals.drafted)
        / totals.emitted
        - 1.0,
        "spec_time_us": spec_time,
        "baseline_time_us": baseline_time,
        "cost_ratio": costs.cost_ratio,
        "drafted_tokens": totals.drafted,
        "accepted_tokens": totals.accepted,
    }
    metrics.update(exact)
    return {name: metrics[name] for name in METRIC_NAMES}
