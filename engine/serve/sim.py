"""One run of the serving simulator: a server stepping over time (docs/model.md, "Serving
under load").

Each step, like vLLM V1's scheduler: the running requests first (a decoding request needs
its k + 1 tokens, a request still in prefill its next chunk), then waiting requests in
arrival order (FCFS) while fewer than ``max_num_seqs`` run, the step has tokens left of
``max_num_batched_tokens`` and the KV cache has room. When the running requests' tokens do
not fit in the KV cache, the most recently admitted one is preempted: its KV freed, it
waits at the front of the queue and computes its prompt and output so far again (its cost
is that prefill). A step is priced by :class:`engine.serve.pricing.Pricer` at the batch's
composition, plus speculation's fixed cost (``cost.spec_overhead_us``) on every step of a
policy that speculates.

Each decoding request's accepted prefix is drawn from its own acceptance regime: one
uniform per request per step through the survival of its regime, from a counter-based
generator keyed by (seed, replication, request, the request's step), so every policy
draws the same numbers for the same request (common random numbers).

Runs of pure decode steps (no prefill, nobody admissible, a policy whose choice holds
while the batch does) are simulated as one segment: the draws, contexts and prices of up
to :data:`SEGMENT_MAX` steps at once, cut at the first finish, arrival, tail or full KV
cache. A segment gives what its steps would one by one (tests/engine/serve).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.serve.draws import uniforms
from engine.serve.metrics import Summary
from engine.serve.policies import POLICIES
from engine.serve.run_setup import set_up
from engine.serve.server import Server
from engine.serve.state import _Run, _Running, _Waiting
from engine.serve.workload import Requests

SEGMENT_MAX = 512
# A finished request as a record.
RECORD_FIELDS = ("request", "arrival_s", "first_token_s", "last_token_s", "output", "chunks")


@dataclass
class Outcome:
    """What a run gives: the summary of its measured requests, and its last time."""

    summary: Summary
    end_s: float


def simulate_load(
    config: Any,
    cost: Any,
    requests: Requests,
    policy: str,
    server: Server,
    *,
    closed: int | None = None,
    seed: int = 0,
    replication: int = 0,
    warmup: int = 0,
    slo_ttft_s: float = math.inf,
    slo_tpot_s: float = math.inf,
    on_finish: Callable[[np.ndarray], None] | None = None,
    check: Callable[[int], None] | None = None,
    segments: bool = True,
    compiled: bool = True,
) -> Outcome:
    """Serve ``requests`` with ``policy`` (a name of :data:`POLICIES`) on ``server``:
    ``closed`` requests in the system at once (a closed loop; arrivals follow finishes),
    else at their arrival times. Requests before index ``warmup`` are left out of the
    summary. ``on_finish(rows)`` receives each step's finished requests as rows of
    :data:`RECORD_FIELDS` (stream them: the run keeps none); ``check(done)`` is called as
    requests finish (it may raise to stop). A policy that gives each decoder a k by its
    rank and their count (``by_count``; with one regime, if it reads them) runs the compiled loop
    (engine.serve.stepper) unless ``compiled=False``; ``segments=False`` steps one at a
    time."""
    r = set_up(
        config, cost, requests, policy, server, seed=seed, replication=replication, warmup=warmup
    )
    # Segments need a choice that holds while the batch does, and one regime (a hidden
    # regime moves step by step).
    summary = Summary()
    chosen = POLICIES[policy]
    if compiled and chosen.by_count and (r.survival.shape[0] == 1 or not chosen.reads_regimes):
        from engine.serve.compiled import run_compiled

        end = run_compiled(r, closed, summary, (slo_ttft_s, slo_tpot_s), on_finish, check)
        summary.flush()
        return Outcome(summary, end)
    # A model-free proposer's drafts are drawn step by step: no segments.
    steady = POLICIES[policy].steady and r.survival.shape[0] == 1 and not r.model_free
    n = len(requests)
    run = _Running()
    waiting: deque[_Waiting] = deque()
    # An open loop's requests arrive at their times; a closed loop's first ones at 0, the
    # others as requests finish (a waiting request holds its arrival: nothing is kept by
    # request).
    arrival_of = requests.arrival_s
    next_rid = 0
    if closed is not None:
        for _ in range(min(closed, n)):
            waiting.append(_Waiting(next_rid, arrival=0.0))
            next_rid += 1
    t, finished, last_dt = 0.0, 0, 0.0
    while finished < n:
        if closed is None:
            while next_rid < n and arrival_of[next_rid] <= t:
                waiting.append(_Waiting(next_rid, arrival=float(arrival_of[next_rid])))
                next_rid += 1
            if not len(run) and not waiting:
                t = float(arrival_of[next_rid])
                continue
        next_arrival = float(arrival_of[next_rid]) if closed is None and next_rid < n else math.inf
        moved = None
        if (
            segments
            and steady
            and len(run)
            and not run.prefill.any()
            and not np.isnan(run.first).any()
        ):
            k = r.choose(run, np.ones(len(run), dtype=bool))  # asked once for both
            if not _admissible(r, run, waiting, k):
                moved = _segment(r, run, k, summary, t, next_arrival, last_dt)
        if moved is None:
            moved = _step(r, run, waiting, summary, t)
            if moved is None:  # nothing could run
                if closed is None and next_rid < n:
                    t = max(t, next_arrival)
                    continue
                raise RuntimeError("no request could be scheduled (the KV cache is too small)")
        t_new, steps = moved
        last_dt = (t_new - t) / max(steps, 1)
        t = t_new
        # Finished requests leave; a closed loop's next request arrives now.
        done = run.done >= run.out
        if done.any():
            _finish(r, run, done, summary, t, slo_ttft_s, slo_tpot_s, on_finish)
            count = int(done.sum())
            finished += count
            run.keep(~done)
            if closed is not None:
                for _ in range(count):
                    if next_rid < n:
                        waiting.append(_Waiting(next_rid, arrival=t))
                        next_rid += 1
            if check is not None:
                check(finished)
    summary.flush()
    return Outcome(summary, t)


def _admissible(r: _Run, run: _Running, waiting: deque[_Waiting], k: np.ndarray) -> bool:
    """Whether the head of the queue could join the batch now, whose decoders draft ``k``."""
    if not waiting or len(run) >= r.server.max_num_seqs:
        return False
    if math.isinf(r.capacity):
        return True
    head = waiting[0]
    context = int(r.requests.prompt[head.rid]) + head.done
    first = min(max(context, 1), r.server.max_num_batched_tokens) if r.server.prefill else context
    return float(run.ctx.sum() + (k + 1).sum()) + first <= r.capacity


def _finish(
    r: _Run,
    run: _Running,
    done: np.ndarray,
    summary: Summary,
    t: float,
    slo_ttft_s: float,
    slo_tpot_s: float,
    on_finish: Callable[[np.ndarray], None] | None,
) -> None:
    measured = done & (run.rid >= r.warmup)
    summary.add_requests(
        run.arrival[measured],
        run.first[measured],
        np.full(int(measured.sum()), t),
        run.out[measured],
        run.chunks[measured],
        slo_ttft_s,
        slo_tpot_s,
    )
    if on_finish is not None:
        count = int(done.sum())
        columns = (run.rid, run.arrival, run.first, np.full(len(run), t), run.out, run.chunks)
        rows = np.column_stack([c[done] for c in columns]).astype(np.float64)
        assert rows.shape == (count, len(RECORD_FIELDS))
        on_finish(rows)


def _segment(
    r: _Run,
    run: _Running,
    k: np.ndarray,
    summary: Summary,
    t: float,
    next_arrival: float,
    last_dt: float,
) -> tuple[float, int] | None:
    """Up to :data:`SEGMENT_MAX` decode steps at once (module docstring), the decoders
    drafting ``k``; None if not even one can run this way (a clamped tail, a full KV
    cache)."""
    b = len(run)
    rows = np.arange(b)
    need = int((k + 1).sum())
    if need > r.server.max_num_batched_tokens:
        return None
    remaining = run.out - run.done
    # How many steps to draw: to the first finish or arrival, if the last step's time holds.
    per_step = 1.0 + r.survival[0, 1 : int(k.max()) + 1].sum() if k.max() > 0 else 1.0
    guess = float(remaining.min()) / per_step
    if math.isfinite(next_arrival) and last_dt > 0:
        guess = min(guess, (next_arrival - t) / last_dt)
    steps = int(min(SEGMENT_MAX, max(1, guess + 4)))
    accepted = r.accepted(run, rows, k, steps)
    gains = accepted + 1
    after = np.cumsum(gains, axis=1)  # tokens after each step, before the output's end
    before = after - gains
    limit = steps
    finishing = after >= remaining[:, None]
    if finishing.any():
        limit = min(limit, int(np.argmax(finishing.any(axis=0))) + 1)
    if r.config.tail != "full":  # a step whose draft would be clamped runs alone
        clamped = (remaining[:, None] - before < k[:, None] + 1) & (k[:, None] > 0)
        if clamped.any():
            limit = min(limit, int(np.argmax(clamped.any(axis=0))))
    contexts = run.ctx[:, None] + before  # each decoder's context at each step's start
    if math.isfinite(r.capacity):
        over = contexts.sum(axis=0) + need > r.capacity
        if over.any():
            limit = min(limit, int(np.argmax(over)))
    if limit < 1:
        return None
    step = POLICIES[r.policy].context_step
    if step:  # a choice by context holds while the mean context stays in its step
        buckets = np.floor(contexts.sum(axis=0) / b / step)
        moved = buckets != buckets[0]
        if moved[:limit].any():
            limit = int(np.argmax(moved))
    contexts = contexts[:, :limit]
    means = contexts.mean(axis=0)
    micros = r.pricer.step(k, contexts, need, b, means, r.tax_us if r.spec_on else 0.0)
    ends = t + np.cumsum(micros * 1e-6)
    if math.isfinite(next_arrival):
        reached = ends >= next_arrival
        if reached.any():
            limit = int(np.argmax(reached)) + 1
            ends = ends[:limit]
            micros = micros[:limit]
            contexts = contexts[:, :limit]
    gained = np.minimum(after[:, limit - 1], remaining)
    dts = micros * 1e-6
    measured = run.rid >= r.warmup
    summary.steps += limit
    summary.busy_s += float(dts.sum())
    summary.batch_time += b * float(dts.sum())
    if math.isfinite(r.capacity):
        held = np.minimum(run.ctx[:, None] + after[:, :limit], (run.ctx + remaining)[:, None])
        summary.kv_time += float((held.sum(axis=0) / r.capacity * dts).sum())
    summary.spec_tokens += int(k[measured].sum()) * limit
    summary.accepted_tokens += int(accepted[measured, :limit].sum())
    run.done = run.done + gained
    run.ctx = run.ctx + gained
    run.chunks = run.chunks + limit
    run.counter = run.counter + limit
    return float(ends[-1]), limit


def _step(
    r: _Run, run: _Running, waiting: deque[_Waiting], summary: Summary, t: float
) -> tuple[float, int] | None:
    """One step of the scheduler (module docstring); None if nothing could be scheduled."""
    server = r.server
    budget = server.max_num_batched_tokens
    decoding = run.prefill == 0
    k, looked = r.propose(run, decoding, r.choose(run, decoding))
    k = _fit_budget(k, decoding, budget)
    need = np.where(decoding, k + 1, 0)
    left = budget - int(need.sum())
    chunk = np.zeros(len(run), dtype=np.int64)
    for i in np.flatnonzero(~decoding):
        chunk[i] = min(int(run.prefill[i]), max(left, 0))
        left -= int(chunk[i])
    # The KV cache: preempt the latest running requests until this step fits.
    while len(run) and float(run.ctx.sum() + need.sum() + chunk.sum()) > r.capacity:
        last = len(run) - 1
        waiting.appendleft(
            _Waiting(
                int(run.rid[last]),
                int(run.done[last]),
                float(run.first[last]),
                int(run.chunks[last]),
                int(run.regime[last]),
                int(run.counter[last]),
                float(run.arrival[last]),
            )
        )
        summary.preemptions += int(run.rid[last] >= r.warmup)
        keep = np.arange(len(run)) < last
        run.keep(keep)
        k, need, chunk, decoding = k[keep], need[keep], chunk[keep], decoding[keep]
        looked = looked[keep]
    # Admit waiting requests (FCFS) while there is room.
    used = float(run.ctx.sum() + need.sum() + chunk.sum())
    admitted_decoding = False
    while waiting and len(run) < server.max_num_seqs and left > 0:
        head = waiting[0]
        # Its prompt and, after a preemption, its output so far (one token at least);
        # without prefill (the reduction tests) it starts decoding with them cached.
        context = int(r.requests.prompt[head.rid]) + head.done
        prefill = max(context, 1) if server.prefill else 0
        take = min(prefill, left)
        if used + (take if prefill else context + 1) > r.capacity:
            break
        waiting.popleft()
        if head.regime < 0:
            head.regime = r.regime_of(head.rid)
        run.add(
            head,
            prefill,
            0 if prefill else context,
            int(r.requests.output[head.rid]),
            head.arrival,
        )
        k, need = np.append(k, 0), np.append(need, 0 if prefill else 1)
        looked = np.append(looked, False)
        chunk, decoding = np.append(chunk, take), np.append(decoding, not prefill)
        admitted_decoding |= not prefill
        left -= take if prefill else 1
        used += take if prefill else context + 1
    if not len(run):
        return None
    if admitted_decoding:  # straight into decoding: the policy picks for the batch again
        k, looked = r.propose(run, decoding, r.choose(run, decoding))
        k = _fit_budget(k, decoding, budget)
        need = np.where(decoding, k + 1, 0)
    # Price the step.
    batch = len(run)
    contexts = run.ctx.astype(np.float64)
    tokens = int(need.sum() + chunk.sum())
    tax = r.tax_us if r.spec_on else 0.0
    drafting, lookup = k[decoding], 0.0
    if r.model_free:  # no draft pass; the speculation tax on a step that drafted
        tax = tax if (drafting > 0).any() else 0.0
        drafting = np.zeros_like(drafting)
        lookup = int(looked.sum()) * r.lookup_us
    micros = r.pricer.step(
        drafting,
        contexts[decoding][:, None],
        tokens,
        batch,
        np.array([contexts.mean()]),
        tax,
        lookup,
    )[0]
    dt = float(micros) * 1e-6
    gained = np.zeros(batch, dtype=np.int64)
    dec = np.flatnonzero(decoding)
    if dec.size:
        accepted = r.accepted(run, dec, k[dec], 1)[:, 0]
        gained[dec] = np.minimum(accepted + 1, run.out[dec] - run.done[dec])
        counted = run.rid[dec] >= r.warmup
        summary.spec_tokens += int(k[dec][counted].sum())
        summary.accepted_tokens += int(accepted[counted].sum())
        if r.stay < 1.0:  # the regime moves on, or stays, per request
            move = uniforms(r.key, run.rid[dec], run.counter[dec], 2) >= r.stay
            if move.any():
                fresh = uniforms(r.key, run.rid[dec][move], run.counter[dec][move], 3)
                run.regime[dec[move]] = np.searchsorted(r.mix_cdf, fresh, side="right")
        run.counter[dec] += 1
    # Prefill: a request whose prompt is done gives its next token at the step's end.
    pre = np.flatnonzero(chunk > 0)
    run.prefill[pre] -= chunk[pre]
    run.ctx[pre] += chunk[pre]
    gained[pre[run.prefill[pre] == 0]] = 1
    run.ctx[dec] += gained[dec]
    t += dt
    producing = gained > 0
    run.done += gained
    run.chunks += producing
    run.first = np.where(producing & np.isnan(run.first), t, run.first)
    summary.steps += 1
    summary.busy_s += dt
    summary.batch_time += batch * dt
    if math.isfinite(r.capacity):
        summary.kv_time += float(run.ctx.sum()) / r.capacity * dt
    return t, 1


def _fit_budget(k: np.ndarray, decoding: np.ndarray, budget: int) -> np.ndarray:
    """Drafts cut, longest first, until the decodes' k + 1 tokens fit in ``budget`` (each
    keeps its one token: ``max_num_batched_tokens >= max_num_seqs``)."""
    k = k.copy()
    while int(np.where(decoding, k + 1, 0).sum()) > budget and (k[decoding] > 0).any():
        k[int(np.argmax(np.where(decoding, k, -1)))] -= 1
    return k
