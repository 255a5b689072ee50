"""spectui's simulation engine: pure numpy/pandas, no terminal, no printing.

Start with :class:`SpecConfig` (``engine.config``), :func:`simulate` (``engine.simulator``)
and :func:`speedup_exact` (``engine.exact``). The names below are loaded lazily, so that
``import engine.exact`` (numpy only) stays cheap for a UI that starts fast.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "ConfigError": "config",
    "SpecConfig": "config",
    "DRAFT_MODELS": "draft_models",
    "get_model": "draft_models",
    "speedup_exact": "exact",
    "speedup_limit": "exact",
    "tokens_per_cycle": "exact",
    "simulate_reference": "reference",
    "RunResult": "runs",
    "simulate": "simulator",
    "SweepSpec": "grid",
    "run_sweep": "sweep",
    "sweep_rows": "sweep",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module 'engine' has no attribute {name!r}")
