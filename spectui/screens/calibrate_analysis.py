"""The Calibrate screen's analysis (:mod:`spectui.screens.calibrate`): what it found so far
(:class:`Analysis`), the message that brings it (:class:`AnalysisReady`), and the worker's
body (:func:`run_analysis`): parse, fit, recommend, posting what is known after each stage.

The calibration package is imported when the worker runs (:func:`calibration_module`),
never at import time: the app starts whether or not it is there.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from textual.message import Message
from textual.worker import get_current_worker

from spectui.screens.calibrate_text import sendable, source_label

if TYPE_CHECKING:
    from engine.core.config import SpecConfig

NO_K = "no K in the log: type it in 'log K' (top right), enter"


@dataclass
class Analysis:
    """What one analysis found so far (the worker posts it after each stage).

    ``parsed``: the ParseResult; ``calibration`` and ``recommendation`` once fitted;
    ``curves``: each fitted model's conditional rates at the observed positions;
    ``emitted``: each engine's setting for the recommended K; ``sent``: the configuration
    ``f`` sends (:func:`sendable`); ``adaptive``: whether an
    engine's adaptive setting would beat it (spectui.cli.calibrate.adaptive_note);
    ``error``: why it stopped (one line; ``wants_k``: the K the log was recorded at is
    needed); ``note``: why there is no recommendation (the form is invalid)."""

    generation: int
    source: str
    parsed: Any = None
    calibration: Any = None
    recommendation: Any = None
    curves: dict[str, list[float]] = field(default_factory=dict)
    emitted: dict[str, str] = field(default_factory=dict)
    sent: Any = None  # what ``f`` sends to the form (sendable), with the recommendation
    adaptive: str = ""
    error: str | None = None
    wants_k: bool = False
    note: str | None = None
    done: bool = False


class AnalysisReady(Message):
    """The worker's news: ``analysis`` as far as it got."""

    def __init__(self, analysis: Analysis) -> None:
        super().__init__()
        self.analysis = analysis


def calibration_module(name: str) -> Any:
    """``engine.calibrate.<name>``, imported when first needed (tests may stand in for it)."""
    return importlib.import_module(f"engine.calibrate.{name}")


def run_analysis(
    post_message: Callable[[Message], object],
    generation: int,
    source: str,
    text: str,
    path: str | None,
    log_k: int | None,
    scenario: SpecConfig | None,
) -> None:
    """Parse, then fit, then recommend; post (``post_message``) what is known after each
    stage. Errors a person can act on (no usable line, an unreadable file, nothing to fit)
    end it with a one-line reason; anything else raises (the worker fails). Runs in the
    screen's thread worker: it stops between stages once the worker is cancelled."""
    worker = get_current_worker()
    found = Analysis(generation, source)
    label = source_label(source)

    def post(**changes: Any) -> None:
        for name, value in changes.items():
            setattr(found, name, value)
        post_message(AnalysisReady(Analysis(**vars(found))))

    try:
        logs, fit = calibration_module("logs"), calibration_module("fit")
    except ImportError as err:
        post(error=f"the calibration engine is not available ({err})", done=True)
        return
    try:
        parsed = logs.parse_log_file(path) if path else logs.parse_log(text, source)
    except ValueError as err:  # LogError: one line, naming the input
        post(error=str(err), done=True)
        return
    post(parsed=parsed)
    if worker.is_cancelled:
        return
    try:
        cal = fit.calibrate(parsed.windows, k=log_k) if log_k else fit.calibrate(parsed.windows)
    except ValueError as err:  # CalibrationError: nothing to fit
        if log_k is None and all(w.k is None for w in parsed.windows):
            post(error=f"{label}: {NO_K}", wants_k=True, done=True)
        else:
            post(error=f"{label}: cannot fit: {err}", done=True)
        return
    positions = len(cal.positions)
    curves: dict[str, list[float]] = {}
    if positions:  # each model's rates where the log has observed ones
        curves = {m.name: list(fit.model_rates(m.name, m.values, positions)) for m in cal.models}
    post(calibration=cal, curves=curves)
    if scenario is None:
        post(note="form invalid: no K recommended", done=True)
        return
    if worker.is_cancelled:
        return
    rec = fit.recommend(cal, scenario)
    post(recommendation=rec, emitted=dict(fit.emit(rec, cal)), sent=sendable(cal, scenario, rec))
    if worker.is_cancelled:
        return
    from spectui.cli.calibrate import adaptive_note

    post(adaptive=adaptive_note(cal, scenario, rec), done=True)
