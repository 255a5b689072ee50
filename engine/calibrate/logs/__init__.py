"""Parsers for the speculative-decoding metrics that serving engines print.

:func:`parse_log` reads a text (a log, a ``/metrics`` scrape, a benchmark report, or any mix
of them) and returns one :class:`Window` per measurement it recognises:

``vllm-v1``
    ``SpecDecoding metrics:`` lines in every field order vLLM has printed (from the first
    ``Draft acceptance rate: 100.0%, Accepted: 66 tokens, Drafted: 66 tokens`` to the
    ``Mean acceptance length ..., Per-position acceptance rate ..., Avg Draft acceptance rate``
    form), and the earliest V1 ``Speculative metrics:`` line without ``System efficiency``.
    Each line covers one logging interval. The per-position rates are cumulative (drafts whose
    i-th token was accepted, over drafts), so drafts = accepted / (M - 1) and K = drafted /
    drafts; as the printed M is rounded, drafts is taken as drafted / K for the whole K that
    agrees with M (vLLM drafts K tokens every time).
``vllm-v0``
    ``Speculative metrics: Draft acceptance rate ..., System efficiency ..., Number of
    speculative tokens ...`` lines. Their counts are totals since the server started, so
    successive lines are differenced (a count that goes down starts a new series). v0's
    "accepted tokens" also counts draft tokens accepted after a rejected one; the tokens that
    reached the output are the emitted ones, one per draft plus the accepted prefix, so here
    ``accepted`` = emitted - drafts and M = emitted / drafts.
``vllm-prometheus``
    ``vllm:spec_decode_num_drafts_total``, ``..._num_draft_tokens_total``,
    ``..._num_accepted_tokens_total`` and ``..._num_accepted_tokens_per_pos_total{position=
    "i"}`` samples, summed over their other labels (engines). A scrape ends where a series
    repeats; the first scrape is a window of totals, every later one the interval since the
    scrape before.
``vllm-bench``
    the ``Speculative Decoding`` section of ``vllm bench serve`` (per-position in percent).
``vllm-offline``
    the summary of vLLM's ``examples/offline_inference/spec_decode.py`` (``num_drafts: ...``,
    ``acceptance at token i: ...``, positions counted from 0), and its later
    ``Speculative Decoding Stats`` table.
``sglang``
    ``Decode batch`` lines with ``accept len: M``: the mean acceptance length only.
``llama.cpp``
    the summary of the ``speculative`` and ``lookup`` examples (``n_drafted``, ``n_accept``),
    per-request ``draft acceptance rate = x (a accepted / g generated)`` lines, later with
    ``mean len`` or ``mean acceptance length`` and ``acceptance rate per position = (...)``,
    and the ``statistics <drafter>: ... #gen drafts = ...`` lines. Statistics are totals since
    the server started, per drafter: when a text has them, the last line of each drafter is
    its window and the per-request lines and earlier statistics lines are superseded (neither
    windows nor skipped). llama.cpp drafts vary in length, so K is not derived there.

Every window gets the consistency checks of :func:`_finish`; a window that fails one goes to
:attr:`ParseResult.rejected` with the reasons, never to :attr:`ParseResult.windows`. Lines no
format recognises (including ``# source:`` comments) are counted in
:attr:`ParseResult.skipped`; blank lines are neither.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import re
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.core.files import input_lines, open_input

if TYPE_CHECKING:
    from engine.calibrate.fit import WindowLike

SOURCES = (
    "vllm-v1",
    "vllm-v0",
    "vllm-prometheus",
    "vllm-bench",
    "vllm-offline",
    "sglang",
    "llama.cpp",
)

# Relative slack on K = drafted / drafts: n-gram drafters sometimes propose fewer than K
# tokens (vllm-project/vllm#24344: 4960 draft tokens in 993 drafts of K = 5).
K_TOLERANCE = 0.02
# Windows held one by one; past this many, the usable ones are merged as they come into one
# window per kind that calibration treats alike (_Pooled), and only the first this many
# rejected ones are listed (the others counted): a log of millions of windows, of any
# format, is read in memory that does not grow with it.
POOL_AFTER = 100_000
# The most lines a multi-line summary (vllm bench's, the offline example's) is read to.
BLOCK_MAX_LINES = 1000
# Slack for values computed from exact counts (float rounding only).
EXACT = 1e-9


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
    # (their counts summed, their M the mean calibration would take of theirs: _Pooled).
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
    # Usable windows merged into others (past POOL_AFTER windows: see _Pooled), so that
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


class LogError(ValueError):
    """A log with nothing usable, or a file that cannot be read; the message is one line."""


@dataclass
class _Raw:
    """A window as printed, before :func:`_finish` derives and checks the rest."""

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


def _step(number: str, scale: float = 1.0) -> float:
    """Half a unit of the last printed digit of ``number``, times ``scale``."""
    decimals = len(number.split(".")[1]) if "." in number else 0
    return 0.5 * 10.0**-decimals * scale


# The largest token count a window may hold: beyond any serving log (a million tokens a
# second for thirty years); a larger, negative, fractional or non-numeric count rejects it.
COUNT_MAX = 10**15
_COUNT = r"([^\s,;]+)"  # what a log prints where a count belongs, checked by _read_count


def _count(number: str) -> int | None:
    """A printed count ("66", "1000.0"); None unless a whole number in [0, COUNT_MAX]."""
    try:
        value = float(number)
    except ValueError:
        return None
    if not (math.isfinite(value) and value.is_integer() and 0 <= value <= COUNT_MAX):
        return None
    return int(value)


def _read_count(problems: list[str], name: str, number: str) -> int | None:
    """:func:`_count`, with a problem (the window is then rejected) when it is not one: a
    bad count is never read as a missing one, to be derived from a rate."""
    value = _count(number)
    if value is None:
        problems.append(f"{name} {number} is not a token count (a whole number, 0 to 1e15)")
    return value


def _rate_list(text: str, scale: float = 1.0) -> tuple[tuple[float, ...], float]:
    """Comma-separated rates and half a unit of their printed precision."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    return tuple(float(p) * scale for p in parts), max(_step(p, scale) for p in parts)


