"""Where a cycle's two models sit (docs/model.md, "Cost models"): how each runs over GPUs
(:class:`Run`), and the one check that a placement can exist (:func:`check_feasible`).

A placement is feasible when

- a model spread over several GPUs has a link between them in its hardware's spec file;
- tensor parallelism splits a model's attention heads evenly: ``tp`` divides ``n_heads``,
  and divides ``kv_heads`` or is a multiple of them (KV heads are replicated past
  ``kv_heads``, as vLLM does; a latent cache is replicated whole, so only ``n_heads``
  counts), for the target (``cost.tp``) and the draft (``cost.draft_tp``);
- expert parallelism spreads an MoE target's routed experts whole and evenly: ``ep``
  divides ``experts``;
- the weights a GPU holds (the target's over its ``tp`` GPUs, routed experts over
  ``max(ep, tp)``, and the draft's over its own; no draft for a model-free proposer) fit
  in the memory a server gives them:
  ``gpu_memory_utilization x memory - reserve`` (vLLM's setting, 0.9 by default, and what
  the serving simulator keeps back for activations and CUDA graphs, 2 GB).

Every scenario of a roofline cost is checked when it is made (engine.cost.models.roofline),
with the most memory a server can give (utilization 1, the same reserve): a scenario any
command accepts is one ``spectui load`` can serve (at ``--gpu-memory-utilization 1`` if its
default 0.9 leaves too little), and one that it can never serve is refused everywhere. A
server's KV capacity checks again with its own setting (engine.serve.server). (At the
default 0.9 a 7B fp16 model would not fit a 16 GB V100, where llama.cpp runs it: a
published measurement, engine/validate/data/measurements.toml.) This module is a leaf
below both (the standard library and the specs only, no numpy): the form checks a
scenario without loading numpy.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.core.fields import ConfigError
from engine.cost.specs import HardwareSpec, ModelSpec

TP_MAX = 64  # GPUs a model or its experts may spread over
SKEW_MAX = 4.0  # the largest MoE routing skew (engine.cost.moe)
# A server's share of a GPU's memory for weights and KV cache, and what it keeps back
# (activations, CUDA graphs), in GB: vLLM's default utilization, the serving simulator's.
GPU_MEMORY_UTILIZATION = 0.9
GPU_MEMORY_UTILIZATION_MAX = 1.0
RESERVE_GB = 2.0


@dataclass(frozen=True)
class Run:
    """How one model of a cycle runs: over ``tp`` GPUs (its routed experts over ``ep``), with
    ``overhead_us`` more on each of its passes than ``t0_us`` (engine.cost.roofline)."""

    tp: int = 1
    overhead_us: float = 0.0
    # Bytes per weight of a quantized model (None: the model's own) and the peak FLOP/s its
    # matmuls run at (None: the hardware's bf16 peak).
    bytes_per_weight: float | None = None
    flops: float | None = None
    # Expert parallelism (an MoE model's routed experts spread whole over ``ep`` GPUs, with
    # two all-to-alls a MoE layer) and routing skew (engine.cost.moe).
    ep: int = 1
    expert_skew: float = 0.0
    # A draft that proposes its k tokens in one pass over k positions (parallel drafting:
    # PARD, DFlash), so drafting costs one pass whatever k.
    parallel: bool = False


ONE_GPU = Run()  # a model on one GPU, nothing added to its passes: the default run


def spread_problem(
    hw: HardwareSpec, target: ModelSpec | None, tp: int, draft_tp: int, ep: int
) -> tuple[str, str] | None:
    """(field, message) when a model is spread over GPUs it cannot be: several GPUs of
    hardware whose spec file gives no link, or experts over more GPUs than the target has
    experts (``target`` None: not checked); None when the spread is fine."""
    for key, gpus in (("cost.tp", tp), ("cost.draft_tp", draft_tp), ("cost.ep", ep)):
        if gpus > 1 and hw.link_bw_bytes_s is None:
            return key, (
                f"{hw.id} has no link between GPUs in its spec file (link_bw_bytes_s): "
                "spreading a model over GPUs needs one"
            )
    if ep > 1 and target is not None and (target.experts or 0) < ep:
        return "cost.ep", (
            f"{target.id} has {target.experts or 'no'} routed experts: expert parallelism "
            f"over {ep} GPUs needs an MoE target with as many"
        )
    return None


def splits_heads(model: ModelSpec, tp: int) -> bool:
    """Whether ``tp`` GPUs split ``model``'s heads evenly (module docstring)."""
    if model.n_heads % tp:
        return False
    if model.kv_lora_rank is not None or tp == 1:
        return True
    return model.kv_heads % tp == 0 if tp < model.kv_heads else tp % model.kv_heads == 0


def _choices(counts: list[int]) -> str:
    """``[1, 2, 4]`` as "1, 2 or 4"."""
    words = [str(count) for count in counts]
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"


