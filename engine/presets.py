"""Presets: TOML files holding one configuration and, optionally, sweep grids.

Format::

    description = "one line"
    scheduler = "tcp://HOST:8786"   # optional, a sweep's: run it on this Dask scheduler
                                    # (or "local:N", N local worker processes)
    [config]            # any SpecConfig fields; the rest take the defaults
    k = 5
    "workload.batch_size" = 8
    [[grid]]            # zero or more; each a cartesian product of lists
    k = [1, 2, 3]
    [[arena]]           # zero or more: the K policies an arena compares (engine.analysis.arena)
    "policy.name" = "fixed"
    k = [2, 4, 6]       # a list gives one contender per value (a cartesian product)
    [load]              # optional: spectui load's settings (engine.serve.settings)
    rate = [2, 8, 32]
    policies = ["off", "fixed", "goodput"]

Newer fields have dotted keys (``workload.batch_size``, ``cost.gpu``). Quoted, as above, or
as TOML's own dotted keys and tables, which it reads as nested tables: ``workload.batch_size
= 8`` in ``[config]``, or ``batch_size = 8`` under ``[config.workload]`` (and the same in a
``[[grid]]``). Both spellings are read alike; saving writes the quoted one.

Loading is strict: unknown keys, wrong types and out-of-range values are errors that name
the file, the key and the problem.
"""

from __future__ import annotations

import math
import os
import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from engine.core.config import (
    FIELD_SPECS,
    ConfigError,
    LiveKeys,
    SpecConfig,
    check_value,
    known_spec_ids,
)
from engine.core.files import (
    PRESET_MAX_BYTES,
    atomic_write_text,
    read_input_text,
    shown_value,
    toml_document,
)
from engine.core.parts import POLICY, generation
from engine.sweep.grid import SweepSpec


def _shipped_dir() -> Path:
    """The shipped presets: the top-level ``presets/`` of a checkout, which an installed wheel
    holds inside this package as ``engine/shipped_presets/`` (pyproject.toml maps it there:
    a top-level ``presets`` in site-packages would be an importable name any project could
    take)."""
    package = Path(__file__).resolve().parent
    installed = package / "shipped_presets"
    return installed if installed.is_dir() else package.parent / "presets"


SHIPPED_DIR = _shipped_dir()
TOP_LEVEL_KEYS = ("description", "scheduler", "config", "grid", "arena", "load")


# The fields an [[arena]] contender may set: its policy and the policy's parameters.
def _arena_keys() -> tuple[str, ...]:
    selector = POLICY.selector
    fields = (k for k, s in FIELD_SPECS.items() if s.part is not None and s.part[0] == selector)
    return (selector, "k", *fields)


# The keys an [[arena]] table may vary: the policy, K and every registered policy's fields.
ARENA_KEYS = LiveKeys(_arena_keys)


class PresetError(ValueError):
    """A preset cannot be found or is malformed; the message names file, key and problem.
    ``path``: the preset's file, where :func:`list_presets` found it."""

    def __init__(self, message: str, path: Path | None = None) -> None:
        super().__init__(message)
        self.path = path


def user_preset_dir() -> Path:
    """Where user presets live: $SPECTUI_PRESET_DIR, else $XDG_CONFIG_HOME/spectui/presets."""
    if os.environ.get("SPECTUI_PRESET_DIR"):
        return Path(os.environ["SPECTUI_PRESET_DIR"])
    config_home = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config_home) / "spectui" / "presets"


@dataclass(frozen=True)
class Preset:
    name: str
    path: Path
    description: str
    config: SpecConfig
    sweep: SweepSpec
    # [[arena]] tables: each a cartesian product of policy settings (ARENA_KEYS).
    arena: tuple[dict[str, tuple[Any, ...]], ...] = ()
    # A sweep's Dask scheduler ("tcp://HOST:8786" or "local:N"; engine.sweep.cluster), or None:
    # the app's sweeps of this preset run there unless $SPECTUI_SCHEDULER names another.
    scheduler: str | None = None
    # A [load] table: the settings of `spectui load` (engine.serve.settings), checked.
    load: dict[str, Any] = field(default_factory=dict)

    @property
    def is_sweep(self) -> bool:
        return bool(self.sweep.grids)

    @property
    def is_arena(self) -> bool:
        return bool(self.arena)

    def contenders(self, scenario: SpecConfig) -> list[SpecConfig]:
        """The arena's contenders on ``scenario``: the scenario with each policy setting of
        the [[arena]] tables (ConfigError when a setting cannot work with it)."""
        return contenders_of(scenario, self.arena)

    def size(self) -> int:
        """Number of configurations: 1 for a single run, the grid's size for a sweep."""
        return self.sweep.size()


