"""How speedups and optimal-K cells read, in one place (pure text: no colours, no printing).

Every view of a speedup (CLI report, findings, heatmap cells, plots, cards) formats it with
:func:`speedup_text`, so a configuration slower than the baseline never reads as ``1.00``;
every view of the optimal-K grid writes a cell with :func:`k_star_cell` and explains it with
:data:`HEATMAP_LEGEND`.
"""

from __future__ import annotations

import math
from typing import Any

TIE_MARK = "≈"
LOSE_MARK = "✗"
PARTIAL_MARK = "…"  # a cell whose K values are still coming: its K* is the best so far
PENDING_MARK = "·"  # a cell with no finished configuration yet

TIE_RULE = (
    "another K is within sampling noise of K*: their exact speedups differ by less than the "
    "Monte Carlo noise of the difference (95 %), or, without exact values, their Monte Carlo "
    "95 % intervals overlap"
)
HEATMAP_LEGEND = (
    f"{TIE_MARK} tie: {TIE_RULE}; {LOSE_MARK} even K* is slower than the baseline (speedup < 1)"
)
SHORT_LEGEND = (
    f"{TIE_MARK} tie: exact gap within MC noise · {LOSE_MARK} loses · "
    f"{PARTIAL_MARK} best so far · {PENDING_MARK} pending"
)
# The marks alone, where even SHORT_LEGEND does not fit (a narrow plot).
MARKS_LEGEND = f"{TIE_MARK} tie · {LOSE_MARK} loses · {PARTIAL_MARK} best so far"
PARTIAL_LEGEND = f"{PARTIAL_MARK} best so far: the cell does not have every K yet"


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def speedup_text(
    value: float | None,
    digits: int = 2,
    unit: str = "x",
    near_one_digits: int | None = None,
    missing: str = "n/a",
) -> str:
    """A speedup with ``digits`` decimals and ``unit``; never on the wrong side of 1.

    A speedup below 1 (a loss) that would round to ``1.00`` is rounded down instead
    (``0.997`` reads ``0.99``), so a losing configuration never reads as break-even.
    ``near_one_digits``: decimals to use within 0.05 of 1, where the difference matters.
    NaN or None reads ``missing``.
    """
    if _missing(value):
        return missing
    assert value is not None
    value = float(value)
    if near_one_digits is not None and abs(value - 1.0) < 0.05:
        digits = near_one_digits
    text = f"{value:.{digits}f}"
    if value < 1.0 and float(text) >= 1.0:
        scale = 10**digits
        text = f"{math.floor(value * scale) / scale:.{digits}f}"
    return text + unit


def k_star_cell(
    k_opt: int, speedup: float, tie: bool, loses: bool, complete: bool = True, aligned: bool = False
) -> str:
    """One optimal-K cell: K*, its marks, its speedup: ``4≈ 2.41``, ``1✗ 0.99``, ``7 3.10…``.

    ``≈`` a tie (:data:`TIE_RULE`), ``✗`` a loss, ``…`` a provisional K* (the cell lacks some
    K). With ``aligned`` every part has a fixed width (`` 4≈✗ 0.99…``, 10 characters), for grids
    of monospaced cells whose columns must line up.
    """
    tie_mark = TIE_MARK if tie else ""
    lose_mark = LOSE_MARK if loses else ""
    partial = "" if complete else PARTIAL_MARK
    value = speedup_text(speedup, unit="")
    if aligned:
        return f"{k_opt:>2}{tie_mark or ' '}{lose_mark or ' '}{value:>5}{partial or ' '}"
    return f"{k_opt}{tie_mark}{lose_mark} {value}{partial}"


def cell_text(cell: Any, aligned: bool = False) -> str:
    """:func:`k_star_cell` of a row of :func:`engine.analysis.plot_data.optimal_k_heatmap`."""
    return k_star_cell(
        int(cell["k_opt"]),
        float(cell["speedup_opt"]),
        bool(cell["tie"]),
        bool(cell["loses"]),
        bool(cell["complete"]) if "complete" in cell else True,
        aligned=aligned,
    )


def cost_setting_text(config: Any) -> str:
    """The cost model and workload of a configuration in words, for titles: "linear: draft
    20 us, verify 200 us (ratio 0.1)", or "roofline on h100: llama-3.1-8b verifies,
    llama-3.2-1b drafts, batch 64, prompt 8192"."""
    model = config.cost_model
    workload = f"batch {config.batch_size}, prompt {config.prompt_len}"
    if model == "linear":
        text = (
            f"linear: draft {config.draft_cost_us:g} us, verify {config.verify_cost_us:g} us "
            f"(ratio {config.cost_ratio:.3g})"
        )
        if config.verify_token_us:
            text += f" + {config.verify_token_us:g} us per draft checked"
        if config.draft_fixed_us:
            text += f" + {config.draft_fixed_us:g} us per drafting cycle"
        return text
    if model == "table":
        return f"table {config.cost_table}, {workload}"
    return f"{model} on {config.gpu}: {config.target} verifies, {config.draft} drafts, {workload}"


def acceptance_text(config: Any) -> str:
    """The acceptance model and its parameters in words: "fixed (acceptance 0.8)",
    "markov (easy 0.9, hard 0.3, stay 0.95, easy share 0.5)"."""
    c = config
    params = {
        "fixed": f"acceptance {c.acceptance_rate:g}",
        "position_decay": f"decay {c.decay_base:g} x {c.decay_factor:g}^(i-1)",
        "entropy_aware": f"entropy high {c.entropy_high:g} low {c.entropy_low:g} "
        f"frac {c.entropy_frac:g}",
        "per_position": f"rates {c.rates}",
        "beta_round": f"rate ~ Beta({c.beta_a:g}, {c.beta_b:g}) per cycle",
        "markov": f"easy {c.p_easy:g}, hard {c.p_hard:g}, stay {c.stay:g}, "
        f"easy share {c.easy_frac:g}",
        "confidence": f"q ~ Beta({c.beta_a:g}, {c.beta_b:g}) per token",
    }[c.draft_model]
    return f"{c.draft_model} ({params})"


def policy_text(config: Any, bound: bool = False, detail: bool = False) -> str:
    """A K policy with its parameters, as a leaderboard names it: "fixed K=4",
    "hf_heuristic K0=5", "threshold p_min=0.75", "goodput w=16", "schedule K=3", "oracle";
    with ``bound``, an adaptive policy's bound on k too: "hf_heuristic K0=5 ≤8"; with
    ``detail``, every parameter the policy reads: "goodput w=16 K0=2 ≤32"."""
    text = _policy_name(config)
    if detail and config.policy == "goodput":
        text += f" K0={config.k}"
    if detail and config.policy == "threshold":
        text += f" K≥{config.k_min}"
    return text + (policy_bound(config) if bound else "")


def policy_bound(config: Any) -> str:
    """An adaptive policy's bound on k as a label suffix: " ≤8" ("" for fixed, schedule)."""
    return "" if config.policy in ("fixed", "schedule") else f" ≤{config.k_max}"


def _policy_name(c: Any) -> str:
    from engine.core.config import schedule_k

    name = c.policy
    if name == "fixed":
        return f"fixed K={c.k}"
    if name == "hf_heuristic":
        return f"hf_heuristic K0={c.k}"
    if name == "threshold":
        return f"threshold p_min={c.p_min:g}" if c.rule == "p_min" else f"threshold h={c.stop_h:g}"
    if name == "goodput":
        return f"goodput w={c.window}"
    if name == "schedule":
        return f"schedule K={schedule_k(c.schedule, c.batch_size)}"
    return name
