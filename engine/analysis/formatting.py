"""How speedups and optimal-K cells read, in one place (pure text: no colours, no printing).

Every view of a speedup (CLI report, findings, heatmap cells, plots, cards) formats it with
:func:`speedup_text`, so a configuration slower than the baseline never reads as ``1.00``;
every view of the optimal-K grid writes a cell with :func:`k_star_cell` and explains it with
:data:`HEATMAP_LEGEND`.
"""

from __future__ import annotations

import math
from typing import Any

from engine.core.parts import ACCEPTANCE, COST, POLICY

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
    llama-3.2-1b drafts, batch 64, prompt 8192" (each cost model's own label)."""
    return str(COST.of(config).label(config))


def acceptance_text(config: Any) -> str:
    """The acceptance model and its parameters in words: "fixed (acceptance 0.8)",
    "markov (easy 0.9, hard 0.3, stay 0.95, easy share 0.5)" (each model's own label)."""
    return str(ACCEPTANCE.of(config).label(config))


def policy_text(config: Any, bound: bool = False, detail: bool = False) -> str:
    """A K policy with its parameters, as a leaderboard names it: "fixed K=4",
    "hf_heuristic K0=5", "threshold p_min=0.75", "goodput w=16", "schedule K=3", "oracle";
    with ``bound``, an adaptive policy's bound on k too: "hf_heuristic K0=5 ≤8"; with
    ``detail``, every parameter the policy reads: "goodput w=16 K0=2 ≤32" (each policy's
    own label)."""
    policy = POLICY.of(config)
    text = policy.label(config) + (policy.detail_text(config) if detail else "")
    return text + (policy.bound_text(config) if bound else "")


def policy_bound(config: Any) -> str:
    """An adaptive policy's bound on k as a label suffix: " ≤8" ("" for fixed, schedule)."""
    return str(POLICY.of(config).bound_text(config))
