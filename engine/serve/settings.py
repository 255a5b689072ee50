"""A load study's settings, one table for the command line and presets (``[load]``).

Each setting has a default, a type and the flag that sets it; :func:`plan_of` turns
settings (a preset's ``[load]`` table, then the flags given) into a checked
:class:`engine.serve.load.Plan` for a scenario.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engine.core.fields import ConfigError
from engine.serve.server import Server
from engine.serve.workload import Lengths, Workload

if TYPE_CHECKING:
    from engine.serve.load import Plan

# Lengths by name: the scenario's own (prompt_len and tokens_per_seq), half to 1.5 times
# them, or the lognormal fit to the Azure LLM inference trace 2023, conversation
# (Azure/AzurePublicDataset data/AzureLLMInferenceTrace_conv.csv at commit 790921015d50,
# 19,366 requests: mean and standard deviation of ln tokens; docs/model.md).
LENGTHS = ("fixed", "uniform", "azure-conv")
AZURE_CONV = {
    "prompt": Lengths("lognormal", 760, 0.9852, 2, 14050),
    "output": Lengths("lognormal", 151, 0.8590, 7, 1000),
}


@dataclass(frozen=True)
class Setting:
    """One setting: its key (in ``[load]``), default, kind (int, float, floats, ints,
    text) and help."""

    key: str
    default: Any
    kind: str
    help: str


SETTINGS = (
    Setting("rate", None, "floats", "requests/s, open loop"),
    Setting("concurrency", None, "ints", "requests in the system at once, closed loop"),
    Setting(
        "trace",
        None,
        "text",
        "a trace file (arrival_s,prompt_tokens,output_tokens) whose requests are served",
    ),
    Setting("speeds", (1.0,), "floats", "with a trace: its arrivals this many times faster"),
    Setting("requests", 300, "int", "requests per run"),
    Setting("cv", 1.0, "float", "coefficient of variation of the gaps (1: Poisson)"),
    Setting("lengths", "fixed", "text", "request lengths"),
    Setting("warmup", 0.1, "float", "share of the first requests left out"),
    Setting("max_num_seqs", 256, "int", "requests running at once"),
    Setting("max_num_batched_tokens", 8192, "int", "tokens a step"),
    Setting("gpu_memory_utilization", 0.9, "float", "share of GPU memory for weights and KV"),
    Setting("verify_budget", 64, "int", "the budget policy's draft tokens a step"),
    Setting("policies", ("off", "fixed"), "texts", "load policies"),
    Setting("replications", 3, "int", "runs per level and policy"),
    Setting("slo_ttft_ms", math.inf, "float", "TTFT SLO that goodput counts"),
    Setting("slo_tpot_ms", math.inf, "float", "TPOT SLO that goodput counts"),
    Setting("usd_per_gpu_hour", 2.0, "float", "price of a GPU-hour"),
)
BY_KEY = {s.key: s for s in SETTINGS}


def checked(key: str, value: Any) -> Any:
    """``value`` of setting ``key`` in its type; ConfigError naming the key otherwise."""
    setting = BY_KEY.get(key)
    if setting is None:
        raise ConfigError(key, f"unknown load setting (known: {', '.join(BY_KEY)})")
    kind = setting.kind
    try:
        if kind in ("floats", "ints", "texts"):
            items = value if isinstance(value, list | tuple) else [value]
            if not items:
                raise ValueError
            if kind == "texts":
                if not all(isinstance(v, str) for v in items):
                    raise ValueError
                return tuple(items)
            cast = float if kind == "floats" else int
            if any(isinstance(v, bool) or not isinstance(v, int | float) for v in items):
                raise ValueError
            if kind == "ints" and any(float(v) != int(v) for v in items):
                raise ValueError
            return tuple(cast(v) for v in items)
        if kind == "text":
            if not isinstance(value, str):
                raise ValueError
            return value
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError
        if kind == "int":
            if float(value) != int(value):
                raise ValueError
            return int(value)
        return float(value)
    except (ValueError, OverflowError):
        what = {"floats": "numbers", "ints": "whole numbers", "texts": "names"}.get(kind, kind)
        raise ConfigError(key, f"expected {what}") from None


def plan_of(settings: dict[str, Any], config: Any) -> Plan:
    """The checked plan of ``settings`` (defaults for the missing ones) for ``config``."""
    from engine.serve.load import Plan

    values = {s.key: s.default for s in SETTINGS}
    values.update({key: checked(key, value) for key, value in settings.items()})
    given = [key for key in ("rate", "concurrency", "trace") if values[key] is not None]
    if len(given) != 1:
        raise ConfigError(
            "rate", "give a rate (open loop), a concurrency (closed loop) or a trace, one of them"
        )
    if values["lengths"] not in LENGTHS:
        raise ConfigError("lengths", f"must be one of {', '.join(LENGTHS)}")
    prompt, output = lengths_of(values["lengths"], config)
    closed = values["concurrency"] is not None
    plan = Plan(
        workload=Workload(
            requests=values["requests"],
            rate=1.0,
            cv=values["cv"],
            prompt=prompt,
            output=output,
            warmup=values["warmup"],
        ),
        server=Server(
            max_num_seqs=values["max_num_seqs"],
            max_num_batched_tokens=values["max_num_batched_tokens"],
            gpu_memory_utilization=values["gpu_memory_utilization"],
            verify_budget=values["verify_budget"],
        ),
        levels=tuple(
            values["speeds"]
            if values["trace"] is not None
            else values["concurrency"]
            if closed
            else values["rate"]
        ),
        closed=closed,
        trace=values["trace"],
        policies=values["policies"],
        replications=values["replications"],
        seed=int(config.seed),
        slo_ttft_ms=values["slo_ttft_ms"],
        slo_tpot_ms=values["slo_tpot_ms"],
        usd_per_gpu_hour=values["usd_per_gpu_hour"],
    )
    plan.check()
    from engine.serve.policies import check_proposer

    check_proposer(config, plan.policies)  # a model-free proposer's policies
    return plan


def lengths_of(name: str, config: Any) -> tuple[Lengths, Lengths]:
    """The prompt and output lengths ``name`` gives for the scenario ``config``."""
    prompt, output = int(config.prompt_len), int(config.tokens_per_seq)
    if name == "fixed":
        return Lengths(median=prompt, low=0, high=max(prompt, 1)), Lengths(median=output)
    if name == "uniform":
        return (
            Lengths("uniform", median=prompt, low=prompt // 2, high=max(prompt * 3 // 2, 1)),
            Lengths("uniform", median=output, low=max(output // 2, 1), high=output * 3 // 2),
        )
    return AZURE_CONV["prompt"], AZURE_CONV["output"]
