"""spectui's simulation engine: pure numpy/pandas, no terminal, no printing.

Start with :class:`SpecConfig` (``engine.core.config``), :func:`simulate`
(``engine.simulate.simulator``)
and :func:`speedup_exact` (``engine.simulate.exact``). The names below are loaded lazily, so that
``import engine.simulate.exact`` (numpy only) stays cheap for a UI that starts fast.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "ConfigError": "core.config",
    "SpecConfig": "core.config",
    "DRAFT_MODELS": "acceptance.draft_models",
    "get_model": "acceptance.draft_models",
    "speedup_exact": "simulate.exact",
    "speedup_limit": "simulate.exact",
    "tokens_per_cycle": "simulate.exact",
    "simulate_reference": "simulate.reference",
    "RunResult": "core.runs",
    "simulate": "simulate.simulator",
    "SweepSpec": "sweep.grid",
    "run_sweep": "sweep.sweep",
    "sweep_rows": "sweep.sweep",
}

__all__ = sorted(_EXPORTS)

# The built-in parts register with their registries (engine.core.parts): light modules
# (numpy loads when a part first computes).
from engine import acceptance, cost, policies, proposers, shapes  # noqa: E402, F401
from engine.cost import models  # noqa: E402, F401


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module 'engine' has no attribute {name!r}")
