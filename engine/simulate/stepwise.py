"""Stepwise Monte Carlo of K policies on common random numbers (docs/model.md, "K policies").

A K policy chooses each cycle's draft count from what it has seen, so a sequence's cycles
cannot be drawn ahead as :mod:`engine.simulate.simulator` does for a fixed K. Here many sequences
run in lockstep, vectorised across sequences: step ``j`` is the ``j``-th cycle of every
sequence still running. The inputs are plain arrays (a survival table, cycle prices by
``(r, k)``), not a :class:`~engine.core.config.SpecConfig`: the caller prices the cycles and
builds the acceptance model.

The random stream (the contract for common random numbers)
-----------------------------------------------------------
Policies are compared on the same draws: sequence ``s``'s ``j``-th cycle sees the same
random numbers under every policy, so one policy's luck is the other's (docs/model.md,
"K policies", "Common random numbers"). The stream is:

- Sequences run in chunks of at most :data:`MAX_CHUNK_SEQUENCES` (a multiple of the batch
  size, :func:`chunk_size`); chunk ``c`` (0, 1, ...) draws from
  ``np.random.default_rng([*entropy, c])``.
- At each step ``j`` (0, 1, ...) the chunk draws, in this order, for ALL its rows (finished
  sequences too, so that the alignment never depends on the policy), until its last
  sequence has finished:

  1. one regime uniform per row ``x = rng.random(rows)``, only if there are ``G > 1``
     regimes. At step 0 the regime is the inverse CDF of ``mix`` at ``x``; at step
     ``j > 0`` the regime is kept if ``x < stay``, else redrawn by the inverse CDF of
     ``mix`` at ``(x - stay) / (1 - stay)`` (a redraw may land on the same regime). Every
     cycle (a plain step, k = 0, included) advances the chain; a cycle's regime is the one
     drawn at its step.
  2. a survival model: one acceptance uniform per row ``U = rng.random(rows)``; a cycle of
     ``k`` drafts in regime ``g`` accepts ``n = min(k, #{i in 1..K_max : S[g, i] > U})``.
     The per-token confidence model (``beta = (a, b)``): ``q = rng.beta(a, b,
     (rows, K_max))`` then ``u = rng.random((rows, K_max))``; draft token ``i`` is accepted
     iff ``u_i < q_i`` and ``n`` is the number of leading accepted tokens among the ``k``
     drafted. The draft sees ``q`` (threshold policies read it) before choosing ``k``.

  ``K_max`` is the width of the price tables minus one (``cycle_us.shape[1] - 1``), not the
  policy's ``k_max``: policies with different ``k_max`` priced by the same tables share
  the draws.

The cycle
---------
A sequence needs ``tokens`` tokens; ``r`` (tokens still needed) starts at ``tokens``. Each
cycle the policy chooses ``k``; the tail rule then drafts ``min(k, r - 1)`` under
``clamp`` and ``k`` otherwise (``full``). The cycle costs ``cycle_us[r, k]`` (of which
``draft_us[r, k]`` is drafting), accepts ``n`` and emits ``min(n + 1, r)`` tokens.

Policies (:class:`Policy`; the ``k`` before the tail rule)
----------------------------------------------------------
- ``fixed``: ``k`` every cycle (``k = 0``: plain decoding).
- ``hf_heuristic`` (Hugging Face): ``K`` starts at ``k``; after a cycle that drafted at
  least one token and accepted them all ``K <- min(K + 2, k_max)``, else
  ``K <- max(1, K - 1)``.
- ``threshold`` (needs the confidence model): ``rule = "p_min"`` (llama.cpp) drafts the
  leading tokens with ``q >= p_min``; ``rule = "h"`` (SpecDec++) stops at the first ``j``
  with ``1 - prod_{i <= j} q_i > h`` (``K_max`` if none); then clipped to
  ``[k_min, k_max]``.
- ``goodput`` (vLLM dynamic speculative decoding): estimates from the last ``window``
  steps of the sequence's batch group (``batch`` consecutive sequences): at position
  ``i``, ``reach_i`` counts cycles with ``k >= i`` and ``n >= i - 1``, ``acc_i`` those
  with ``n >= i``; ``p_i = acc_i / reach_i`` where ``reach_i > 0``, deeper positions take
  the deepest estimate. The policy drafts the ``k`` in ``0..k_max`` that maximises
  ``(1 + sum_{i <= k} prod_{l <= i} p_l) / cycle_us[r, k]`` (the smallest on ties), at
  the sequence's own ``r``. Without any estimate (no cycle drafted in the window) it
  drafts ``k``: once it has chosen plain steps for ``window`` steps it probes with ``k``
  again.
- ``oracle``: ``oracle_k[r, g]`` with the true current regime ``g`` (a table computed
  elsewhere, for example by the DP over ``(r, regime)``).

The result gives each sequence's time, so that policies are compared sequence by sequence
(paired differences). :func:`simulate_policy` is the entry point.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from engine.core.draws import Acceptance, Policy
from engine.core.kernel import Totals, cycle_times
from engine.core.parts import POLICY
from engine.cost.base import CostModel

__all__ = [
    "MAX_CHUNK_SEQUENCES",
    "Acceptance",
    "Policy",
    "StepwiseResult",
    "chunk_size",
    "price_tables",
    "simulate_policy",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

# Sequences per chunk at most (a chunk's draws and state are a few arrays of this many rows,
# times K_max for the confidence model and the goodput window).
MAX_CHUNK_SEQUENCES = 4096
# should_stop and progress are looked at every this many steps.
CHECK_EVERY_STEPS = 16


@dataclass
class StepwiseResult:
    """What a run of one policy gives: per-sequence times and totals over all cycles.

    ``sequence_time_us``: ``(n_sequences,)`` speculative time of each sequence in
    microseconds. ``totals``: the run's :class:`engine.core.kernel.Totals`, the same counters
    the chain engines keep (cycles, drafted, accepted before the tail discards any,
    ``accepted_kept`` after it, drafting time, the sequence times, and the per-position
    counts when asked for), from which :func:`engine.core.kernel.metrics_from_totals` gives
    the metrics. ``k_counts``: ``(K_max + 1,)`` cycles by the number of tokens they
    drafted (after the tail rule). ``trace``: the cycles of the first traced sequences
    (sequence 0 by default), if asked for, ordered by sequence then cycle: ``sequence``,
    ``r`` (tokens still needed at the start), ``k`` (drafted), ``accepted``, ``regime``
    (-1 without regimes) and ``q_mean`` (mean confidence of the drafted tokens; NaN
    without confidences or drafts).
    """

    sequence_time_us: np.ndarray
    totals: Totals
    k_counts: np.ndarray
    trace: dict[str, np.ndarray] | None = None

    # The totals most read, by their names in the policy tables.
    @property
    def cycles(self) -> int:
        return self.totals.cycles

    @property
    def drafted(self) -> int:
        return self.totals.drafted

    @property
    def accepted(self) -> int:
        return self.totals.accepted

    @property
    def kept(self) -> int:
        return self.totals.accepted_kept

    @property
    def draft_time_us(self) -> float:
        return self.totals.draft_time_us


def chunk_size(n_sequences: int, batch: int) -> int:
    """Sequences per chunk: at most :data:`MAX_CHUNK_SEQUENCES`, a multiple of ``batch``
    (one batch group if a group is larger), and no more than ``n_sequences``."""
    per_chunk = max(batch, MAX_CHUNK_SEQUENCES // batch * batch)
    return max(1, min(per_chunk, n_sequences))


def price_tables(
    cost: CostModel, tokens: int, k_max: int, batch: int = 1, prompt_len: int = 0
) -> tuple[FloatArray, FloatArray]:
    """(draft_us, cycle_us), each ``(tokens + 1, k_max + 1)`` microseconds: the price of a
    cycle started with ``r`` tokens to go that drafts ``k`` (k = 0: a plain step), at the
    context ``prompt_len + tokens - r`` and batch ``batch``, by
    :func:`engine.core.kernel.cycle_times`; row 0 (r = 0) is priced at the last context and
    unused."""
    r = np.arange(tokens + 1)[:, None]
    k = np.arange(k_max + 1)[None, :]
    context = prompt_len + (tokens - np.maximum(r, 1))
    draft, _, cycle = cycle_times(cost, k, batch, context)
    shape = (tokens + 1, k_max + 1)
    return (
        np.broadcast_to(np.asarray(draft, dtype=np.float64), shape).copy(),
        np.broadcast_to(np.asarray(cycle, dtype=np.float64), shape).copy(),
    )


# ---- Validation -------------------------------------------------------------------------


def _check_acceptance(acceptance: Acceptance, k_table: int) -> FloatArray | None:
    """The survival table as float64 (None for the confidence model), after checking the
    model against the price tables' K_max (``k_table``)."""
    mix = np.asarray(acceptance.mix, dtype=np.float64)
    if mix.ndim != 1 or mix.size < 1 or bool(np.any(mix < 0)) or abs(mix.sum() - 1.0) > 1e-9:
        raise ValueError(f"mix must be a distribution over the regimes, got {mix.tolist()}")
    if not 0.0 <= acceptance.stay <= 1.0:
        raise ValueError(f"stay must be in [0, 1], got {acceptance.stay}")
    if acceptance.beta is not None:
        a, b = acceptance.beta
        if not (a > 0 and b > 0):
            raise ValueError(f"beta parameters must be > 0, got {acceptance.beta}")
        if mix.size != 1:
            raise ValueError("the per-token confidence model (beta) has a single regime")
        return None
    if acceptance.survival is None:
        raise ValueError("acceptance needs a survival table or beta parameters")
    surv = np.asarray(acceptance.survival, dtype=np.float64)
    if surv.shape != (mix.size, k_table + 1):
        raise ValueError(
            f"survival must be (G, K_max + 1) = ({mix.size}, {k_table + 1}), got {surv.shape}"
        )
    if (
        bool(np.any(surv[:, 0] != 1.0))
        or bool(np.any(np.diff(surv, axis=1) > 0))
        or bool(np.any(surv < 0))
    ):
        raise ValueError("survival rows must start at 1 and be non-increasing, within [0, 1]")
    return surv


