"""One scenario: a workload, a seed and named parts, validated on construction.

A scenario is the original simulator's configuration generalised (docs/model.md, "Beyond
the original"): an acceptance model (``draft_model``), a cost model (``cost.model``), a K
policy (``policy.name``) and a draft shape (``shape.name``), each chosen by name and read
with its own parameters, plus the workload and the seed.

:class:`SpecConfig` is the one table of fields: each dataclass field carries its
:class:`FieldSpec` (serialised key, kind, range, unit, help, which part reads it, whether
it enters the seed key). The CLI flags, the app's form, preset keys, CSV columns and
validation are all generated from it. Keys are the original's flat names for its 14
fields (``k``, ``acceptance_rate``, ... ``tail``), so its flags, presets and CSV columns keep
working; newer fields have dotted keys (``workload.batch_size``, ``cost.verify_token_us``).
This module imports neither numpy nor pandas: the app's form starts without them.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

K_MAX = 1024
# The exact dynamic program is O(tokens_per_seq x K); these bounds keep every valid run finite.
TOKENS_MAX = 10**6
SEQUENCES_MAX = 10**7
COST_MAX_US = 1e9  # a thousand seconds per forward pass; beyond that totals overflow
# One nanosecond. With COST_MAX_US it bounds draft/verify by 1e12, so that every accepted
# configuration has finite metrics (cost_ratio, compute_overhead) and a speedup > 0.
VERIFY_MIN_US = 1e-3
# The roofline efficiencies' floor: a pass then takes at most a million times its ideal
# time, so that every accepted roofline configuration has finite metrics.
EFFICIENCY_MIN = 1e-6
SEED_MAX = 2**63 - 1
BATCH_MAX = 4096
WORKERS_MAX = 64  # sweep worker processes (engine.sweep.pool, spectui sweep --workers)
PROMPT_MAX = 10**7
T0_MAX_US = 1e6
TAIL_RULES = ("full", "clamp")
# The original's three acceptance models, then those beyond it (docs/model.md).
ORIGINAL_MODEL_NAMES = ("fixed", "position_decay", "entropy_aware")
DRAFT_MODEL_NAMES = (*ORIGINAL_MODEL_NAMES, "per_position", "beta_round", "markov", "confidence")
COST_MODEL_NAMES = ("linear", "roofline", "roofline_max", "table")
POLICY_NAMES = ("fixed", "hf_heuristic", "threshold", "goodput", "schedule", "oracle")
THRESHOLD_RULES = ("p_min", "h")
K_MAX_POLICY = 32  # the default bound of an adaptive policy's k (policy.k_max)
WINDOW_MAX = 10**4
BETA_MAX = 1e4
SHAPE_NAMES = ("chain", "tree")
TREE_TEXT_MAX = 8192  # characters of a shape.tree text
# The most characters a typed value of each kind may have (a form field's length, checked
# before the text is read, so that no paste costs more than this much reading); other kinds
# (numbers, choices, ids) take TEXT_MAX. Each is above its longest valid text: 1,024 rates,
# 4,096 batch:k pairs, a path of PATH_MAX.
TEXT_MAX = 64
KIND_TEXT_MAX = {
    "probs": 32 * K_MAX,
    "schedule": 16 * BATCH_MAX,
    "tree": TREE_TEXT_MAX,
    "path": 4096,
}
SHOWN_MAX = 60  # characters of a wrong value an error message repeats
# Each part of a scenario: the key of the field that chooses it, and the names it may take.
PARTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "acceptance": ("draft_model", DRAFT_MODEL_NAMES),
    "cost": ("cost.model", COST_MODEL_NAMES),
    "policy": ("policy.name", POLICY_NAMES),
    "shape": ("shape.name", SHAPE_NAMES),
}
_SPEC_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,63}")


class ConfigError(ValueError):
    """A configuration value is invalid. ``field`` names the offending parameter."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message

    def __reduce__(self) -> tuple[Any, ...]:  # a worker process sends it back whole
        return (type(self), (self.field, self.message))


