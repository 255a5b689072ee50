"""Multi-line summaries: ``vllm bench serve``'s, vLLM's offline example's (both forms), and
llama.cpp's ``speculative``/``lookup`` examples', read through the :class:`Reader`'s look
ahead."""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

from engine.calibrate.logs.bounded import Reader
from engine.calibrate.logs.printed import (
    COUNT,
    NUMBER,
    WHOLE,
    half_unit,
    read_count,
    read_number,
)
from engine.calibrate.logs.window import Raw
from engine.core.fields import ascii_int

# The most lines a multi-line summary (vllm bench's, the offline example's) is read to.
BLOCK_MAX_LINES = 1000


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
            "acceptance": re.compile(r"Acceptance rate \(%\):\s*" + NUMBER),
            "mean_length": re.compile(r"Acceptance length:\s*" + NUMBER),
            "drafts": re.compile(r"Drafts:\s*" + COUNT),
            "drafted": re.compile(r"Draft tokens:\s*" + COUNT),
            "accepted": re.compile(r"Accepted tokens:\s*" + COUNT),
        },
        re.compile(r"Position " + WHOLE + r":\s*" + NUMBER),
        0.01,
        re.compile(r"Per-position acceptance \(%\):"),
    ),
    _Block(
        "vllm-offline",
        re.compile(r"(?:total_num_output_tokens|num_drafts):"),
        {
            "drafts": re.compile(r"num_drafts:\s*" + COUNT),
            "drafted": re.compile(r"num_draft_tokens:\s*" + COUNT),
            "accepted": re.compile(r"num_accepted_tokens:\s*" + COUNT),
            "mean_length": re.compile(r"mean acceptance length:\s*" + NUMBER),
        },
        re.compile(r"acceptance at token " + WHOLE + r":\s*" + NUMBER),
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
            "drafts": re.compile(r"Number of drafts:\s*" + COUNT),
            "drafted": re.compile(r"Draft tokens generated:\s*" + COUNT),
            "accepted": re.compile(r"Accepted tokens:\s*" + COUNT),
            "mean_length": re.compile(r"Mean acceptance length:\s*" + NUMBER),
            "acceptance": re.compile(r"Draft utilization rate:\s*" + NUMBER),
        },
        None,
        0.01,
        re.compile(r"$|Total (?:input|output) tokens:|(?:Input|Output) token throughput"),
    ),
    _Block(
        "llama.cpp",
        re.compile(r"n_draft\s*="),
        {
            "drafted": re.compile(r"n_drafted\s*=\s*" + COUNT),
            "accepted": re.compile(r"n_accept\s*=\s*" + COUNT),
            "acceptance": re.compile(r"accept\s*=\s*" + NUMBER + "%"),
        },
        None,
        0.01,
        re.compile(r"n_predict\s*=|t_draft\s*=|n_draft\s*="),
        fixed_k=False,
    ),
)


def block_at(first: str, index: int, reader: Reader) -> tuple[Raw, int] | None:
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
            rates[ascii_int(position.group(1))] = position.group(2)
            end = j + 1
        elif j == 0 or spec.filler.match(text):
            continue
        else:
            break
    if not values:
        return None
    raw = Raw(spec.source, index, "\n".join(seen[:end]), fixed_k=spec.fixed_k)
    for name in ("drafts", "drafted", "accepted"):
        if name in values:
            setattr(raw, name, read_count(raw.problems, name, values[name]))
    if "mean_length" in values:
        raw.mean_length, raw.mean_step = (
            read_number(values["mean_length"]),
            half_unit(values["mean_length"]),
        )
    if "acceptance" in values:
        raw.acceptance = read_number(values["acceptance"]) * spec.scale
        raw.acceptance_step = half_unit(values["acceptance"], spec.scale)
    if rates:
        if sorted(rates) != list(range(len(rates))):
            raw.problems.append(f"per-position rates for positions {sorted(rates)}")
        printed = [rates[i] for i in sorted(rates)]
        raw.rates = tuple(read_number(r) * spec.scale for r in printed)
        raw.rate_step = max(half_unit(r, spec.scale) for r in printed)
    return raw, end - 1
