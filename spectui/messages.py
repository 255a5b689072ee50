"""Messages between thread workers and widgets.

Workers never touch widgets: they post one of these, and the UI thread handles it.
Progress messages say so with ``can_replace``, so a busy UI drops stale ones.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual.message import Message

if TYPE_CHECKING:
    import pandas as pd

    from engine.core.config import SpecConfig


class TypedKeys(Message):
    """Printable keys that reached the app one after another with nothing in between (an
    unbracketed paste comes as one key each): handled as one text where a form field has
    the focus, else key by key (``SpectuiApp.post_message``)."""

    def __init__(self, first: Any) -> None:
        super().__init__()
        self.keys: list[Any] = [first]  # textual.events.Key, in the order they came


@dataclass
class ConfigChanged(Message):
    """The form holds a new valid configuration (``config``) or is invalid (``None``)."""

    config: SpecConfig | None
    errors: dict[str, str] = field(default_factory=dict)


@dataclass
class ExactReady(Message):
    """Exact figures of ``config`` computed off the UI thread."""

    config: SpecConfig
    figures: dict[str, float]


@dataclass
class RunFinished(Message):
    """A Monte Carlo run finished: metrics, the per-cycle records, per-position acceptance.

    ``cycles`` holds the run's first records only (at most the Run view's cap); the
    metrics and ``observed`` cover every cycle. ``run`` numbers the runs a view started.
    """

    config: SpecConfig
    metrics: dict[str, float]
    cycles: pd.DataFrame
    observed: list[float]
    model_probs: list[float]
    run: int = 0


@dataclass
class RunProgress(Message):
    """Run number ``run`` has finished ``sequences`` and kept ``tokens`` in ``elapsed`` s."""

    run: int
    sequences: int
    tokens: int
    elapsed: float

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, RunProgress)


@dataclass
class CurveReady(Message):
    """Speedup-vs-K data for the Speedup view: exact curves and optional Monte Carlo points."""

    title: str
    curves: list[tuple[str, list[int], list[float]]]
    points: list[tuple[int, float, float]] | None
    k_star: int | None


@dataclass
class SweepRunsOn(Message):
    """The sweep runs on the Dask cluster at ``scheduler`` (an address or ``local:N``),
    ``workers`` worker threads in all; ``dashboard``: the cluster's dashboard URL, if any."""

    scheduler: str
    workers: int
    dashboard: str | None


@dataclass
class SweepStarted(Message):
    """A sweep of ``total`` rows started: the rows of the one before are not its rows."""

    total: int


@dataclass
class SweepSnapshot(Message):
    """The rows finished so far and their optimal-K table (sent at most every second), of
    ``total`` rows in all (0: not said)."""

    frame: pd.DataFrame
    optimal: Any  # model -> its K* grid (engine.analysis.plot_data.optimal_k_heatmap)
    total: int = 0

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, SweepSnapshot)


@dataclass
class SweepFinished(Message):
    """The sweep ended (or was cancelled); its rows were saved to ``path``."""

    frame: pd.DataFrame
    optimal: Any  # model -> its K* grid (engine.analysis.plot_data.optimal_k_heatmap)
    path: Path | None
    cancelled: bool
    elapsed: float
    done: int
    total: int


@dataclass
class CellChosen(Message):
    """A heatmap cell was selected: show this configuration's curve (with the sweep's points)."""

    config: SpecConfig
    rows: Any


@dataclass
class FileWritten(Message):
    """A file was written (an export, a preset, a sweep's CSV): the copy key's path."""

    path: Path
    what: str  # how a toast names it: "cycles CSV", "preset", "sweep CSV"


@dataclass
class PinFigures(Message):
    """The exact speedup curve of ``config``, its K* and its speedup at the form's K
    (spectui.pinning.figures), for pinning it (``pin``) or comparing with the pinned one."""

    config: SpecConfig
    figures: Any  # spectui.pinning.Figures
    pin: bool
