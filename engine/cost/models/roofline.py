"""roofline: each pass's time from the hardware's bandwidth and FLOP/s and the models' sizes,
the additive form (docs/model.md, "Cost models")."""

from __future__ import annotations

import math
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from engine.core.config import (
    BATCH_MAX,
    EFFICIENCY_MIN,
    PROMPT_MAX,
    T0_MAX_US,
    TOKENS_MAX,
    ConfigError,
    SpecConfig,
    field,
)
from engine.core.fields import SPEC_IDS
from engine.core.parts import COST, PROPOSER
from engine.cost.part import CostPart
from engine.cost.placement import (
    GPU_MEMORY_UTILIZATION_MAX,
    SKEW_MAX,
    TP_MAX,
    Run,
    check_feasible,
)

if TYPE_CHECKING:
    from engine.cost.roofline import RooflineCost, RooflineMaxCost
    from engine.cost.specs import HardwareSpec, ModelSpec


def _hardware_ids() -> tuple[str, ...]:
    from engine.cost.specs import known_ids

    return known_ids("hardware")


def _model_ids() -> tuple[str, ...]:
    from engine.cost.specs import known_ids

    return known_ids("model")


# Bytes per weight by format (None: the model's own): 4-bit formats carry their block scales,
# int4 one bf16 scale per group of 128 (GPTQ, AWQ: 0.5 + 2/128), NVFP4 one fp8 scale per 16
# values (9 bytes per 16), MXFP4 one 8-bit scale per 32 (17 per 32).
WEIGHT_BYTES: dict[str, float | None] = {
    "model": None,
    "bf16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "int4": 0.5 + 2 / 128,
    "nvfp4": 9 / 16,
    "mxfp4": 17 / 32,
}

# The matmul formats and the hardware field holding each one's peak (None: flops_bf16).
COMPUTE_PEAKS: dict[str, str | None] = {"bf16": None, "fp8": "flops_fp8", "fp4": "flops_fp4"}

SPEC_IDS.setdefault("hardware", _hardware_ids)
SPEC_IDS.setdefault("model", _model_ids)

# The fields both roofline forms read (engine.cost.models.roofline_max).
SPEC_FIELDS = (
    field(
        "cost.gpu",
        "h100",
        label="gpu",
        kind="spec",
        choices=("hardware",),
        help="roofline: accelerator (engine/cost/data/hardware.toml or your own)",
    ),
    field(
        "cost.target",
        "llama-3.1-8b",
        label="target",
        kind="spec",
        choices=("model",),
        help="roofline: target model (engine/cost/data/models.toml or your own)",
    ),
    field(
        "cost.draft",
        "llama-3.2-1b",
        label="draft",
        kind="spec",
        choices=("model",),
        help="roofline: draft model",
    ),
    field(
        "cost.t0_us",
        0.0,
        label="t0 us",
        kind="number",
        low=0.0,
        high=T0_MAX_US,
        unit="us",
        help="roofline: fixed overhead of every pass (kernel launches)",
    ),
    field(
        "cost.bytes_per_kv",
        2.0,
        label="kv bytes",
        kind="number",
        low=0.0,
        high=8.0,
        low_open=True,
        unit="bytes",
        help="roofline: bytes per KV-cache element (2: bf16)",
    ),
    field(
        "cost.tp",
        1,
        label="tp",
        kind="int",
        low=1,
        high=TP_MAX,
        help="roofline: GPUs the target runs over (tensor parallel; all-reduces over the "
        "GPU's link in its spec file)",
    ),
    field(
        "cost.draft_tp",
        1,
        label="draft tp",
        kind="int",
        low=1,
        high=TP_MAX,
        help="roofline: GPUs the draft runs over (1: one GPU, or replicated on each)",
    ),
    field(
        "cost.weight_dtype",
        "model",
        label="weights",
        kind="choice",
        choices=tuple(WEIGHT_BYTES),
        help="roofline: the target's weights: model (its own bytes per weight), bf16 2 bytes, "
        "fp8 and int8 1, int4 0.516 (4 bits and a bf16 scale per 128), nvfp4 9/16 (4 bits and "
        "an fp8 scale per 16), mxfp4 17/32 (4 bits and an 8-bit scale per 32)",
    ),
    field(
        "cost.draft_weight_dtype",
        "model",
        label="draft w",
        kind="choice",
        choices=tuple(WEIGHT_BYTES),
        help="roofline: the draft's weights, as cost.weight_dtype",
    ),
    field(
        "cost.compute_dtype",
        "bf16",
        label="matmuls",
        kind="choice",
        choices=tuple(COMPUTE_PEAKS),
        help="roofline: the peak the target's matmuls run at: bf16, fp8 (the GPU's flops_fp8) "
        "or fp4 (flops_fp4: Blackwell's nvfp4 and mxfp4)",
    ),
    field(
        "cost.draft_overhead_us",
        0.0,
        label="draft +us",
        kind="number",
        low=0.0,
        high=T0_MAX_US,
        unit="us",
        help="roofline: fixed cost of each draft pass beyond t0 (launches: eager or a CUDA graph)",
    ),
    field(
        "cost.drafting",
        "sequential",
        label="drafting",
        kind="choice",
        choices=("sequential", "parallel"),
        help="roofline: sequential (one draft pass a token) or parallel (k tokens in one pass "
        "over k positions: PARD, DFlash)",
    ),
    field(
        "cost.spec_overhead_us",
        0.0,
        label="spec +us",
        kind="number",
        low=0.0,
        high=T0_MAX_US,
        unit="us",
        help="roofline: fixed cost of every speculative cycle, k = 0 too (sampling, "
        "bookkeeping); the autoregressive baseline does not pay it",
    ),
    field(
        "cost.ep",
        1,
        label="ep",
        kind="int",
        low=1,
        high=TP_MAX,
        help="roofline: GPUs an MoE target's routed experts spread over (expert parallel; "
        "two all-to-alls a MoE layer)",
    ),
    field(
        "cost.expert_skew",
        0.0,
        label="skew",
        kind="number",
        low=0.0,
        high=SKEW_MAX,
        help="roofline: MoE routing skew s (expert popularity ~ rank^-s; 0: uniform)",
    ),
)