# --- consistency checks and derived fields --------------------------------------------


def _drafts_from_mean(raw: _Raw) -> tuple[float | None, int | None]:
    """Drafts (and K) from accepted, drafted and the printed mean acceptance length."""
    assert raw.mean_length is not None and raw.accepted is not None
    m, step, accepted, drafted = raw.mean_length, raw.mean_step, raw.accepted, raw.drafted
    listed = len(raw.rates) if raw.rates else None
    if m - 1.0 <= step:  # (almost) nothing accepted as printed: drafts only from a full list
        if raw.fixed_k and listed and drafted is not None:
            drafts = drafted / listed
            if abs(m - (1.0 + accepted / drafts)) <= step:
                return drafts, listed
        if accepted > 0:
            raw.problems.append(f"M {m:g} with {accepted} accepted tokens")
        return None, None
    estimate = accepted / (m - 1.0)
    if not raw.fixed_k or not drafted:
        return estimate, None
    high = accepted / (m - step - 1.0) if m - step - 1.0 > 0 else math.inf
    low = accepted / (m + step - 1.0)
    k_min = max(1, math.ceil(drafted / (high * (1 + K_TOLERANCE))))
    k_max = math.floor(drafted / (low * (1 - K_TOLERANCE)))
    whole = range(k_min, min(k_max, k_min + 256) + 1)
    if not whole:
        return estimate, None
    total = drafted
    if listed is not None and listed in whole:
        return total / listed, listed
    k = min(whole, key=lambda n: abs(total / n - estimate))
    return total / k, k


def _whole_k(drafted: int, drafts: float) -> int | None:
    """K = drafted / drafts when it is a whole number within :data:`K_TOLERANCE`."""
    ratio = drafted / drafts
    n = round(ratio)
    return n if n >= 1 and abs(ratio - n) <= K_TOLERANCE * n else None


