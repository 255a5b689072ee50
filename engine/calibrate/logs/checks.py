"""The consistency checks and derived fields of a window (:func:`finish`), and the rejected
window of one whose numbers cannot be read (:func:`unreadable`)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from engine.calibrate.logs.printed import COUNT_MAX, UNREADABLE
from engine.calibrate.logs.window import Raw, Window
from engine.core.fields import K_MAX

# Relative slack on K = drafted / drafts: n-gram drafters sometimes propose fewer than K
# tokens (vllm-project/vllm#24344: 4960 draft tokens in 993 drafts of K = 5).
K_TOLERANCE = 0.02

# Slack for values computed from exact counts (float rounding only).
EXACT = 1e-9


def _drafts_from_mean(raw: Raw) -> tuple[float | None, int | None]:
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


def finish(raw: Raw) -> Window:
    """Derive the missing fields of a window and check that its numbers agree.

    The checks: counts in [0, :data:`~.printed.COUNT_MAX`], M in [1, K_MAX + 1] (a draft of
    K tokens emits K + 1 at most), accepted <= drafted, the printed acceptance rate =
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
    # Counts summed over engines or differenced between lines are bounded too.
    if any(v > COUNT_MAX for _, v in counts if v is not None) or any(
        v > COUNT_MAX for v in raw.position_accepted or ()
    ):
        problems.append(f"a count above {COUNT_MAX:.0e}, more than any server counts")
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
    elif mean is not None and mean > K_MAX + 1.0 + raw.mean_step:  # at any K a scenario takes
        problems.append(f"M {mean:.4g} > K + 1 for every K up to {K_MAX}")

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


# A line whose numbers cannot be read (a malformed rate list, a NaN counter, K = 0) is a
# rejected window, never a crash.
READ_ERRORS = (ValueError, ArithmeticError, IndexError)


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


def unreadable(text: str, index: int, error: Exception) -> Window:
    """The rejected window of ``text`` (line ``index``), whose numbers raised ``error``."""
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
        (f"{UNREADABLE} ({type(error).__name__}: {error})",),
    )


def finished(raw: Raw) -> Window:
    """:func:`finish`, or :func:`unreadable` when the numbers cannot be read or are not finite."""
    try:
        window = finish(raw)
    except READ_ERRORS as error:
        return unreadable(raw.text, raw.line, error)
    if not window.problems and not _finite(window):
        return unreadable(raw.text, raw.line, ValueError("a count is not a finite number"))
    return window


def _finite(window: Window) -> bool:
    values = [window.drafts, window.drafted, window.accepted, window.mean_length]
    values += list(window.position_accepted or ())
    return all(v is None or math.isfinite(v) for v in values)
