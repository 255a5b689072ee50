"""The server's limits: a scheduler like vLLM V1's and the KV cache's capacity (docs/model.md,
"Serving under load")."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from engine.core.fields import ConfigError
from engine.cost.placement import (
    GPU_MEMORY_UTILIZATION,
    GPU_MEMORY_UTILIZATION_MAX,
    RESERVE_GB,
    check_feasible,
)

SEQS_MAX = 4096
TOKENS_MAX = 1_000_000
BUDGET_MAX = 1_000_000


@dataclass(frozen=True)
class Server:
    """``max_num_seqs`` requests running at once, ``max_num_batched_tokens`` tokens a step
    (decodes' k + 1 and prefill chunks), a KV cache of what ``gpu_memory_utilization`` of a
    GPU's memory leaves after the target's and the draft's weights and ``reserve_gb``
    (activations, CUDA graphs), and a verify budget for the ``budget`` policy."""

    max_num_seqs: int = 256
    max_num_batched_tokens: int = 8192
    gpu_memory_utilization: float = GPU_MEMORY_UTILIZATION
    reserve_gb: float = RESERVE_GB
    verify_budget: int = 64
    kv_limit: bool = True  # False: an unbounded KV cache (the reduction tests' setting)
    prefill: bool = True  # False: a request arrives with its prompt in the KV cache

    def check(self) -> None:
        if not 1 <= self.max_num_seqs <= SEQS_MAX:
            raise ConfigError("max_num_seqs", f"must be a whole number in [1, {SEQS_MAX}]")
        if not 1 <= self.max_num_batched_tokens <= TOKENS_MAX:
            raise ConfigError(
                "max_num_batched_tokens", f"must be a whole number in [1, {TOKENS_MAX:,}]"
            )
        if self.max_num_batched_tokens < self.max_num_seqs:
            raise ConfigError(
                "max_num_batched_tokens",
                f"must be at least max_num_seqs ({self.max_num_seqs}): every running request "
                "needs a token a step",
            )
        if not (
            math.isfinite(self.gpu_memory_utilization)
            and 0.05 <= self.gpu_memory_utilization <= GPU_MEMORY_UTILIZATION_MAX
        ):
            raise ConfigError(
                "gpu_memory_utilization",
                f"must be a number in [0.05, {GPU_MEMORY_UTILIZATION_MAX:g}]",
            )
        if not (math.isfinite(self.reserve_gb) and 0.0 <= self.reserve_gb <= 1e4):
            raise ConfigError("reserve_gb", "must be a number in [0, 10000]")
        if not 0 <= self.verify_budget <= BUDGET_MAX:
            raise ConfigError("verify_budget", f"must be a whole number in [0, {BUDGET_MAX:,}]")


def kv_capacity(cost: Any, server: Server, config: Any = None) -> float:
    """Tokens the KV cache holds: per GPU, ``gpu_memory_utilization x memory`` less the
    target's weights over its GPUs (experts over ``ep``), the draft's over its own and the
    reserve, over the KV bytes one token takes on a GPU (target and draft). When
    ``config``'s proposer is model-free (n-gram, suffix decoding: drafts from a CPU look-up,
    engine.proposers), no draft model is placed: no draft weights and no draft KV. Unbounded
    (``inf``) for a cost model without hardware specs, or when ``kv_limit`` is off. A
    placement that cannot exist is refused, naming its field: weights that do not fit name
    the target (:func:`engine.cost.placement.check_feasible`, the check every scenario
    passes with all of a GPU's memory less the reserve)."""
    hardware = getattr(cost, "hardware", None)
    if hardware is None or not server.kv_limit:
        return math.inf
    target, draft = cost.target, cost.draft
    t_run, d_run = cost.target_run, cost.draft_run
    if config is not None:
        from engine.core.parts import PROPOSER

        if PROPOSER.of(config).model_free:
            draft = None
    free = check_feasible(
        hardware, target, draft, t_run, d_run, server.gpu_memory_utilization, server.reserve_gb
    )
    per_token = target.kv_bytes_per_token(cost.bytes_per_kv) / target.kv_shards(t_run.tp)
    if draft is not None:
        per_token += draft.kv_bytes_per_token(cost.bytes_per_kv) / draft.kv_shards(d_run.tp)
    return math.floor(free / per_token)