def _finish(raw: _Raw) -> Window:
    """Derive the missing fields of a window and check that its numbers agree.

    The checks: counts non-negative, accepted <= drafted, the printed acceptance rate =
    accepted / drafted, M = 1 + accepted / drafts, K = drafted / drafts a whole number (where
    every draft has K tokens), cumulative rates between 0 and 1 and non-increasing, and
    M = 1 + sum r_i (M >= 1 + sum r_i where the list is shorter than K). Tolerances are half a
    unit of each printed value's last digit.
    """
    problems = raw.problems
    counts = (("drafts", raw.drafts), ("drafted", raw.drafted), ("accepted", raw.accepted))
    for name, value in counts:
        if value is not None and value < 0:
            problems.append(f"{name} {value:g} < 0")
    drafted, accepted = raw.drafted, raw.accepted
    if drafted is not None and accepted is not None:
        if accepted > drafted:
            problems.append(f"accepted {accepted} > drafted {drafted}")
        if raw.acceptance is not None and drafted > 0:
            share = accepted / drafted
            if abs(share - raw.acceptance) > raw.acceptance_step + EXACT:
                problems.append(
                    f"acceptance rate {raw.acceptance:.4g} != accepted / drafted {share:.4g}"
                )
    drafts, k, mean = raw.drafts, raw.k, raw.mean_length
    counted = drafts is not None  # drafts printed or counted, not derived from M
    if drafts is None and k and drafted is not None:
        drafts = drafted / k
        counted = True
    if drafts is None and mean is not None and accepted is not None:
        drafts, k = _drafts_from_mean(raw)
    if drafts == 0:
        problems.append("no drafts in this window")
    elif drafts is not None and accepted is not None:
        from_counts = 1.0 + accepted / drafts
        if mean is None:
            mean = from_counts
        elif counted and abs(mean - from_counts) > raw.mean_step + EXACT:
            problems.append(f"M {mean:g} != 1 + accepted / drafts {from_counts:.4f}")
    if drafts and drafted is not None and raw.fixed_k:
        whole = _whole_k(drafted, drafts)
        if whole is None:
            problems.append(f"K = drafted / drafts = {drafted / drafts:.2f} is not a whole number")
        elif k is not None and whole != k:
            problems.append(f"K = drafted / drafts = {whole} != K {k}")
        k = whole if k is None else k
    if mean is not None and mean < 1.0 - raw.mean_step:
        problems.append(f"M {mean:g} < 1")

    positions = raw.position_accepted
    rates, rate_step = raw.rates, raw.rate_step
    if positions is None and rates is not None and drafts:
        positions = tuple(r * drafts for r in rates)
    if rates is None and positions is not None and drafts:
        rates = tuple(a / drafts for a in positions)
    if rates:
        _check_rates(rates, rate_step, mean, raw.mean_step, k, problems)
    return Window(
        source=raw.source,
        line=raw.line + 1,
        text=raw.text,
        drafts=drafts,
        drafted=drafted,
        accepted=accepted,
        k=k,
        mean_length=mean,
        position_accepted=positions,
        problems=tuple(problems),
    )


def _check_rates(
    rates: Sequence[float],
    step: float,
    mean: float | None,
    mean_step: float,
    k: int | None,
    problems: list[str],
) -> None:
    """Cumulative rates: within [0, 1], non-increasing, and M = 1 + sum r_i."""
    if any(r < -step or r > 1.0 + step + EXACT for r in rates):
        problems.append("a per-position rate outside [0, 1]")
    for i in range(1, len(rates)):
        if rates[i] > rates[i - 1] + 2 * step + EXACT:
            problems.append(
                f"cumulative rates rise at position {i + 1}: {rates[i]:.4g} > {rates[i - 1]:.4g}"
            )
            break
    if k is not None and len(rates) > k:
        problems.append(f"{len(rates)} per-position rates for K = {k}")
    if mean is None:
        return
    total = 1.0 + sum(rates)
    slack = mean_step + len(rates) * step + EXACT
    if k is not None and len(rates) < k:  # a short list: the missing positions add >= 0
        if mean < total - slack:
            problems.append(f"M {mean:.4g} < 1 + sum r_i {total:.4g}")
    elif abs(mean - total) > slack:
        problems.append(f"M {mean:.4g} != 1 + sum r_i {total:.4g}")


# --- single-line formats --------------------------------------------------------------

