"""Hardware and model specs for the roofline cost models, from TOML data files.

The package ships ``engine/cost/data/hardware.toml`` and ``models.toml`` (each figure with
its source; field meanings in ``data/README.md``). A user adds or replaces entries with files
of the same shape in ``$XDG_CONFIG_HOME/spectui/`` (``~/.config/spectui/`` when unset): a
table with the id of a shipped one replaces it whole. Every problem in a file is reported
as one line naming the file, the id and the field.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from engine.core.files import PRESET_MAX_BYTES, read_input_text, shown_value, toml_document

HARDWARE_FILE = "hardware.toml"
MODELS_FILE = "models.toml"


class SpecError(ValueError):
    """A spec file or entry is invalid, or an id is unknown; the message is one line."""


@dataclass(frozen=True)
class HardwareSpec:
    """One accelerator. ``flops_bf16`` in FLOP/s (dense), ``mem_bw_bytes_s`` in bytes/s,
    ``mem_bytes`` in bytes. ``origin`` is the file the entry came from."""

    id: str
    name: str
    flops_bf16: float
    mem_bw_bytes_s: float
    mem_bytes: float
    source: str
    notes: str
    origin: str = ""
    # The GPU-to-GPU link a ring all-reduce runs over (tensor parallelism): bytes/s each way
    # per GPU, and the latency of one hop in microseconds. None: not in the spec file.
    link_bw_bytes_s: float | None = None
    link_latency_us: float | None = None
    # A full mesh (MI300X's Infinity Fabric), not a switch: bytes/s each way between one
    # pair of GPUs, so a collective over ``g`` GPUs gets at most ``(g - 1)`` times this.
    link_peer_bw_bytes_s: float | None = None
    link_name: str | None = None  # the link in words: "NVLink 4 (NVSwitch)", "PCIe Gen4 x16"
    # Peak dense FP8 Tensor FLOP/s (FP32 accumulate), for fp8 matmuls; None: not in the file.
    flops_fp8: float | None = None
    # Peak dense FP4 Tensor FLOP/s (nvfp4, mxfp4; Blackwell), for fp4 matmuls; None: none.
    flops_fp4: float | None = None

    @property
    def ridge_flop_per_byte(self) -> float:
        """``flops_bf16 / mem_bw_bytes_s``: for bf16 weights, also the tokens per pass at
        which the weight read stops dominating (about 295 on an H100)."""
        return self.flops_bf16 / self.mem_bw_bytes_s


@dataclass(frozen=True)
class ModelSpec:
    """One model's shape. ``params`` is the weight count a pass streams; ``bytes_per_weight``
    in bytes (2 for bf16). Counts are plain integers. ``origin`` is the file it came from."""

    id: str
    name: str
    params: float
    layers: int
    d_model: int
    n_heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    source: str
    notes: str
    bytes_per_weight: float = 2.0
    ffn_dim: int | None = None
    tied_embeddings: bool | None = None
    embedding_lookup_params: float = 0.0
    draft_for: str | None = None
    origin: str = ""
    # Mixture of experts (None: dense): routed experts per MoE layer, active per token, the
    # parameters of one expert, and the MoE layers (all ``layers`` unless given). ``params``
    # stays the total: the dense part is ``params - experts * expert_params * moe_layers``.
    experts: int | None = None
    experts_active: int | None = None
    expert_params: float | None = None
    moe_layers: int | None = None
    # Experts every token uses besides its routed ones (counted in the dense part).
    shared_experts: int | None = None
    # Multi-head latent attention (DeepSeek-V2/V3): each layer caches one compressed vector
    # of ``kv_lora_rank + qk_rope_head_dim`` elements a token, the same on every GPU of a
    # tensor-parallel run (None: K and V per KV head).
    kv_lora_rank: int | None = None
    qk_rope_head_dim: int | None = None
    # Sliding-window attention: ``sliding_layers`` layers (all unless given) attend to the
    # last ``sliding_window`` tokens only, so their KV read and attention stop growing there.
    sliding_window: int | None = None
    sliding_layers: int | None = None

    @property
    def expert_layer_params(self) -> float:
        """Parameters of one expert in every MoE layer: ``expert_params * moe_layers``
        (0 for a dense model)."""
        if self.experts is None or self.expert_params is None:
            return 0.0
        return self.expert_params * (self.moe_layers or self.layers)

    def kv_bytes_per_token(self, bytes_per_kv: float = 2.0) -> float:
        """KV-cache bytes per context token: ``2 * layers * kv_heads * head_dim * bytes_per_kv``
        (with latent attention ``layers * (kv_lora_rank + qk_rope_head_dim) * bytes_per_kv``)."""
        if self.kv_lora_rank is not None:
            return self.layers * (self.kv_lora_rank + (self.qk_rope_head_dim or 0)) * bytes_per_kv
        return 2.0 * self.layers * self.kv_heads * self.head_dim * bytes_per_kv

    def kv_shards(self, tp: int) -> int:
        """GPUs of a ``tp``-way run that split a token's KV cache: ``min(tp, kv_heads)`` (KV
        heads replicated past ``kv_heads``); 1 with latent attention (one vector, replicated)."""
        return 1 if self.kv_lora_rank is not None else min(tp, self.kv_heads)

    def attended(self, context: Any) -> Any:
        """The context a layer reads, averaged over the layers: ``context`` itself, or with
        sliding windows ``((layers - s) * L + s * min(L, window)) / layers``."""
        if self.sliding_window is None:
            return context
        import numpy as np

        sliding = self.sliding_layers or self.layers
        capped = np.minimum(context, float(self.sliding_window))
        return ((self.layers - sliding) * context + sliding * capped) / self.layers

    @property
    def weight_bytes(self) -> float:
        """Bytes of weights one pass streams: ``params * bytes_per_weight``."""
        return self.params * self.bytes_per_weight


# Field kinds: "text", "positive" (finite number > 0), "count" (integer >= 1),
# "nonnegative" (finite number >= 0), "bool". The second item says whether it is required.
_HARDWARE_FIELDS: dict[str, tuple[str, bool]] = {
    "name": ("text", True),
    "flops_bf16": ("positive", True),
    "mem_bw_bytes_s": ("positive", True),
    "mem_bytes": ("positive", True),
    "link_bw_bytes_s": ("positive", False),
    "link_latency_us": ("nonnegative", False),
    "link_peer_bw_bytes_s": ("positive", False),
    "link_name": ("text", False),
    "flops_fp8": ("positive", False),
    "flops_fp4": ("positive", False),
    "source": ("text", True),
    "notes": ("text", True),
}
_MODEL_FIELDS: dict[str, tuple[str, bool]] = {
    "name": ("text", True),
    "params": ("positive", True),
    "layers": ("count", True),
    "d_model": ("count", True),
    "n_heads": ("count", True),
    "kv_heads": ("count", True),
    "head_dim": ("count", True),
    "vocab": ("count", True),
    "bytes_per_weight": ("positive", False),
    "ffn_dim": ("count", False),
    "tied_embeddings": ("bool", False),
    "embedding_lookup_params": ("nonnegative", False),
    "draft_for": ("text", False),
    "experts": ("count", False),
    "experts_active": ("count", False),
    "expert_params": ("positive", False),
    "moe_layers": ("count", False),
    "shared_experts": ("count", False),
    "kv_lora_rank": ("count", False),
    "qk_rope_head_dim": ("count", False),
    "sliding_window": ("count", False),
    "sliding_layers": ("count", False),
    "source": ("text", True),
    "notes": ("text", True),
}


def user_config_dir() -> Path:
    """The user's spectui config directory: ``$XDG_CONFIG_HOME/spectui``, else
    ``~/.config/spectui``."""
    config_home = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config_home) / "spectui"


def _check_value(where: str, field: str, kind: str, value: Any) -> Any:
    """Return ``value`` converted to its field's type, or raise one SpecError line."""
    if kind == "text":
        if not isinstance(value, str):
            raise SpecError(f"{where}: field '{field}' must be a string, got {shown_value(value)}")
        return value
    if kind == "bool":
        if not isinstance(value, bool):
            raise SpecError(
                f"{where}: field '{field}' must be true or false, got {shown_value(value)}"
            )
        return value
    # TOML booleans are Python ints: never accept one as a number.
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SpecError(f"{where}: field '{field}' must be a number, got {shown_value(value)}")
    if kind == "count":
        if isinstance(value, float) and not value.is_integer():
            raise SpecError(
                f"{where}: field '{field}' must be a whole number >= 1, got {shown_value(value)}"
            )
        if value < 1:
            raise SpecError(
                f"{where}: field '{field}' must be a whole number >= 1, got {shown_value(value)}"
            )
        return int(value)
    if not math.isfinite(value):
        raise SpecError(f"{where}: field '{field}' must be finite, got {shown_value(value)}")
    if kind == "positive" and value <= 0:
        raise SpecError(f"{where}: field '{field}' must be > 0, got {shown_value(value)}")
    if kind == "nonnegative" and value < 0:
        raise SpecError(f"{where}: field '{field}' must be >= 0, got {shown_value(value)}")
    return float(value)