@dataclass(frozen=True)
class FieldSpec:
    """One field of a scenario: how it is named, checked and described to a user.

    ``kind``: "int", "seed", "prob" (a number in [0, 1]), "number" (in [low, high], or
    (low, high] when ``low_open``), "choice", "spec" (a hardware or model id from the spec
    files, checked when the part that reads it is chosen; ``choices`` holds "hardware" or
    "model"), "path" (a file name), "probs" (probabilities, written "0.9,0.8,0.7") or
    "schedule" (k by batch size, written "1:5,32:3,128:0"). The last two are kept as their
    canonical text, so that a scenario stays hashable and reads back from a CSV cell.
    ``part`` is (key of the choosing field, the names that read this field); None when
    every scenario reads it. ``seed_key``: the field enters the per-configuration seed key
    when it is read (see :func:`seed_key_values`).
    """

    kind: str
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] = ()
    unit: str = ""
    help: str = ""
    low_open: bool = False
    part: tuple[str, tuple[str, ...]] | None = None
    seed_key: bool = False
    flag: str = ""  # the CLI flag; by default "--" and the key's last part, dashed
    label: str = ""  # the app form's label: at most 9 characters, so it never wraps
    key: str = ""  # filled in from the dataclass field
    attr: str = ""

    def allowed(self) -> str:
        if self.kind == "choice":
            return "one of " + ", ".join(self.choices)
        if self.kind == "prob":
            return "a number in [0, 1]"
        if self.kind == "number":
            bracket = "(" if self.low_open else "["
            return f"a number in {bracket}{_short(self.low)}, {_short(self.high)}]"
        if self.kind == "spec":
            return f"a {self.choices[0]} id ({', '.join(known_spec_ids(self.choices[0]))})"
        if self.kind == "path":
            return "a file name"
        if self.kind == "probs":
            return f"1 to {K_MAX} numbers in [0, 1], comma-separated"
        if self.kind == "tree":
            return "a tree: chain:K, kary:k,d, eagle, sequoia:budget,depth or parents=..."
        if self.kind == "schedule":
            return (
                f"BATCH:K pairs, comma-separated, batches rising from 1 (to {BATCH_MAX}), "
                f"K in [0, {K_MAX}]"
            )
        return f"an integer in [{int(self.low or 0)}, {int(self.high or 0)}]"

    @property
    def text_max(self) -> int:
        """The most characters a typed value of this field may have (:data:`KIND_TEXT_MAX`)."""
        return KIND_TEXT_MAX.get(self.kind, TEXT_MAX)

    @property
    def cli_flag(self) -> str:
        return self.flag or "--" + self.key.rsplit(".", 1)[-1].replace("_", "-")

    @property
    def numeric(self) -> bool:
        return self.kind in ("int", "seed", "prob", "number")


def _short(bound: float | None) -> str:
    """A bound as a person types it: 0, 0.001, 1e9."""
    return f"{bound or 0:g}".replace("e+0", "e").replace("e+", "e").replace("e-0", "e-")


def _field(default: Any, key: str = "", **spec: Any) -> Any:
    return dataclasses.field(default=default, metadata={"key": key, "spec": FieldSpec(**spec)})


_ACCEPT = "draft_model"
_COST = "cost.model"
_LINEAR = (_COST, ("linear",))
_ROOFLINES = (_COST, ("roofline", "roofline_max"))
_POLICY = "policy.name"
_ADAPTIVE = (_POLICY, ("hf_heuristic", "threshold", "goodput", "oracle"))


@lru_cache(maxsize=8)
def _spec_ids(file_name: str, config_dir: str, stamp: tuple[float, ...]) -> tuple[str, ...]:
    from engine.cost import specs  # the standard library only

    return specs.spec_ids(file_name, Path(config_dir))


def known_spec_ids(kind: str) -> tuple[str, ...]:
    """The ids of ``kind`` ("hardware" or "model"): shipped and the user's own."""
    from engine.cost import specs

    folder = specs.user_config_dir()
    name = specs.HARDWARE_FILE if kind == "hardware" else specs.MODELS_FILE
    try:
        stamp: tuple[float, ...] = (os.stat(folder / name).st_mtime,)
    except OSError:
        stamp = ()
    return _spec_ids(name, str(folder), stamp)


