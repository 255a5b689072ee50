"""llama.cpp's single-line formats: per-request ``draft acceptance rate`` lines and the
server's per-drafter ``statistics`` lines (its example summaries are in
:mod:`engine.calibrate.logs.blocks`). llama.cpp drafts vary in length: K is not derived."""

from __future__ import annotations

import re

from engine.calibrate.logs.printed import (
    COUNT,
    COUNT_TEXT,
    NUMBER,
    half_unit,
    rate_list,
    read_count,
    read_number,
)
from engine.calibrate.logs.window import Raw

_LLAMA_REQUEST = re.compile(
    r"draft acceptance(?: rate)?\s*=\s*"
    + NUMBER
    + r"\s*\(\s*"
    + COUNT
    + r"\s+accepted\s*/\s*"
    + COUNT
    + r"\s+generated\)"
)
_LLAMA_MEAN = re.compile(r"mean (?:acceptance length|len)\s*=\s*" + NUMBER)
_LLAMA_RATES = re.compile(r"acceptance rate per position\s*=\s*\(([^)]*)\)")
_LLAMA_STATS = re.compile(
    rf"statistics\s+(?P<drafter>[\w.-]+):.*?#gen drafts\s*=\s*(?P<drafts>{COUNT_TEXT}),\s*"
    rf"#acc drafts\s*=\s*{COUNT_TEXT},\s*#gen tokens\s*=\s*(?P<drafted>{COUNT_TEXT}),\s*"
    rf"#acc tokens\s*=\s*(?P<accepted>{COUNT_TEXT})"
)
_LLAMA_STATS_MEAN = re.compile(r"#mean acc len\s*=\s*" + NUMBER)
_LLAMA_STATS_RATES = re.compile(r"#acc rate/pos\s*=\s*\(([^)]*)\)")


def request_line(line: str, index: int) -> Raw | None:
    """A per-request ``draft acceptance rate`` line's window, or None when ``line`` is not one."""
    match = _LLAMA_REQUEST.search(line)
    if match is None:
        return None
    rate, accepted, drafted = match.groups()
    raw = Raw("llama.cpp", index, line)
    raw.drafted = read_count(raw.problems, "generated", drafted)
    raw.accepted = read_count(raw.problems, "accepted", accepted)
    raw.fixed_k = False
    raw.acceptance, raw.acceptance_step = read_number(rate), half_unit(rate)
    _llama_mean_and_rates(raw, line, _LLAMA_MEAN, _LLAMA_RATES)
    return raw


def _llama_mean_and_rates(
    raw: Raw, line: str, mean_pattern: re.Pattern[str], rates_pattern: re.Pattern[str]
) -> None:
    mean = mean_pattern.search(line)
    if mean is not None:
        raw.mean_length, raw.mean_step = read_number(mean.group(1)), half_unit(mean.group(1))
    rates = rates_pattern.search(line)
    if rates is not None and rates.group(1).strip():
        raw.rates, raw.rate_step = rate_list(rates.group(1))


def stats_line(line: str, index: int) -> tuple[str, Raw] | None:
    """A ``statistics <drafter>:`` line's drafter and window (totals since the server
    started), or None when ``line`` is not one."""
    match = _LLAMA_STATS.search(line)
    if match is None:
        return None
    raw = Raw("llama.cpp", index, line)
    raw.drafts = read_count(raw.problems, "#gen drafts", match["drafts"])
    raw.drafted = read_count(raw.problems, "#gen tokens", match["drafted"])
    raw.accepted = read_count(raw.problems, "#acc tokens", match["accepted"])
    raw.fixed_k = False
    _llama_mean_and_rates(raw, line, _LLAMA_STATS_MEAN, _LLAMA_STATS_RATES)
    return match["drafter"], raw