EXPERTS_MAX = 4096  # routed experts a layer (the largest shipped model has 256)

# Fields that need another (a mixture of experts needs all three of its counts).
_MODEL_NEEDS = {
    "experts": ("experts_active", "expert_params"),
    "experts_active": ("experts",),
    "expert_params": ("experts",),
    "moe_layers": ("experts",),
    "shared_experts": ("experts",),
    "qk_rope_head_dim": ("kv_lora_rank",),
    "sliding_layers": ("sliding_window",),
}


def _check_model(where: str, values: Mapping[str, Any]) -> None:
    """One SpecError line for fields that do not fit together."""
    for field, needed in _MODEL_NEEDS.items():
        for other in needed:
            if field in values and other not in values:
                raise SpecError(f"{where}: field '{field}' needs '{other}'")
    if values.get("experts", 0) > EXPERTS_MAX:
        raise SpecError(
            f"{where}: field 'experts' must be at most {EXPERTS_MAX}, got {values['experts']}"
        )
    bounds = (("experts_active", "experts"), ("moe_layers", "layers"), ("sliding_layers", "layers"))
    for field, bound in bounds:
        if field in values and values[field] > values[bound]:
            raise SpecError(
                f"{where}: field '{field}' must be at most {bound} ({values[bound]}), "
                f"got {values[field]}"
            )
    if "experts" in values:
        routed = (
            values["experts"] * values["expert_params"] * values.get("moe_layers", values["layers"])
        )
        if routed >= values["params"]:
            raise SpecError(
                f"{where}: field 'params' ({values['params']:g}) must exceed the "
                f"routed experts' parameters (experts x expert_params x moe_layers = {routed:.6g})"
            )


