"""Runs of the compiled step loop (engine.serve.stepper): its state set up, its stops
answered (lines and prices from :class:`engine.serve.pricing.Pricer`, finished requests'
rows to the summary and the caller) and its figures handed back."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from engine.serve.stepper import (
    ACC,
    ASK_KEY,
    BATCH_TIME,
    BUSY,
    CHUNK,
    CTX,
    DONE,
    FINISHED,
    FLOAT_STATE,
    FLUSH_ROWS,
    FRESH,
    FRESH_BASE,
    FRESH_LEN,
    HAVE_PRICE,
    INT_STATE,
    KV_TIME,
    LOOK,
    NEED_FRESH,
    NEED_LINE,
    NEED_NEXT,
    NEED_PRICE,
    NEXT,
    NEXT_BASE,
    NEXT_LEN,
    NFIN,
    NRUN,
    PREEMPT,
    PREFILL,
    PRICE,
    ROW_COLUMNS,
    RUN_COLUMNS,
    SPEC,
    STEPS,
    STUCK,
    TIME,
    K,
    key_parts,
    put_line,
    step_loop,
)

_KINDS = ("verify", "draft", "k")


def run_compiled(
    r: Any,
    closed: int | None,
    summary: Any,
    slo: tuple[float, float],
    on_finish: Callable[[np.ndarray], None] | None,
    check: Callable[[int], None] | None,
) -> float:
    """Run ``r`` (an ``engine.serve.state._Run``, from engine.serve.run_setup) through
    :func:`step_loop`, answering its stops; its figures go to ``summary``. Returns the last
    step's end."""
    requests = r.requests
    n = len(requests)
    seqs = r.server.max_num_seqs
    ints = np.zeros(INT_STATE, dtype=np.int64)
    floats = np.zeros(FLOAT_STATE)
    if closed is not None:
        ints[NEXT] = min(closed, n)
    run = np.zeros((seqs, RUN_COLUMNS), dtype=np.int64)
    stack = np.zeros((seqs, RUN_COLUMNS), dtype=np.int64)
    first, arrival_run = np.zeros(seqs), np.zeros(seqs)
    stack_first, stack_arrival = np.zeros(seqs), np.zeros(seqs)
    rows = np.zeros((FLUSH_ROWS + seqs, ROW_COLUMNS))
    lines = _Lines(most=max(LINES_MAX, r.survival.shape[1] + 2))
    pricer = r.pricer
    tax = r.tax_us if r.spec_on else 0.0
    # A closed loop's waiting requests' arrivals, in a ring (its first ones arrive at 0).
    ring = np.zeros(max(min(closed, n), 1) if closed is not None else 1)
    windows = _Windows(requests)
    lengths = r.lengths if r.lengths is not None else np.ones(1)
    proposer = (bool(r.model_free), np.uint64(r.key), float(r.hit), lengths)
    while True:
        why = step_loop(
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
            windows.next_arrival,
            *windows.fresh,
            n,
            int(r.context_step),
            r.survival,
            r.mix_cdf,
            lines.keys,
            lines.values,
            np.uint64(r.key),
            float(r.stay),
            float(r.capacity),
            float(tax),
            int(r.warmup),
            seqs,
            r.server.max_num_batched_tokens,
            r.server.prefill,
            r.config.tail == "full",
            pricer.parallel,
            closed is not None,
            proposer,
            float(r.lookup_us),
        )
        if why == NEED_LINE:
            key = int(ints[ASK_KEY])
            kind, width, batch = key_parts(key)
            if kind == 2:
                base, extra = r.split_choice(batch, width)
                lines.put(key, (float(base), float(extra)))
                continue
            line = (
                pricer._line(_KINDS[kind], width / batch if kind == 0 else width, batch)
                if pricer.affine
                else None
            )
            lines.put(key, line if line is not None else (math.nan, math.nan))
        elif why == NEED_PRICE:
            floats[PRICE] = _step_price(pricer, run[: ints[NRUN]], tax, r)
            ints[HAVE_PRICE] = 1
        elif why == NEED_NEXT:
            windows.move_next(ints)
        elif why == NEED_FRESH:
            windows.move_fresh(ints)
        elif why == STUCK:
            raise RuntimeError("no request could be scheduled (the KV cache is too small)")
        else:
            _drain(rows[: ints[NFIN]].copy(), r.warmup, summary, slo, on_finish)
            ints[NFIN] = 0
            if check is not None:
                check(int(ints[FINISHED]))
            if why == DONE:
                break
    summary.steps += int(ints[STEPS])
    summary.preemptions += int(ints[PREEMPT])
    summary.spec_tokens += int(ints[SPEC])
    summary.accepted_tokens += int(ints[ACC])
    summary.busy_s += float(floats[BUSY])
    summary.batch_time += float(floats[BATCH_TIME])
    summary.kv_time += float(floats[KV_TIME])
    return float(floats[TIME])