@dataclass(frozen=True)
class SpecConfig:
    """One scenario. Costs in microseconds, counts in tokens/sequences.

    Every field is validated on construction; an invalid value raises
    :class:`ConfigError` whose message names the field, the value and the allowed range.
    Fields are listed once, here, with their :class:`FieldSpec`.
    """

    draft_model: str = _field(
        "fixed",
        label="model",
        kind="choice",
        choices=DRAFT_MODEL_NAMES,
        help="draft model",
        seed_key=True,
    )
    k: int = _field(
        5,
        label="K",
        kind="int",
        low=1,
        high=K_MAX,
        help="speculation length K (draft tokens per cycle)",
        seed_key=True,
    )
    acceptance_rate: float = _field(
        0.8,
        label="accept",
        kind="prob",
        help="fixed model: P(accept) of every draft token",
        part=(_ACCEPT, ("fixed",)),
        seed_key=True,
    )
    draft_cost_us: float = _field(
        20.0,
        label="draft/tk",
        kind="number",
        low=0.0,
        high=COST_MAX_US,
        unit="us",
        help="linear: cost of one draft forward pass, i.e. per draft token (a cycle of K "
        "drafts pays K of them; the Exact panel's draft time is per cycle)",
        part=_LINEAR,
    )
    verify_cost_us: float = _field(
        200.0,
        label="verify us",
        kind="number",
        low=VERIFY_MIN_US,
        high=COST_MAX_US,
        unit="us",
        help="linear: cost of one target (verify) pass",
        part=_LINEAR,
    )
    decay_base: float = _field(
        0.9,
        label="first p",
        kind="prob",
        help="position_decay: P(accept) at position 1",
        part=(_ACCEPT, ("position_decay",)),
        seed_key=True,
    )
    decay_factor: float = _field(
        0.95,
        label="decay ×",
        kind="prob",
        help="position_decay: factor per further position",
        part=(_ACCEPT, ("position_decay",)),
        seed_key=True,
    )
    entropy_high: float = _field(
        0.95,
        label="p easy",
        kind="prob",
        help="entropy_aware: P(accept) of an easy token",
        part=(_ACCEPT, ("entropy_aware",)),
        seed_key=True,
    )
    entropy_low: float = _field(
        0.5,
        label="p hard",
        kind="prob",
        help="entropy_aware: P(accept) of a hard token",
        part=(_ACCEPT, ("entropy_aware",)),
        seed_key=True,
    )
    entropy_frac: float = _field(
        0.3,
        label="hard frac",
        kind="prob",
        help="entropy_aware: fraction of hard tokens",
        part=(_ACCEPT, ("entropy_aware",)),
        seed_key=True,
    )
    n_sequences: int = _field(
        500,
        label="sequences",
        kind="int",
        low=1,
        high=SEQUENCES_MAX,
        help="sequences to simulate",
        seed_key=True,
    )
    tokens_per_seq: int = _field(
        128,
        label="tok/seq",
        kind="int",
        low=1,
        high=TOKENS_MAX,
        help="output tokens per sequence",
        seed_key=True,
    )
    seed: int = _field(42, label="seed", kind="seed", low=0, high=SEED_MAX, help="random seed")
    tail: str = _field(
        "full",
        label="tail",
        kind="choice",
        choices=TAIL_RULES,
        help="last cycle drafts K (full) or min(K, r-1) (clamp)",
        seed_key=True,
    )
    # Newer fields: dotted keys; none enters the seed key (none changes the draws), so every
    # result of the original stays as it was.
    rates: str = _field(
        "0.9,0.8,0.7",
        "acceptance.rates",
        label="rates",
        kind="probs",
        help="per_position: conditional P(accept) of positions 1..m, comma-separated "
        "(positions beyond m use the last)",
        part=(_ACCEPT, ("per_position",)),
        seed_key=True,
    )
    beta_a: float = _field(
        4.0,
        "acceptance.beta_a",
        label="beta a",
        kind="number",
        low=0.0,
        high=BETA_MAX,
        low_open=True,
        help="beta_round: each cycle's rate ~ Beta(a, b); confidence: each token's q ~ Beta(a, b)",
        part=(_ACCEPT, ("beta_round", "confidence")),
        seed_key=True,
    )
    beta_b: float = _field(
        1.0,
        "acceptance.beta_b",
        label="beta b",
        kind="number",
        low=0.0,
        high=BETA_MAX,
        low_open=True,
        help="beta_round, confidence: the b of Beta(a, b) (mean a / (a + b))",
        part=(_ACCEPT, ("beta_round", "confidence")),
        seed_key=True,
    )
    p_easy: float = _field(
        0.9,
        "acceptance.p_easy",
        label="p easy",
        kind="prob",
        help="markov: P(accept) of every draft token in the easy regime",
        part=(_ACCEPT, ("markov",)),
        seed_key=True,
    )
    p_hard: float = _field(
        0.3,
        "acceptance.p_hard",
        label="p hard",
        kind="prob",
        help="markov: P(accept) of every draft token in the hard regime",
        part=(_ACCEPT, ("markov",)),
        seed_key=True,
    )
    stay: float = _field(
        0.95,
        "acceptance.stay",
        label="stay",
        kind="prob",
        help="markov: P(the regime is kept from one cycle to the next), else redrawn",
        part=(_ACCEPT, ("markov",)),
        seed_key=True,
    )
    easy_frac: float = _field(
        0.5,
        "acceptance.easy_frac",
        label="easy frac",
        kind="prob",
        help="markov: stationary share of the easy regime (a redraw lands on easy with it)",
        part=(_ACCEPT, ("markov",)),
        seed_key=True,
    )
    prompt_len: int = _field(
        0,
        "workload.prompt_len",
        label="prompt",
        kind="int",
        low=0,
        high=PROMPT_MAX,
        unit="tokens",
        help="context already in the KV cache when decoding starts",
    )
    batch_size: int = _field(
        1,
        "workload.batch_size",
        label="batch",
        kind="int",
        low=1,
        high=BATCH_MAX,
        help="sequences decoded together (each verify pass checks all of them)",
    )
    cost_model: str = _field(
        "linear",
        "cost.model",
        label="cost",
        kind="choice",
        choices=COST_MODEL_NAMES,
        flag="--cost",
        help="cost model: linear (fixed costs), roofline, roofline_max (from hardware and "
        "model specs), table (measured latencies)",
    )
    verify_token_us: float = _field(
        0.0,
        "cost.verify_token_us",
        label="verify/tk",
        kind="number",
        low=0.0,
        high=COST_MAX_US,
        unit="us",
        help="linear: verify cost per drafted token checked",
        part=_LINEAR,
    )
    draft_fixed_us: float = _field(
        0.0,
        "cost.draft_fixed_us",
        label="draft fix",
        kind="number",
        low=0.0,
        high=COST_MAX_US,
        unit="us",
        help="linear: fixed cost of a cycle that drafts (draft prefill, launches, rejection "
        "sampling), beyond its passes; a plain step never pays it",
        part=_LINEAR,
    )
    gpu: str = _field(
        "h100",
        "cost.gpu",
        label="gpu",
        kind="spec",
        choices=("hardware",),
        part=_ROOFLINES,
        help="roofline: accelerator (engine/cost/data/hardware.toml or your own)",
    )
    target: str = _field(
        "llama-3.1-8b",
        "cost.target",
        label="target",
        kind="spec",
        choices=("model",),
        part=_ROOFLINES,
        help="roofline: target model (engine/cost/data/models.toml or your own)",
    )
    draft: str = _field(
        "llama-3.2-1b",
        "cost.draft",
        label="draft",
        kind="spec",
        choices=("model",),
        part=_ROOFLINES,
        help="roofline: draft model",
    )
    t0_us: float = _field(
        0.0,
        "cost.t0_us",
        label="t0 us",
        kind="number",
        low=0.0,
        high=T0_MAX_US,
        unit="us",
        part=_ROOFLINES,
        help="roofline: fixed overhead of every pass (kernel launches)",
    )
    bytes_per_kv: float = _field(
        2.0,
        "cost.bytes_per_kv",
        label="kv bytes",
        kind="number",
        low=0.0,
        high=8.0,
        low_open=True,
        unit="bytes",
        part=_ROOFLINES,
        help="roofline: bytes per KV-cache element (2: bf16)",
    )
    eta_w: float = _field(
        0.81,
        "cost.eta_w",
        label="η weights",
        kind="number",
        low=EFFICIENCY_MIN,
        high=1.0,
        part=(_COST, ("roofline",)),
        help="roofline: bandwidth efficiency reading weights",
    )
    eta_kv: float = _field(
        1.0,
        "cost.eta_kv",
        label="η kv",
        kind="number",
        low=EFFICIENCY_MIN,
        high=1.0,
        part=(_COST, ("roofline",)),
        help="roofline: bandwidth efficiency reading the KV cache",
    )
    eta_f: float = _field(
        0.77,
        "cost.eta_f",
        label="η flops",
        kind="number",
        low=EFFICIENCY_MIN,
        high=1.0,
        part=(_COST, ("roofline",)),
        help="roofline: efficiency of the peak FLOP/s",
    )
    max_eta_f: float = _field(
        1.0,
        "cost.max_eta_f",
        label="η flops",
        kind="number",
        low=EFFICIENCY_MIN,
        high=1.0,
        part=(_COST, ("roofline_max",)),
        help="roofline_max: fraction of the peak FLOP/s",
    )
    max_eta_bw: float = _field(
        1.0,
        "cost.max_eta_bw",
        label="η bw",
        kind="number",
        low=EFFICIENCY_MIN,
        high=1.0,
        part=(_COST, ("roofline_max",)),
        help="roofline_max: fraction of the bandwidth",
    )
    cost_table: str = _field(
        "",
        "cost.table",
        label="table",
        kind="path",
        flag="--cost-table",
        part=(_COST, ("table",)),
        help="table: measured latencies, CSV (batch_size,tokens,verify_us[,draft_us]) or "
        "vLLM's dynamic speculative decoding profile (JSON)",
    )
    policy: str = _field(
        "fixed",
        "policy.name",
        label="policy",
        kind="choice",
        choices=POLICY_NAMES,
        flag="--policy",
        help="K policy: fixed (k = K every cycle), hf_heuristic (Hugging Face: +2 after a fully "
        "accepted cycle, else -1), threshold (stop on low draft confidence), goodput (vLLM's "
        "dynamic speculation), schedule (k by batch size), oracle (the best k knowing the model)",
    )
    k_max: int = _field(
        K_MAX_POLICY,
        "policy.k_max",
        label="K max",
        kind="int",
        flag="--policy-k-max",
        low=1,
        high=K_MAX,
        help="adaptive policies: the largest k a cycle may draft",
        part=_ADAPTIVE,
    )
    k_min: int = _field(
        1,
        "policy.k_min",
        label="K min",
        kind="int",
        flag="--policy-k-min",
        low=1,
        high=K_MAX,
        help="threshold: the fewest tokens a cycle drafts",
        part=(_POLICY, ("threshold",)),
    )
    rule: str = _field(
        "p_min",
        "policy.rule",
        label="rule",
        kind="choice",
        choices=THRESHOLD_RULES,
        flag="--rule",
        help="threshold: p_min (llama.cpp: stop before a token with q < p_min) or h "
        "(SpecDec++: stop once 1 - prod q > h)",
        part=(_POLICY, ("threshold",)),
    )
    p_min: float = _field(
        0.75,
        "policy.p_min",
        label="p min",
        kind="prob",
        help="threshold, rule p_min: the least confidence q a drafted token needs",
        part=(_POLICY, ("threshold",)),
    )
    stop_h: float = _field(
        0.5,
        "policy.h",
        label="h",
        kind="prob",
        flag="--stop-h",
        help="threshold, rule h: stop drafting once P(some draft is rejected) > h",
        part=(_POLICY, ("threshold",)),
    )
    window: int = _field(
        16,
        "policy.window",
        label="window",
        kind="int",
        low=1,
        high=WINDOW_MAX,
        help="goodput: cycles of history (of the whole batch) behind its estimates",
        part=(_POLICY, ("goodput",)),
    )
    schedule: str = _field(
        "1:5,32:3,128:1",
        "policy.schedule",
        label="schedule",
        kind="schedule",
        help="schedule: k by batch size, BATCH:K pairs from batch 1 up (0: no speculation)",
        part=(_POLICY, ("schedule",)),
    )
    shape: str = _field(
        "chain",
        "shape.name",
        label="shape",
        kind="choice",
        choices=SHAPE_NAMES,
        flag="--shape",
        help="draft shape: chain (one token per draft pass) or tree (token trees: Medusa, "
        "EAGLE, Sequoia; shape.tree and shape.rank_probs)",
    )

    tree: str = _field(
        "eagle",
        "shape.tree",
        label="tree",
        kind="tree",
        help="tree: chain:K, kary:k,d (Medusa-style), eagle[:total,depth,top_k] (EAGLE-2 "
        "rule), sequoia:budget,depth (Sequoia-optimal) or parents=0,0,1,... ranks=1,2,1,...",
        part=("shape.name", ("tree",)),
        seed_key=True,
    )
    rank_probs: str = _field(
        "0.6,0.15,0.06,0.03,0.02",
        "shape.rank_probs",
        label="rank p",
        kind="probs",
        help="tree: P(the rank-c child is accepted | its parent was), c = 1, 2, ... (sum <= 1)",
        part=("shape.name", ("tree",)),
        seed_key=True,
    )

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            key = f.metadata["key"] or f.name
            object.__setattr__(self, f.name, check_value(key, getattr(self, f.name)))
        for spec in FIELD_SPECS.values():
            if spec.kind in ("spec", "path") and reads(self, spec.key):
                _check_part_value(spec, getattr(self, spec.attr))
        _check_policy(self)

    @property
    def cost_ratio(self) -> float:
        """draft_cost_us / verify_cost_us (dimensionless; the linear cost model's)."""
        return self.draft_cost_us / self.verify_cost_us

    def get(self, key: str) -> Any:
        """The value of the field ``key`` (its key or its attribute name)."""
        return getattr(self, _attr(key))

    def replace(self, **changes: Any) -> SpecConfig:
        """A copy with some fields changed (validated); fields by key or attribute name."""
        return dataclasses.replace(self, **{_attr(name): v for name, v in changes.items()})

    def values(self) -> dict[str, Any]:
        """Every field by key, in table order."""
        return {spec.key: getattr(self, spec.attr) for spec in FIELD_SPECS.values()}

    def to_dict(self) -> dict[str, Any]:
        """The configuration as a record (CSV row, preset, JSON): the original's 14 fields,
        then each newer field whose value differs from its default. A scenario of the
        original writes exactly the original's columns."""
        record = {key: getattr(self, attr) for key, attr in _ORIGINAL}
        for key, attr, default in _NEWER:
            value = getattr(self, attr)
            if value != default:
                record[key] = value
        return record

    def derive(self, changes: Mapping[str, Any], memo: dict[Any, Any]) -> SpecConfig:
        """:meth:`replace` for the many configurations of a grid over one base: equal to
        ``self.replace(**changes)`` (and refused alike), but a (field, value) pair is
        validated once per ``memo`` (a dict the caller keeps for one grid; a field's check
        depends on its value alone) instead of every field of every configuration. The
        checks across fields (a part's spec ids, the policy's) run for each."""
        values = {f.name: getattr(self, f.name) for f in _FIELDS}
        # As replace: every name known first, then the values checked in field order.
        attrs = {_attr(name): value for name, value in changes.items()}
        for attr in sorted(attrs, key=_FIELD_ORDER.__getitem__):
            values[attr] = SpecConfig.check_field(attr, attrs[attr], memo)
        config = object.__new__(SpecConfig)
        for attr, value in values.items():
            object.__setattr__(config, attr, value)
        for spec in _PART_SPECS:
            if reads(config, spec.key):
                part = ("part", spec.key, getattr(config, spec.attr))
                if part not in memo:
                    _check_part_value(spec, getattr(config, spec.attr))
                    memo[part] = True
        _check_policy(config)
        return config

    @staticmethod
    def check_field(name: str, value: Any, memo: dict[Any, Any]) -> Any:
        """:func:`check_value` of the field ``name`` (its key or attribute name), remembered
        in ``memo`` (see :meth:`derive`)."""
        key = FIELD_SPECS[name].key if name in FIELD_SPECS else _BY_ATTR[_attr(name)].key
        try:  # the repr tells -0.0 from 0.0 (equal, and equal keys, but not the same)
            slot: tuple[Any, ...] | None = ("value", key, type(value), value, repr(value))
            checked = memo.get(slot, _MISSING)
        except TypeError:  # an unhashable value (a list): checked every time
            slot, checked = None, _MISSING
        if checked is _MISSING:
            checked = check_value(key, value)
            if slot is not None:
                memo[slot] = checked
        return checked

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> SpecConfig:
        """Build from a mapping by key (or attribute name); unknown keys are errors."""
        return cls().replace(**values)