def _check_policy(policy: Policy, acceptance: Acceptance, k_table: int, tokens: int) -> None:
    if policy.name not in POLICY:
        raise ValueError(f"unknown policy {policy.name!r}; known: {', '.join(POLICY)}")
    if not 0 <= policy.k_max <= k_table:
        raise ValueError(
            f"policy k_max {policy.k_max} must be in 0..{k_table} (the price tables' K_max)"
        )
    POLICY[policy.name].check_run(policy, acceptance, k_table, tokens)


# ---- The run -------------------------------------------------------------------------------


def _inverse_cdf(cdf: FloatArray, x: FloatArray) -> IntArray:
    """Regime index for uniforms ``x`` in [0, 1): the first g with x < cdf[g]."""
    return np.minimum(np.searchsorted(cdf, x, side="right"), cdf.size - 1).astype(np.int64)


@dataclass
class _Run:
    """Everything one run shares across its chunks, and its running totals."""

    acceptance: Acceptance
    policy: Policy
    survival: FloatArray | None
    tokens: int
    draft_us: FloatArray
    cycle_us: FloatArray
    batch: int
    clamp: bool
    should_stop: Callable[[], bool] | None
    progress: Callable[[int], None] | None
    totals: Totals
    tokens_done: int = 0
    k_counts: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    @property
    def k_table(self) -> int:
        return self.cycle_us.shape[1] - 1

    def check(self, tokens_now: int) -> None:
        if self.should_stop is not None and self.should_stop():
            from engine.core.runs import RunStopped

            raise RunStopped()
        if self.progress is not None:
            self.progress(self.tokens_done + tokens_now)

    def chunk(
        self, rng: np.random.Generator, rows: int, trace: dict[str, list[np.ndarray]] | None
    ) -> FloatArray:
        """Run one chunk of ``rows`` sequences to the end; their times in microseconds.
        ``trace``: lists to which each step appends the traced rows' cycles (the first
        ``len(trace["rows"][0])`` rows)."""
        regimes, k_table = self.acceptance.regimes, self.k_table
        cdf = np.cumsum(np.asarray(self.acceptance.mix, dtype=np.float64))
        cdf[-1] = 1.0
        stay = self.acceptance.stay
        neg_survival = None if self.survival is None else -self.survival[:, 1:]
        beta = self.acceptance.beta
        chooser = POLICY[self.policy.name].chooser(self.policy, rows, self.batch, self.cycle_us)
        remaining = np.full(rows, self.tokens, dtype=np.int64)
        regime = np.full(rows, -1 if regimes == 1 else 0, dtype=np.int64)
        seq_time = np.zeros(rows)
        step = 0
        while True:
            ran = remaining > 0
            if not ran.any():
                return seq_time
            running = ran.astype(np.int64)
            if step % CHECK_EVERY_STEPS == 0 and step:
                self.check(int(self.tokens * rows - remaining.sum()))
            # 1. The regime: drawn at every step for every row.
            if regimes > 1:
                x = rng.random(rows)
                if step == 0:
                    regime = _inverse_cdf(cdf, x)
                elif stay < 1.0:
                    redrawn = _inverse_cdf(cdf, (x - stay) / (1.0 - stay))
                    regime = np.where(x < stay, regime, redrawn)
            # 2. The acceptance draws (the longest accepted prefix), then the policy's k and
            # the tail rule.
            q = None
            if beta is None:
                u = rng.random(rows)
                leading = _leading_from_survival(neg_survival, regime, u)
            else:
                q = rng.beta(beta[0], beta[1], size=(rows, k_table))
                token_accepted = rng.random((rows, k_table)) < q
                leading = np.where(
                    token_accepted.all(axis=1), k_table, token_accepted.argmin(axis=1)
                )
            wanted = chooser.choose(remaining, regime, q)
            drafted = np.minimum(wanted, remaining - 1) if self.clamp else wanted
            drafted = drafted * running  # finished rows draft nothing
            accepted = np.minimum(leading, drafted)
            # 3. Emit and pay (rows that finished earlier: r = 0, nothing emitted or paid).
            emitted = np.minimum(accepted + 1, remaining) * running
            row = np.maximum(remaining, 1)
            seq_time += np.where(ran, self.cycle_us[row, drafted], 0.0)
            self.totals.add_cycles(
                int(running.sum()),
                int(drafted.sum()),
                int(accepted.sum()),
                int(np.minimum(accepted, remaining).sum()),
                float(self.draft_us[row[ran], drafted[ran]].sum()),
            )
            self.k_counts += np.bincount(drafted[ran], minlength=k_table + 1)
            self.totals.count_positions(accepted[ran], (accepted < drafted)[ran])
            if trace is not None:
                _trace_step(trace, ran, remaining, drafted, accepted, regime, q)
            chooser.observe(step, drafted, accepted, running)
            remaining = remaining - emitted
            step += 1