def warm() -> None:
    """Compile the loop (or load it from numba's cache) with a run of a few requests."""
    from engine.core.config import SpecConfig
    from engine.cost.models import build_cost
    from engine.serve.metrics import Summary
    from engine.serve.run_setup import set_up
    from engine.serve.server import Server
    from engine.serve.workload import Workload

    # The run engine.serve.sim.simulate_load(config, ..., "fixed", Server()) hands to the
    # loop, set up as it does (not through it: sim imports this module).
    config = SpecConfig().replace(**{"cost.model": "roofline"})
    r = set_up(config, build_cost(config), Workload(requests=4).draw(0, 0), "fixed", Server())
    run_compiled(r, None, Summary(), (math.inf, math.inf), None, None)


class _Windows:
    """The requests the loop reads, a block at a time (Requests.blocks): the arrivals it
    scans (from NEXT_BASE), and the fresh requests it may admit (from FRESH_BASE)."""

    def __init__(self, requests: Any) -> None:
        self._next = requests.blocks()
        self._fresh = requests.blocks()
        self.next_arrival = np.zeros(1)
        empty = np.zeros(0, dtype=np.int64)
        self.fresh: tuple[np.ndarray, np.ndarray, np.ndarray] = (np.zeros(0), empty, empty)

    def move_next(self, ints: np.ndarray) -> None:
        """The next block of arrivals, after those the loop has scanned."""
        arrival = next(self._next)[0]
        self.next_arrival = np.ascontiguousarray(arrival, dtype=np.float64)
        ints[NEXT_BASE] += ints[NEXT_LEN]
        ints[NEXT_LEN] = arrival.size

    def move_fresh(self, ints: np.ndarray) -> None:
        """The fresh requests from the first not admitted yet, and the next block."""
        start = int(ints[FRESH] - ints[FRESH_BASE])
        block = next(self._fresh)
        arrival, prompt, output = (
            np.concatenate((kept[start:], new)).astype(dtype, copy=False)
            for kept, new, dtype in zip(
                self.fresh, block, (np.float64, np.int64, np.int64), strict=True
            )
        )
        self.fresh = (arrival, prompt, output)
        ints[FRESH_BASE] = ints[FRESH]
        ints[FRESH_LEN] = prompt.size


# The most lines the loop holds (a prefill chunk's tokens make a new verify line): a full
# table is emptied, and the loop asks again for those it meets. It holds at least the lines
# of one step (a policy's k, a draft pass a level, the verify pass), or it would ask forever.
LINES_MAX = 1 << 14


class _Lines:
    """The lines given to the loop: an open-addressing table, at most half full."""

    def __init__(self, size: int = 1024, most: int = LINES_MAX) -> None:
        self.keys = np.full(size, -1, dtype=np.int64)
        self.values = np.zeros((size, 2))
        self.count = 0
        self.most = most

    def put(self, key: int, line: tuple[float, float]) -> None:
        if self.count >= self.most:
            self.keys.fill(-1)
            self.count = 0
        if 2 * (self.count + 1) > self.keys.size:
            old_keys, old_values = self.keys, self.values
            self.__init__(2 * old_keys.size, self.most)  # type: ignore[misc]
            for slot in np.flatnonzero(old_keys >= 0):
                self.put(int(old_keys[slot]), (old_values[slot, 0], old_values[slot, 1]))
        put_line(self.keys, self.values, key, line[0], line[1])
        self.count += 1


def _step_price(pricer: Any, run: np.ndarray, tax: float, r: Any) -> float:
    """A step's price from the cost model directly (Pricer.step, as sim._step calls it)."""
    decoding = run[:, PREFILL] == 0
    contexts = run[:, CTX].astype(np.float64)
    tokens = int((run[decoding, K] + 1).sum() + run[:, CHUNK].sum())
    drafting, lookup = run[decoding, K], 0.0
    if r.model_free:  # as sim._step: no draft pass, the tax on a step that drafted
        tax = tax if (drafting > 0).any() else 0.0
        drafting = np.zeros_like(drafting)
        lookup = int(run[decoding, LOOK].sum()) * r.lookup_us
    return float(
        pricer.step(
            drafting,
            contexts[decoding][:, None],
            tokens,
            len(run),
            np.array([contexts.mean()]),
            tax,
            lookup,
        )[0]
    )


def _drain(
    rows: np.ndarray,
    warmup: int,
    summary: Any,
    slo: tuple[float, float],
    on_finish: Callable[[np.ndarray], None] | None,
) -> None:
    """Finished requests' rows to the summary (those after the warm-up) and the caller."""
    if not len(rows):
        return
    measured = rows[rows[:, 0] >= warmup]
    summary.add_requests(
        measured[:, 1],
        measured[:, 2],
        measured[:, 3],
        measured[:, 4].astype(np.int64),
        measured[:, 5].astype(np.int64),
        *slo,
    )
    if on_finish is not None:
        on_finish(rows)