def _attr(name: str) -> str:
    spec = FIELD_SPECS.get(name) or _BY_ATTR.get(name)
    if spec is None:
        raise ConfigError(name, "unknown parameter; known: " + ", ".join(FIELD_SPECS))
    return spec.attr


FIELD_SPECS: dict[str, FieldSpec] = {}
for _f in dataclasses.fields(SpecConfig):
    _key = _f.metadata["key"] or _f.name
    FIELD_SPECS[_key] = dataclasses.replace(_f.metadata["spec"], key=_key, attr=_f.name)
_BY_ATTR = {spec.attr: spec for spec in FIELD_SPECS.values()}
_MISSING = object()
_FIELDS = dataclasses.fields(SpecConfig)
_PART_SPECS = tuple(spec for spec in FIELD_SPECS.values() if spec.kind in ("spec", "path"))
_FIELD_ORDER = {f.name: number for number, f in enumerate(_FIELDS)}
DEFAULTS: dict[str, Any] = {
    (f.metadata["key"] or f.name): f.default for f in dataclasses.fields(SpecConfig)
}
# The original simulator's fields: always written, in this order.
CONFIG_FIELDS: tuple[str, ...] = tuple(k for k in FIELD_SPECS if "." not in k)
# Newer fields (dotted keys): written when set away from their defaults.
SCENARIO_FIELDS: tuple[str, ...] = tuple(k for k in FIELD_SPECS if "." in k)
_ORIGINAL = tuple((k, FIELD_SPECS[k].attr) for k in CONFIG_FIELDS)
_NEWER = tuple((k, FIELD_SPECS[k].attr, DEFAULTS[k]) for k in SCENARIO_FIELDS)


