"""The collectives of a model spread over GPUs (docs/model.md, "Cost models"): a tensor-
parallel layer's all-reduces and an expert-parallel MoE layer's all-to-alls, over the link
in the hardware's spec file (``link_bw_bytes_s`` one way per GPU, ``link_latency_us`` a hop).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from engine.cost.base import as_float
from engine.cost.specs import HardwareSpec, ModelSpec

FloatArray = npt.NDArray[np.float64]

B_ACT = 2.0  # bytes per activation element a collective moves (bf16)


def link_bw(hw: HardwareSpec, gpus: int) -> float:
    """Bytes/s each way a GPU's collective over ``gpus`` GPUs gets: ``link_bw_bytes_s``, or
    on a full mesh at most ``(gpus - 1) * link_peer_bw_bytes_s`` (one link per peer)."""
    # A cost spread over GPUs has checked its hardware's link when built
    # (engine.cost.placement.spread_problem).
    assert hw.link_bw_bytes_s is not None, f"{hw.id} has no link_bw_bytes_s"
    if hw.link_peer_bw_bytes_s is None:
        return hw.link_bw_bytes_s
    return min(hw.link_bw_bytes_s, (gpus - 1) * hw.link_peer_bw_bytes_s)


def _link(hw: HardwareSpec, gpus: int) -> tuple[float, float]:
    return link_bw(hw, gpus), (hw.link_latency_us or 0.0) * 1e-6


def allreduce_s(
    model: ModelSpec, hw: HardwareSpec, w: npt.ArrayLike, B: npt.ArrayLike, tp: int
) -> FloatArray | float:
    """Seconds of a pass's all-reduces over ``tp`` GPUs: two per layer, each a ring over
    ``N * d_model * b_act`` bytes: ``2 (tp-1)/tp * bytes / link_bw + 2 (tp-1) * latency``.
    0 at ``tp = 1``."""
    if tp == 1:
        return 0.0
    bandwidth, latency_s = _link(hw, tp)
    w_arr = as_float("w", w, 1.0)
    b_arr = as_float("batch", B, 1.0)
    size = b_arr * w_arr * model.d_model * B_ACT
    ring = 2.0 * (tp - 1) / tp * size / bandwidth + 2.0 * (tp - 1) * latency_s
    return 2.0 * model.layers * ring


def alltoall_s(
    model: ModelSpec, hw: HardwareSpec, w: npt.ArrayLike, B: npt.ArrayLike, ep: int
) -> FloatArray | float:
    """Seconds of a pass's all-to-alls over ``ep`` GPUs: two per MoE layer (dispatch and
    combine). The pass's ``N`` tokens are split over the GPUs; each sends its tokens' ``k``
    expert inputs, ``(ep - 1)/ep`` of them to other GPUs: ``N k d_model b_act (ep - 1)/ep^2``
    bytes over its link, then one hop's latency. 0 at ``ep = 1``."""
    if ep == 1:
        return 0.0
    bandwidth, latency_s = _link(hw, ep)
    tokens = as_float("batch", B, 1.0) * as_float("w", w, 1.0)
    sent = tokens * (model.experts_active or 0) * model.d_model * B_ACT * (ep - 1) / ep**2
    return 2.0 * (model.moe_layers or model.layers) * (sent / bandwidth + latency_s)