_NUMBER = r"(\d+(?:\.\d+)?)"
_V1 = re.compile(r"SpecDecoding metrics:")
_V1_FIELDS = {
    "acceptance": re.compile(r"(?<!Avg )Draft acceptance rate:\s*" + _NUMBER + "%"),
    "avg_acceptance": re.compile(r"Avg Draft acceptance rate:\s*" + _NUMBER + "%"),
    "mean_length": re.compile(r"Mean acceptance length:\s*" + _NUMBER),
    "accepted": re.compile(r"Accepted:\s*" + _COUNT + r"\s+tokens"),
    "drafted": re.compile(r"Drafted:\s*" + _COUNT + r"\s+tokens"),
    "rates": re.compile(
        r"Per-position acceptance (?:rate|probabilities):\s*(\d[\d.]*(?:,\s*\d[\d.]*)*)"
    ),
}
_SPECULATIVE = re.compile(r"Speculative metrics:")
_SPECULATIVE_FIELDS = {
    "acceptance": re.compile(r"Draft acceptance rate:\s*" + _NUMBER + r"(%?)"),
    "efficiency": re.compile(r"System efficiency:\s*" + _NUMBER),
    "k": re.compile(r"Number of speculative tokens:\s*(\d+)"),
    "accepted": re.compile(r"Number of accepted tokens:\s*" + _COUNT),
    "drafted": re.compile(r"Number of draft tokens:\s*" + _COUNT),
    "emitted": re.compile(r"Number of emitted tokens:\s*(\d+)"),
}
_SGLANG = re.compile(r"Decode batch[.,].*?accept len:\s*" + _NUMBER)
_LLAMA_REQUEST = re.compile(
    r"draft acceptance(?: rate)?\s*=\s*"
    + _NUMBER
    + r"\s*\(\s*(\d+)\s+accepted\s*/\s*(\d+)\s+generated\)"
)
_LLAMA_MEAN = re.compile(r"mean (?:acceptance length|len)\s*=\s*" + _NUMBER)
_LLAMA_RATES = re.compile(r"acceptance rate per position\s*=\s*\(([^)]*)\)")
_LLAMA_STATS = re.compile(
    r"statistics\s+(?P<drafter>[\w.-]+):.*?#gen drafts\s*=\s*(?P<drafts>\d+),\s*"
    r"#acc drafts\s*=\s*\d+,\s*#gen tokens\s*=\s*(?P<drafted>\d+),\s*"
    r"#acc tokens\s*=\s*(?P<accepted>\d+)"
)
_LLAMA_STATS_MEAN = re.compile(r"#mean acc len\s*=\s*" + _NUMBER)
_LLAMA_STATS_RATES = re.compile(r"#acc rate/pos\s*=\s*\(([^)]*)\)")


def _search(fields: dict[str, re.Pattern[str]], text: str) -> dict[str, re.Match[str]]:
    found = {name: pattern.search(text) for name, pattern in fields.items()}
    return {name: match for name, match in found.items() if match is not None}


def _vllm_v1(line: str, index: int) -> _Raw | None:
    if not _V1.search(line):
        return None
    found = _search(_V1_FIELDS, line)
    raw = _Raw("vllm-v1", index, line)
    for name in ("acceptance", "avg_acceptance"):
        if name in found:
            raw.acceptance = float(found[name].group(1)) / 100.0
            raw.acceptance_step = _step(found[name].group(1), 0.01)
    if "mean_length" in found:
        raw.mean_length = float(found["mean_length"].group(1))
        raw.mean_step = _step(found["mean_length"].group(1))
    for name in ("accepted", "drafted"):
        if name in found:
            setattr(raw, name, _read_count(raw.problems, name, found[name].group(1)))
    if "rates" in found:
        raw.rates, raw.rate_step = _rate_list(found["rates"].group(1))
    if raw.accepted is None and raw.mean_length is None:
        return None
    return raw


@dataclass
class _V0Line:
    """One v0 ``Speculative metrics`` line: totals since the server started."""

    index: int
    text: str
    k: int
    drafted: int
    emitted: int
    problems: list[str]


def _speculative(line: str, index: int) -> _Raw | _V0Line | None:
    """A ``Speculative metrics:`` line: v0 (with K and emitted tokens) or the earliest V1."""
    if not _SPECULATIVE.search(line):
        return None
    found = _search(_SPECULATIVE_FIELDS, line)
    if "accepted" not in found or "drafted" not in found:
        return None
    problems: list[str] = []
    accepted = _read_count(problems, "accepted", found["accepted"].group(1))
    drafted = _read_count(problems, "drafted", found["drafted"].group(1))
    if accepted is None or drafted is None:  # listed as rejected, never used
        return _Raw("vllm-v1", index, line, problems=problems)
    rate = found.get("acceptance")
    if "k" not in found or "emitted" not in found:
        raw = _Raw("vllm-v1", index, line, drafted=drafted, accepted=accepted)
        if rate is not None:
            scale = 0.01 if rate.group(2) else 1.0
            raw.acceptance = float(rate.group(1)) * scale
            raw.acceptance_step = _step(rate.group(1), scale)
        return raw
    k, emitted = int(found["k"].group(1)), int(found["emitted"].group(1))
    if rate is not None and drafted > 0:
        share = accepted / drafted
        if abs(share - float(rate.group(1))) > _step(rate.group(1)) + EXACT:
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
        if abs(value - float(efficiency.group(1))) > _step(efficiency.group(1)) + EXACT:
            problems.append(
                f"system efficiency {efficiency.group(1)} != emitted / (drafts (K + 1)) {value:.4g}"
            )
    return _V0Line(index, line, k, drafted, emitted, problems)