def reads(config: SpecConfig, key: str) -> bool:
    """Whether ``config``'s chosen parts read the field ``key`` (else it is inert)."""
    part = FIELD_SPECS[key].part
    return part is None or config.get(part[0]) in part[1]


@cache
def part_fields(selector: str, name: str) -> tuple[str, ...]:
    """Keys of the fields that part ``name`` (chosen by the field ``selector``) reads."""
    return tuple(
        k
        for k, s in FIELD_SPECS.items()
        if s.part is not None and s.part[0] == selector and name in s.part[1]
    )


def seed_key_values(config: SpecConfig) -> dict[str, str]:
    """The fields that key a configuration's random stream, as repr strings.

    Those marked ``seed_key`` that the configuration reads: the acceptance model and its
    parameters, K, the length, the number of sequences and the tail rule. No cost field
    enters (a cycle's price never changes the draws: configurations that differ only in
    cost draw the same numbers, and a sweep draws them once, see
    :func:`engine.simulate.simulator.simulate_shared`), nor any newer field, and a parameter a
    model ignores never splits two configurations' draws. (Up to sampler 1 the two linear
    costs were keyed, as the original keyed them.)
    """
    tree = config.shape == "tree"  # a tree's acceptance is its rank probabilities
    return {
        key: repr(getattr(config, spec.attr))
        for key, spec in sorted(FIELD_SPECS.items())
        if spec.seed_key
        and reads(config, key)
        and not (tree and (key in (_ACCEPT, "k") or (spec.part or ("",))[0] == _ACCEPT))
    }