def _typed(path: Path, key: str, field: str, value: Any) -> Any:
    kind = FIELD_SPECS[field].kind
    wrong = None
    if kind in ("int", "seed") and (isinstance(value, bool) or not isinstance(value, int)):
        wrong = "an integer"
    elif kind == "probs":  # "0.9,0.8" or [0.9, 0.8]
        if not isinstance(value, str | list):
            wrong = "a list of numbers"
    elif not FIELD_SPECS[field].numeric:  # a choice, a hardware or model id, a file name
        if not isinstance(value, str):
            wrong = "a string"
    elif kind not in ("int", "seed") and (
        isinstance(value, bool) or not isinstance(value, int | float)
    ):
        wrong = "a number"
    if wrong:
        raise PresetError(f"{path}: {key}: expected {wrong}, got {shown_value(value)}")
    try:
        return check_value(field, value)
    except ConfigError as err:
        raise PresetError(f"{path}: {key}: {str(err).split(': ', 1)[1]}") from None


def _flat(path: Path, where: str, table: dict[str, Any]) -> dict[str, Any]:
    """A table's keys as dotted names (``{"workload": {"batch_size": 8}}`` gives
    ``workload.batch_size``), each checked against the table of fields."""
    out: dict[str, Any] = {}

    def walk(prefix: str, node: dict[str, Any]) -> None:
        for name, value in node.items():
            key = f"{prefix}{name}"
            if isinstance(value, dict):
                walk(key + ".", value)
                continue
            if key not in FIELD_SPECS:
                raise PresetError(
                    f"{path}: {where}.{key}: unknown key; known: {', '.join(FIELD_SPECS)}"
                )
            if key in out:  # "workload.batch_size" quoted and nested both
                raise PresetError(f"{path}: {where}.{key}: given twice")
            out[key] = value

    walk("", table)
    return out


def parse_preset(path: Path, data: dict[str, Any]) -> Preset:
    """Validate a parsed TOML document as a preset (strict)."""
    for key in data:
        if key not in TOP_LEVEL_KEYS:
            raise PresetError(
                f"{path}: {key}: unknown key; allowed top-level keys: {', '.join(TOP_LEVEL_KEYS)}"
            )
    description = data.get("description", "")
    if not isinstance(description, str):
        raise PresetError(f"{path}: description: expected a string")
    table = data.get("config", {})
    if not isinstance(table, dict):
        raise PresetError(f"{path}: config: expected a table")
    values = {
        key: _typed(path, f"config.{key}", key, value)
        for key, value in _flat(path, "config", table).items()
    }
    try:
        config = SpecConfig().replace(**values)
    except ConfigError as err:  # a value the chosen part checks (an unknown gpu id)
        raise PresetError(f"{path}: config.{err}") from None
    grids_raw = data.get("grid", [])
    if not isinstance(grids_raw, list) or not all(isinstance(g, dict) for g in grids_raw):
        raise PresetError(f"{path}: grid: expected an array of tables ([[grid]])")
    grids = []
    for number, grid in enumerate(grids_raw, start=1):
        axes: dict[str, tuple[Any, ...]] = {}
        for key, values_list in _flat(path, f"grid[{number}]", grid).items():
            where = f"grid[{number}].{key}"
            if not isinstance(values_list, list) or not values_list:
                raise PresetError(f"{path}: {where}: expected a non-empty list of values")
            axes[key] = tuple(_typed(path, where, key, v) for v in values_list)
        grids.append(axes)
    sweep = SweepSpec(config, tuple(grids))
    if any(key in _PART_CHECKED for grid in grids for key in grid):
        # A hardware id, a file name, a policy's limits: checked only in combination, which
        # depends on these axes alone: their grid (5,760 points of regime-study's 46,080).
        parts = tuple(
            {key: values for key, values in grid.items() if key in _PART_CHECKED} for grid in grids
        )
        try:
            for _ in SweepSpec(config, tuple(p for p in parts if p)).iter_configs():
                pass
        except ConfigError as err:
            raise PresetError(f"{path}: grid: {err}") from None
    arena = _arena_tables(path, data["arena"], sweep) if "arena" in data else ()
    scheduler = _scheduler(path, data["scheduler"], sweep) if "scheduler" in data else None
    load = _load_table(path, data["load"], config) if "load" in data else {}
    return Preset(path.stem, path, description, config, sweep, arena, scheduler, load)