def _v0_window(current: _V0Line, previous: _V0Line | None) -> _Raw:
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
    return _Raw(
        "vllm-v0",
        current.index,
        current.text,
        drafts=drafts,
        drafted=drafted,
        accepted=round(emitted - drafts),
        k=current.k,
        problems=list(current.problems),
    )


def _sglang(line: str, index: int) -> _Raw | None:
    match = _SGLANG.search(line)
    if match is None:
        return None
    mean = match.group(1)
    return _Raw("sglang", index, line, mean_length=float(mean), mean_step=_step(mean))


def _llama_request(line: str, index: int) -> _Raw | None:
    match = _LLAMA_REQUEST.search(line)
    if match is None:
        return None
    rate, accepted, drafted = match.groups()
    raw = _Raw("llama.cpp", index, line, drafted=int(drafted), accepted=int(accepted))
    raw.fixed_k = False
    raw.acceptance, raw.acceptance_step = float(rate), _step(rate)
    _llama_mean_and_rates(raw, line, _LLAMA_MEAN, _LLAMA_RATES)
    return raw


def _llama_mean_and_rates(
    raw: _Raw, line: str, mean_pattern: re.Pattern[str], rates_pattern: re.Pattern[str]
) -> None:
    mean = mean_pattern.search(line)
    if mean is not None:
        raw.mean_length, raw.mean_step = float(mean.group(1)), _step(mean.group(1))
    rates = rates_pattern.search(line)
    if rates is not None and rates.group(1).strip():
        raw.rates, raw.rate_step = _rate_list(rates.group(1))


def _llama_stats(line: str, index: int) -> tuple[str, _Raw] | None:
    match = _LLAMA_STATS.search(line)
    if match is None:
        return None
    raw = _Raw(
        "llama.cpp",
        index,
        line,
        drafts=int(match["drafts"]),
        drafted=int(match["drafted"]),
        accepted=int(match["accepted"]),
    )
    raw.fixed_k = False
    _llama_mean_and_rates(raw, line, _LLAMA_STATS_MEAN, _LLAMA_STATS_RATES)
    return match["drafter"], raw


# --- multi-line blocks ----------------------------------------------------------------


@dataclass(frozen=True)
class _Block:
    """A multi-line summary: a start line, ``key: value`` lines, per-position lines."""

    source: str
    start: re.Pattern[str]
    fields: dict[str, re.Pattern[str]]  # drafts, drafted, accepted, mean_length, acceptance
    position: re.Pattern[str] | None  # groups: position (from 0), rate
    scale: float  # rates and acceptance printed in percent (0.01) or as fractions (1)
    filler: re.Pattern[str]  # lines inside the block that carry no value
    fixed_k: bool = True  # every draft has K tokens (vLLM); llama.cpp drafts vary