# The parameters each draft model reads (engine.acceptance.draft_models uses these as the models'
# ``reads``).
MODEL_READS: dict[str, tuple[str, ...]] = {m: part_fields(_ACCEPT, m) for m in DRAFT_MODEL_NAMES}
# Parameters that only some draft model reads.
MODEL_PARAMETERS: frozenset[str] = frozenset(p for r in MODEL_READS.values() for p in r)


# Acceptance models whose draft tokens carry a confidence q the draft sees.
CONFIDENCE_MODELS = ("confidence",)
# Acceptance models whose cycles are tied together (they run cycle by cycle).
STEPWISE_MODELS = ("markov",)
# A K policy (or markov acceptance) prices every (r, k) a sequence may meet: at most this
# many cycle prices (T x (K_max + 1), 256 MiB of float64 each for prices and drafts).
POLICY_CELLS_MAX = 1 << 25


def policy_k_max(config: SpecConfig) -> int:
    """The largest k the configuration's policy can draft: K for fixed, the schedule's k at
    the batch size, ``policy.k_max`` for the adaptive policies."""
    if config.policy == "fixed":
        return config.k
    if config.policy == "schedule":
        return schedule_k(config.schedule, config.batch_size)
    return config.k_max


def stream_width(config: SpecConfig) -> int:
    """How many draft positions each cycle's draws cover (the K_max of a policy's price and
    acceptance tables): 32, or the policy's own bound if it drafts more. Every contender
    whose policy drafts at most 32 sees the very same draws, the confidence model's
    per-token q's included."""
    return max(K_MAX_POLICY, policy_k_max(config))


