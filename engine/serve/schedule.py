"""The best k by batch size, and how serving engines are told it (docs/model.md, "Serving
under load").

At each batch size the best k is the one with the most expected tokens per unit of step
time (the ``goodput`` policy's rule) at a mean context, from the scenario's acceptance and
cost model. The schedule is written as vLLM's ``num_speculative_tokens_per_batch_size``
(``[[low, high, k], ...]`` ranges of batch sizes, vllm-project/vllm PR 32374), TensorRT-LLM's
``draft_len_schedule`` (batch-size thresholds to draft lengths) and, for SGLang, which has
no schedule, the flags of the best k at batch 1. By batch size and context, it is written in
the form vllm-project/vllm RFC 48627 and PR 48944 propose for the same setting (open when
written): entries ``[batch_low, batch_high, context_low, context_high, k]``, context ranges
doubling from 1,024 tokens to the workload's longest context, each priced at its middle.
"""

from __future__ import annotations

import itertools
import json
import shlex
from typing import Any

import numpy as np

from engine.serve.policies import expected_tokens


def best_k_by_batch(
    config: Any, cost: Any, batches: int, context: float, k_max: int
) -> list[tuple[int, int, int]]:
    """Ranges ``(low, high, k)`` of batch sizes 1..``batches`` sharing their best k in
    0..``k_max`` at mean context ``context``."""
    from engine.core.kernel import cycle_times
    from engine.core.parts import ACCEPTANCE

    survival, _, mix = ACCEPTANCE.of(config).regimes(config, k_max)
    tokens = expected_tokens(np.asarray(survival, dtype=np.float64), np.asarray(mix))
    ks = np.arange(k_max + 1, dtype=np.float64)
    ranges: list[tuple[int, int, int]] = []
    for batch in range(1, batches + 1):
        step = np.asarray(cycle_times(cost, ks, batch, context)[2], dtype=np.float64)
        best = int(np.argmax(tokens / step))
        if ranges and ranges[-1][2] == best:
            ranges[-1] = (ranges[-1][0], batch, best)
        else:
            ranges.append((batch, batch, best))
    return ranges


def context_ranges(longest: int) -> list[tuple[int, int]]:
    """Inclusive context ranges 0-1023, 1024-2047, 2048-4095, ... up to one that holds
    ``longest`` tokens."""
    ranges, low, high = [], 0, 1024
    while True:
        ranges.append((low, high - 1))
        if high > longest:
            return ranges
        low, high = high, 2 * high


def best_k_by_batch_and_context(
    config: Any, cost: Any, batches: int, longest: int, k_max: int
) -> list[tuple[int, int, int, int, int]]:
    """Entries ``(batch_low, batch_high, context_low, context_high, k)``: for each context
    range of :func:`context_ranges` (priced at its middle), its batch ranges sharing their
    best k; neighbouring context ranges with the same batch ranges are merged."""
    table: list[tuple[int, int, list[tuple[int, int, int]]]] = []
    for low, high in context_ranges(longest):
        ranges = best_k_by_batch(config, cost, batches, (low + high) / 2, k_max)
        if table and table[-1][2] == ranges:
            table[-1] = (table[-1][0], high, ranges)
        else:
            table.append((low, high, ranges))
    return [
        (b_low, b_high, c_low, c_high, k)
        for c_low, c_high, ranges in table
        for b_low, b_high, k in ranges
    ]


def vllm_flag(
    ranges: list[tuple[int, int, int]] | list[tuple[int, int, int, int, int]],
    method: str = "eagle",
) -> str:
    """``--speculative-config`` for vLLM, shell-quoted: the largest k as
    ``num_speculative_tokens`` and the ranges as ``num_speculative_tokens_per_batch_size``
    (by batch size, or by batch size and context)."""
    config = {
        "method": method,
        "num_speculative_tokens": max(entry[-1] for entry in ranges),
        "num_speculative_tokens_per_batch_size": [list(r) for r in ranges],
    }
    return f"--speculative-config {shlex.quote(json.dumps(config))}"


def trtllm_yaml(ranges: list[tuple[int, int, int]]) -> str:
    """TensorRT-LLM's ``speculative_config`` lines for ``--extra_llm_api_options``: each
    range's largest batch size as a threshold (a batch size takes the first threshold at
    or above it; the smallest key carries ``max_draft_len``, as its validator requires)."""
    ks = [k for _, _, k in ranges]
    if any(later > earlier for earlier, later in itertools.pairwise(ks)):
        return (
            "# TensorRT-LLM: not expressible (its draft_len_schedule starts at max_draft_len "
            "and may not rise with the batch; this one does)"
        )
    pairs = ", ".join(f"{high}: {k}" for _, high, k in ranges)
    return f"speculative_config:\n  max_draft_len: {ks[0]}\n  draft_len_schedule: {{{pairs}}}"


def sglang_flags(k: int) -> str:
    """SGLang's EAGLE chain of ``k`` drafts (no schedule by batch size there)."""
    return (
        f"--speculative-num-steps {k} --speculative-eagle-topk 1 "
        f"--speculative-num-draft-tokens {k + 1}"
    )