def _load_table(path: Path, raw: Any, config: SpecConfig) -> dict[str, Any]:
    """The ``[load]`` table: load settings (engine.serve.settings), each checked, and the
    plan they make for the preset's scenario."""
    from engine.serve.settings import checked, plan_of

    if not isinstance(raw, dict):
        raise PresetError(f"{path}: load: expected a table ([load])")
    try:
        values = {key: checked(key, value) for key, value in raw.items()}
        plan_of(values, config)
    except ConfigError as err:
        raise PresetError(f"{path}: load.{err}") from None
    return values


def _scheduler(path: Path, value: Any, sweep: SweepSpec) -> str:
    """The ``scheduler`` key: a Dask scheduler's address or ``local:N``, for a sweep."""
    from engine.sweep.cluster import parse_scheduler  # imports the sweep engine: only when given

    if not isinstance(value, str):
        raise PresetError(f"{path}: scheduler: expected a string, got {shown_value(value)}")
    if not sweep.grids:
        raise PresetError(f"{path}: scheduler: only a sweep ([[grid]]) runs on a scheduler")
    try:
        parse_scheduler(value, field="scheduler")
    except ConfigError as err:
        raise PresetError(f"{path}: {err}") from None
    return value.strip()


# Grid axes whose values are checked only in combination (an id of the chosen cost model's,
# a file it needs, and the fields that choose those parts; a K policy's limits and what
# they are checked against: engine.core.config._check_policy): a grid over them is expanded
# once on loading, so that a bad combination is the preset's error, not a later crash.
_PART_CHECKED = frozenset(
    key
    for spec in FIELD_SPECS.values()
    if spec.kind in ("spec", "path")
    for key in (spec.key, *((spec.part[0],) if spec.part else ()))
) | frozenset(
    key
    for key in FIELD_SPECS
    if key.startswith(("policy.", "shape.", "acceptance."))
    or key in ("draft_model", "k", "tail", "tokens_per_seq", "workload.batch_size")
)


def contenders_of(
    scenario: SpecConfig, arena: tuple[dict[str, tuple[Any, ...]], ...]
) -> list[SpecConfig]:
    """Every policy setting of ``arena`` applied to ``scenario``, in order, without repeats."""
    out: list[SpecConfig] = []
    for table in arena:
        for values in SweepSpec(scenario, (table,)).configs():
            if values not in out:
                out.append(values)
    return out


def _arena_tables(path: Path, raw: Any, sweep: SweepSpec) -> tuple[dict[str, tuple[Any, ...]], ...]:
    if not isinstance(raw, list) or not all(isinstance(t, dict) for t in raw):
        raise PresetError(f"{path}: arena: expected an array of tables ([[arena]])")
    tables = []
    for number, table in enumerate(raw, start=1):
        axes: dict[str, tuple[Any, ...]] = {}
        for key, value in _flat(path, f"arena[{number}]", table).items():
            where = f"arena[{number}].{key}"
            if key not in ARENA_KEYS:
                raise PresetError(
                    f"{path}: {where}: not a policy setting; allowed: {', '.join(ARENA_KEYS)}"
                )
            values = value if isinstance(value, list) else [value]
            if not values:
                raise PresetError(f"{path}: {where}: expected a value or a non-empty list")
            axes[key] = tuple(_typed(path, where, key, v) for v in values)
        tables.append(axes)
    for scenario in sweep.configs():  # a policy that cannot work with a scenario
        try:
            contenders_of(scenario, tuple(tables))
        except ConfigError as err:
            raise PresetError(f"{path}: arena: {err}") from None
    return tuple(tables)