def check_placement(config: Any) -> None:
    """ConfigError naming the field when ``config``'s roofline cannot run: fp8 or fp4 matmuls
    (``cost.compute_dtype``) on hardware without that peak, or a placement of its models
    that cannot exist (:func:`engine.cost.placement.check_feasible` with the most memory a
    server can give: a spread without a link, a tp that does not split the heads, an ep
    that does not split the experts, weights that do not fit). A model-free proposer
    (n-gram, suffix decoding) places no draft model: the target alone is checked. A scenario
    is refused on construction, as an unknown id is; every command and the form make one."""
    from engine.cost.specs import files_stamp

    _check_placement(
        config.gpu,
        config.target,
        None if PROPOSER.of(config).model_free else config.draft,
        config.tp,
        config.draft_tp,
        config.ep,
        config.weight_dtype,
        config.draft_weight_dtype,
        config.compute_dtype,
        files_stamp(),
    )


@lru_cache(maxsize=256)
def _check_placement(
    gpu: str,
    target_id: str,
    draft_id: str | None,
    tp: int,
    draft_tp: int,
    ep: int,
    weight_dtype: str,
    draft_weight_dtype: str,
    compute_dtype: str,
    stamp: tuple[Any, ...],
) -> None:
    """:func:`check_placement`, once per setting and state of the user's spec files (a sweep
    makes thousands of scenarios; reading three specs costs about 50 us). ``stamp`` is there
    to key the cache: an edited spec file is read again. A refusal is not kept. ``draft_id``
    None: no draft model (a model-free proposer)."""
    from engine.cost.specs import SpecError, get_hardware, get_model

    try:
        hardware = get_hardware(gpu)
        target = get_model(target_id)
        draft = None if draft_id is None else get_model(draft_id)
    except SpecError:
        return  # an unreadable spec is reported by its field when the cost is built
    peak = COMPUTE_PEAKS[compute_dtype]
    if peak is not None and getattr(hardware, peak) is None:
        raise ConfigError(
            "cost.compute_dtype",
            f"{hardware.id} has no {compute_dtype} peak in its spec file ({peak}): use bf16",
        )
    target_run = Run(tp=tp, bytes_per_weight=WEIGHT_BYTES[weight_dtype], ep=ep)
    draft_run = Run(tp=draft_tp, bytes_per_weight=WEIGHT_BYTES[draft_weight_dtype])
    # All of the GPU, less the server's reserve: what `spectui load` can be given at most
    # (engine.cost.placement), so that no command accepts what it could never serve.
    check_feasible(hardware, target, draft, target_run, draft_run, GPU_MEMORY_UTILIZATION_MAX)


def _runs(config: SpecConfig, hardware: HardwareSpec) -> dict[str, Any]:
    """The target's and the draft's runs (GPUs, the draft's overhead per pass), as keyword
    arguments of a roofline cost."""
    peak = COMPUTE_PEAKS[config.compute_dtype]
    flops = None if peak is None else getattr(hardware, peak)
    return {
        "target_run": Run(
            tp=config.tp,
            bytes_per_weight=WEIGHT_BYTES[config.weight_dtype],
            flops=flops,
            ep=config.ep,
            expert_skew=config.expert_skew,
        ),
        "draft_run": Run(
            tp=config.draft_tp,
            overhead_us=config.draft_overhead_us,
            bytes_per_weight=WEIGHT_BYTES[config.draft_weight_dtype],
            parallel=config.drafting == "parallel",
        ),
        "spec_overhead_us": config.spec_overhead_us,
    }


