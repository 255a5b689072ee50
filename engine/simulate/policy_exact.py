"""Exact expectations of one sequence under a K policy, for i.i.d. or Markov-modulated
acceptance (docs/model.md, "Acceptance models beyond the original" and "K policies").

Plain arrays in, expectations out: the caller turns a configuration into a
:class:`Regimes` (survival probabilities per hidden regime, the chain between cycles) and a
table of cycle prices by (r, k); :func:`policy_exact` returns the expected time, cycles,
drafted, accepted and kept draft tokens of one sequence of T tokens, and how many cycles
drafted each k.

The policies whose state is enumerable:

- ``fixed``: k = K every cycle (K = 0 is plain decoding);
- ``hf_heuristic`` (Hugging Face assisted generation): a state K_c, starting at K; a cycle
  drafts K_c (with the tail rule); after a cycle that drafted d >= 1 tokens and accepted
  all d, K_c <- min(K_c + 2, K_max), else K_c <- max(1, K_c - 1). The update is judged
  against the drafted count d, so a clamped cycle (d = r - 1 < K_c) that accepts every draft
  emits r tokens and ends the sequence: its update is never used. d = 0 happens only in a
  clamped cycle at r = 1, the last one. So how a clamped last cycle updates K_c cannot
  change an expectation. The regime is not observed: the state is (r, K_c, regime).
- ``oracle``: knows the model and the current regime (not the future draws) and drafts
  k*(r, g) in 0..K_max (0..min(K_max, r - 1) under ``clamp``), the k minimising the
  expected remaining time by the dynamic program
  V(r, g) = min_k [cycle_us(r, k) + sum_n P(n | k, g) sum_g' P(g' | g) V(r - min(n + 1, r), g')],
  V(0, .) = 0; ties go to the smallest k.

How it computes. Every cycle lowers r, so a sequence visits each state (r, policy state,
regime) at most once, and the expectation of a sum over cycles is the sum over states of
P(visit) times the cycle's expected value there. One forward pass over r = T, T - 1, ..., 1
("push": the probability of each state of row r flows to the rows r - 1 - n of its outcomes
n) gives every visit probability; the expectations are then a few vectorised sums over the
(r, state, regime) table. The Python loop runs over r only, each step a handful of numpy
calls on (states, regimes, outcomes) arrays. The oracle first runs its dynamic program
backwards (one batched product of (regimes, k, n) by (n, regimes) per r) to find k*(r, g),
then the same forward pass. Plain numpy sums: no bit-identity with :mod:`engine.simulate.exact`, to
which a fixed K agrees to rounding (~1e-13 relative).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

POLICIES: tuple[str, ...] = ("fixed", "hf_heuristic", "oracle")

# Hugging Face's update after a fully accepted cycle, and after any other.
HF_GROW = 2
HF_SHRINK = 1


def _one_regime() -> FloatArray:
    return np.ones(1)


@dataclass(frozen=True)
class Regimes:
    """Acceptance in G hidden regimes and the Markov chain between cycles.

    ``survival[g, j]`` is P(n >= j | regime g), j = 0..K (shape (G, K + 1), column 0 all
    ones, non-increasing along j, in [0, 1]); n is the number of accepted drafts of a cycle
    that drafts k >= j tokens: P(n = m | k, g) = S[g, m] - S[g, m + 1] for m < k and
    P(n = k | k, g) = S[g, k]. Between two cycles the regime is kept with probability
    ``stay``, else redrawn from ``mix`` (which may land on the same regime):
    P(g' | g) = stay [g' == g] + (1 - stay) mix[g']. The first cycle's regime is drawn from
    ``mix`` (shape (G,), sums to 1; the chain's stationary distribution). The regime is
    constant within a cycle and every cycle, a plain step (k = 0) included, advances the
    chain. G = 1 is i.i.d. acceptance (``mix`` defaults to [1.0]).
    """

    survival: FloatArray
    stay: float = 1.0
    mix: FloatArray = field(default_factory=_one_regime)

    def __post_init__(self) -> None:
        surv = np.asarray(self.survival, dtype=np.float64)
        mix = np.asarray(self.mix, dtype=np.float64)
        if surv.ndim != 2 or surv.shape[0] < 1 or surv.shape[1] < 1:
            raise ValueError(f"survival must be (G, K + 1) with G, K + 1 >= 1, got {surv.shape}")
        if not np.all(surv[:, 0] == 1.0):
            raise ValueError("survival[:, 0] must be 1 (every cycle accepts n >= 0 drafts)")
        if not (np.all(np.isfinite(surv)) and np.all(surv >= 0.0) and np.all(surv <= 1.0)):
            raise ValueError("survival probabilities must lie in [0, 1]")
        if np.any(np.diff(surv, axis=1) > 0.0):
            raise ValueError("survival must be non-increasing in j")
        if mix.shape != (surv.shape[0],):
            raise ValueError(
                f"mix must have one weight per regime ({surv.shape[0]}), got {mix.shape}"
            )
        if not (np.all(mix >= 0.0) and abs(float(mix.sum()) - 1.0) <= 1e-9):
            raise ValueError("mix must be non-negative and sum to 1")
        if not 0.0 <= self.stay <= 1.0:
            raise ValueError(f"stay must lie in [0, 1], got {self.stay}")
        object.__setattr__(self, "survival", surv)
        object.__setattr__(self, "mix", mix)

    @property
    def count(self) -> int:
        """G, the number of regimes."""
        return int(self.survival.shape[0])

    def transition(self) -> FloatArray:
        """P(g' | g) as a (G, G) array, rows g: stay on the diagonal plus a redraw."""
        return self.stay * np.eye(self.count) + (1.0 - self.stay) * self.mix[None, :]


@dataclass(frozen=True)
class PolicyExact:
    """Exact expectations of one sequence of T tokens under a policy (counts in cycles or
    draft tokens, time in microseconds)."""

    time_us: float  # E[speculative time of the sequence]
    cycles: float  # E[cycles]
    drafted: float  # E[drafted tokens]
    accepted: float  # E[accepted drafts] (before the tail cut)
    kept: float  # E[accepted drafts kept]: min(n, r) per cycle, after the cut to r tokens
    k_cycles: FloatArray  # (K_max + 1,) E[cycles that drafted k], k = 0..K_max; sums to cycles
    oracle_k: IntArray | None  # oracle only: (T + 1, G), k chosen at (r, regime); row 0 unused


def policy_exact(
    regimes: Regimes,
    cycle_us: FloatArray,
    tokens: int,
    *,
    policy: str,
    k: int = 1,
    k_max: int = 32,
    clamp: bool = False,
) -> PolicyExact:
    """Exact expectations of one sequence of ``tokens`` (T >= 1) tokens under ``policy``.

    ``cycle_us[r, k]`` (shape (T + 1, >= k_max + 1), microseconds, finite, row 0 unused) is
    the price of a cycle started with r tokens still needed that drafts k tokens; k = 0 is a
    plain decoding step (one token, no drafts). ``regimes.survival`` needs at least
    ``k_max + 1`` columns; columns beyond are ignored (as are those of ``cycle_us``).

    A cycle at r drafting d tokens that accepts n emits min(n + 1, r) tokens. Under
    ``clamp`` it drafts d = min(policy's k, r - 1), else d = the policy's k. ``k`` is the
    fixed K (0..k_max) of ``fixed`` and the starting K (1..k_max) of ``hf_heuristic``; the
    ``oracle`` ignores it. Time O(T x states x K_max) with one Python iteration per r
    (states: K_max for ``hf_heuristic``, 1 otherwise, times G). Raises ValueError on input
    that does not fit these ranges and shapes.
    """
    surv, prices = _checked(regimes, cycle_us, tokens, policy, k, k_max)
    dist = _outcomes(surv)
    if policy == "hf_heuristic":
        visits, drafted = _hf_visits(regimes, dist, tokens, k, clamp)
        return _expectations(regimes, surv, prices, visits, drafted, None)
    if policy == "oracle":
        choice = _oracle_choice(regimes, dist, prices, tokens, clamp)
    else:
        r = np.arange(tokens + 1)
        own = np.minimum(k, r - 1) if clamp else np.full(tokens + 1, k)
        choice = np.repeat(np.maximum(own, 0)[:, None], regimes.count, axis=1)
    visits = _table_visits(regimes, dist, choice)
    return _expectations(
        regimes,
        surv,
        prices,
        visits,
        choice[:, None, :],
        choice if policy == "oracle" else None,
    )


def _checked(
    regimes: Regimes, cycle_us: FloatArray, tokens: int, policy: str, k: int, k_max: int
) -> tuple[FloatArray, FloatArray]:
    """(survival, cycle prices) cut to k_max + 1 columns, after checking every argument."""
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}; known: {', '.join(POLICIES)}")
    if tokens < 1:
        raise ValueError(f"tokens must be >= 1, got {tokens}")
    if k_max < 0 or regimes.survival.shape[1] < k_max + 1:
        raise ValueError(
            f"k_max = {k_max} needs survival with >= k_max + 1 columns, "
            f"got {regimes.survival.shape[1]}"
        )
    if policy == "fixed" and not 0 <= k <= k_max:
        raise ValueError(f"fixed k must lie in 0..k_max = {k_max}, got {k}")
    if policy == "hf_heuristic" and not 1 <= k <= k_max:
        raise ValueError(f"hf_heuristic's starting k must lie in 1..k_max = {k_max}, got {k}")
    prices = np.asarray(cycle_us, dtype=np.float64)
    if prices.ndim != 2 or prices.shape[0] != tokens + 1 or prices.shape[1] < k_max + 1:
        raise ValueError(
            f"cycle_us must be (tokens + 1, >= k_max + 1) = ({tokens + 1}, >= {k_max + 1}), "
            f"got {prices.shape}"
        )
    prices = prices[:, : k_max + 1]
    if not np.all(np.isfinite(prices[1:])):
        raise ValueError("cycle_us must be finite")
    return regimes.survival[:, : k_max + 1], prices


def _outcomes(surv: FloatArray) -> FloatArray:
    """P(n = m | d, g) as a (G, K + 1, K + 1) array [g, d, m]: S[g, m] - S[g, m + 1] for
    m < d, S[g, d] at m = d, zero beyond."""
    regimes, width = surv.shape
    padded = np.concatenate([surv, np.zeros((regimes, 1))], axis=1)
    exact = padded[:, :-1] - padded[:, 1:]  # P(n = m) when more than m were drafted
    m = np.arange(width)
    d = m[:, None]
    return np.where(m < d, exact[:, None, :], np.where(m == d, surv[:, None, :], 0.0))


def _next_regime(regimes: Regimes, mass: FloatArray, axis: int) -> FloatArray:
    """Mass over the current regime (along ``axis``) carried to the next cycle's regime."""
    if regimes.count == 1 or regimes.stay == 1.0:
        return mass
    redrawn = np.sum(mass, axis=axis, keepdims=True)
    shape = [1] * mass.ndim
    shape[axis] = regimes.count
    return regimes.stay * mass + (1.0 - regimes.stay) * regimes.mix.reshape(shape) * redrawn


def _table_visits(regimes: Regimes, dist: FloatArray, choice: IntArray) -> FloatArray:
    """P(a sequence has a cycle starting at (r, g)), shape (T + 1, 1, G) (row 0 unused), when
    the draft count is ``choice[r, g]`` (already after the tail rule)."""
    tokens = choice.shape[0] - 1
    width = dist.shape[1]  # K_max + 1: outcomes n = 0..K_max
    # Row pad + r holds r; rows up to pad (r - 1 - n <= 0) collect finished sequences.
    pad = width
    visits = np.zeros((pad + tokens + 1, regimes.count))
    visits[pad + tokens] = regimes.mix
    regime = np.arange(regimes.count)
    for r in range(tokens, 0, -1):
        mass = visits[pad + r][:, None] * dist[regime, choice[r]]  # [g, n]
        moved = _next_regime(regimes, mass, axis=0)
        # Outcome n leads to row r - 1 - n: the window's rows, read backwards, are n = 0, 1, ...
        visits[pad + r - width : pad + r][::-1] += moved.T
    return visits[pad:, None, :]


def _hf_visits(
    regimes: Regimes, dist: FloatArray, tokens: int, start: int, clamp: bool
) -> tuple[FloatArray, IntArray]:
    """(P(a cycle starts at (r, K_c, g)), shape (T + 1, K_max, G); the drafted count at
    (r, K_c), shape (T + 1, K_max, 1)) under ``hf_heuristic`` (K_c = 1..K_max is index
    K_c - 1; row 0 unused)."""
    width = dist.shape[1]
    k_max = width - 1
    pad = width
    state = np.arange(k_max)  # K_c - 1
    r_all = np.arange(tokens + 1)[:, None]
    limit = np.maximum(r_all - 1, 0) if clamp else np.full_like(r_all, k_max)
    drafted = np.minimum(state + 1, limit)  # [r, K_c]
    grown = np.minimum(state + HF_GROW, k_max - 1)  # the state after a fully accepted cycle
    by_draft = dist.transpose(1, 0, 2)  # [d, g, n]
    visits = np.zeros((pad + tokens + 1, k_max, regimes.count))
    visits[pad + tokens, start - 1] = regimes.mix
    for r in range(tokens, 0, -1):
        here = visits[pad + r]  # [K_c, g]
        live = np.flatnonzero(here.any(axis=1))
        if live.size == 0:
            continue
        d = drafted[r, live]
        mass = here[live, :, None] * by_draft[d]  # [K_c, g, n]
        mass = _next_regime(regimes, mass, axis=1)
        # Fully accepted (n = d): to row r - 1 - d and state min(K_c + 2, K_max). Only rows
        # r - 1 - d >= 1 matter; there d = K_c (the clamp binds only when d = r - 1), so the
        # (row, state) pairs are distinct and one fancy-indexed add is exact.
        full = mass[np.arange(live.size), :, d]  # [K_c, g]
        mass[np.arange(live.size), :, d] = 0.0
        goes_on = r - 1 - d >= 1
        visits[pad + r - 1 - d[goes_on], grown[live[goes_on]]] += full[goes_on]
        # Any other outcome n: to row r - 1 - n and state max(1, K_c - 1).
        window = visits[pad + r - width : pad + r][::-1]  # [n, K_c, g], row n is r - 1 - n
        shrunk = np.maximum(live - HF_SHRINK, 0)
        if np.unique(shrunk).size == shrunk.size:
            window[:, shrunk] += mass.transpose(2, 0, 1)
        else:  # K_c = 1 and 2 both go to 1: add them one after the other
            window[:, shrunk[1:]] += mass[1:].transpose(2, 0, 1)
            window[:, shrunk[0]] += mass[0].T
    return visits[pad:], drafted[:, :, None]


def _oracle_choice(
    regimes: Regimes, dist: FloatArray, prices: FloatArray, tokens: int, clamp: bool
) -> IntArray:
    """k*(r, g), shape (T + 1, G) (row 0 zero), from the backward dynamic program over
    (r, regime); k <= r - 1 under the clamp rule, ties to the smallest k."""
    width = dist.shape[1]
    pad = width
    transition = regimes.transition()
    # ahead[pad + r, g] = E[V(r, g') | the current cycle is in regime g]; zero for r <= 0.
    ahead = np.zeros((pad + tokens + 1, regimes.count))
    choice = np.zeros((tokens + 1, regimes.count), dtype=np.int64)
    for r in range(1, tokens + 1):
        window = ahead[pad + r - width : pad + r][::-1]  # [n, g]: row n is r - 1 - n
        # remaining[g, k] = sum_n P(n | k, g) ahead(r - 1 - n, g); one row sum per (g, k),
        # not a BLAS product: two k with the same outcomes get the same bits, a true tie.
        remaining = np.sum(dist * window.T[:, None, :], axis=2)
        allowed = min(width, r) if clamp else width
        totals = prices[r, None, :allowed] + remaining[:, :allowed]
        best = np.argmin(totals, axis=1)  # the first minimum: the smallest k
        choice[r] = best
        value = totals[np.arange(regimes.count), best]
        ahead[pad + r] = transition @ value
    return choice


def _expectations(
    regimes: Regimes,
    surv: FloatArray,
    prices: FloatArray,
    visits: FloatArray,
    drafted: IntArray,
    oracle_k: IntArray | None,
) -> PolicyExact:
    """The expectations of a sequence from its visit probabilities ``visits[r, s, g]`` and
    drafted counts ``drafted[r, s, g]`` (broadcast against visits; row 0 unused)."""
    tokens = visits.shape[0] - 1
    width = surv.shape[1]
    p = visits[1:]
    d = np.broadcast_to(drafted[1:], p.shape)
    r = np.arange(1, tokens + 1)[:, None, None]
    # E[n | d, g] = sum_{j=1..d} S[g, j]; E[min(n, r) | d, g] the same sum up to min(d, r).
    mean_accepted = np.concatenate(
        [np.zeros((regimes.count, 1)), np.cumsum(surv[:, 1:], axis=1)], axis=1
    )
    regime = np.arange(regimes.count)
    price = np.take_along_axis(prices[1:], d.reshape(tokens, -1), axis=1).reshape(p.shape)
    k_cycles = np.asarray(
        np.bincount(d.ravel(), weights=p.ravel(), minlength=width), dtype=np.float64
    )
    return PolicyExact(
        time_us=float(np.sum(p * price)),
        cycles=float(np.sum(p)),
        drafted=float(np.sum(p * d)),
        accepted=float(np.sum(p * mean_accepted[regime, d])),
        kept=float(np.sum(p * mean_accepted[regime, np.minimum(d, r)])),
        k_cycles=k_cycles,
        oracle_k=oracle_k,
    )
