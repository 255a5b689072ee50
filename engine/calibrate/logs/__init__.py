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

Every window gets the consistency checks of :func:`.checks.finish`; a window that fails one goes to
:attr:`ParseResult.rejected` with the reasons, never to :attr:`ParseResult.windows`. Lines no
format recognises (including ``# source:`` comments) are counted in
:attr:`ParseResult.skipped`; blank lines are neither.

The modules: :mod:`.window` (what a parse gives), :mod:`.printed` (numbers as printed),
:mod:`.checks` (a window's derived fields and checks), one per format (:mod:`.vllm`,
:mod:`.prometheus`, :mod:`.sglang`, :mod:`.llamacpp`, and :mod:`.blocks` for the multi-line
summaries), :mod:`.bounded` (reading in bounded memory); here, the entry points.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from engine.calibrate.logs.blocks import BLOCK_MAX_LINES, block_at
from engine.calibrate.logs.bounded import Collected, Reader
from engine.calibrate.logs.checks import EXACT, K_TOLERANCE, READ_ERRORS, finished, unreadable
from engine.calibrate.logs.llamacpp import request_line, stats_line
from engine.calibrate.logs.printed import COUNT_MAX
from engine.calibrate.logs.prometheus import Prometheus
from engine.calibrate.logs.sglang import decode_line
from engine.calibrate.logs.vllm import V0Line, speculative_line, v0_window, v1_line
from engine.calibrate.logs.window import SOURCES, ParseResult, Raw, Window, mean_length_of
from engine.core.files import input_lines, open_input

__all__ = [
    "BLOCK_MAX_LINES",
    "COUNT_MAX",
    "EXACT",
    "K_TOLERANCE",
    "POOL_AFTER",
    "SOURCES",
    "LogError",
    "ParseResult",
    "Window",
    "mean_length_of",
    "parse_log",
    "parse_log_file",
    "parse_log_lines",
]

# Windows held one by one; past this many, the usable ones are merged as they come into one
# window per kind that calibration treats alike (bounded.Pooled), and only the first this many
# rejected ones are listed (the others counted): a log of millions of windows, of any
# format, is read in memory that does not grow with it. Read at each parse (tests lower it).
POOL_AFTER = 100_000


class LogError(ValueError):
    """A log with nothing usable, or a file that cannot be read; the message is one line."""


# The single-line formats, tried in this order after the blocks, Speculative metrics and
# llama.cpp statistics.
_LINE_PARSERS: tuple[Callable[[str, int], Raw | None], ...] = (
    v1_line,
    decode_line,
    request_line,
)


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
    reader = Reader(lines)
    prometheus = Prometheus()
    found = Collected(POOL_AFTER)
    previous_v0: V0Line | None = None
    llama_requests = Collected(POOL_AFTER)  # used only if the log has no llama.cpp totals
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
            found_block = block_at(line, index, reader)
            speculative = None if found_block is not None else speculative_line(line, index)
            stats = stats_line(line, index) if found_block is None and speculative is None else None
            single = None
            if found_block is None and speculative is None and stats is None:
                single = next((r for p in _LINE_PARSERS if (r := p(line, index)) is not None), None)
        except READ_ERRORS as error:
            found.add(unreadable(line, index, error))
            continue
        if found_block is not None:
            raw, following = found_block
            found.add(finished(raw))
            reader.skip(following)
        elif isinstance(speculative, V0Line):
            found.add(finished(v0_window(speculative, previous_v0)))
            previous_v0 = speculative
        elif speculative is not None:
            found.add(finished(speculative))
        elif stats is not None:
            drafter, raw = stats
            llama_stats[drafter] = finished(raw)
        elif single is None:
            skipped += 1
        else:
            (llama_requests if single.source == "llama.cpp" else found).add(finished(single))
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