def _check_policy(config: SpecConfig) -> None:
    """Refuse a policy that cannot work with the scenario's other parts, naming both."""
    policy = config.policy
    if policy == "threshold" and config.draft_model not in CONFIDENCE_MODELS:
        raise ConfigError(
            "policy.name",
            f"threshold needs per-token confidences, which draft_model {config.draft_model} "
            f"does not give; use draft_model {' or '.join(CONFIDENCE_MODELS)}",
        )
    if policy == "oracle" and config.draft_model == "per_position":
        given = len(rates_of(config.rates))
        if config.k_max > given:
            raise ConfigError(
                "policy.name",
                f"oracle would choose k up to policy.k_max {config.k_max} from the "
                f"per_position table, which gives only {given} rate{'s' * (given > 1)} "
                f"(acceptance.rates); "
                f"set policy.k_max to at most {given} or give more rates",
            )
    if policy in ("hf_heuristic", "goodput") and config.k > config.k_max:
        raise ConfigError(
            "k", f"{config.k} is above policy.k_max {config.k_max}; {policy} starts at K"
        )
    stepwise = policy != "fixed" or config.draft_model in STEPWISE_MODELS
    if stepwise:
        widest = policy_k_max(config)
        cells = config.tokens_per_seq * (stream_width(config) + 1)
        if cells > POLICY_CELLS_MAX:
            raise ConfigError(
                "tokens_per_seq",
                f"{config.tokens_per_seq} tokens with k up to {widest} need "
                f"{cells:,} cycle prices (T x (K_max + 1)); a K policy or markov acceptance "
                f"runs with at most {POLICY_CELLS_MAX:,}",
            )
    if config.shape == "tree":
        if sum(rates_of(config.rank_probs)) > 1.0 + 1e-9:
            raise ConfigError(
                "shape.rank_probs",
                f"{config.rank_probs} sums to more than 1: at most one child of a node is accepted",
            )
        if policy != "fixed":
            raise ConfigError("policy.name", f"{policy} runs on chains; a tree runs as drafted")
        if config.tail != "full":
            raise ConfigError("tail", "clamp is for chains; a tree's last cycle is drafted whole")
    if policy == "threshold" and config.k_min > config.k_max:
        raise ConfigError("policy.k_min", f"{config.k_min} is above policy.k_max {config.k_max}")


def _check_part_value(spec: FieldSpec, value: str) -> None:
    if spec.kind == "path":
        if not value.strip():
            raise ConfigError(spec.key, "a file is required by this cost model")
        return
    known = known_spec_ids(spec.choices[0])
    if known and value not in known:
        raise ConfigError(
            spec.key, f"unknown {spec.choices[0]} {value!r}; known: {', '.join(known)}"
        )


def check_value(field: str, value: Any) -> Any:
    """Validate and normalise one field's value; raise :class:`ConfigError` naming the field."""
    if field not in FIELD_SPECS:
        raise ConfigError(field, "unknown parameter; known: " + ", ".join(FIELD_SPECS))
    spec = FIELD_SPECS[field]
    try:
        return _checked(spec, value)
    except _Bad:
        raise ConfigError(
            field, f"{_shown(value)} is not allowed; expected {spec.allowed()}"
        ) from None


def _shown(value: Any) -> str:
    """A wrong value as an error message repeats it: its repr, cut to :data:`SHOWN_MAX`."""
    text = repr(value)
    return text if len(text) <= SHOWN_MAX else text[: SHOWN_MAX - 1] + "…"


class _Bad(Exception):
    """A value outside its field's range (check_value words the message, only then)."""