_TRACE_FIELDS = ("sequence", "r", "k", "accepted", "regime", "q_mean")


def _trace_step(
    trace: dict[str, list[np.ndarray]],
    ran: np.ndarray,
    remaining: IntArray,
    drafted: IntArray,
    accepted: IntArray,
    regime: IntArray,
    q: FloatArray | None,
) -> None:
    """Append this step's cycles of the traced rows that ran it."""
    rows = trace["rows"][0]
    rows = rows[ran[rows]]
    if not rows.size:
        return
    k = drafted[rows]
    if q is None:
        q_mean = np.full(rows.size, math.nan)
    else:
        drafted_q = np.where(np.arange(q.shape[1]) < k[:, None], q[rows], 0.0)
        with np.errstate(invalid="ignore", divide="ignore"):
            q_mean = np.where(k > 0, drafted_q.sum(axis=1) / k, math.nan)
    for name, values in zip(
        _TRACE_FIELDS,
        (rows, remaining[rows], k, accepted[rows], regime[rows], q_mean),
        strict=True,
    ):
        trace[name].append(values)


def _leading_from_survival(
    neg_survival: FloatArray | None, regime: IntArray, u: FloatArray
) -> IntArray:
    """#{i in 1..K_max : S[g, i] > u} for each row's regime g (``neg_survival`` = -S[:, 1:],
    non-decreasing rows; ``regime`` -1 with one regime)."""
    assert neg_survival is not None
    if neg_survival.shape[0] == 1:
        return np.searchsorted(neg_survival[0], -u, side="left")
    leading = np.empty(u.size, dtype=np.int64)
    for g in range(neg_survival.shape[0]):
        rows = regime == g
        leading[rows] = np.searchsorted(neg_survival[g], -u[rows], side="left")
    return leading


