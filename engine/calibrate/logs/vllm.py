"""vLLM's single-line formats: V1 ``SpecDecoding metrics:`` lines, and ``Speculative
metrics:`` lines (v0's totals, or the earliest V1's interval)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from engine.calibrate.logs.checks import EXACT
from engine.calibrate.logs.printed import (
    COUNT,
    NUMBER,
    half_unit,
    rate_list,
    read_count,
    read_k,
    read_number,
)
from engine.calibrate.logs.window import Raw

_V1 = re.compile(r"SpecDecoding metrics:")
_V1_FIELDS = {
    "acceptance": re.compile(r"(?<!Avg )Draft acceptance rate:\s*" + NUMBER + "%"),
    "avg_acceptance": re.compile(r"Avg Draft acceptance rate:\s*" + NUMBER + "%"),
    "mean_length": re.compile(r"Mean acceptance length:\s*" + NUMBER),
    "accepted": re.compile(r"Accepted:\s*" + COUNT + r"\s+tokens"),
    "drafted": re.compile(r"Drafted:\s*" + COUNT + r"\s+tokens"),
    "rates": re.compile(
        r"Per-position acceptance (?:rate|probabilities):\s*([0-9][0-9.]*(?:,\s*[0-9][0-9.]*)*)"
    ),
}
_SPECULATIVE = re.compile(r"Speculative metrics:")
_SPECULATIVE_FIELDS = {
    "acceptance": re.compile(r"Draft acceptance rate:\s*" + NUMBER + r"(%?)"),
    "efficiency": re.compile(r"System efficiency:\s*" + NUMBER),
    "k": re.compile(r"Number of speculative tokens:\s*" + COUNT),
    "accepted": re.compile(r"Number of accepted tokens:\s*" + COUNT),
    "drafted": re.compile(r"Number of draft tokens:\s*" + COUNT),
    "emitted": re.compile(r"Number of emitted tokens:\s*" + COUNT),
}


def _search(fields: dict[str, re.Pattern[str]], text: str) -> dict[str, re.Match[str]]:
    found = {name: pattern.search(text) for name, pattern in fields.items()}
    return {name: match for name, match in found.items() if match is not None}


def v1_line(line: str, index: int) -> Raw | None:
    """A ``SpecDecoding metrics:`` line's window (line ``index``), or None when ``line`` is
    not one."""
    if not _V1.search(line):
        return None
    found = _search(_V1_FIELDS, line)
    raw = Raw("vllm-v1", index, line)
    for name in ("acceptance", "avg_acceptance"):
        if name in found:
            raw.acceptance = read_number(found[name].group(1)) / 100.0
            raw.acceptance_step = half_unit(found[name].group(1), 0.01)
    if "mean_length" in found:
        raw.mean_length = read_number(found["mean_length"].group(1))
        raw.mean_step = half_unit(found["mean_length"].group(1))
    for name in ("accepted", "drafted"):
        if name in found:
            setattr(raw, name, read_count(raw.problems, name, found[name].group(1)))
    if "rates" in found:
        raw.rates, raw.rate_step = rate_list(found["rates"].group(1))
    if raw.accepted is None and raw.mean_length is None and not raw.problems:
        return None
    return raw


@dataclass
class V0Line:
    """One v0 ``Speculative metrics`` line: totals since the server started."""

    index: int
    text: str
    k: int
    drafted: int
    emitted: int
    problems: list[str]


def speculative_line(line: str, index: int) -> Raw | V0Line | None:
    """A ``Speculative metrics:`` line: v0 (with K and emitted tokens) or the earliest V1."""
    if not _SPECULATIVE.search(line):
        return None
    found = _search(_SPECULATIVE_FIELDS, line)
    if "accepted" not in found or "drafted" not in found:
        return None
    problems: list[str] = []
    accepted = read_count(problems, "accepted", found["accepted"].group(1))
    drafted = read_count(problems, "drafted", found["drafted"].group(1))
    if accepted is None or drafted is None:  # listed as rejected, never used
        return Raw("vllm-v1", index, line, problems=problems)
    rate = found.get("acceptance")
    if "k" not in found or "emitted" not in found:
        raw = Raw("vllm-v1", index, line, drafted=drafted, accepted=accepted)
        if rate is not None:
            scale = 0.01 if rate.group(2) else 1.0
            raw.acceptance = read_number(rate.group(1)) * scale
            raw.acceptance_step = half_unit(rate.group(1), scale)
        return raw
    k = read_k(problems, found["k"].group(1))
    emitted = read_count(problems, "emitted", found["emitted"].group(1))
    if k is None or emitted is None:
        return Raw("vllm-v0", index, line, problems=problems)
    if rate is not None and drafted > 0:
        share = accepted / drafted
        if abs(share - read_number(rate.group(1))) > half_unit(rate.group(1)) + EXACT:
            problems.append(f"acceptance rate {rate.group(1)} != accepted / drafted {share:.4g}")
    if drafted % k:
        problems.append(f"draft tokens {drafted} not a multiple of K = {k}")
    drafts = drafted / k
    if drafts and not drafts <= emitted <= drafts * (k + 1):
        problems.append(f"emitted {emitted} outside [drafts, drafts x (K + 1)]")
    elif drafts and emitted - drafts > accepted:
        problems.append(f"emitted - drafts {emitted - drafts:g} > accepted {accepted}")
    efficiency = found.get("efficiency")
    if efficiency is not None and drafts:
        value = emitted / (drafts * (k + 1))
        if abs(value - read_number(efficiency.group(1))) > half_unit(efficiency.group(1)) + EXACT:
            problems.append(
                f"system efficiency {efficiency.group(1)} != emitted / (drafts (K + 1)) {value:.4g}"
            )
    return V0Line(index, line, k, drafted, emitted, problems)


def v0_window(current: V0Line, previous: V0Line | None) -> Raw:
    """A v0 line's interval window: its totals less the line before's (a drop in a total, or
    another K, starts a new series)."""
    drafted, emitted = current.drafted, current.emitted
    if (
        previous is not None
        and previous.k == current.k
        and previous.drafted <= current.drafted
        and previous.emitted <= current.emitted
    ):
        drafted -= previous.drafted
        emitted -= previous.emitted
    drafts = drafted / current.k
    return Raw(
        "vllm-v0",
        current.index,
        current.text,
        drafts=drafts,
        drafted=drafted,
        accepted=round(emitted - drafts),
        k=current.k,
        problems=list(current.problems),
    )
