"""The serving simulator's step loop, compiled (numba): the scheduler of
:mod:`engine.serve.sim`, one step at a time, for a policy that gives each decoder a k by
its rank and their count (:attr:`engine.serve.policies.LoadPolicy.by_count`:
``off``, ``fixed``, ``schedule`` and, with one acceptance regime, ``goodput`` and
``budget``).

It gives, number for number, what ``simulate_load(..., segments=False)`` gives: the same
scheduler rules, the same draws (:mod:`engine.serve.draws`, bit for bit) and the same
prices. Prices stay with :class:`engine.serve.pricing.Pricer`: the loop holds the affine
lines it has been given, keyed by pass, width and batch, and stops to ask for one it has
not (:data:`NEED_LINE`), or for a whole step's price where a cost model is not affine in
the context (:data:`NEED_PRICE`). It asks for the policy's k the same way, once for each
count of decoders (and mean context's step, for a policy that reads it). It also stops
when finished requests fill a block (:data:`FLUSH`), so the caller adds them up, streams
them and may cancel, and resumes where it stopped: all of its state is in the arrays it
is given. Its memory is the running requests' (``max_num_seqs``), whatever the number of
requests.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from engine.serve.draws import _GOLDEN, _M1, _M2, _STEP

# Why the loop stopped.
DONE, NEED_LINE, NEED_PRICE, FLUSH, STUCK, NEED_NEXT, NEED_FRESH = range(7)
# Integer state.
NEXT, FRESH, FINISHED, NRUN, NPRE, STEPS, PREEMPT, SPEC, ACC, NFIN = range(10)
PHASE, ASK_KEY, HAVE_PRICE = 10, 11, 12
# The requests' windows: the arrivals from NEXT_BASE (NEXT_LEN of them), and the arrivals,
# prompts and outputs from FRESH_BASE (FRESH_LEN).
NEXT_BASE, NEXT_LEN, FRESH_BASE, FRESH_LEN = 13, 14, 15, 16
INT_STATE = 17
# Float state.
TIME, BUSY, BATCH_TIME, KV_TIME, PRICE = range(5)
FLOAT_STATE = 5
# Running requests' integer columns, and the preempted requests' (a stack).
# LOOK: 1 when a model-free proposer's decoder looked up this step (its policy's k > 0).
RID, PREFILL, CTX, DONE_TOKENS, OUT, CHUNKS, REGIME, COUNTER, K, CHUNK, PROMPT, LOOK = range(12)
RUN_COLUMNS = 12
# A finished request's row: RECORD_FIELDS of engine.serve.sim.
ROW_COLUMNS = 6
FLUSH_ROWS = 1024
# A key in the lines: kind (0 verify: width = the step's tokens; 1 draft: width = draft
# passes; 2 the policy's k, its line (base, extra): the first extra decoders draft base + 1,
# the others base; width = the mean context's step), width and batch (decoders for a k).
BATCH_BITS = 13  # max_num_seqs <= 4096 < 2**13
WIDTH_BITS = 24


@njit("int64(int64, int64, int64)", cache=True)
def line_key(kind: int, width: int, batch: int) -> int:
    return (kind << (WIDTH_BITS + BATCH_BITS)) | (width << BATCH_BITS) | batch


def key_parts(key: int) -> tuple[int, int, int]:
    return (
        key >> (WIDTH_BITS + BATCH_BITS),
        (key >> BATCH_BITS) & ((1 << WIDTH_BITS) - 1),
        key & ((1 << BATCH_BITS) - 1),
    )


@njit(cache=True, inline="always")
def _mix(x: np.uint64) -> np.uint64:
    x = (x ^ (x >> np.uint64(30))) * _M1
    x = (x ^ (x >> np.uint64(27))) * _M2
    return x ^ (x >> np.uint64(31))


@njit(cache=True, inline="always")
def _uniform(key: np.uint64, rid: np.int64, counter: np.int64, stream: np.int64) -> float:
    x = key ^ (np.uint64(rid) * _GOLDEN)
    x = _mix(x ^ (np.uint64(counter) * _STEP + np.uint64(stream)))
    x = _mix(x)
    return float(x >> np.uint64(11)) * 2.0**-53


@njit(cache=True, inline="always")
def _count_le(cdf: np.ndarray, u: float) -> int:
    """``searchsorted(cdf, u, side="right")``."""
    n = 0
    while n < cdf.size and cdf[n] <= u:
        n += 1
    return n


@njit(cache=True)
def _choose(run, n, keys, values, ints, context_step, tail_full, budget):  # type: ignore[no-untyped-def]
    """:func:`_choose_drafts` for a draft model (no look-ups)."""
    no_proposer = (False, np.uint64(0), 1.0, np.ones(1))
    return _choose_drafts(run, n, keys, values, ints, context_step, tail_full, budget, no_proposer)


@njit(cache=True)
def _choose_drafts(run, n, keys, values, ints, context_step, tail_full, budget, proposer):  # type: ignore[no-untyped-def]
    """The policy's k for the decoders (clamped at the tail), a model-free proposer's
    drafts for it (``_Run.propose``; ``proposer``: (model_free, key, hit, lengths)), cut
    to the step's budget longest first, as ``_Run.choose`` and ``_fit_budget`` do; False
    with ASK_KEY set when the policy's choice for this count of decoders (and mean
    context) is not known yet."""
    model_free, key, hit, lengths = proposer
    decoders, dsum = 0, 0
    for i in range(n):
        if run[i, PREFILL] == 0:
            decoders += 1
            dsum += run[i, CTX]
    base, extra = 0, 0
    if decoders:
        bucket = int(np.floor(dsum / decoders / context_step)) if context_step else 0
        ints[ASK_KEY] = -1
        a, b = _line(keys, values, line_key(2, bucket, decoders), ints)
        if ints[ASK_KEY] >= 0:
            return False
        base, extra = int(a), int(b)
    total, rank = 0, 0
    for i in range(n):
        k, look = 0, 0
        if run[i, PREFILL] == 0:
            k = base + (rank < extra)
            rank += 1
            if not tail_full:
                k = min(k, run[i, OUT] - run[i, DONE_TOKENS] - 1)
            k = max(k, 0)
            if model_free and k > 0:
                look = 1
                rid, counter = run[i, RID], run[i, COUNTER]
                if _uniform(key, rid, counter, 5) < hit:
                    if lengths.size > 1:
                        u = _uniform(key, rid, counter, 6)
                        longest = 0
                        for j in range(1, lengths.size):
                            longest += u < lengths[j]
                        k = min(k, longest)
                else:
                    k = 0
            total += k + 1
        run[i, K] = k
        run[i, LOOK] = look
    # Cutting the first longest draft by one until the tokens fit cuts the longest level
    # in admission order, then the next level.
    while total > budget:
        top = 0
        for i in range(n):
            if run[i, PREFILL] == 0 and run[i, K] > top:
                top = run[i, K]
        if top == 0:
            break
        for i in range(n):
            if total <= budget:
                break
            if run[i, PREFILL] == 0 and run[i, K] == top:
                run[i, K] -= 1
                total -= 1
    return True


@njit(cache=True, inline="always")
def _slot(keys, key):  # type: ignore[no-untyped-def]
    """Where ``key`` is in the open-addressing table ``keys``, or the empty slot it takes."""
    mask = keys.size - 1
    h = int((np.uint64(key) * _GOLDEN) >> np.uint64(40)) & mask
    while keys[h] != key and keys[h] != -1:
        h = (h + 1) & mask
    return h


@njit(cache=True)
def put_line(keys, values, key, a, s):  # type: ignore[no-untyped-def]
    h = _slot(keys, key)
    keys[h] = key
    values[h, 0] = a
    values[h, 1] = s


@njit(cache=True)
def _line(keys, values, key, ints):  # type: ignore[no-untyped-def]
    """A pass's line, or a stop to ask for it (nan: not affine, priced per step)."""
    h = _slot(keys, key)
    if keys[h] == key:
        return values[h, 0], values[h, 1]
    ints[ASK_KEY] = key
    return np.nan, np.nan