def simulate_policy(
    acceptance: Acceptance,
    policy: Policy,
    *,
    tokens: int,
    n_sequences: int,
    draft_us: np.ndarray,
    cycle_us: np.ndarray,
    batch: int = 1,
    clamp: bool = False,
    entropy: Sequence[int],
    trace: bool | int = False,
    position_counts: bool = False,
    should_stop: Callable[[], bool] | None = None,
    progress: Callable[[int], None] | None = None,
) -> StepwiseResult:
    """Run ``n_sequences`` sequences of ``tokens`` tokens under ``policy``, on the random
    stream of the module docstring (keyed by ``entropy``, a sequence of non-negative ints).

    ``cycle_us`` and ``draft_us``: ``(tokens + 1, K_max + 1)`` arrays of microseconds, the
    price of a cycle started with ``r`` tokens to go that drafts ``k`` (k = 0: a plain
    step) and its drafting part; row 0 is unused. ``batch``: sequences per batch group
    (goodput's shared estimates; chunks are multiples of it). ``clamp``: the "clamp" tail
    rule, else "full". ``trace``: record
    sequence 0's cycles (True), or those of the first ``trace`` sequences (an int, at most
    one chunk). ``position_counts``: also count cycles by accepted drafts (the totals'
    ``accepted_counts`` and ``rejected_counts``). ``should_stop()`` is asked
    every few steps: when true the run raises :class:`engine.core.runs.RunStopped` (no
    partial result). ``progress(tokens_done)`` is told the tokens produced so far, all
    sequences, now and then and at the end.

    Raises ValueError on inconsistent inputs, naming the policy and the acceptance model
    when they cannot work together (a threshold policy without confidences).
    """
    cycle = np.asarray(cycle_us, dtype=np.float64)
    draft = np.asarray(draft_us, dtype=np.float64)
    if tokens < 1 or n_sequences < 1 or batch < 1:
        raise ValueError("tokens, n_sequences and batch must be >= 1")
    if cycle.ndim != 2 or cycle.shape[0] != tokens + 1 or draft.shape != cycle.shape:
        raise ValueError(
            f"cycle_us and draft_us must both be (tokens + 1, K_max + 1) = ({tokens + 1}, ...), "
            f"got {cycle.shape} and {draft.shape}"
        )
    k_table = cycle.shape[1] - 1
    survival = _check_acceptance(acceptance, k_table)
    _check_policy(policy, acceptance, k_table, tokens)
    totals = Totals()
    if position_counts:
        totals.count_positions_up_to(k_table)
    run = _Run(
        acceptance=acceptance,
        policy=policy,
        survival=survival,
        tokens=tokens,
        draft_us=draft,
        cycle_us=cycle,
        batch=batch,
        clamp=clamp,
        should_stop=should_stop,
        progress=progress,
        totals=totals,
        k_counts=np.zeros(k_table + 1, dtype=np.int64),
    )
    per_chunk = chunk_size(n_sequences, batch)
    traced = min(int(trace), per_chunk)
    recorded: dict[str, list[np.ndarray]] | None = None
    if traced:
        recorded = {name: [] for name in _TRACE_FIELDS}
        recorded["rows"] = [np.arange(traced)]
    times = []
    for c, start in enumerate(range(0, n_sequences, per_chunk)):
        rows = min(per_chunk, n_sequences - start)
        rng = np.random.default_rng([*entropy, c])
        times.append(run.chunk(rng, rows, recorded if c == 0 else None))
        run.tokens_done += rows * tokens
    if progress is not None:
        progress(run.tokens_done)
    trace_arrays = None
    if recorded is not None:
        del recorded["rows"]
        columns = {
            name: np.concatenate(parts) if parts else np.zeros(0)
            for name, parts in recorded.items()
        }
        order = np.argsort(columns["sequence"], kind="stable")  # steps are in order already
        trace_arrays = {
            name: values[order].astype(np.float64 if name == "q_mean" else np.int64)
            for name, values in columns.items()
        }
    sequence_time_us = np.concatenate(times)
    totals.add_sequences(sequence_time_us)
    return StepwiseResult(sequence_time_us, totals, run.k_counts, trace_arrays)