def _specs(config: SpecConfig) -> tuple[HardwareSpec, ModelSpec, ModelSpec]:
    """The hardware, target and draft a roofline reads; an unknown id names its field."""
    from engine.cost.specs import SpecError, get_hardware, get_model

    try:
        hardware = get_hardware(config.gpu)
    except SpecError as err:
        raise ConfigError("cost.gpu", str(err)) from None
    models = []
    for key, spec_id in (("cost.target", config.target), ("cost.draft", config.draft)):
        try:
            models.append(get_model(spec_id))
        except SpecError as err:
            raise ConfigError(key, str(err)) from None
    return hardware, models[0], models[1]


# The slowest pass a roofline may price, in microseconds: an H100 at the lowest efficiency
# (1e-6) over the largest batch and context the fields allow takes about 1e19; beyond 1e30
# (hardware or model numbers of a spec file far from any device) totals could overflow.
PASS_MAX_US = 1e30
_WIDEST = 4097  # tokens per sequence of the widest pass: a tree of NODES_MAX, and its root


@lru_cache(maxsize=64)
def _slowest(cost: RooflineCost | RooflineMaxCost) -> tuple[float, float]:
    """The target's and the draft's slowest pass (see :func:`_bounded`), once per cost."""
    import numpy as np

    context = PROMPT_MAX + TOKENS_MAX
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        return (
            float(cost._pass_us(cost.target, _WIDEST, BATCH_MAX, context, cost.target_run)),
            float(cost._pass_us(cost.draft, _WIDEST, BATCH_MAX, context, cost.draft_run)),
        )


def _bounded(cost: RooflineCost | RooflineMaxCost, config: SpecConfig) -> None:
    """ConfigError naming the model's field unless its slowest pass (the largest batch,
    context and width the fields allow) is finite and at most :data:`PASS_MAX_US`, so that
    every accepted configuration has finite metrics."""
    context = PROMPT_MAX + TOKENS_MAX
    for key, slowest in zip(("cost.target", "cost.draft"), _slowest(cost), strict=True):
        if not (math.isfinite(slowest) and slowest <= PASS_MAX_US):
            raise ConfigError(
                key,
                f"{config.get(key)} on {config.gpu}: a pass at batch {BATCH_MAX:,} and context "
                f"{context:,} would take {slowest:.3g} us; a roofline pass must stay under "
                "1e30 us (check the spec files' numbers)",
            )


def specs_label(config: Any) -> str:
    """A roofline's setting in words: "roofline on h100: llama-3.1-8b verifies, ..." ("on
    4 x h100" for a target over 4 GPUs)."""
    gpus = f"{config.tp} x {config.gpu}" if config.tp > 1 else config.gpu
    if config.weight_dtype != "model" or config.compute_dtype != "bf16":
        gpus += f" ({config.weight_dtype} weights, {config.compute_dtype} matmuls)"
    if config.ep > 1:
        gpus += f", experts over {config.ep}"
    if config.expert_skew:
        gpus += f", routing skew {config.expert_skew:g}"
    draft = f"{config.draft} drafts"
    if config.drafting == "parallel":
        draft += " in one pass"
    if config.draft_tp > 1:
        draft += f" on {config.draft_tp}"
    if config.draft_weight_dtype != "model":
        draft += f" ({config.draft_weight_dtype} weights)"
    if config.draft_overhead_us:
        draft += f" (+{config.draft_overhead_us:g} us a pass)"
    if config.spec_overhead_us:
        draft += f", +{config.spec_overhead_us:g} us a cycle"
    return (
        f"{config.cost_model} on {gpus}: {config.target} verifies, {draft}, "
        f"batch {config.batch_size}, prompt {config.prompt_len}"
    )


@COST.register
class Roofline(CostPart):
    name = "roofline"
    description = "each pass's time from hardware and model specs: weights + KV + FLOPs, summed"
    brief = "from hardware and model specs"
    batch_default = True
    fields = (
        *SPEC_FIELDS,
        field(
            "cost.eta_w",
            0.81,
            label="η weights",
            kind="number",
            low=EFFICIENCY_MIN,
            high=1.0,
            help="roofline: bandwidth efficiency reading weights",
        ),
        field(
            "cost.eta_kv",
            1.0,
            label="η kv",
            kind="number",
            low=EFFICIENCY_MIN,
            high=1.0,
            help="roofline: bandwidth efficiency reading the KV cache",
        ),
        field(
            "cost.eta_f",
            0.77,
            label="η flops",
            kind="number",
            low=EFFICIENCY_MIN,
            high=1.0,
            help="roofline: efficiency of the peak FLOP/s",
        ),
    )

    def check(self, config: Any) -> None:
        check_placement(config)

    def build(self, config: Any) -> Any:
        from engine.cost.roofline import RooflineCost

        hardware, target, draft = _specs(config)
        cost = RooflineCost(
            hardware,
            target,
            draft,
            eta_w=config.eta_w,
            eta_kv=config.eta_kv,
            eta_f=config.eta_f,
            t0_us=config.t0_us,
            bytes_per_kv=config.bytes_per_kv,
            **_runs(config, hardware),
        )
        _bounded(cost, config)
        return cost

    def label(self, config: Any) -> str:
        return specs_label(config)
