"""The serving simulator's state: waiting and running requests, and one run's fixed
inputs with the choices and draws made from them (engine.serve.sim)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.serve.draws import uniforms
from engine.serve.policies import POLICIES, StepView
from engine.serve.pricing import Pricer
from engine.serve.server import Server
from engine.serve.workload import Requests


@dataclass
class _Waiting:
    """A request that waits: fresh, or preempted with its progress."""

    rid: int
    done: int = 0
    first_s: float = math.nan
    chunks: int = 0
    regime: int = -1  # -1: not drawn yet
    counter: int = 0
    arrival: float = 0.0


_INT_FIELDS = ("rid", "prefill", "ctx", "done", "out", "chunks", "regime", "counter")


class _Running:
    """The running requests, one entry per array, in admission order."""

    def __init__(self) -> None:
        empty = np.zeros(0, dtype=np.int64)
        self.rid = self.prefill = self.ctx = self.done = empty
        self.out = self.chunks = self.regime = self.counter = empty
        self.first = np.zeros(0)
        self.arrival = np.zeros(0)

    def __len__(self) -> int:
        return int(self.rid.size)

    def add(self, w: _Waiting, prefill: int, ctx: int, out: int, arrival: float) -> None:
        values = (w.rid, prefill, ctx, w.done, out, w.chunks, w.regime, w.counter)
        for name, value in zip(_INT_FIELDS, values, strict=True):
            setattr(self, name, np.append(getattr(self, name), value))
        self.first = np.append(self.first, w.first_s)
        self.arrival = np.append(self.arrival, arrival)

    def keep(self, mask: np.ndarray) -> None:
        for name in (*_INT_FIELDS, "first", "arrival"):
            setattr(self, name, getattr(self, name)[mask])


@dataclass
class _Run:
    """One run's fixed inputs."""

    config: Any
    cost: Any
    requests: Requests
    server: Server
    policy: str
    key: int
    survival: np.ndarray
    stay: float
    mix_cdf: np.ndarray
    capacity: float
    tax_us: float
    warmup: int
    pricer: Pricer
    # A model-free proposer (engine.proposers: n-gram, suffix decoding): no draft pass; a
    # decoder's lookup hits with ``hit`` and drafts min(L, k), P(L >= j) = ``lengths[j]``
    # (j = 0..k_cap; None: L is the cap), and each decoder asked for k > 0 pays
    # ``lookup_us`` of CPU a step.
    model_free: bool = False
    hit: float = 1.0
    lengths: np.ndarray | None = None
    lookup_us: float = 0.0

    @property
    def spec_on(self) -> bool:
        return self.policy != "off"

    def choose(self, run: _Running, decoding: np.ndarray) -> np.ndarray:
        """The policy's k for the decoders (a clamped tail drafts no more than needed)."""
        k = np.zeros(len(run), dtype=np.int64)
        if not decoding.any():
            return k
        view = StepView(
            run.ctx[decoding],
            run.regime[decoding],
            self.survival,
            self.cost,
            self.config,
            self.server.verify_budget,
            self.tax_us,
        )
        picked = np.minimum(POLICIES[self.policy].choose(view), self.survival.shape[1] - 1)
        if self.config.tail != "full":
            picked = np.minimum(picked, run.out[decoding] - run.done[decoding] - 1)
        k[decoding] = np.maximum(picked, 0)
        return k

    def accepted(self, run: _Running, rows: np.ndarray, k: np.ndarray, steps: int) -> np.ndarray:
        """Accepted drafts of decoders ``rows`` over their next ``steps`` steps (rows x
        steps): #{j <= k : u < S_j} for one uniform per request and step."""
        counters = run.counter[rows][:, None] + np.arange(steps)[None, :]
        u = uniforms(self.key, run.rid[rows][:, None], counters, 1)
        if self.survival.shape[0] == 1:  # one regime: S_j > u for the first hits of j
            hits = np.searchsorted(-self.survival[0, 1:], -u, side="left")
        else:
            surv = self.survival[run.regime[rows]]  # rows x (k_max + 1)
            hits = (u[:, :, None] < surv[:, None, 1:]).sum(axis=2)
        return np.minimum(hits, k[:, None])

    def propose(
        self, run: _Running, decoding: np.ndarray, k: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """(drafts, looked) of a model-free proposer for the policy's ``k``: each decoder
        asked for k > 0 looks up (``looked``); it hits when u < h (stream 5) and then drafts
        min(L, k), L = #{j : P(L >= j) > u'} (stream 6), else 0. A draft model's: (k, none)."""
        looked = decoding & (k > 0)
        if not self.model_free or not looked.any():
            return k, looked
        rows = np.flatnonzero(looked)
        hit = uniforms(self.key, run.rid[rows], run.counter[rows], 5) < self.hit
        drafts = k[rows]
        if self.lengths is not None:
            u = uniforms(self.key, run.rid[rows], run.counter[rows], 6)
            longest = np.searchsorted(-self.lengths[1:], -u, side="left")
            drafts = np.minimum(drafts, longest)
        k = k.copy()
        k[rows] = np.where(hit, drafts, 0)
        return k, looked

    @property
    def context_step(self) -> int:
        return POLICIES[self.policy].context_step

    def split_choice(self, count: int, bucket: int) -> tuple[int, int]:
        """A ``by_count`` policy's k for ``count`` decoders whose mean context is in step
        ``bucket`` (of ``context_step`` tokens), clamped to the drafts tabulated, as
        (base, extra): the first ``extra`` decoders draft ``base + 1``, the others ``base``."""
        step = self.context_step
        view = StepView(
            np.full(count, (bucket + 0.5) * step if step else 0.0),
            np.zeros(count, dtype=np.int64),
            self.survival,
            self.cost,
            self.config,
            self.server.verify_budget,
            self.tax_us,
        )
        k = np.minimum(POLICIES[self.policy].choose(view), self.survival.shape[1] - 1)
        base, extra = int(k.min()), int((k > k.min()).sum())
        if not np.array_equal(k, base + (np.arange(count) < extra)):
            raise ValueError(f"load policy {self.policy!r} is not by_count: it gave {k}")
        return base, extra

    def regime_of(self, rid: int) -> int:
        if self.mix_cdf.size == 1:
            return 0
        u = uniforms(self.key, np.array([rid]), np.array([0]), 4)
        return int(np.searchsorted(self.mix_cdf, u, side="right")[0])
