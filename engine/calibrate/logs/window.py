"""What a parse gives: a measurement :class:`Window`, the :class:`ParseResult` of a text, and
the :class:`Raw` window as printed, before :func:`engine.calibrate.logs.checks.finish`; and
what calibration reads of a window (:class:`WindowLike`, :func:`mean_length_of`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

SOURCES = (
    "vllm-v1",
    "vllm-v0",
    "vllm-prometheus",
    "vllm-bench",
    "vllm-offline",
    "sglang",
    "llama.cpp",
)


@dataclass(frozen=True, slots=True)
class Window:
    """One parsed measurement window: a log line, a scrape interval, or a summary."""

    source: str  # one of SOURCES
    line: int  # 1-based line where it starts in the input
    text: str  # the raw text (one or more lines)
    drafts: float | None  # drafts (verify cycles that drafted); derived where the log lacks it
    drafted: int | None  # drafted tokens
    accepted: int | None  # accepted draft tokens
    k: int | None  # tokens per draft (drafted / drafts), when known or derivable
    mean_length: float | None  # mean acceptance length M (1 + accepted / drafts)
    # Per position i = 1..m: drafts whose i-th token was accepted (counts; rates x drafts
    # where only rates are printed).
    position_accepted: tuple[float, ...] | None
    problems: tuple[str, ...] = ()  # consistency violations, each one line
    # The log's windows this one stands for: 1, or more for windows merged past POOL_AFTER
    # (their counts summed, their M the mean calibration would take of theirs: bounded.Pooled).
    windows: int = 1

    @property
    def cumulative_rates(self) -> tuple[float, ...] | None:
        """Drafts whose i-th token was accepted, over drafts (vLLM's per-position rates)."""
        if self.position_accepted is None or not self.drafts:
            return None
        drafts = self.drafts
        return tuple(a / drafts for a in self.position_accepted)


@dataclass
class ParseResult:
    """What :func:`parse_log` found."""

    windows: list[Window]  # usable (no problems)
    rejected: list[Window]  # with problems (reported, never used)
    skipped: int  # lines recognised as none of the formats
    lines: int  # lines read
    # Usable windows merged into others (past POOL_AFTER windows: see bounded.Pooled), so that
    # ``used`` windows were found in all.
    pooled: int = 0
    # Rejected windows counted but not listed (past the first POOL_AFTER rejected ones).
    rejected_unlisted: int = 0

    @property
    def used(self) -> int:
        """The usable windows found (those listed and those pooled into them)."""
        return len(self.windows) + self.pooled

    @property
    def rejected_count(self) -> int:
        """The rejected windows found (those listed and those only counted)."""
        return len(self.rejected) + self.rejected_unlisted


@dataclass
class Raw:
    """A window as printed, before :func:`finish` derives and checks the rest."""

    source: str
    line: int  # 0-based index of the first line
    text: str
    drafts: float | None = None
    drafted: int | None = None
    accepted: int | None = None
    k: int | None = None
    mean_length: float | None = None
    mean_step: float = 0.0  # half a unit of M's last printed digit (0 when from counts)
    rates: tuple[float, ...] | None = None  # printed cumulative per-position rates
    rate_step: float = 0.0  # half a unit of the rates' last printed digit
    position_accepted: tuple[float, ...] | None = None  # exact per-position counts
    acceptance: float | None = None  # printed accepted / drafted
    acceptance_step: float = 0.0
    fixed_k: bool = True  # every draft has K tokens (vLLM); llama.cpp drafts vary
    problems: list[str] = field(default_factory=list)


class WindowLike(Protocol):
    """What calibration (:func:`engine.calibrate.fit.calibrate`) reads of a :class:`Window`
    (re-exported by :mod:`engine.calibrate.fit`)."""

    @property
    def source(self) -> str: ...
    @property
    def drafts(self) -> float | None: ...
    @property
    def drafted(self) -> int | None: ...
    @property
    def accepted(self) -> int | None: ...
    @property
    def k(self) -> int | None: ...
    @property
    def mean_length(self) -> float | None: ...
    @property
    def position_accepted(self) -> tuple[float, ...] | None: ...
    @property
    def windows(self) -> int: ...  # the log's windows it stands for (merged ones: several)


def mean_length_of(w: WindowLike) -> float | None:
    """A window's mean acceptance length M (tokens per draft, 1 + accepted / drafts), as
    calibration reads it: from M, or accepted / drafts, or K x accepted / drafted."""
    if w.mean_length is not None:
        return float(w.mean_length)
    if w.accepted is not None and w.drafts:
        return 1.0 + w.accepted / w.drafts
    if w.accepted is not None and w.drafted and w.k:
        return 1.0 + w.k * w.accepted / w.drafted
    return None