_BLOCKS = (
    _Block(
        "vllm-bench",
        re.compile(r"-+\s*Speculative Decoding\s*-+$"),
        {
            "acceptance": re.compile(r"Acceptance rate \(%\):\s*" + _NUMBER),
            "mean_length": re.compile(r"Acceptance length:\s*" + _NUMBER),
            "drafts": re.compile(r"Drafts:\s*" + _NUMBER),
            "drafted": re.compile(r"Draft tokens:\s*" + _NUMBER),
            "accepted": re.compile(r"Accepted tokens:\s*" + _NUMBER),
        },
        re.compile(r"Position (\d+):\s*" + _NUMBER),
        0.01,
        re.compile(r"Per-position acceptance \(%\):"),
    ),
    _Block(
        "vllm-offline",
        re.compile(r"(?:total_num_output_tokens|num_drafts):"),
        {
            "drafts": re.compile(r"num_drafts:\s*" + _NUMBER),
            "drafted": re.compile(r"num_draft_tokens:\s*" + _NUMBER),
            "accepted": re.compile(r"num_accepted_tokens:\s*" + _NUMBER),
            "mean_length": re.compile(r"mean acceptance length:\s*" + _NUMBER),
        },
        re.compile(r"acceptance at token (\d+):\s*" + _NUMBER),
        1.0,
        re.compile(
            r"-{5,}$|total_num_output_tokens:|num_tokens_generated_without_sd:"
            r"|seq normalized acceptance length:|num generation tokens:"
        ),
    ),
    _Block(
        "vllm-offline",
        re.compile(r"=+ Speculative Decoding Stats =+$"),
        {
            "drafts": re.compile(r"Number of drafts:\s*" + _NUMBER),
            "drafted": re.compile(r"Draft tokens generated:\s*" + _COUNT),
            "accepted": re.compile(r"Accepted tokens:\s*" + _COUNT),
            "mean_length": re.compile(r"Mean acceptance length:\s*" + _NUMBER),
            "acceptance": re.compile(r"Draft utilization rate:\s*" + _NUMBER),
        },
        None,
        0.01,
        re.compile(r"$|Total (?:input|output) tokens:|(?:Input|Output) token throughput"),
    ),
    _Block(
        "llama.cpp",
        re.compile(r"n_draft\s*="),
        {
            "drafted": re.compile(r"n_drafted\s*=\s*" + _COUNT),
            "accepted": re.compile(r"n_accept\s*=\s*" + _COUNT),
            "acceptance": re.compile(r"accept\s*=\s*" + _NUMBER + "%"),
        },
        None,
        0.01,
        re.compile(r"n_predict\s*=|t_draft\s*=|n_draft\s*="),
        fixed_k=False,
    ),
)


def _block(first: str, index: int, reader: _Reader) -> tuple[_Raw, int] | None:
    """A multi-line summary starting at ``first`` (line ``index``), and how many of the lines
    after it are its own (looked at through ``reader``, :data:`BLOCK_MAX_LINES` at most)."""
    stripped = first.strip()
    spec = next((b for b in _BLOCKS if b.start.match(stripped)), None)
    if spec is None:
        return None
    values: dict[str, str] = {}
    rates: dict[int, str] = {}
    seen: list[str] = []
    end = 1  # after the last line that carried something
    for j, line in enumerate(itertools.chain((first,), reader.peek(BLOCK_MAX_LINES - 1))):
        seen.append(line)
        text = line.strip()
        if j > 0 and (values or rates) and spec.start.match(text):
            break
        name = next((n for n, p in spec.fields.items() if p.match(text)), None)
        position = spec.position.match(text) if spec.position is not None else None
        if name is not None:
            if name in values:
                break
            values[name] = spec.fields[name].match(text).group(1)  # type: ignore[union-attr]
            end = j + 1
        elif position is not None:
            rates[int(position.group(1))] = position.group(2)
            end = j + 1
        elif j == 0 or spec.filler.match(text):
            continue
        else:
            break
    if not values:
        return None
    raw = _Raw(spec.source, index, "\n".join(seen[:end]), fixed_k=spec.fixed_k)
    if "drafts" in values:
        raw.drafts = float(values["drafts"])
    for name in ("drafted", "accepted"):
        if name in values:
            setattr(raw, name, _read_count(raw.problems, name, values[name]))
    if "mean_length" in values:
        raw.mean_length, raw.mean_step = float(values["mean_length"]), _step(values["mean_length"])
    if "acceptance" in values:
        raw.acceptance = float(values["acceptance"]) * spec.scale
        raw.acceptance_step = _step(values["acceptance"], spec.scale)
    if rates:
        if sorted(rates) != list(range(len(rates))):
            raw.problems.append(f"per-position rates for positions {sorted(rates)}")
        printed = [rates[i] for i in sorted(rates)]
        raw.rates = tuple(float(r) * spec.scale for r in printed)
        raw.rate_step = max(_step(r, spec.scale) for r in printed)
    return raw, end - 1


# --- Prometheus text exposition -------------------------------------------------------

