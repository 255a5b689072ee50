"""Reading in bounded memory: the lines one at a time with a look ahead (:class:`Reader`),
and the windows found, held one by one up to a limit and merged past it (:class:`Collected`,
:class:`Pooled`)."""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Iterable, Iterator
from typing import Any

from engine.calibrate.logs.window import Window, mean_length_of


class Reader:
    """Lines taken one at a time, with a look at those coming (a multi-line summary's)."""

    def __init__(self, lines: Iterable[str]) -> None:
        self._source = iter(lines)
        self._ahead: deque[str] = deque()
        self.taken = 0  # lines taken so far: the next line's 0-based index

    def take(self) -> str | None:
        line = self._ahead.popleft() if self._ahead else next(self._source, None)
        if line is not None:
            self.taken += 1
        return line

    def peek(self, limit: int) -> Iterator[str]:
        """Up to ``limit`` of the lines after the last taken, without taking them."""
        for i in range(limit):
            if i == len(self._ahead):
                line = next(self._source, None)
                if line is None:
                    return
                self._ahead.append(line)
            yield self._ahead[i]

    def skip(self, count: int) -> None:
        for _ in range(count):
            self.take()


class Collected:
    """The windows found, in bounded memory: held one by one up to ``limit``
    (:data:`engine.calibrate.logs.POOL_AFTER`); then the usable ones are merged into one
    :class:`Pooled` a kind, and rejected ones past the first ``limit`` are only counted."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.held: list[Window] = []
        self.rejected: list[Window] = []
        self.groups: dict[tuple[Any, ...], Pooled] = {}
        self.merged = 0  # usable windows merged into groups
        self.unlisted = 0

    def add(self, window: Window) -> None:
        if len(self.held) >= self.limit:
            self._merge()
        self.held.append(window)

    def take_all(self, other: Collected) -> None:
        """Add ``other``'s windows (held, merged and counted) to these."""
        for window in other.held:
            self.add(window)
        for window in other.rejected:
            self.add(window)
        if other.groups:
            self._merge()
            for key, group in other.groups.items():
                if key in self.groups:
                    self.groups[key].absorb(group)
                else:
                    self.groups[key] = group
            self.merged += other.merged
        self.unlisted += other.unlisted

    def _merge(self) -> None:
        for window in self.held:
            if window.problems:
                if len(self.rejected) < self.limit:
                    self.rejected.append(window)
                else:
                    self.unlisted += 1
                continue
            key = Pooled.key(window)
            group = self.groups.get(key)
            if group is None:
                self.groups[key] = Pooled(window)
            else:
                group.add(window)
            self.merged += 1
        self.held = []

    def finish(self) -> tuple[list[Window], list[Window], int, int]:
        """(usable windows, rejected windows listed, usable windows merged into others,
        rejected windows not listed), each list in the log's order."""
        if self.groups or self.rejected:  # merging began: the rest is merged too
            self._merge()
        usable = [w for w in self.held if not w.problems]
        usable += [group.window() for group in self.groups.values()]
        rejected = self.rejected + [w for w in self.held if w.problems]
        usable.sort(key=lambda w: w.line)
        rejected.sort(key=lambda w: w.line)
        return usable, rejected, self.merged - len(self.groups), self.unlisted


class Pooled:
    """Usable windows that calibration (engine.calibrate.fit) treats alike, merged: the same
    source, K, number of positions, whether drafts are known and whether M is above K + 1.
    Counts are summed; M is the mean calibration takes (weighted by drafts where known,
    else by windows), so the fit from the merged windows is the fit from them one by one."""

    @staticmethod
    def key(w: Window) -> tuple[Any, ...]:
        mean = mean_length_of(w)
        beyond = mean is not None and w.k is not None and mean > w.k + 1.0 + 1e-9
        positions = len(w.position_accepted) if w.position_accepted else None
        return (
            w.source,
            w.k,
            positions,
            w.drafts is None,
            bool(w.drafts),
            mean is None,
            beyond,
            w.drafted is None or w.accepted is None,
        )

    def __init__(self, first: Window) -> None:
        self.first = first
        self.windows = 0
        self.drafts = 0.0
        self.drafted = 0
        self.accepted = 0
        self.mean_sum = 0.0  # M x weight, summed
        self.weight = 0.0  # drafts where known, else windows
        self.positions: list[float] | None = (
            [0.0] * len(first.position_accepted) if first.position_accepted else None
        )
        self.add(first)

    def add(self, w: Window) -> None:
        self.windows += w.windows
        self.drafts += float(w.drafts or 0.0)
        self.drafted += w.drafted or 0
        self.accepted += w.accepted or 0
        mean = mean_length_of(w)
        weight = float(w.drafts) if w.drafts else float(w.windows)
        if mean is not None:
            self.mean_sum += mean * weight
        self.weight += weight
        if self.positions is not None and w.position_accepted is not None:
            for i, count in enumerate(w.position_accepted):
                self.positions[i] += count

    def absorb(self, other: Pooled) -> None:
        self.windows += other.windows
        self.drafts += other.drafts
        self.drafted += other.drafted
        self.accepted += other.accepted
        self.mean_sum += other.mean_sum
        self.weight += other.weight
        if self.positions is not None and other.positions is not None:
            self.positions = [a + b for a, b in zip(self.positions, other.positions, strict=True)]

    def window(self) -> Window:
        first = self.first
        if self.windows == first.windows:
            return first
        counted = first.drafted is not None and first.accepted is not None
        return dataclasses.replace(
            first,
            drafts=None if first.drafts is None else self.drafts,
            drafted=self.drafted if counted else None,
            accepted=self.accepted if counted else None,
            mean_length=None if mean_length_of(first) is None else self.mean_sum / self.weight,
            position_accepted=None if self.positions is None else tuple(self.positions),
            windows=self.windows,
        )