@njit(cache=True)
def _price(run, n, keys, values, ints, parallel, tax, model_free, lookup):  # type: ignore[no-untyped-def]
    """The step's microseconds (Pricer.step), or -1.0 with ASK_KEY set (a line to give),
    or -2.0 (a step to price). A model-free proposer's step has no draft pass, pays the
    tax only if some decoder drafted, and ``lookup`` for each decoder that looked up."""
    ints[ASK_KEY] = -1
    direct = False
    ctx_sum, tokens, decoders, longest, shortest, looks = 0, 0, 0, 0, 1 << 62, 0
    for i in range(n):
        ctx_sum += run[i, CTX]
        tokens += run[i, CHUNK]
        if run[i, PREFILL] == 0:
            tokens += run[i, K] + 1
            decoders += 1
            longest = max(longest, run[i, K])
            shortest = min(shortest, run[i, K])
            looks += run[i, LOOK]
    draft = 0.0
    looked = 0.0
    if model_free:
        if longest == 0:
            tax = 0.0
        longest = 0  # no draft pass
        looked = looks * lookup
    if decoders and longest > 0:
        if parallel or shortest == longest:
            dsum = 0
            for i in range(n):
                if run[i, PREFILL] == 0:
                    dsum += run[i, CTX]
            a, s = _line(keys, values, line_key(1, longest, decoders), ints)
            if ints[ASK_KEY] >= 0:
                return -1.0
            draft = a + s * (dsum / decoders)
            direct |= np.isnan(a)
        else:
            done = 0
            while True:
                level = longest + 1  # the next level above done
                for i in range(n):
                    if run[i, PREFILL] == 0 and done < run[i, K] < level:
                        level = run[i, K]
                if level > longest:
                    break
                rows, dsum = 0, 0
                for i in range(n):
                    if run[i, PREFILL] == 0 and run[i, K] >= level:
                        rows += 1
                        dsum += run[i, CTX]
                a, s = _line(keys, values, line_key(1, level - done, rows), ints)
                if ints[ASK_KEY] >= 0:
                    return -1.0
                draft = draft + (a + s * (dsum / rows))
                direct |= np.isnan(a)
                done = level
    a, s = _line(keys, values, line_key(0, tokens, n), ints)
    if ints[ASK_KEY] >= 0:
        return -1.0
    if direct or np.isnan(a):
        return -2.0
    total = draft + (a + s * (ctx_sum / n)) + tax
    if looked != 0.0:
        total = total + looked
    return total


