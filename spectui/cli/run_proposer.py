"""What ``spectui run`` shows of a model-free proposer (n-gram / prompt lookup, suffix
decoding; docs/model.md, "Proposers"): its look-up, hit rate, draft lengths and the
acceptance given a match, each figure with where it came from. Nothing for a draft model."""

from __future__ import annotations

import math
from typing import Any

from engine.core.config import DEFAULTS, SpecConfig

# Where each default of a model-free proposer came from (the fields' help says the same).
DEFAULT_SOURCES = {
    "proposer.cpu_us": "default, llama.cpp ngram-simple: 0.267 ms / 180",
    "proposer.hit_rate": "default, vLLM PR #24344: n-gram, code editing",
    "proposer.mean_match": "assumed, no source",
}


def proposer_figures(result: Any) -> dict[str, Any] | None:
    """A model-free proposer's figures (None for a draft model): the hit rate given and
    observed, the steps and those that drafted, tokens drafted per step and per step that
    drafted, the look-up's microseconds."""
    from engine.core.parts import PROPOSER

    config = result.config
    part = PROPOSER.of(config)
    if not part.model_free:
        return None
    totals, m = result.totals, result.metrics
    steps = int(m["cycles"])
    drafting = int(totals.drafting_cycles) if totals is not None else 0
    return {
        "name": part.name,
        "hit_rate": part.hit_rate(config),
        "hit_rate_observed": drafting / steps if steps else math.nan,
        "steps": steps,
        "steps_drafted": drafting,
        "drafted_per_step": m["drafted_tokens"] / steps if steps else math.nan,
        "drafted_per_hit": m["drafted_tokens"] / drafting if drafting else math.nan,
        "lookup_us": part.lookup_us(config),
    }


def proposer_json(result: Any) -> dict[str, Any]:
    """``{"proposer": figures}`` for ``run --json`` (empty for a draft model; NaN as null)."""
    figures = proposer_figures(result)
    if figures is None:
        return {}
    safe = {
        k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in figures.items()
    }
    return {"proposer": safe}


def _source(config: SpecConfig, key: str) -> str:
    return DEFAULT_SOURCES[key] if config.get(key) == DEFAULTS[key] else "as given"


def proposer_rows(result: Any) -> list[tuple[str, str, str]]:
    """(figure, value, where it came from) rows ``spectui run`` prints below its summary for
    a model-free proposer (none for a draft model)."""
    figures = proposer_figures(result)
    if figures is None:
        return []
    from engine.core.config import reads

    config, m = result.config, result.metrics

    def number(value: float) -> str:
        return "n/a" if not math.isfinite(value) else f"{value:.3f}"

    rows = [
        (
            "look-up",
            f"{figures['lookup_us']:.3f} us",
            f"a step, CPU; {_source(config, 'proposer.cpu_us')}",
        ),
        ("hit rate", number(figures["hit_rate"]), _source(config, "proposer.hit_rate")),
        (
            "hit rate observed",
            number(figures["hit_rate_observed"]),
            f"{figures['steps_drafted']:,} of {figures['steps']:,} steps drafted",
        ),
        (
            "drafted per step",
            number(figures["drafted_per_step"]),
            f"{number(figures['drafted_per_hit'])} a step that drafted, at most K={config.k}",
        ),
        (
            "acceptance on hit",
            number(m["acceptance_observed"]),
            "accepted / drafted, steps that drafted",
        ),
    ]
    if reads(config, "proposer.mean_match"):
        rows.append(
            (
                "match length",
                f"{config.mean_match:g}",
                f"mean, geometric, cap K; {_source(config, 'proposer.mean_match')}",
            )
        )
    return rows


def print_proposer(out: Any, result: Any) -> None:
    """Print :func:`proposer_rows` on the console ``out`` (nothing for a draft model)."""
    rows = proposer_rows(result)
    if not rows:
        return
    from rich.panel import Panel
    from rich.table import Table

    from engine.core.parts import PROPOSER

    part = PROPOSER.of(result.config)
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column("figure")
    table.add_column("value", justify="right")
    table.add_column("", style="dim")
    for row in rows:
        table.add_row(*row)
    out.print(Panel(table, title=f"proposer {part.name}", title_align="left"))
