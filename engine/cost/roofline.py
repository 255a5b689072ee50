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
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from engine.core.config import EFFICIENCY_MIN
from engine.cost.base import Times, as_float, check_parameter, scalar_or_array
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
    model: ModelSpec, w: npt.ArrayLike, B: npt.ArrayLike, L: npt.ArrayLike
) -> FloatArray:
    """FLOPs of one pass: ``2*P*N + 4*layers*d_model*L*N`` with ``N = B * w`` tokens."""
    w_arr, b_arr, l_arr = _workload(w, B, L)
    tokens = b_arr * w_arr
    return 2.0 * model.params * tokens + 4.0 * model.layers * model.d_model * l_arr * tokens


def pass_bytes(
    model: ModelSpec, B: npt.ArrayLike, L: npt.ArrayLike, bytes_per_kv: float = 2.0
) -> tuple[FloatArray, FloatArray]:
    """Bytes one pass reads: (weights ``P * b_w``, KV cache ``B * L * kv``)."""
    b_arr = as_float("batch", B, 1.0)
    l_arr = as_float("context_len", L, 0.0)
    weights = np.full(np.broadcast_shapes(b_arr.shape, l_arr.shape), model.weight_bytes)
    return weights, b_arr * l_arr * model.kv_bytes_per_token(bytes_per_kv)


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
) -> tuple[FloatArray, FloatArray]:
    """(memory seconds, compute seconds) of the additive form."""
    weights, kv_cache = pass_bytes(model, B, L, bytes_per_kv)
    memory_s = weights / (eta_w * hw.mem_bw_bytes_s) + kv_cache / (eta_kv * hw.mem_bw_bytes_s)
    compute_s = pass_flops(model, w, B, L) / (eta_f * hw.flops_bf16)
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
) -> tuple[FloatArray, FloatArray]:
    """(memory seconds, compute seconds) of the max form."""
    weights, kv_cache = pass_bytes(model, B, L, bytes_per_kv)
    memory_s = (weights + kv_cache) / (eta_bw * hw.mem_bw_bytes_s)
    compute_s = pass_flops(model, w, B, L) / (eta_f * hw.flops_bf16)
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
) -> Times:
    """Microseconds of one pass, additive roofline form.

    ``tokens_per_seq_w >= 1`` tokens per sequence, ``batch >= 1`` sequences,
    ``context_len >= 0`` tokens of context; efficiencies in [EFFICIENCY_MIN, 1]; ``t0_us`` a fixed
    overhead per pass in microseconds; ``bytes_per_kv`` bytes per KV-cache element."""
    memory_s, compute_s = _additive_terms(
        model, hw, tokens_per_seq_w, batch, context_len, eta_w, eta_kv, eta_f, bytes_per_kv
    )
    return scalar_or_array(t0_us + 1e6 * (memory_s + compute_s))


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
) -> Times:
    """Microseconds of one pass, ideal roofline (max) form: the slower of compute and memory.

    Arguments as :func:`pass_us_additive`; ``eta_f`` and ``eta_bw`` scale peak FLOP/s and
    bandwidth (1 by default: the optimistic bound)."""
    memory_s, compute_s = _max_terms(
        model, hw, tokens_per_seq_w, batch, context_len, eta_f, eta_bw, bytes_per_kv
    )
    return scalar_or_array(t0_us + 1e6 * np.maximum(memory_s, compute_s))


def _check_common(t0_us: float, bytes_per_kv: float) -> None:
    check_parameter("cost.t0_us", t0_us, 0.0, T0_MAX_US, False)
    check_parameter("cost.bytes_per_kv", bytes_per_kv, 0.0, 8.0, True)