def _parse_entries(
    text: str, origin: str, fields: Mapping[str, tuple[str, bool]], cls: type
) -> dict[str, Any]:
    """Parse one TOML file's tables into ``cls`` instances keyed by id."""
    try:
        document = toml_document(text)
    except tomllib.TOMLDecodeError as error:
        raise SpecError(f"{origin}: not valid TOML: {error}") from None
    entries: dict[str, Any] = {}
    for spec_id, table in document.items():
        where = f"{origin}: [{spec_id}]"
        if not isinstance(table, dict):
            raise SpecError(
                f"{where}: expected a table of fields, got {shown_value(table)} "
                '(quote an id that contains a dot: ["my.model"])'
            )
        unknown = sorted(set(table) - set(fields))
        if unknown:
            if all(isinstance(table[key], dict) for key in unknown):
                # [llama-3.1-8b] unquoted is read as nested tables llama-3 > 1-8b.
                raise SpecError(
                    f"{where}: nested table '{unknown[0]}': quote an id that contains a dot "
                    f'(["{spec_id}.{unknown[0]}"])'
                )
            raise SpecError(f"{where}: unknown field '{unknown[0]}' (known: {', '.join(fields)})")
        values: dict[str, Any] = {}
        for field, (kind, required) in fields.items():
            if field not in table:
                if required:
                    raise SpecError(f"{where}: missing field '{field}'")
                continue
            values[field] = _check_value(where, field, kind, table[field])
        if cls is ModelSpec:
            _check_model(where, values)
        entries[spec_id] = cls(id=spec_id, origin=origin, **values)
    return entries


# Parsed files by (file name, origin, text): a cost model is built per configuration (a
# regime map builds over a thousand), and parsing TOML each time cost ~15 ms a build. Keyed
# by the text itself, so an edited user file is parsed again.
_PARSED: dict[tuple[str, str, str], dict[str, Any]] = {}


def _parse_cached(
    file_name: str, text: str, origin: str, fields: Mapping[str, tuple[str, bool]], cls: type
) -> dict[str, Any]:
    key = (file_name, origin, text)
    if key not in _PARSED:
        if len(_PARSED) > 32:
            _PARSED.clear()
        _PARSED[key] = _parse_entries(text, origin, fields, cls)
    return dict(_PARSED[key])


@functools.cache
def _shipped_text(file_name: str) -> str:
    """A shipped data file's text (package data: read once; pricing reads it for every cost
    setting of a sweep)."""
    return resources.files("engine.cost").joinpath("data", file_name).read_text("utf-8")


def _load(
    file_name: str,
    fields: Mapping[str, tuple[str, bool]],
    cls: type,
    config_dir: Path | None,
) -> dict[str, Any]:
    entries = _parse_cached(
        file_name,
        _shipped_text(file_name),
        f"engine/cost/data/{file_name}",
        fields,
        cls,
    )
    user_file = (config_dir if config_dir is not None else user_config_dir()) / file_name
    if user_file.is_file():
        try:
            text = read_input_text(user_file, PRESET_MAX_BYTES, file_name)
        except UnicodeDecodeError:
            raise SpecError(f"{user_file}: not a text file (UTF-8 expected)") from None
        except OSError as error:
            raise SpecError(f"{user_file}: cannot read: {error.strerror or error}") from None
        # Same id replaces the shipped entry whole (no field-by-field merge).
        entries.update(_parse_cached(file_name, text, str(user_file), fields, cls))
    return entries


