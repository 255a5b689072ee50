"""Roofline pass times from hardware and model specs (docs/model.md, "Cost models").

One pass of a model over ``N = B * w`` tokens (``B`` sequences, ``w`` tokens each) at
context length ``L`` (tokens already in each sequence's KV cache) reads the weights
(``P * b_w`` bytes), reads the KV cache (``B * L * kv`` bytes, ``kv = 2 * layers * kv_heads
* head_dim * b_kv``) and does ``2 * P * N + 4 * layers * d_model * L * N`` FLOPs (the
matrix products, and attention's scores and weighted values over the context).

- additive (``roofline``): each resource at its efficiency, times added:
  ``t0_us + 1e6 * (P*b_w/(eta_w*BW) + B*L*kv/(eta_kv*BW) + flops/(eta_f*F))``
- max (``roofline_max``), the ideal roofline, an optimistic bound:
  ``t0_us + 1e6 * max(flops/(eta_f*F), (P*b_w + B*L*kv)/(eta_bw*BW))``

``F`` is the hardware's peak dense bf16 FLOP/s, ``BW`` its memory bandwidth in bytes/s.
All functions take numbers or numpy arrays (broadcast together) and return microseconds.

A model may run over ``tp`` GPUs (tensor parallelism, :class:`engine.cost.placement.Run`):
each GPU reads ``1/tp`` of the weights and ``1/min(tp, kv_heads)`` of each token's KV cache
(KV heads replicated past ``kv_heads``; a latent cache is replicated whole), does ``1/tp``
of the FLOPs, and every layer adds two ring all-reduces (engine.cost.collectives). An MoE
model reads the experts its tokens touch (engine.cost.moe), spread over ``ep`` GPUs with
two all-to-alls a MoE layer when ``ep > 1``. A sliding window caps its layers' context
(:meth:`ModelSpec.attended`). Which placements can exist is engine.cost.placement's.
A run's ``overhead_us`` is added to each of its passes (a draft's launches, eager or in a
CUDA graph); a parallel draft makes one pass over its ``k`` tokens; a cost's
``spec_overhead_us`` is added to every cycle by the kernel. The defaults give the one-GPU
formulas above exactly (docs/model.md, "Cost models").
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass

import numpy as np
import numpy.typing as npt

from engine.core.config import EFFICIENCY_MIN
from engine.cost.base import Times, as_float, check_parameter, scalar_or_array
from engine.cost.collectives import allreduce_s, alltoall_s
from engine.cost.moe import active_params, dense_params, experts_touched
from engine.cost.placement import ONE_GPU, SKEW_MAX, TP_MAX, Run, spread_problem
from engine.cost.specs import HardwareSpec, ModelSpec

ETA_W = 0.81
ETA_KV = 1.0
ETA_F = 0.77
T0_MAX_US = 1e6

FloatArray = npt.NDArray[np.float64]


def _workload(
    w: npt.ArrayLike, B: npt.ArrayLike, L: npt.ArrayLike
) -> tuple[FloatArray, FloatArray, FloatArray]:
    return as_float("w", w, 1.0), as_float("batch", B, 1.0), as_float("context_len", L, 0.0)


def pass_flops(
    model: ModelSpec,
    w: npt.ArrayLike,
    B: npt.ArrayLike,
    L: npt.ArrayLike,
    tp: int = 1,
    ep: int = 1,
) -> FloatArray:
    """FLOPs of one pass on each of ``tp`` GPUs: ``(2*P*N + 4*layers*d_model*L*N) / tp``
    with ``N = B * w`` tokens, ``P`` the active parameters and ``L`` the context a layer
    reads (:meth:`ModelSpec.attended`); with ``ep > 1`` the routed experts' share is
    divided by ``ep`` instead."""
    w_arr, b_arr, l_arr = _workload(w, B, L)
    tokens = b_arr * w_arr
    attention = 4.0 * model.layers * model.d_model * model.attended(l_arr) * tokens
    if ep == 1:
        return (2.0 * active_params(model) * tokens + attention) / tp
    routed = (model.experts_active or 0) * model.expert_layer_params
    return (2.0 * dense_params(model) * tokens + attention) / tp + 2.0 * routed * tokens / ep


def pass_bytes(
    model: ModelSpec,
    B: npt.ArrayLike,
    L: npt.ArrayLike,
    bytes_per_kv: float = 2.0,
    run: Run = ONE_GPU,
    w: npt.ArrayLike = 1.0,
) -> tuple[FloatArray, FloatArray]:
    """Bytes one pass over ``w`` tokens per sequence reads on each of ``run.tp`` GPUs:
    (weights ``P * b_w / tp``, KV cache ``B * L * kv / shards``); ``run.bytes_per_weight``
    replaces the model's ``b_w``. An MoE model reads its dense part and, in each MoE layer,
    the experts its ``B * w`` tokens touch (engine.cost.moe), over ``ep`` GPUs when
    ``run.ep > 1``."""
    b_arr = as_float("batch", B, 1.0)
    l_arr = as_float("context_len", L, 0.0)
    tp = run.tp
    b_w = model.bytes_per_weight if run.bytes_per_weight is None else run.bytes_per_weight
    if model.experts is not None:
        touched = experts_touched(model, b_arr * as_float("w", w, 1.0), run.expert_skew)
        if run.ep == 1:
            weights = (dense_params(model) + touched * model.expert_layer_params) * b_w / tp
        else:
            weights = (
                dense_params(model) * b_w / tp + touched * model.expert_layer_params * b_w / run.ep
            )
        weights = np.broadcast_to(weights, np.broadcast_shapes(weights.shape, l_arr.shape))
    else:  # params * b_w: model.weight_bytes when the model's own b_w
        weights = np.full(np.broadcast_shapes(b_arr.shape, l_arr.shape), model.params * b_w / tp)
    kv = model.kv_bytes_per_token(bytes_per_kv) / model.kv_shards(tp)
    return weights, b_arr * model.attended(l_arr) * kv


def collectives_s(
    model: ModelSpec, hw: HardwareSpec, w: npt.ArrayLike, B: npt.ArrayLike, run: Run
) -> FloatArray | float:
    """Seconds of a pass's collectives: all-reduces over ``run.tp`` GPUs, all-to-alls over
    ``run.ep`` (engine.cost.collectives); 0 on one GPU."""
    seconds: FloatArray | float = 0.0
    if run.tp > 1:
        seconds = allreduce_s(model, hw, w, B, run.tp)
    if run.ep > 1:
        seconds = seconds + alltoall_s(model, hw, w, B, run.ep)
    return seconds


def _additive_terms(
    model: ModelSpec,
    hw: HardwareSpec,
    w: npt.ArrayLike,
    B: npt.ArrayLike,
    L: npt.ArrayLike,
    eta_w: float,
    eta_kv: float,
    eta_f: float,
    bytes_per_kv: float,
    run: Run = ONE_GPU,
) -> tuple[FloatArray, FloatArray]:
    """(memory seconds, compute seconds) of the additive form, on each of ``run.tp`` GPUs."""
    weights, kv_cache = pass_bytes(model, B, L, bytes_per_kv, run, w)
    memory_s = weights / (eta_w * hw.mem_bw_bytes_s) + kv_cache / (eta_kv * hw.mem_bw_bytes_s)
    peak = hw.flops_bf16 if run.flops is None else run.flops
    compute_s = pass_flops(model, w, B, L, run.tp, run.ep) / (eta_f * peak)
    return np.broadcast_arrays(memory_s, compute_s)  # type: ignore[return-value]


def _max_terms(
    model: ModelSpec,
    hw: HardwareSpec,
    w: npt.ArrayLike,
    B: npt.ArrayLike,
    L: npt.ArrayLike,
    eta_f: float,
    eta_bw: float,
    bytes_per_kv: float,
    run: Run = ONE_GPU,
) -> tuple[FloatArray, FloatArray]:
    """(memory seconds, compute seconds) of the max form, on each of ``run.tp`` GPUs."""
    weights, kv_cache = pass_bytes(model, B, L, bytes_per_kv, run, w)
    memory_s = (weights + kv_cache) / (eta_bw * hw.mem_bw_bytes_s)
    peak = hw.flops_bf16 if run.flops is None else run.flops
    compute_s = pass_flops(model, w, B, L, run.tp, run.ep) / (eta_f * peak)
    return np.broadcast_arrays(memory_s, compute_s)  # type: ignore[return-value]


def pass_us_additive(
    model: ModelSpec,
    hw: HardwareSpec,
    tokens_per_seq_w: npt.ArrayLike,
    batch: npt.ArrayLike,
    context_len: npt.ArrayLike,
    *,
    eta_w: float = ETA_W,
    eta_kv: float = ETA_KV,
    eta_f: float = ETA_F,
    t0_us: float = 0.0,
    bytes_per_kv: float = 2.0,
    run: Run = ONE_GPU,
) -> Times:
    """Microseconds of one pass, additive roofline form.

    ``tokens_per_seq_w >= 1`` tokens per sequence, ``batch >= 1`` sequences,
    ``context_len >= 0`` tokens of context; efficiencies in [EFFICIENCY_MIN, 1]; ``t0_us`` a fixed
    overhead per pass in microseconds; ``bytes_per_kv`` bytes per KV-cache element; ``run``
    the GPUs the model runs over and its own overhead per pass."""
    memory_s, compute_s = _additive_terms(
        model, hw, tokens_per_seq_w, batch, context_len, eta_w, eta_kv, eta_f, bytes_per_kv, run
    )
    times = t0_us + run.overhead_us + 1e6 * (memory_s + compute_s)
    if run.tp > 1 or run.ep > 1:
        times = times + 1e6 * collectives_s(model, hw, tokens_per_seq_w, batch, run)
    return scalar_or_array(times)


def pass_us_max(
    model: ModelSpec,
    hw: HardwareSpec,
    tokens_per_seq_w: npt.ArrayLike,
    batch: npt.ArrayLike,
    context_len: npt.ArrayLike,
    *,
    eta_f: float = 1.0,
    eta_bw: float = 1.0,
    t0_us: float = 0.0,
    bytes_per_kv: float = 2.0,
    run: Run = ONE_GPU,
) -> Times:
    """Microseconds of one pass, ideal roofline (max) form: the slower of compute and memory
    (the all-reduces of a tensor-parallel run come after, not overlapped).

    Arguments as :func:`pass_us_additive`; ``eta_f`` and ``eta_bw`` scale peak FLOP/s and
    bandwidth (1 by default: the optimistic bound)."""
    memory_s, compute_s = _max_terms(
        model, hw, tokens_per_seq_w, batch, context_len, eta_f, eta_bw, bytes_per_kv, run
    )
    times = t0_us + run.overhead_us + 1e6 * np.maximum(memory_s, compute_s)
    if run.tp > 1 or run.ep > 1:
        times = times + 1e6 * collectives_s(model, hw, tokens_per_seq_w, batch, run)
    return scalar_or_array(times)


def _check_runs(hw: HardwareSpec, target_model: ModelSpec, target: Run, draft: Run) -> None:
    """Each run's GPUs in [1, TP_MAX] (more than one needs the hardware's link; experts over
    several need an MoE target with at least as many experts), its overhead in
    [0, T0_MAX_US] and the routing skew in [0, SKEW_MAX]."""
    for key, gpus in (("cost.tp", target.tp), ("cost.draft_tp", draft.tp), ("cost.ep", target.ep)):
        check_parameter(key, gpus, 1, TP_MAX, False)
    problem = spread_problem(hw, target_model, target.tp, draft.tp, target.ep)
    if problem is not None:
        raise ValueError(f"{problem[0]}: {problem[1]}")
    check_parameter("cost.draft_overhead_us", draft.overhead_us, 0.0, T0_MAX_US, False)
    check_parameter("target_run.overhead_us", target.overhead_us, 0.0, T0_MAX_US, False)
    check_parameter("cost.expert_skew", target.expert_skew, 0.0, SKEW_MAX, False)


@dataclass(frozen=True)
class _RooflineParts:
    """Cycle times from a pass-time function: ``k`` draft passes (w = 1) and one verify pass,
    and what both roofline forms share: the specs, a fixed overhead per pass, bytes per KV
    element, how each model runs, and the fixed cost of a speculative cycle."""

    hardware: HardwareSpec
    target: ModelSpec
    draft: ModelSpec
    _: KW_ONLY
    t0_us: float = 0.0
    bytes_per_kv: float = 2.0
    target_run: Run = ONE_GPU
    draft_run: Run = ONE_GPU
    # Paid once by every speculative cycle, whatever it drafts (k = 0 too), never by the
    # autoregressive baseline: the kernel adds it to the verify pass (engine.core.kernel).
    spec_overhead_us: float = 0.0

    def _check(self) -> None:
        check_parameter("cost.t0_us", self.t0_us, 0.0, T0_MAX_US, False)
        check_parameter("cost.bytes_per_kv", self.bytes_per_kv, 0.0, 8.0, True)
        check_parameter("cost.spec_overhead_us", self.spec_overhead_us, 0.0, T0_MAX_US, False)
        _check_runs(self.hardware, self.target, self.target_run, self.draft_run)

    def _terms(
        self,
        model: ModelSpec,
        w: npt.ArrayLike,
        B: npt.ArrayLike,
        L: npt.ArrayLike,
        run: Run = ONE_GPU,
    ) -> tuple[FloatArray, FloatArray]:
        raise NotImplementedError

    def _pass_us(
        self, model: ModelSpec, w: npt.ArrayLike, B: npt.ArrayLike, L: npt.ArrayLike, run: Run
    ) -> Times:
        raise NotImplementedError

    def draft_us(self, k: npt.ArrayLike, B: npt.ArrayLike, L: npt.ArrayLike) -> Times:
        """Microseconds to draft ``k >= 0`` tokens per sequence: ``k`` passes of the draft
        model, one token per sequence each, ``B`` sequences, context ``L`` tokens; a draft
        that drafts in parallel makes one pass over ``k`` tokens per sequence (none at 0)."""
        k_arr = as_float("k", k, 0.0)
        if self.draft_run.parallel:
            one = self._pass_us(self.draft, np.maximum(k_arr, 1.0), B, L, self.draft_run)
            return scalar_or_array(np.where(k_arr > 0, one, 0.0))
        one = self._pass_us(self.draft, 1.0, B, L, self.draft_run)
        return scalar_or_array(np.asarray(k_arr * one))

    def verify_us(self, w: npt.ArrayLike, B: npt.ArrayLike, L: npt.ArrayLike) -> Times:
        """Microseconds of one target pass checking ``w >= 1`` tokens per sequence
        (``w = k + 1``), ``B`` sequences, context ``L`` tokens. ``w = 1`` is a decode step."""
        return self._pass_us(self.target, w, B, L, self.target_run)

    def draft_pass_us(self, w: npt.ArrayLike, B: npt.ArrayLike, L: npt.ArrayLike) -> Times:
        """Microseconds of one draft pass over ``w`` tokens per sequence (a level of a token
        tree ``w`` wide), ``B`` sequences, context ``L`` tokens."""
        return self._pass_us(self.draft, w, B, L, self.draft_run)

    def bound(self, w: npt.ArrayLike, B: npt.ArrayLike, L: npt.ArrayLike) -> str | np.ndarray:
        """Which term dominates the verify pass: ``"memory"`` (weights and KV cache) or
        ``"compute"`` (FLOPs). A string for scalar arguments, else an array of strings."""
        memory_s, compute_s = self._terms(self.target, w, B, L, self.target_run)
        verdict = np.where(compute_s > memory_s, "compute", "memory")
        return str(verdict) if verdict.ndim == 0 else verdict


@dataclass(frozen=True)
class RooflineCost(_RooflineParts):
    """The ``roofline`` cost model: additive form, efficiencies as measured (docs/model.md)."""

    eta_w: float = ETA_W
    eta_kv: float = ETA_KV
    eta_f: float = ETA_F

    def __post_init__(self) -> None:
        for name in ("eta_w", "eta_kv", "eta_f"):
            check_parameter(f"cost.{name}", getattr(self, name), EFFICIENCY_MIN, 1.0, False)
        self._check()

    def _terms(
        self,
        model: ModelSpec,
        w: npt.ArrayLike,
        B: npt.ArrayLike,
        L: npt.ArrayLike,
        run: Run = ONE_GPU,
    ) -> tuple[FloatArray, FloatArray]:
        return _additive_terms(
            model,
            self.hardware,
            w,
            B,
            L,
            self.eta_w,
            self.eta_kv,
            self.eta_f,
            self.bytes_per_kv,
            run,
        )

    def _pass_us(
        self, model: ModelSpec, w: npt.ArrayLike, B: npt.ArrayLike, L: npt.ArrayLike, run: Run
    ) -> Times:
        return pass_us_additive(
            model,
            self.hardware,
            w,
            B,
            L,
            eta_w=self.eta_w,
            eta_kv=self.eta_kv,
            eta_f=self.eta_f,
            t0_us=self.t0_us,
            bytes_per_kv=self.bytes_per_kv,
            run=run,
        )


@dataclass(frozen=True)
class RooflineMaxCost(_RooflineParts):
    """The ``roofline_max`` cost model: the ideal roofline, peak FLOP/s and full bandwidth
    unless ``eta_f`` / ``eta_bw`` say otherwise."""

    eta_f: float = 1.0
    eta_bw: float = 1.0

    def __post_init__(self) -> None:
        for name in ("eta_f", "eta_bw"):
            check_parameter(f"cost.{name}", getattr(self, name), EFFICIENCY_MIN, 1.0, False)
        self._check()

    def _terms(
        self,
        model: ModelSpec,
        w: npt.ArrayLike,
        B: npt.ArrayLike,
        L: npt.ArrayLike,
        run: Run = ONE_GPU,
    ) -> tuple[FloatArray, FloatArray]:
        return _max_terms(
            model, self.hardware, w, B, L, self.eta_f, self.eta_bw, self.bytes_per_kv, run
        )

    def _pass_us(
        self, model: ModelSpec, w: npt.ArrayLike, B: npt.ArrayLike, L: npt.ArrayLike, run: Run
    ) -> Times:
        return pass_us_max(
            model,
            self.hardware,
            w,
            B,
            L,
            eta_f=self.eta_f,
            eta_bw=self.eta_bw,
            t0_us=self.t0_us,
            bytes_per_kv=self.bytes_per_kv,
            run=run,
        )