def _checked(spec: FieldSpec, value: Any) -> Any:
    field = spec.key
    if spec.kind == "choice":
        if not isinstance(value, str) or value not in spec.choices:
            raise _Bad
        return value
    if spec.kind == "spec":
        if not isinstance(value, str) or not _SPEC_ID.fullmatch(value):
            raise _Bad
        return value
    if spec.kind == "path":
        if not isinstance(value, str):
            raise ConfigError(field, f"{_shown(value)} is not allowed; expected a file name")
        return value
    if spec.kind == "probs":
        return ",".join(_short_prob(p) for p in _probs(value))
    if spec.kind == "schedule":
        return ",".join(f"{b}:{k}" for b, k in _schedule(value))
    if spec.kind == "tree":  # its shape is read where the tree is built (engine.shapes.trees)
        if not isinstance(value, str) or not value.strip() or len(value) > TREE_TEXT_MAX:
            raise _Bad
        return " ".join(value.split())
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise _Bad  # numpy numbers are Real; bools and strings are not
    if spec.kind in ("int", "seed"):
        if not isinstance(value, numbers.Integral):
            value = float(value)
            if not math.isfinite(value) or not value.is_integer():
                raise _Bad
            value = int(value)
        assert spec.low is not None and spec.high is not None
        if not spec.low <= value <= spec.high:
            raise _Bad
        return int(value)
    value = float(value)
    if not math.isfinite(value):
        raise _Bad
    if spec.kind == "prob" and not 0.0 <= value <= 1.0:
        raise _Bad
    if spec.kind == "number":
        assert spec.low is not None and spec.high is not None
        above = value > spec.low if spec.low_open else value >= spec.low
        if not (above and value <= spec.high):
            raise _Bad
    return value


def _short_prob(value: float) -> str:
    return repr(value) if value not in (0.0, 1.0) else str(int(value))


def _probs(value: Any) -> tuple[float, ...]:
    """The numbers of a "probs" field: text "0.9, 0.8 0.7" or a sequence of numbers."""
    items = value.replace(",", " ").split() if isinstance(value, str) else value
    if not isinstance(items, list | tuple) or not 1 <= len(items) <= K_MAX:
        raise _Bad
    out = []
    for item in items:
        if isinstance(item, bool):
            raise _Bad
        try:
            number = float(item) if isinstance(item, str | numbers.Real) else math.nan
        except ValueError:
            raise _Bad from None
        if not 0.0 <= number <= 1.0:  # NaN fails too
            raise _Bad
        out.append(number)
    return tuple(out)


def rates_of(text: str) -> tuple[float, ...]:
    """The conditional acceptance rates p_1..p_m of a per_position scenario's
    ``acceptance.rates`` (checked text)."""
    return _probs(text)


def _schedule(value: Any) -> tuple[tuple[int, int], ...]:
    """The (batch, k) pairs of a "schedule" field: "1:5,32:3,128:0"."""
    if not isinstance(value, str):
        raise _Bad
    pairs = []
    for item in value.replace(" ", "").split(","):
        batch, sep, k = item.partition(":")
        if not sep or not (batch.isascii() and batch.isdigit() and k.isascii() and k.isdigit()):
            raise _Bad
        pairs.append((int(batch), int(k)))
    batches = [b for b, _ in pairs]
    if batches[0] != 1 or batches != sorted(set(batches)) or batches[-1] > BATCH_MAX:
        raise _Bad
    if any(k > K_MAX for _, k in pairs):
        raise _Bad
    return tuple(pairs)


def schedule_k(text: str, batch: int) -> int:
    """The k a ``policy.schedule`` gives at batch size ``batch``: the pair with the largest
    batch not above it."""
    return [k for b, k in _schedule(text) if b <= batch][-1]


def ascii_int(text: str) -> int:
    """The integer ``text`` spells in ASCII digits (spaces around it allowed); ValueError
    otherwise. Python's int() also reads other scripts' digits ("٣" is 3), which nobody
    means in a flag or a field: every integer typed by a person is read here."""
    text = text.strip()
    if not text.isascii():
        raise ValueError(f"{text!r} is not in ASCII digits")
    return int(text)


def parse_value(field: str, text: str) -> Any:
    """One field's value from what a person typed (CLI flag, form field), checked.

    Numbers are ASCII only: Python's int() and float() also read other scripts' digits
    ("٣" is 3), which nobody means in a configuration. Raises :class:`ConfigError`.
    """
    if field not in FIELD_SPECS:
        return check_value(field, text)  # the unknown-parameter error
    spec = FIELD_SPECS[field]
    if len(text) > spec.text_max:  # refused before it is read: no text costs more than this
        raise ConfigError(field, f"too long ({len(text):,} characters); at most {spec.text_max:,}")
    text = text.strip()
    if not spec.numeric:
        return check_value(field, text)
    integer = spec.kind in ("int", "seed")
    noun = "an integer" if integer else "a number"
    try:
        if not text.isascii():
            noun += " (ASCII digits only)"
            raise ValueError(text)
        value: Any = ascii_int(text) if integer else float(text)
    except ValueError:
        shown = repr(text) if text else "empty"
        raise ConfigError(field, f"{shown} is not {noun}; expected {spec.allowed()}") from None
    try:
        return check_value(field, value)
    except ConfigError:  # said as typed: "9", not the 9.0 it was read as
        raise ConfigError(field, f"{text} is not allowed; expected {spec.allowed()}") from None