_PROMETHEUS = re.compile(
    r"^(vllm:spec_decode_num_(?:drafts|draft_tokens|accepted_tokens_per_pos|accepted_tokens))"
    r"(?:_total)?(\{[^}]*\})?\s+(\S+)(?:\s+\d+)?\s*$"
)
_PROMETHEUS_COMMENT = re.compile(r"^#\s*(?:HELP|TYPE)\s+vllm:spec_decode_")
_POSITION_LABEL = re.compile(r'position="(\d+)"')


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


class _Prometheus:
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
        try:
            number = float(value)
        except ValueError:
            return False
        key = (name, labels)
        if self.current is None or key in self.current.seen:
            self._close()
            self.current = _Scrape(index)
        scrape = self.current
        scrape.seen.add(key)
        scrape.lines.append(line)
        if name.endswith("_per_pos"):
            position = _POSITION_LABEL.search(labels)
            if position is not None:
                i = int(position.group(1))
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
            self.windows.append(_finished(_interval(scrape, self.previous)))
        except _READ_ERRORS as error:  # a counter that is not a number
            self.windows.append(_unreadable(text, scrape.index, error))
        scrape.lines, scrape.seen = [], set()
        self.previous, self.current = scrape, None

    def take(self) -> list[Window]:
        """The windows closed since the last take (none are held longer)."""
        windows, self.windows = self.windows, []
        return windows

    def finish(self) -> None:
        """Close the scrape being read (its window comes with the next :meth:`take`)."""
        self._close()


def _interval(scrape: _Scrape, previous: _Scrape | None) -> _Raw:
    """The counts between ``previous`` (or the server start) and ``scrape``."""

    def since(now: float, before: float) -> float:
        return now - before if previous is not None else now

    drafts = since(scrape.drafts, previous.drafts if previous else 0.0)
    drafted = since(scrape.drafted, previous.drafted if previous else 0.0)
    accepted = since(scrape.accepted, previous.accepted if previous else 0.0)
    before = previous.positions if previous else {}
    positions = {i: since(v, before.get(i, 0.0)) for i, v in scrape.positions.items()}
    raw = _Raw(
        "vllm-prometheus",
        scrape.index,
        "\n".join(scrape.lines),
        drafts=drafts,
        drafted=round(drafted),
        accepted=round(accepted),
    )
    if min([drafts, drafted, accepted, *positions.values()]) < 0:
        raw.problems.append("a counter went down between scrapes (server restarted?)")
    if positions:
        if sorted(positions) != list(range(len(positions))):
            raw.problems.append(f"per-position counters for positions {sorted(positions)}")
        raw.position_accepted = tuple(positions[i] for i in sorted(positions))
    return raw


# --- the reader -----------------------------------------------------------------------

_LINE_PARSERS: tuple[Callable[[str, int], _Raw | None], ...] = (
    _vllm_v1,
    _sglang,
    _llama_request,
)


# A line whose numbers cannot be read (a malformed rate list, a NaN counter, K = 0) is a
# rejected window, never a crash.
_READ_ERRORS = (ValueError, ArithmeticError, IndexError)


def _source_of(text: str) -> str:
    """The format a line that could not be read seems to be in (for its rejection)."""
    for marker, source in (
        ("SpecDecoding", "vllm-v1"),
        ("Speculative metrics", "vllm-v0"),
        ("vllm:spec_decode", "vllm-prometheus"),
        ("accept len", "sglang"),
    ):
        if marker in text:
            return source
    return "llama.cpp"


def _unreadable(text: str, index: int, error: Exception) -> Window:
    return Window(
        _source_of(text),
        index + 1,
        text,
        None,
        None,
        None,
        None,
        None,
        None,
        (f"numbers that cannot be read ({type(error).__name__}: {error})",),
    )


def _finished(raw: _Raw) -> Window:
    try:
        window = _finish(raw)
    except _READ_ERRORS as error:
        return _unreadable(raw.text, raw.line, error)
    if not window.problems and not _finite(window):
        return _unreadable(raw.text, raw.line, ValueError("a count is not a finite number"))
    return window


def _finite(window: Window) -> bool:
    values = [window.drafts, window.drafted, window.accepted, window.mean_length]
    values += list(window.position_accepted or ())
    return all(v is None or math.isfinite(v) for v in values)


def parse_log(text: str, name: str = "<input>") -> ParseResult:
    """Every speculative-decoding measurement window in ``text`` (:func:`parse_log_lines`)."""
    return parse_log_lines(text.splitlines(), name)


