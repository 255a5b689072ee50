"""What a calibration gives: the pooled rate of each position (:class:`PositionRate`), each
model's fit (:class:`ModelFit`), the fit of a log (:class:`Calibration`) and the K
recommended from it (:class:`Recommendation`). Made by :mod:`engine.calibrate.fit` (which
re-exports them) and read by :mod:`engine.calibrate.emit`: here, below both, so that
neither imports the other."""

from __future__ import annotations

from dataclasses import dataclass, field

from engine.core.config import SpecConfig


@dataclass(frozen=True)
class PositionRate:
    """The pooled conditional acceptance rate of one draft position (1-based), with its
    95 % Wilson score interval [low, high] from the counts."""

    position: int
    reached: float
    accepted: float
    rate: float
    low: float
    high: float


@dataclass(frozen=True)
class ModelFit:
    """One acceptance model fitted to the counts.

    ``values``: the SpecConfig values it stands for (by key, ``draft_model`` first);
    ``log_likelihood`` and ``criterion`` (:data:`engine.calibrate.fit.CRITERION`) are NaN
    when the windows give no per-position counts; ``rms_error``: RMS of the fitted against
    the observed conditional rates over the observed positions (NaN without them);
    ``interval``: 95 % intervals of the parameters where the counts give one (the model's
    :meth:`~engine.acceptance.base.AcceptanceModel.fit_interval`; for the constant rate
    from a mean length, the delta method on M)."""

    name: str
    values: dict[str, object]
    parameters: int
    log_likelihood: float
    criterion: float
    rms_error: float
    interval: dict[str, tuple[float, float]] = field(default_factory=dict)


@dataclass
class Calibration:
    """The fit of a log: pooled counts, per-position rates, every model, the chosen one.

    ``windows``: windows used; ``drafts``: their drafts (where known); ``k``: the K the log
    was recorded at (the one with most drafts when windows differ), None when unknown."""

    windows: int
    drafts: float
    k: int | None
    sources: tuple[str, ...]
    positions: list[PositionRate]
    models: list[ModelFit]
    chosen: ModelFit
    notes: list[str]

    def config(self, base: SpecConfig) -> SpecConfig:
        """``base`` with the chosen model's acceptance values."""
        return base.replace(**self.chosen.values)


@dataclass
class Recommendation:
    """The best K under a scenario, its predicted speedup and 95 % interval (from posterior
    draws of the fit), every K within ``band`` of the best, and the change against the K
    the log was recorded at (``change`` = speedup / log_speedup - 1)."""

    k: int
    speedup: float
    low: float
    high: float
    band: tuple[int, ...]
    log_k: int | None
    log_speedup: float | None
    change: float | None
    curve: list[tuple[int, float, float, float]]  # (K, speedup, low, high), K = 1..k_max