class _RooflineParts:
    """Cycle times from a pass-time function: ``k`` draft passes (w = 1) and one verify pass."""

    hardware: HardwareSpec
    target: ModelSpec
    draft: ModelSpec

    def _terms(
        self, model: ModelSpec, w: npt.ArrayLike, B: npt.ArrayLike, L: npt.ArrayLike
    ) -> tuple[FloatArray, FloatArray]:
        raise NotImplementedError

    def _pass_us(
        self, model: ModelSpec, w: npt.ArrayLike, B: npt.ArrayLike, L: npt.ArrayLike
    ) -> Times:
        raise NotImplementedError

    def draft_us(self, k: npt.ArrayLike, B: npt.ArrayLike, L: npt.ArrayLike) -> Times:
        """Microseconds to draft ``k >= 0`` tokens per sequence: ``k`` passes of the draft
        model, one token per sequence each, ``B`` sequences, context ``L`` tokens."""
        k_arr = as_float("k", k, 0.0)
        return scalar_or_array(np.asarray(k_arr * self._pass_us(self.draft, 1.0, B, L)))

    def verify_us(self, w: npt.ArrayLike, B: npt.ArrayLike, L: npt.ArrayLike) -> Times:
        """Microseconds of one target pass checking ``w >= 1`` tokens per sequence
        (``w = k + 1``), ``B`` sequences, context ``L`` tokens. ``w = 1`` is a decode step."""
        return self._pass_us(self.target, w, B, L)

    def draft_pass_us(self, w: npt.ArrayLike, B: npt.ArrayLike, L: npt.ArrayLike) -> Times:
        """Microseconds of one draft pass over ``w`` tokens per sequence (a level of a token
        tree ``w`` wide), ``B`` sequences, context ``L`` tokens."""
        return self._pass_us(self.draft, w, B, L)

    def bound(self, w: npt.ArrayLike, B: npt.ArrayLike, L: npt.ArrayLike) -> str | np.ndarray:
        """Which term dominates the verify pass: ``"memory"`` (weights and KV cache) or
        ``"compute"`` (FLOPs). A string for scalar arguments, else an array of strings."""
        memory_s, compute_s = self._terms(self.target, w, B, L)
        verdict = np.where(compute_s > memory_s, "compute", "memory")
        return str(verdict) if verdict.ndim == 0 else verdict


@dataclass(frozen=True)
class RooflineCost(_RooflineParts):
    """The ``roofline`` cost model: additive form, efficiencies as measured (docs/model.md)."""

    hardware: HardwareSpec
    target: ModelSpec
    draft: ModelSpec
    eta_w: float = ETA_W
    eta_kv: float = ETA_KV
    eta_f: float = ETA_F
    t0_us: float = 0.0
    bytes_per_kv: float = 2.0

    def __post_init__(self) -> None:
        for name in ("eta_w", "eta_kv", "eta_f"):
            check_parameter(f"cost.{name}", getattr(self, name), EFFICIENCY_MIN, 1.0, False)
        _check_common(self.t0_us, self.bytes_per_kv)

    def _terms(
        self, model: ModelSpec, w: npt.ArrayLike, B: npt.ArrayLike, L: npt.ArrayLike
    ) -> tuple[FloatArray, FloatArray]:
        return _additive_terms(
            model, self.hardware, w, B, L, self.eta_w, self.eta_kv, self.eta_f, self.bytes_per_kv
        )

    def _pass_us(
        self, model: ModelSpec, w: npt.ArrayLike, B: npt.ArrayLike, L: npt.ArrayLike
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
        )


@dataclass(frozen=True)
class RooflineMaxCost(_RooflineParts):
    """The ``roofline_max`` cost model: the ideal roofline, peak FLOP/s and full bandwidth
    unless ``eta_f`` / ``eta_bw`` say otherwise."""

    hardware: HardwareSpec
    target: ModelSpec
    draft: ModelSpec
    eta_f: float = 1.0
    eta_bw: float = 1.0
    t0_us: float = 0.0
    bytes_per_kv: float = 2.0

    def __post_init__(self) -> None:
        for name in ("eta_f", "eta_bw"):
            check_parameter(f"cost.{name}", getattr(self, name), EFFICIENCY_MIN, 1.0, False)
        _check_common(self.t0_us, self.bytes_per_kv)

    def _terms(
        self, model: ModelSpec, w: npt.ArrayLike, B: npt.ArrayLike, L: npt.ArrayLike
    ) -> tuple[FloatArray, FloatArray]:
        return _max_terms(model, self.hardware, w, B, L, self.eta_f, self.eta_bw, self.bytes_per_kv)

    def _pass_us(
        self, model: ModelSpec, w: npt.ArrayLike, B: npt.ArrayLike, L: npt.ArrayLike
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
        )