def parse_log_lines(lines: Iterable[str], name: str = "<input>") -> ParseResult:
    """Every speculative-decoding measurement window in ``lines`` (a text's, as
    ``str.splitlines`` gives them), read once, in order: besides the windows found, only the
    Prometheus scrape being read and the lines of one multi-line summary are held, so that
    memory does not grow with the lines that are not metrics.

    Raises :class:`LogError` (one line, naming ``name``) when no window is usable.
    """
    reader = _Reader(lines)
    prometheus = _Prometheus()
    found = _Collected()
    previous_v0: _V0Line | None = None
    llama_requests = _Collected()  # used only if the log has no llama.cpp totals
    llama_stats: dict[str, Window] = {}
    skipped = 0
    while (line := reader.take()) is not None:
        index = reader.taken - 1
        stripped = line.strip()
        if not stripped:
            continue
        if prometheus.feed(stripped, line, index):
            for window in prometheus.take():
                found.add(window)
            continue
        try:
            found_block = _block(line, index, reader)
            speculative = None if found_block is not None else _speculative(line, index)
            stats = (
                _llama_stats(line, index) if found_block is None and speculative is None else None
            )
            single = None
            if found_block is None and speculative is None and stats is None:
                single = next((r for p in _LINE_PARSERS if (r := p(line, index)) is not None), None)
        except _READ_ERRORS as error:
            found.add(_unreadable(line, index, error))
            continue
        if found_block is not None:
            raw, following = found_block
            found.add(_finished(raw))
            reader.skip(following)
        elif isinstance(speculative, _V0Line):
            found.add(_finished(_v0_window(speculative, previous_v0)))
            previous_v0 = speculative
        elif speculative is not None:
            found.add(_finished(speculative))
        elif stats is not None:
            drafter, raw = stats
            llama_stats[drafter] = _finished(raw)
        elif single is None:
            skipped += 1
        else:
            (llama_requests if single.source == "llama.cpp" else found).add(_finished(single))
    prometheus.finish()
    for window in prometheus.take():
        found.add(window)
    if llama_stats:
        for window in llama_stats.values():
            found.add(window)
    else:
        found.take_all(llama_requests)
    windows, rejected, pooled, unlisted = found.finish()
    result = ParseResult(
        windows=windows,
        rejected=rejected,
        skipped=skipped,
        lines=reader.taken,
        pooled=pooled,
        rejected_unlisted=unlisted,
    )
    if not result.windows:
        if result.rejected:
            first = result.rejected[0]
            reason = f"{result.rejected_count} rejected (line {first.line}: {first.problems[0]})"
        else:
            reason = "no speculative decoding metrics (vLLM, SGLang, llama.cpp)"
        raise LogError(f"{name}: nothing usable in {reader.taken} lines: {reason}")
    return result


class _Collected:
    """The windows found, in bounded memory: held one by one up to :data:`POOL_AFTER`; then
    the usable ones are merged into one :class:`_Pooled` a kind, and rejected ones past the
    first POOL_AFTER are only counted."""

    def __init__(self) -> None:
        self.held: list[Window] = []
        self.rejected: list[Window] = []
        self.groups: dict[tuple[Any, ...], _Pooled] = {}
        self.merged = 0  # usable windows merged into groups
        self.unlisted = 0

    def add(self, window: Window) -> None:
        if len(self.held) >= POOL_AFTER:
            self._merge()
        self.held.append(window)

    def take_all(self, other: _Collected) -> None:
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
                if len(self.rejected) < POOL_AFTER:
                    self.rejected.append(window)
                else:
                    self.unlisted += 1
                continue
            key = _Pooled.key(window)
            group = self.groups.get(key)
            if group is None:
                self.groups[key] = _Pooled(window)
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


class _Pooled:
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

    def absorb(self, other: _Pooled) -> None:
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


class _Reader:
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


def parse_log_file(path: str | Path) -> ParseResult:
    """:func:`parse_log_lines` on a file, streamed (a line at a time, at any size);
    :class:`LogError` also when it cannot be read: it is not a regular file (a FIFO, a
    device, a directory), or reading it fails."""
    path = Path(path)
    try:
        with open_input(path) as handle:
            return parse_log_lines(input_lines(handle), str(path))
    except OSError as error:
        raise LogError(f"{path}: cannot read: {error.strerror or error}") from None
