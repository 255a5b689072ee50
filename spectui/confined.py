"""Which files a served app may open.

``spectui serve`` hands the app it starts for each browser the folders it may read and
write (:data:`ENV`): the working directory, spectui's own configuration and data folders,
its shipped presets, and each ``serve --files DIR``. A path a person types in that app (a
preset, a cost table, a log) is refused in one line when it leads outside them, symbolic
links followed. An app run in a terminal has no such list: it opens what its user can.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

ENV = "SPECTUI_FILES"  # os.pathsep-separated folders; unset: any path


class OutsideFiles(ValueError):
    """A path outside the folders this served app may open."""


def default_roots() -> list[Path]:
    """The folders every served app may open: the working directory, spectui's config
    (user presets, hardware and model ids), its results and its shipped presets."""
    from engine.cost.specs import user_config_dir
    from engine.presets import SHIPPED_DIR, user_preset_dir
    from spectui.widgets.common import results_dir

    return [Path.cwd(), user_config_dir(), user_preset_dir(), results_dir(), SHIPPED_DIR]


def environment(extra: Iterable[Path] = ()) -> str:
    """The value of :data:`ENV` for a served app: the default folders and ``extra``."""
    roots = [*default_roots(), *extra]
    return os.pathsep.join(dict.fromkeys(str(root.expanduser().resolve()) for root in roots))


def roots() -> list[Path] | None:
    """The folders this app may open, or None when it may open any (not served)."""
    value = os.environ.get(ENV)
    if value is None:
        return None
    return [Path(part) for part in value.split(os.pathsep) if part]


def confine(path: str | Path) -> Path:
    """``path`` (``~`` expanded) if this app may open it, else :class:`OutsideFiles`."""
    allowed = roots()
    wanted = Path(path).expanduser()
    if allowed is None:
        return wanted
    real = Path(os.path.realpath(wanted))  # a link inside that leads outside is outside
    if any(real == root or root in real.parents for root in allowed):
        return wanted
    raise OutsideFiles(
        f"{path}: outside the folders this served app may open (the working directory and "
        "spectui's own; `spectui serve --files DIR` adds one)"
    )


def confine_config(config: object) -> None:
    """:func:`confine` each file a configuration names (a cost table)."""
    from engine.core.config import FIELD_SPECS

    for key, spec in FIELD_SPECS.items():
        if spec.kind == "path":
            value = config.get(key)  # type: ignore[attr-defined]
            if value:
                confine(value)