@njit(cache=True)
def step_loop(  # type: ignore[no-untyped-def]
    ints,
    floats,
    run,
    first,
    arrival_run,
    stack,
    stack_first,
    stack_arrival,
    rows,
    ring,
    next_arrival,
    fresh_arrival,
    fresh_prompt,
    fresh_output,
    n_req,
    context_step,
    survival,
    mix_cdf,
    keys,
    values,
    key,
    stay,
    capacity,
    tax,
    warmup,
    max_num_seqs,
    budget,
    prefill_on,
    tail_full,
    parallel,
    closed,
    proposer,
    lookup,
):
    """Run until every request has finished (DONE) or a stop (module docstring). The
    requests are read through windows the caller moves on when asked (NEED_NEXT: the next
    arrivals; NEED_FRESH: the fresh requests this step may admit), so that none is held
    whole; ``ring``: a closed loop's waiting requests' arrivals (request ``i`` at
    ``i % size``: at most ``closed`` wait); ``proposer``: (model_free, key, hit rate, P(L
    >= j) j = 0..k_cap or one value: L is the cap) and ``lookup`` its microseconds a
    look-up."""
    kcap = survival.shape[1] - 1
    while ints[FINISHED] < n_req:
        if ints[PHASE] == 0:
            t = floats[TIME]
            if not closed:
                while ints[NEXT] < n_req:
                    j = ints[NEXT] - ints[NEXT_BASE]
                    if j >= ints[NEXT_LEN]:
                        return NEED_NEXT
                    if next_arrival[j] > t:
                        break
                    ints[NEXT] += 1
                waiting = ints[NPRE] > 0 or ints[FRESH] < ints[NEXT]
                if ints[NRUN] == 0 and not waiting:
                    floats[TIME] = next_arrival[ints[NEXT] - ints[NEXT_BASE]]
                    continue
            # The fresh requests this step may admit are in their window.
            if ints[FRESH_BASE] + ints[FRESH_LEN] < min(ints[NEXT], ints[FRESH] + max_num_seqs):
                return NEED_FRESH
            # The step's composition: k, prefill chunks, preemption, admission (_step).
            n = ints[NRUN]
            if not _choose_drafts(
                run, n, keys, values, ints, context_step, tail_full, budget, proposer
            ):
                return NEED_LINE
            need, ctx_sum, chunk_sum = 0, 0, 0
            for i in range(n):
                ctx_sum += run[i, CTX]
                if run[i, PREFILL] == 0:
                    need += run[i, K] + 1
            left = budget - need
            for i in range(n):
                run[i, CHUNK] = 0
                if run[i, PREFILL] > 0:
                    run[i, CHUNK] = min(run[i, PREFILL], max(left, 0))
                    left -= run[i, CHUNK]
                    chunk_sum += run[i, CHUNK]
            while n > 0 and float(ctx_sum + need + chunk_sum) > capacity:
                last = n - 1
                p = ints[NPRE]
                for c in range(RUN_COLUMNS):
                    stack[p, c] = run[last, c]
                stack_first[p] = first[last]
                stack_arrival[p] = arrival_run[last]
                ints[NPRE] = p + 1
                ints[PREEMPT] += run[last, RID] >= warmup
                ctx_sum -= run[last, CTX]
                chunk_sum -= run[last, CHUNK]
                if run[last, PREFILL] == 0:
                    need -= run[last, K] + 1
                n = last
            used = float(ctx_sum + need + chunk_sum)
            admitted_decoding = False
            while (ints[NPRE] > 0 or ints[FRESH] < ints[NEXT]) and n < max_num_seqs and left > 0:
                if ints[NPRE] > 0:
                    p = ints[NPRE] - 1
                    rid, done_tokens, prompt = (
                        stack[p, RID],
                        stack[p, DONE_TOKENS],
                        stack[p, PROMPT],
                    )
                else:
                    rid, done_tokens = ints[FRESH], 0
                    prompt = fresh_prompt[rid - ints[FRESH_BASE]]
                context = prompt + done_tokens
                pre = max(context, 1) if prefill_on else 0
                take = min(pre, left)
                if used + (take if pre else context + 1) > capacity:
                    break
                if ints[NPRE] > 0:
                    for c in range(RUN_COLUMNS):
                        run[n, c] = stack[p, c]
                    first[n] = stack_first[p]
                    arrival_run[n] = stack_arrival[p]
                    ints[NPRE] = p
                else:
                    w = rid - ints[FRESH_BASE]
                    ints[FRESH] += 1
                    run[n, RID], run[n, DONE_TOKENS], run[n, CHUNKS] = rid, 0, 0
                    run[n, PROMPT], run[n, OUT] = prompt, fresh_output[w]
                    run[n, COUNTER] = 0
                    regime = 0
                    if mix_cdf.size > 1:
                        regime = _count_le(mix_cdf, _uniform(key, rid, 0, 4))
                    run[n, REGIME] = regime
                    first[n] = np.nan
                    arrival_run[n] = ring[rid % ring.size] if closed else fresh_arrival[w]
                run[n, PREFILL] = pre
                run[n, CTX] = 0 if pre else context
                run[n, K] = 0
                run[n, CHUNK] = take
                admitted_decoding |= pre == 0
                left -= take if pre else 1
                used += take if pre else context + 1
                n += 1
            ints[NRUN] = n
            if n == 0:
                if not closed and ints[NEXT] < n_req:
                    floats[TIME] = max(t, next_arrival[ints[NEXT] - ints[NEXT_BASE]])
                    continue
                return STUCK
            ints[PHASE] = 2 if admitted_decoding else 1
        n = ints[NRUN]
        if ints[PHASE] == 2:  # requests went straight into decoding: choose again
            if not _choose_drafts(
                run, n, keys, values, ints, context_step, tail_full, budget, proposer
            ):
                return NEED_LINE
            ints[PHASE] = 1
        # Price the step (a stop here resumes at the price).
        if ints[HAVE_PRICE]:
            micros = floats[PRICE]
            ints[HAVE_PRICE] = 0
        else:
            micros = _price(run, n, keys, values, ints, parallel, tax, proposer[0], lookup)
            if micros == -1.0:
                return NEED_LINE
            if micros == -2.0:
                return NEED_PRICE
        ints[PHASE] = 0
        dt = micros * 1e-6
        # Draws, tokens, times.
        t = floats[TIME] + dt
        ctx_total = 0
        for i in range(n):
            gained = 0
            if run[i, PREFILL] == 0:
                rid, counter, k = run[i, RID], run[i, COUNTER], run[i, K]
                u = _uniform(key, rid, counter, 1)
                g = run[i, REGIME]
                hits = 0
                for j in range(1, kcap + 1):
                    hits += u < survival[g, j]
                accepted = min(hits, k)
                gained = min(accepted + 1, run[i, OUT] - run[i, DONE_TOKENS])
                if rid >= warmup:
                    ints[SPEC] += k
                    ints[ACC] += accepted
                if stay < 1.0 and _uniform(key, rid, counter, 2) >= stay:
                    run[i, REGIME] = _count_le(mix_cdf, _uniform(key, rid, counter, 3))
                run[i, COUNTER] = counter + 1
                run[i, CTX] += gained
            elif run[i, CHUNK] > 0:
                run[i, PREFILL] -= run[i, CHUNK]
                run[i, CTX] += run[i, CHUNK]
                if run[i, PREFILL] == 0:
                    gained = 1
            if gained > 0:
                run[i, DONE_TOKENS] += gained
                run[i, CHUNKS] += 1
                if np.isnan(first[i]):
                    first[i] = t
            ctx_total += run[i, CTX]
        floats[TIME] = t
        ints[STEPS] += 1
        floats[BUSY] += dt
        floats[BATCH_TIME] += n * dt
        if capacity < np.inf:
            floats[KV_TIME] += float(ctx_total) / capacity * dt
        # Finished requests leave (their rows kept for the caller); a closed loop's next
        # request arrives now.
        kept = 0
        for i in range(n):
            if run[i, DONE_TOKENS] >= run[i, OUT]:
                row = ints[NFIN]
                rows[row, 0] = run[i, RID]
                rows[row, 1] = arrival_run[i]
                rows[row, 2] = first[i]
                rows[row, 3] = t
                rows[row, 4] = run[i, OUT]
                rows[row, 5] = run[i, CHUNKS]
                ints[NFIN] = row + 1
                ints[FINISHED] += 1
                if closed and ints[NEXT] < n_req:
                    ring[ints[NEXT] % ring.size] = t
                    ints[NEXT] += 1
            else:
                if kept != i:
                    for c in range(RUN_COLUMNS):
                        run[kept, c] = run[i, c]
                    first[kept] = first[i]
                    arrival_run[kept] = arrival_run[i]
                kept += 1
        ints[NRUN] = kept
        if kept < n and ints[NFIN] + max_num_seqs > rows.shape[0]:
            return FLUSH
    return DONE