def heads_problem(model: ModelSpec, tp: int) -> str | None:
    """Why ``tp`` GPUs cannot split ``model``'s heads, with the counts that can (1 always
    can); None when they can."""
    if splits_heads(model, tp):
        return None
    choose = _choices([gpus for gpus in range(1, TP_MAX + 1) if splits_heads(model, gpus)])
    if model.n_heads % tp:
        return f"{tp} does not divide {model.id}'s {model.n_heads} attention heads; choose {choose}"
    return (
        f"{tp} GPUs cannot share {model.id}'s {model.kv_heads} KV heads evenly (tp must divide "
        f"them or be a multiple of them); choose {choose}"
    )


def experts_problem(model: ModelSpec, ep: int) -> str | None:
    """Why an MoE ``model``'s routed experts cannot spread whole and evenly over ``ep``
    GPUs, with the counts that can; None when they can (or ``ep`` is 1)."""
    experts = model.experts or 0
    if ep == 1 or (experts and experts % ep == 0):
        return None
    choose = _choices([gpus for gpus in range(1, min(experts, TP_MAX) + 1) if experts % gpus == 0])
    return f"{ep} does not divide {model.id}'s {experts} routed experts; choose {choose}"


def model_bytes(model: ModelSpec, run: Run) -> float:
    """Bytes of ``model``'s weights on each GPU of its run: ``params * b_w / tp``, an MoE
    model's routed experts over ``max(ep, tp)`` GPUs (``run.bytes_per_weight`` replaces the
    model's ``b_w``)."""
    b_w = model.bytes_per_weight if run.bytes_per_weight is None else run.bytes_per_weight
    if model.experts is None:
        return model.params * b_w / run.tp
    routed = (model.experts or 0) * model.expert_layer_params
    dense = model.params - routed
    return dense * b_w / run.tp + routed * b_w / max(run.ep, run.tp)


def usable_bytes(
    hw: HardwareSpec,
    gpu_memory_utilization: float = GPU_MEMORY_UTILIZATION,
    reserve_gb: float = RESERVE_GB,
) -> float:
    """Bytes of a GPU a server gives its weights and KV cache:
    ``gpu_memory_utilization x mem_bytes - reserve_gb x 1e9``."""
    return gpu_memory_utilization * hw.mem_bytes - reserve_gb * 1e9


def check_feasible(
    hw: HardwareSpec,
    target: ModelSpec,
    draft: ModelSpec | None,
    target_run: Run,
    draft_run: Run,
    gpu_memory_utilization: float = GPU_MEMORY_UTILIZATION,
    reserve_gb: float = RESERVE_GB,
) -> float:
    """The bytes each GPU has left for the KV cache (> 0) once the target's and the draft's
    weights are placed on ``hw`` as their runs say, with ``gpu_memory_utilization`` (in
    [0.05, 1]) of its memory less ``reserve_gb`` GB usable. :class:`ConfigError` naming the
    field when the placement cannot exist (module docstring): ``cost.tp``, ``cost.draft_tp``
    or ``cost.ep`` for a spread, ``cost.target`` when the weights do not fit.

    ``draft`` None: no draft model is placed (a model-free proposer, n-gram or suffix
    decoding, drafts on the CPU): the target alone, and ``draft_run`` is not checked."""
    draft_tp = 1 if draft is None else draft_run.tp
    problem = spread_problem(hw, target, target_run.tp, draft_tp, target_run.ep)
    if problem is not None:
        raise ConfigError(*problem)
    placed = [("cost.tp", target, target_run)]
    if draft is not None:
        placed.append(("cost.draft_tp", draft, draft_run))
    for key, model, run in placed:
        why = heads_problem(model, run.tp)
        if why is not None:
            raise ConfigError(key, why)
    why = experts_problem(target, target_run.ep)
    if why is not None:
        raise ConfigError("cost.ep", why)
    weights = sum(model_bytes(model, run) for _, model, run in placed)
    usable = usable_bytes(hw, gpu_memory_utilization, reserve_gb)
    free = usable - weights
    if free <= 0:
        remedy = "spread them over more GPUs (cost.tp) or use a bigger GPU"
        if usable_bytes(hw, GPU_MEMORY_UTILIZATION_MAX, reserve_gb) > weights:
            # A server given all of the GPU holds them (every command accepts the scenario).
            top = GPU_MEMORY_UTILIZATION_MAX
            remedy = f"raise gpu_memory_utilization (at {top:g} they fit), {remedy}"
        models = f"{target.id} takes" if draft is None else f"{target.id} and {draft.id} take"
        raise ConfigError(
            "cost.target",
            f"{models} {weights / 1e9:.1f} GB a GPU of {hw.id}'s "
            f"{usable / 1e9:.1f} GB usable (gpu_memory_utilization "
            f"{gpu_memory_utilization:g}, reserve {reserve_gb:g} GB): the "
            f"weights do not fit; {remedy}",
        )
    return free