# A table header: ["quoted.id"] or [plain-id]. Enough to list the ids without parsing the
# TOML (a scenario checks its ids on construction, which must stay cheap: the app's start-up
# loads presets); the entries themselves are parsed and checked when a cost model is built.
_HEADER = re.compile(
    r'^[ \t]*\[[ \t]*(?:"([^"\n]+)"|([A-Za-z0-9_-]+))[ \t]*\][ \t]*(?:#.*)?$', re.M
)


def spec_ids(file_name: str, config_dir: Path | None = None) -> tuple[str, ...]:
    """The ids in the shipped ``file_name`` (hardware.toml or models.toml) and the user's,
    sorted, read from the table headers only. An unreadable user file adds none (building
    a cost model reports it)."""
    texts = [_shipped_text(file_name)]
    user_file = (config_dir if config_dir is not None else user_config_dir()) / file_name
    with contextlib.suppress(OSError, UnicodeDecodeError):
        texts.append(read_input_text(user_file, PRESET_MAX_BYTES, file_name))
    ids = {m.group(1) or m.group(2) for text in texts for m in _HEADER.finditer(text)}
    return tuple(sorted(ids))


def load_hardware(config_dir: Path | None = None) -> dict[str, HardwareSpec]:
    """All hardware specs by id: shipped, then the user's ``hardware.toml`` (same id replaces).

    ``config_dir`` defaults to :func:`user_config_dir`. Raises SpecError on a bad entry."""
    return _load(HARDWARE_FILE, _HARDWARE_FIELDS, HardwareSpec, config_dir)


def load_models(config_dir: Path | None = None) -> dict[str, ModelSpec]:
    """All model specs by id: shipped, then the user's ``models.toml`` (same id replaces).

    ``config_dir`` defaults to :func:`user_config_dir`. Raises SpecError on a bad entry."""
    return _load(MODELS_FILE, _MODEL_FIELDS, ModelSpec, config_dir)


def _get(kind: str, entries: Mapping[str, Any], spec_id: str) -> Any:
    try:
        return entries[spec_id]
    except KeyError:
        raise SpecError(
            f"unknown {kind} '{spec_id}' (known: {', '.join(sorted(entries))})"
        ) from None


def get_hardware(spec_id: str, config_dir: Path | None = None) -> HardwareSpec:
    """The hardware spec ``spec_id`` (``h100``, ...); SpecError lists the known ids."""
    spec: HardwareSpec = _get("hardware", load_hardware(config_dir), spec_id)
    return spec


def get_model(spec_id: str, config_dir: Path | None = None) -> ModelSpec:
    """The model spec ``spec_id`` (``llama-3.1-8b``, ...); SpecError lists the known ids."""
    spec: ModelSpec = _get("model", load_models(config_dir), spec_id)
    return spec


@functools.lru_cache(maxsize=8)
def _spec_ids(file_name: str, config_dir: str, stamp: tuple[float, ...]) -> tuple[str, ...]:
    return spec_ids(file_name, Path(config_dir))


@functools.lru_cache(maxsize=8)
def _user_files(environment: tuple[str | None, ...]) -> tuple[str, ...]:
    """The user's spec folder and files as strings, once per ``environment`` (the variables
    :func:`user_config_dir` reads): building the path costs more than reading its status."""
    folder = user_config_dir()
    return (str(folder), str(folder / HARDWARE_FILE), str(folder / MODELS_FILE))


def files_stamp() -> tuple[Any, ...]:
    """The user's spec files as they are now (the folder, and each file's modification time
    and size, or None when absent): what a cache of anything read from them keys on."""
    folder, *files = _user_files((os.environ.get("XDG_CONFIG_HOME"), os.environ.get("HOME")))
    stamp: list[Any] = [folder]
    for name in files:
        try:
            status = os.stat(name)
        except OSError:
            stamp.append(None)
        else:
            stamp.append((status.st_mtime_ns, status.st_size))
    return tuple(stamp)


def known_ids(kind: str) -> tuple[str, ...]:
    """The ids of ``kind`` ("hardware" or "model"): shipped and the user's own (read again
    when the user's file changes)."""
    folder = user_config_dir()
    name = HARDWARE_FILE if kind == "hardware" else MODELS_FILE
    try:
        stamp: tuple[float, ...] = (os.stat(folder / name).st_mtime,)
    except OSError:
        stamp = ()
    return _spec_ids(name, str(folder), stamp)