def load_preset_file(path: Path) -> Preset:
    """Read and validate one preset file: a regular file of at most
    :data:`engine.core.files.PRESET_MAX_BYTES` (anything else is refused unread, never waited
    on)."""
    try:
        text = read_input_text(path, PRESET_MAX_BYTES, "a preset")
    except FileNotFoundError:
        raise PresetError(f"{path}: no such preset file") from None
    except UnicodeDecodeError:
        raise PresetError(f"{path}: not a text file (UTF-8 expected)") from None
    except OSError as err:
        raise PresetError(f"{path}: cannot read: {err.strerror}") from None
    # What validation reads besides the text: the hardware and model ids a config names.
    # Both are cached by the user's spec files' stamps, so a changed file is read again.
    ids = (known_spec_ids("hardware"), known_spec_ids("model"))
    preset, error = _parsed(path, text, *ids, generation())
    if error is not None:
        raise PresetError(error)
    assert preset is not None
    return preset


@lru_cache(maxsize=64)
def _parsed(
    path: Path, text: str, hardware: tuple[str, ...], models: tuple[str, ...], parts: int
) -> tuple[Preset | None, str | None]:
    """A preset file's validation, once per (path, text, known ids) in a process: checking
    regime-study's grid expands 5,760 combinations, and the app lists every preset each
    time its Sweep view or preset picker opens. A Preset is frozen; its result or its one
    error line is returned, never a shared exception object. ``parts``: the registries'
    generation (a part registered since may make a refused preset valid)."""
    try:
        data = toml_document(text)
    except tomllib.TOMLDecodeError as err:
        return None, f"{path}: not valid TOML: {err}"
    try:
        return parse_preset(path, data), None
    except PresetError as err:
        return None, str(err)


def preset_paths() -> dict[str, Path]:
    """Every known preset by name; a user preset shadows a shipped one of the same name."""
    found: dict[str, Path] = {}
    for directory in (SHIPPED_DIR, user_preset_dir()):
        if directory.is_dir():
            for path in sorted(directory.glob("*.toml")):
                found[path.stem] = path
    return found


def resolve_preset(name_or_path: str) -> Path:
    """A preset's file from its name (user directory first, then shipped) or its path."""
    candidate = Path(name_or_path).expanduser()
    if candidate.suffix == ".toml" or os.sep in name_or_path:
        return candidate
    paths = preset_paths()
    if name_or_path not in paths:
        known = ", ".join(sorted(paths)) or "none"
        raise PresetError(f"preset {name_or_path!r}: not found; known presets: {known}")
    return paths[name_or_path]


def load_preset(name_or_path: str) -> Preset:
    """Find and load a preset by name or path."""
    return load_preset_file(resolve_preset(name_or_path))


def list_presets() -> list[Preset | PresetError]:
    """Every known preset, loaded; a malformed one appears as its error, not a crash."""
    out: list[Preset | PresetError] = []
    for path in preset_paths().values():
        try:
            out.append(load_preset_file(path))
        except PresetError as err:
            out.append(PresetError(str(err), path))
    return out


def _toml_value(value: Any) -> str:
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else "nan"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return str(value)


def _toml_key(name: str) -> str:
    """A field's key in TOML: a dotted key quoted ("workload.batch_size"), so that it reads
    back as one key."""
    return _toml_value(name) if "." in name else name


def preset_to_toml(
    config: SpecConfig,
    description: str = "",
    grids: tuple[dict[str, Any], ...] = (),
    arena: tuple[dict[str, Any], ...] = (),
) -> str:
    """The TOML text of a preset (round-trips through :func:`parse_preset`)."""
    lines = [f"description = {_toml_value(description)}", "", "[config]"]
    lines += [f"{_toml_key(k)} = {_toml_value(v)}" for k, v in config.to_dict().items()]
    for grid in grids:
        lines += ["", "[[grid]]"]
        lines += [f"{_toml_key(k)} = {_toml_value(list(v))}" for k, v in grid.items()]
    for table in arena:
        lines += ["", "[[arena]]"]
        lines += [f"{_toml_key(k)} = {_toml_value(list(v))}" for k, v in table.items()]
    return "\n".join(lines) + "\n"


def save_preset(
    path: Path,
    config: SpecConfig,
    description: str = "",
    grids: tuple[dict[str, Any], ...] = (),
    *,
    overwrite: bool = False,
    arena: tuple[dict[str, Any], ...] = (),
) -> Path:
    """Write a preset atomically. Refuses to replace an existing file unless ``overwrite``."""
    if path.exists() and not overwrite:
        raise FileExistsError(f"{path}: already exists")
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, preset_to_toml(config, description, grids, arena))
    return path
