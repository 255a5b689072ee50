"""vLLM's Prometheus text exposition: the ``vllm:spec_decode_*`` counters, a window per
scrape."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from engine.calibrate.logs.checks import READ_ERRORS, finished, unreadable
from engine.calibrate.logs.printed import UNREADABLE, WHOLE, read_count, shown
from engine.calibrate.logs.window import Raw, Window
from engine.core.fields import K_MAX

_PROMETHEUS = re.compile(
    r"^(vllm:spec_decode_num_(?:drafts|draft_tokens|accepted_tokens_per_pos|accepted_tokens))"
    r"(?:_total)?(\{[^}]*\})?\s+(\S+)(?:\s+[0-9]+)?\s*$"
)
_PROMETHEUS_COMMENT = re.compile(r"^#\s*(?:HELP|TYPE)\s+vllm:spec_decode_")
_POSITION_LABEL = re.compile(r'position="' + WHOLE + '"')


@dataclass
class _Scrape:
    """The spec-decode counters of one scrape, summed over engines."""

    index: int
    lines: list[str] = field(default_factory=list)
    seen: set[tuple[str, str]] = field(default_factory=set)
    drafts: float = 0.0
    drafted: float = 0.0
    accepted: float = 0.0
    positions: dict[int, float] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)  # the first bad sample's, by line

    def reject(self, index: int, problem: str) -> None:
        """Reject the scrape for the sample on line ``index`` (the first such is kept)."""
        if not self.problems:
            self.problems.append(f"{UNREADABLE}: line {index + 1}'s {problem}")


class Prometheus:
    """The ``vllm:spec_decode_*`` samples of a text, fed line by line: a window per scrape
    (only the scrape being read and the one before it are held)."""

    def __init__(self) -> None:
        self.current: _Scrape | None = None
        self.previous: _Scrape | None = None
        self.windows: list[Window] = []

    def feed(self, stripped: str, line: str, index: int) -> bool:
        """Take the sample (or spec-decode comment) ``line``; False when it is neither."""
        if _PROMETHEUS_COMMENT.match(stripped):
            return True
        match = _PROMETHEUS.match(stripped)
        if match is None:
            return False
        name, labels, value = match.group(1), match.group(2) or "", match.group(3)
        key = (name, labels)
        if self.current is None or key in self.current.seen:
            self._close()
            self.current = _Scrape(index)
        scrape = self.current
        scrape.seen.add(key)
        scrape.lines.append(line)
        # A counter's sample is a token count (Prometheus prints it as a float: "1000.0"):
        # one that is not (1e308, NaN, "١٢") rejects the scrape, never reads as a number.
        problems: list[str] = []
        count = read_count(problems, name, value)
        if count is None:
            scrape.reject(index, problems[0])
            return True
        number = float(count)
        if name.endswith("_per_pos"):
            position = _POSITION_LABEL.search(labels)
            if position is not None:
                i = read_count(problems, "position", position.group(1))
                if i is None or i >= K_MAX:  # from 0: K_MAX positions at most
                    scrape.reject(
                        index, f"position {shown(position.group(1))} is not 0 to {K_MAX - 1}"
                    )
                    return True
                scrape.positions[i] = scrape.positions.get(i, 0.0) + number
        elif name.endswith("_drafts"):
            scrape.drafts += number
        elif name.endswith("_draft_tokens"):
            scrape.drafted += number
        else:
            scrape.accepted += number
        return True

    def _close(self) -> None:
        """The window of the scrape just read (the interval since the one before it)."""
        scrape = self.current
        if scrape is None:
            return
        text = "\n".join(scrape.lines)
        try:
            self.windows.append(finished(_interval(scrape, self.previous)))
        except READ_ERRORS as error:  # a counter that is not a number
            self.windows.append(unreadable(text, scrape.index, error))
        scrape.lines, scrape.seen = [], set()
        if not scrape.problems:  # the next interval is since the last scrape read whole
            self.previous = scrape
        self.current = None

    def take(self) -> list[Window]:
        """The windows closed since the last take (none are held longer)."""
        windows, self.windows = self.windows, []
        return windows

    def finish(self) -> None:
        """Close the scrape being read (its window comes with the next :meth:`take`)."""
        self._close()


def _interval(scrape: _Scrape, previous: _Scrape | None) -> Raw:
    """The counts between ``previous`` (or the server start) and ``scrape``."""

    def since(now: float, before: float) -> float:
        return now - before if previous is not None else now

    drafts = since(scrape.drafts, previous.drafts if previous else 0.0)
    drafted = since(scrape.drafted, previous.drafted if previous else 0.0)
    accepted = since(scrape.accepted, previous.accepted if previous else 0.0)
    before = previous.positions if previous else {}
    positions = {i: since(v, before.get(i, 0.0)) for i, v in scrape.positions.items()}
    raw = Raw(
        "vllm-prometheus",
        scrape.index,
        "\n".join(scrape.lines),
        drafts=drafts,
        drafted=round(drafted),
        accepted=round(accepted),
        problems=list(scrape.problems),
    )
    if min([drafts, drafted, accepted, *positions.values()]) < 0:
        raw.problems.append("a counter went down between scrapes (server restarted?)")
    if positions:
        if sorted(positions) != list(range(len(positions))):
            raw.problems.append(f"per-position counters for positions {sorted(positions)}")
        raw.position_accepted = tuple(positions[i] for i in sorted(positions))
    return raw
