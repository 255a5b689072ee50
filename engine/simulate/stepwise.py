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

from engine.core.kernel import Totals, cycle_times
from engine.cost.base import CostModel

__all__ = [
    "MAX_CHUNK_SEQUENCES",
    "POLICY_NAMES",
    "THRESHOLD_RULES",
    "Acceptance",
    "Policy",
    "StepwiseResult",
    "chunk_size",
    "price_tables",
    "simulate_policy",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

POLICY_NAMES = ("fixed", "hf_heuristic", "threshold", "goodput", "oracle")
THRESHOLD_RULES = ("p_min", "h")

# Sequences per chunk at most (a chunk's draws and state are a few arrays of this many rows,
# times K_max for the confidence model and the goodput window).
MAX_CHUNK_SEQUENCES = 4096
# should_stop and progress are looked at every this many steps.
CHECK_EVERY_STEPS = 16


@dataclass(frozen=True)
class Acceptance:
    """How many drafts a cycle accepts: a survival table per hidden regime, with a Markov
    chain over regimes, or per-token confidences drawn from a Beta.

    ``survival``: ``(G, K_max + 1)`` array, ``S[g, j] = P(n >= j | regime g)`` for a cycle
    of at least ``j`` drafts; ``S[:, 0] = 1``, non-increasing along each row, in [0, 1].
    ``stay``: probability of keeping the regime from one cycle to the next, in [0, 1]; else
    the regime is redrawn from ``mix``. ``mix``: ``(G,)`` start and stationary distribution
    of the regimes (sums to 1). ``beta``: ``(a, b)``, both > 0: each draft token's
    acceptance probability ``q ~ Beta(a, b)``, independent, seen by the draft; then
    ``survival`` is unused and there is one regime.
    """

    survival: np.ndarray | None = None
    stay: float = 1.0
    mix: np.ndarray = field(default_factory=lambda: np.ones(1))
    beta: tuple[float, float] | None = None

    @property
    def regimes(self) -> int:
        """G, the number of hidden regimes."""
        return int(np.asarray(self.mix).size)

    @property
    def kind(self) -> str:
        """Which model: "confidence" (per-token q ~ Beta) or "survival" (a table per regime)."""
        return "confidence" if self.beta is not None else "survival"


@dataclass(frozen=True)
class Policy:
    """A K policy and its parameters (see the module docstring for each rule).

    ``name``: one of :data:`POLICY_NAMES`. ``k``: fixed's draft count (0..k_max; 0 is plain
    decoding), hf_heuristic's start, goodput's draft count without estimates. ``k_max``:
    the largest draft count the policy may choose (at most the price tables' K_max).
    ``k_min``, ``rule`` ("p_min" or "h"), ``p_min``, ``h``: threshold. ``window``: goodput's
    history in steps (>= 1). ``oracle_k``: oracle's ``(tokens + 1, G)`` int table of
    ``k*(r, g)`` in 0..k_max (row 0 unused).
    """

    name: str
    k: int = 5
    k_max: int = 32
    k_min: int = 1
    rule: str = "p_min"
    p_min: float = 0.5
    h: float = 0.5
    window: int = 16
    oracle_k: np.ndarray | None = None


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
    if policy.name not in POLICY_NAMES:
        raise ValueError(f"unknown policy {policy.name!r}; known: {', '.join(POLICY_NAMES)}")
    if not 0 <= policy.k_max <= k_table:
        raise ValueError(
            f"policy k_max {policy.k_max} must be in 0..{k_table} (the price tables' K_max)"
        )
    if policy.name in ("fixed", "hf_heuristic", "goodput") and not 0 <= policy.k <= policy.k_max:
        raise ValueError(f"policy {policy.name!r}: k {policy.k} must be in 0..{policy.k_max}")
    if policy.name == "threshold":
        if acceptance.beta is None:
            raise ValueError(
                "policy 'threshold' needs per-token confidences: the acceptance model "
                "'survival table' has none (use the beta confidence model)"
            )
        if policy.rule not in THRESHOLD_RULES:
            raise ValueError(f"threshold rule must be one of {THRESHOLD_RULES}, not {policy.rule}")
        if not 0 <= policy.k_min <= policy.k_max:
            raise ValueError(f"threshold k_min {policy.k_min} must be in 0..{policy.k_max}")
    if policy.name == "goodput" and policy.window < 1:
        raise ValueError(f"goodput window must be >= 1, got {policy.window}")
    if policy.name == "oracle":
        table = policy.oracle_k
        shape = (tokens + 1, acceptance.regimes)
        if table is None or np.shape(table) != shape:
            got = None if table is None else np.shape(table)
            raise ValueError(f"policy 'oracle' needs oracle_k of shape {shape}, got {got}")
        body = np.asarray(table)[1:]
        if body.size and (int(body.min()) < 0 or int(body.max()) > policy.k_max):
            raise ValueError(f"oracle_k values must be in 0..{policy.k_max}")


# ---- Policies: choose k from what the policy may see -------------------------------------


class _Chooser:
    """A policy's state over one chunk of ``rows`` sequences."""

    def choose(self, r: IntArray, regime: IntArray, q: FloatArray | None) -> IntArray:
        """The k each row's policy asks for (before the tail rule)."""
        raise NotImplementedError

    def observe(self, step: int, drafted: IntArray, accepted: IntArray, running: IntArray) -> None:
        """Learn from a cycle: ``running`` is 1 on rows that ran it (others drafted 0)."""


class _Fixed(_Chooser):
    def __init__(self, policy: Policy, rows: int) -> None:
        self.k = np.full(rows, policy.k, dtype=np.int64)

    def choose(self, r: IntArray, regime: IntArray, q: FloatArray | None) -> IntArray:
        return self.k


class _HfHeuristic(_Chooser):
    def __init__(self, policy: Policy, rows: int) -> None:
        self.k_max = policy.k_max
        self.k = np.full(rows, policy.k, dtype=np.int64)

    def choose(self, r: IntArray, regime: IntArray, q: FloatArray | None) -> IntArray:
        return self.k

    def observe(self, step: int, drafted: IntArray, accepted: IntArray, running: IntArray) -> None:
        all_accepted = (accepted == drafted) & (drafted >= 1)
        grown = np.where(
            all_accepted, np.minimum(self.k + 2, self.k_max), np.maximum(1, self.k - 1)
        )
        self.k = np.where(running.astype(bool), grown, self.k)


class _Threshold(_Chooser):
    def __init__(self, policy: Policy, rows: int) -> None:
        self.policy = policy

    def choose(self, r: IntArray, regime: IntArray, q: FloatArray | None) -> IntArray:
        assert q is not None
        policy, width = self.policy, q.shape[1]
        if policy.rule == "p_min":
            stop = q < policy.p_min  # stop drafting before the first token under p_min
            k = np.where(stop.any(axis=1), stop.argmax(axis=1), width)
        else:
            stop = 1.0 - np.cumprod(q, axis=1) > policy.h  # P(some draft rejected) > h
            k = np.where(stop.any(axis=1), stop.argmax(axis=1) + 1, width)
        return np.clip(k, policy.k_min, policy.k_max).astype(np.int64)


class _Oracle(_Chooser):
    def __init__(self, policy: Policy, rows: int) -> None:
        assert policy.oracle_k is not None
        self.table = np.asarray(policy.oracle_k, dtype=np.int64)

    def choose(self, r: IntArray, regime: IntArray, q: FloatArray | None) -> IntArray:
        return self.table[r, np.maximum(regime, 0)]


class _Goodput(_Chooser):
    """Per-position acceptance estimates over the last ``window`` steps of each batch group.

    The window is a ring of each row's two lengths per step: ``min(k, n + 1)`` (the cycle
    reached positions 1..that) and ``n`` (accepted 1..n), int16, 0 for rows not running.
    Each group keeps histograms of these lengths over the window, ``(K_max + 1, groups)``;
    the count of cycles that reached (or accepted) position i is the histogram's tail sum
    from i. Positions run along axis 0 so that every scan over them is vectorised across
    the groups.
    """

    def __init__(self, policy: Policy, rows: int, batch: int, cycle_us: FloatArray) -> None:
        self.policy = policy
        self.group = np.arange(rows) // batch
        self.groups = int(self.group[-1]) + 1
        width = cycle_us.shape[1]  # lengths 0..K_max
        self.reach_len = np.zeros((policy.window, rows), dtype=np.int16)
        self.acc_len = np.zeros((policy.window, rows), dtype=np.int16)
        self.reach_hist = np.zeros((width, self.groups), dtype=np.int64)
        self.acc_hist = np.zeros((width, self.groups), dtype=np.int64)
        # The price of each k the policy may choose, (k_max + 1, T + 1).
        self.price = np.ascontiguousarray(cycle_us[:, : policy.k_max + 1].T)

    def _count(self, hist: IntArray, lengths: np.ndarray, sign: int) -> None:
        """Add (sign 1) or remove (-1) one step's lengths; length 0 counts at no position."""
        rows = np.flatnonzero(lengths)
        np.add.at(hist.reshape(-1), lengths[rows] * self.groups + self.group[rows], sign)

    def observe(self, step: int, drafted: IntArray, accepted: IntArray, running: IntArray) -> None:
        slot = step % self.policy.window
        reach = (np.minimum(drafted, accepted + 1) * running).astype(np.int16)
        acc = (accepted * running).astype(np.int16)
        for hist, ring, lengths in (
            (self.reach_hist, self.reach_len, reach),
            (self.acc_hist, self.acc_len, acc),
        ):
            self._count(hist, ring[slot].astype(np.int64), -1)
            self._count(hist, lengths.astype(np.int64), 1)
            ring[slot] = lengths

    def choose(self, r: IntArray, regime: IntArray, q: FloatArray | None) -> IntArray:
        k_max = self.policy.k_max
        chosen = np.full(r.size, self.policy.k, dtype=np.int64)
        live = np.flatnonzero(r > 0)
        if not live.size or not k_max:
            return chosen
        groups = np.unique(self.group[live])
        reached, accepted = _tail_sums(self.reach_hist[:, groups], self.acc_hist[:, groups], k_max)
        depth = (reached > 0).sum(axis=0)  # positions with data: 1..depth (reach shrinks)
        with np.errstate(invalid="ignore", divide="ignore"):
            rate = accepted / reached
        # Positions deeper than the data take the deepest estimate.
        deepest = rate[np.maximum(depth - 1, 0), np.arange(groups.size)]
        rate = np.where(np.arange(k_max)[:, None] < depth, rate, deepest)
        # Goodput's numerator 1 + sum_{i <= k} prod_{l <= i} p_l, by k = 0..k_max. A loop
        # over positions: numpy's scans along axis 0 are not vectorised across columns.
        gain = np.ones((k_max + 1, groups.size))
        reach_all, total = np.ones(groups.size), np.zeros(groups.size)
        for i in range(k_max):
            reach_all *= rate[i]
            total += reach_all
            gain[i + 1] += total
        # Each live row at its own r; argmax takes the smallest k on ties.
        at = np.searchsorted(groups, self.group[live])
        best = np.argmax(gain[:, at] / self.price[:, r[live]], axis=0)
        # Groups without data (nothing drafted in the window) draft policy.k.
        chosen[live] = np.where(depth[at] > 0, best, self.policy.k)
        return chosen


def _tail_sums(reach_hist: IntArray, acc_hist: IntArray, k_max: int) -> tuple[IntArray, IntArray]:
    """Cycles that reached and that accepted positions 1..k_max, ``(k_max, groups)``: the
    histograms' tail sums from each position (the lengths reach K_max at most)."""
    reached = np.empty((k_max, reach_hist.shape[1]), dtype=np.int64)
    accepted = np.empty_like(reached)
    reach_tail = reach_hist[k_max:].sum(axis=0)
    acc_tail = acc_hist[k_max:].sum(axis=0)
    reached[k_max - 1], accepted[k_max - 1] = reach_tail, acc_tail
    for i in range(k_max - 1, 0, -1):
        reach_tail += reach_hist[i]
        acc_tail += acc_hist[i]
        reached[i - 1], accepted[i - 1] = reach_tail, acc_tail
    return reached, accepted


def _chooser(policy: Policy, rows: int, batch: int, cycle_us: FloatArray) -> _Chooser:
    if policy.name == "goodput":
        return _Goodput(policy, rows, batch, cycle_us)
    kinds: dict[str, Callable[[Policy, int], _Chooser]] = {
        "fixed": _Fixed,
        "hf_heuristic": _HfHeuristic,
        "threshold": _Threshold,
        "oracle": _Oracle,
    }
    return kinds[policy.name](policy, rows)


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
        chooser = _chooser(self.policy, rows, self.batch, self.cycle_us)
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
        totals.accepted_counts = np.zeros(k_table + 1, dtype=np.int64)
        totals.rejected_counts = np.zeros(k_table + 1, dtype=np.int64)
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
