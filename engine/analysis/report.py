"""What a sweep shows, as structured sections, and the findings report in Markdown.

The original simulator's five "Key Findings" are hypotheses: each is checked against the
sweep and given a verdict with the numbers side by side. Nothing here prints.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from engine.acceptance.draft_models import DRAFT_MODELS, get_model, original_models
from engine.analysis import analysis as A
from engine.analysis.formatting import (
    HEATMAP_LEGEND,
    acceptance_text,
    cell_text,
    cost_setting_text,
    speedup_text,
)
from engine.analysis.plot_data import optimal_k_heatmap
from engine.core.config import DEFAULTS, part_fields
from engine.core.parts import SHAPE

# The original's claims, transcribed from its README ("Key Findings").
CLAIM_BEST = {"draft_model": "fixed", "k": 15, "acceptance_rate": 0.95, "draft_cost_us": 10.0}
CLAIM_BEST_SPEEDUP = 6.06
CLAIM_BREAKEVEN_TABLE = {0.05: 2.55, 0.10: 2.10, 0.25: 1.43, 0.50: 0.96}
CLAIM_BREAKEVEN_RATIO = 0.25
CLAIM_K_RANGES = {0.5: (1, 3), 0.7: (2, 5), 0.8: (3, 7), 0.9: (5, 15), 0.95: (7, 15)}
CLAIM_HEATMAP = {
    0.50: {10.0: 3, 20.0: 2, 50.0: 1, 100.0: 1},
    0.70: {10.0: 5, 20.0: 4, 50.0: 2, 100.0: 1},
    0.80: {10.0: 7, 20.0: 5, 50.0: 3, 100.0: 2},
    0.90: {10.0: 15, 20.0: 10, 50.0: 5, 100.0: 3},
    0.95: {10.0: 15, 20.0: 15, 50.0: 7, 100.0: 5},
}
CLAIM_LOSING = 80
CLAIM_LOSING_MIN_RATIO = 0.25
CLAIM_LOSING_MAX_ACCEPTANCE = 0.70

# A claimed speedup "holds" when ours is within this relative distance (the original ran
# one seed of 500 x 128 tokens; its own sampling error is about 1 %).
RELATIVE_TOLERANCE = 0.03


@dataclass
class Section:
    """One part of the analysis: a title, sentences, and optionally a table."""

    title: str
    lines: list[str] = field(default_factory=list)
    table: pd.DataFrame | None = None
    verdict: str | None = None  # for checks of the original's findings
    # An optimal-K grid (engine.analysis.plot_data.optimal_k_heatmap).
    grid: pd.DataFrame | None = None


def _fmt(x: float, digits: int = 2) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def config_text(row: pd.Series) -> str:
    """One sweep row's configuration in words (its model's parameters, K, costs): the
    parameters of a newer model or cost model that the row leaves at their defaults need no
    column of their own."""
    model = str(row["draft_model"])
    if model not in original_models():  # newer models: their parameters in words
        config = A.row_config(row)
        return f"{acceptance_text(config)}, K={int(row['k'])}, {cost_setting_text(config)}"
    params = ", ".join(f"{p}={row[p]:g}" for p in get_model(model).reads)
    cost_model = str(row.get("cost.model", DEFAULTS["cost.model"]))
    if "draft_cost_us" not in part_fields("cost.model", cost_model):  # not linear's costs
        config = A.row_config(row)
        return f"{model}, K={int(row['k'])}, {params}, {cost_setting_text(config)}"
    return (
        f"{model}, K={int(row['k'])}, {params}, "
        f"draft {row['draft_cost_us']:g} us, verify {row['verify_cost_us']:g} us"
    )


def _lookup(frame: pd.DataFrame, **values: object) -> pd.DataFrame:
    mask = np.ones(len(frame), dtype=bool)
    for name, value in values.items():
        column = frame[name]
        mask &= np.isclose(column, value) if isinstance(value, float) else column == value
    return frame[mask]


def heatmap_cells(grid: pd.DataFrame) -> pd.DataFrame:
    """An optimal-K grid (:func:`engine.analysis.plot_data.optimal_k_heatmap`) as a table of
    cell text (:func:`engine.analysis.formatting.cell_text`): a row per row label, a column
    per draft cost."""
    labels = grid.attrs.get("row_labels", [])
    costs = grid.attrs.get("costs", [])
    columns = grid.attrs.get("column_labels") or [f"{c:g} us" for c in costs]
    table = pd.DataFrame("", index=pd.Index(labels), columns=columns)
    table.index.name = ", ".join(grid.attrs.get("row_parameters", []))
    for _, cell in grid.iterrows():
        table.iloc[int(cell["row"]), int(cell["column"])] = cell_text(cell)
    return table


def chain_rows(frame: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """The rows of chains (the analysis is about K) and how many token-tree rows were left
    out (``shape.name`` tree)."""
    if "shape.name" not in frame:
        return frame, 0
    trees = frame["shape.name"].isin(SHAPE.where(lambda shape: shape.tree))
    return frame[~trees].reset_index(drop=True), int(trees.sum())


def analysis_sections(frame: pd.DataFrame) -> list[Section]:
    """The analysis of a sweep, as data for a terminal view or a report. It is about K:
    rows of token trees (``shape.name`` tree) are left out, and said to be."""
    sections = []
    frame, trees = chain_rows(frame)
    if trees:
        sections.append(
            Section(
                "Token trees",
                [
                    f"{trees} rows of token trees left out: this analysis is about a chain's "
                    "K (spectui tree compares trees)"
                ],
            )
        )
        if frame.empty:
            return sections
    col = A.speedup_column(frame)
    best = A.best_configuration(frame)
    sections.append(
        Section(
            "Best configuration",
            [
                config_text(best),
                f"speedup {speedup_text(best['speedup'])} ± {_fmt(best['speedup_ci95'])} "
                f"(Monte Carlo, 95 % CI), exact {speedup_text(best['speedup_exact'])} at "
                f"{int(best['tokens_per_seq'])} tokens, {speedup_text(best['speedup_limit'])} as "
                "sequences grow long",
            ],
        )
    )
    models = [m for m in DRAFT_MODELS if (frame["draft_model"] == m).any()]
    for model in models:
        grid = optimal_k_heatmap(frame, model)
        rows = ", ".join(grid.attrs.get("row_parameters", []))
        lines = [
            f"rows: {rows}; columns: {grid.attrs.get('column_title', 'draft cost (us)')}; "
            f"cell: K* and its speedup. {HEATMAP_LEGEND}.",
            *grid.attrs.get("notes", []),
        ]
        ties = grid[grid["tie"].astype(bool)]
        if len(ties):
            lines.append(
                "ties: "
                + "; ".join(
                    f"{r['row_label']}, {r['draft_cost_us']:g} us: K in {{{r['tied_ks']}}}"
                    for _, r in ties.iterrows()
                )
            )
        sections.append(Section(f"Optimal K, {model}", lines, heatmap_cells(grid), grid=grid))
    opt = A.optimal_k(frame)
    ranges = A.k_star_ranges(opt)
    if len(ranges):
        sections.append(
            Section("K* range per acceptance (fixed model, over draft costs)", [], ranges)
        )
    table = A.breakeven_by_cost_ratio(frame)
    if len(table):
        crossing = A.mean_breakeven_ratio(table)
        lines = [
            "fixed model; mean, min and max over K and acceptance at each cost ratio "
            "(draft / verify)",
            f"the mean speedup crosses 1.0 at cost ratio ≈ {_fmt(crossing)} (interpolated)"
            if not math.isnan(crossing)
            else "the mean speedup does not cross 1.0 in this sweep",
        ]
        sections.append(Section("Break-even by cost ratio", lines, table))
        by_quality = A.breakeven_by_quality(frame)
        sections.append(
            Section(
                "Largest cost ratio that still pays, per acceptance (exact, long sequences)",
                ["speculation with the K shown breaks even up to this draft / verify cost ratio"],
                by_quality,
            )
        )
    losing = A.losing_configurations(frame)
    lines = [
        f"{losing['count']} of {losing['total']} configurations ({losing['fraction']:.1%}) are "
        f"slower than the baseline ({losing['distinct']} of {losing['distinct_total']} once rows "
        "differing only in a parameter their model ignores are merged)",
    ]
    if losing["count"]:
        lines.append(
            f"the cheapest draft among them has cost ratio {_fmt(losing['min_cost_ratio'])}; "
            f"the smallest K among them is {losing['min_k']}"
        )
        for model, count in losing["by_model"].items():
            if not count:
                continue
            line = f"{model}: {count} losing"
            if model in losing["max_quality"]:  # only an axis that varies describes them
                q, v = losing["max_quality"][model]
                line += f"; best {q} among them {v:g}"
            lines.append(line)
    sections.append(Section("Configurations that lose to the baseline", lines))
    front = A.pareto_front(frame)
    keep = ["draft_model", "k", "acceptance_rate", "draft_cost_us", col, "compute_overhead"]
    sections.append(
        Section(
            "Pareto front: speedup against compute overhead",
            ["no other configuration is both faster and cheaper in compute"],
            front[[c for c in keep if c in front.columns]],
        )
    )
    return sections


def _verdict(*parts: tuple[str, bool]) -> str:
    """ "confirmed" / "contradicted", or one word per part of a claim when they differ."""
    if all(ok for _, ok in parts):
        return "confirmed"
    if not any(ok for _, ok in parts):
        return "contradicted"
    return "; ".join(f"{name} {'confirmed' if ok else 'contradicted'}" for name, ok in parts)


def original_findings(frame: pd.DataFrame) -> list[Section]:
    """Each of the original's five findings, checked against this sweep (its chains)."""
    frame, _ = chain_rows(frame)
    if frame.empty:
        return []
    col = A.speedup_column(frame)
    checks = []

    best = A.best_configuration(frame)
    same = all(
        np.isclose(best[k], v) if isinstance(v, float) else best[k] == v
        for k, v in CLAIM_BEST.items()
    )
    close = abs(best[col] - CLAIM_BEST_SPEEDUP) <= RELATIVE_TOLERANCE * CLAIM_BEST_SPEEDUP
    checks.append(
        Section(
            "1. Maximum speedup: 6.06x (fixed, K=15, acceptance 0.95, draft 10 us)",
            [
                f"this sweep: {speedup_text(best[col])} ± {_fmt(best['speedup_ci95'])} "
                f"(exact {speedup_text(best['speedup_exact'])}) at {config_text(best)}",
            ],
            verdict=_verdict(("configuration", bool(same)), ("speedup", bool(close))),
        )
    )

    table = A.breakeven_by_cost_ratio(frame)
    rows: list[dict[str, object]] = []
    for ratio, claimed in CLAIM_BREAKEVEN_TABLE.items():
        ours = _lookup(table, cost_ratio=ratio) if len(table) else table
        value = float(ours["mean_speedup"].iloc[0]) if len(ours) else math.nan
        rows.append({"cost_ratio": ratio, "original": claimed, "this_sweep": value})
    side = pd.DataFrame(rows)
    table_ok = bool(
        np.all(
            np.abs(side["this_sweep"] - side["original"]) <= RELATIVE_TOLERANCE * side["original"]
        )
    )
    crossing = A.mean_breakeven_ratio(table) if len(table) else math.nan
    by_quality = A.breakeven_by_quality(frame)
    winners_above = (
        _lookup(frame, draft_model="fixed")
        .query(f"cost_ratio > {CLAIM_BREAKEVEN_RATIO} and {col} > 1.0")
        .shape[0]
    )
    pays_up_to = ", ".join(
        f"{q:g} → {r:.2f} (K={int(k)})"
        for q, r, k in zip(
            by_quality.iloc[:, 0], by_quality["breakeven_cost_ratio"], by_quality["k"], strict=True
        )
    )
    crossing_ok = not math.isnan(crossing) and abs(crossing - CLAIM_BREAKEVEN_RATIO) <= 0.05
    if math.isnan(crossing):
        crossing_text = "the mean speedup does not cross 1.0 in this sweep"
    elif crossing_ok:
        crossing_text = f"the mean crosses 1.0 at cost ratio ≈ {crossing:.2f}, close to 0.25"
    else:
        crossing_text = f"the mean crosses 1.0 at cost ratio ≈ {crossing:.2f}, not 0.25"
    checks.append(
        Section(
            "2. Breakeven at cost_ratio = 0.25",
            [
                "mean speedup of the fixed model over K and acceptance, per cost ratio: "
                + ("the table matches" if table_ok else "the table differs"),
                crossing_text,
                f"{winners_above} fixed-model configurations with cost ratio above 0.25 still "
                "beat the baseline",
                "the largest cost ratio at which some K of this sweep still breaks even (exact, "
                f"long sequences), per acceptance: {pays_up_to}",
            ],
            side,
            verdict=_verdict(("table", table_ok), ("break-even at 0.25", crossing_ok)),
        )
    )

    opt = A.optimal_k(frame)
    ranges = A.k_star_ranges(opt)
    rows = []
    for acc, (lo, hi) in CLAIM_K_RANGES.items():
        ours = _lookup(ranges, acceptance_rate=acc) if len(ranges) else ranges
        rows.append(
            {
                "acceptance_rate": acc,
                "original": f"{lo}-{hi}",
                "this_sweep": f"{int(ours['k_min'].iloc[0])}-{int(ours['k_max'].iloc[0])}"
                if len(ours)
                else "n/a",
            }
        )
    side = pd.DataFrame(rows)
    ranges_ok = bool((side["original"] == side["this_sweep"]).all())
    fixed = opt[opt["draft_model"] == "fixed"]
    grows = all(
        bool(np.all(np.diff(g.sort_values("acceptance_rate")["k_opt"].to_numpy()) >= 0))
        for _, g in fixed.groupby("draft_cost_us")
    )
    checks.append(
        Section(
            "3. Optimal K grows with acceptance rate (with the ranges quoted)",
            [
                "K* never decreases as acceptance rises, at every draft cost"
                if grows
                else "K* decreases with acceptance somewhere",
                "the quoted ranges match"
                if ranges_ok
                else "the quoted ranges differ: "
                "the original's own heatmap (finding 4) gives K* = 1 at acceptance 0.7 and "
                "100 us, 2 at 0.8, 3 at 0.9 and 5 at 0.95, below the ranges it quotes",
            ],
            side,
            verdict=_verdict(("trend", grows), ("quoted ranges", ranges_ok)),
        )
    )

    rows = []
    for acc, by_cost in CLAIM_HEATMAP.items():
        for cost, claimed in by_cost.items():
            ours = _lookup(fixed, acceptance_rate=acc, draft_cost_us=cost)
            if not len(ours):
                continue
            r = ours.iloc[0]
            tied = {int(k) for k in str(r["tied_ks"]).split(",")}
            rows.append(
                {
                    "acceptance_rate": acc,
                    "draft_cost_us": cost,
                    "original": claimed,
                    "this_sweep": int(r["k_opt"]),
                    "exact": int(r["k_opt_exact"]),
                    "within_noise": claimed in tied or claimed == int(r["k_opt_exact"]),
                }
            )
    side = pd.DataFrame(rows)
    matches = int((side["original"] == side["this_sweep"]).sum()) if len(side) else 0
    agrees = int(side["within_noise"].sum()) if len(side) else 0
    checks.append(
        Section(
            "4. Optimal K heatmap (fixed model)",
            [
                f"{matches} of {len(side)} cells give the same K*; {agrees} agree once ties "
                "within sampling noise and the exact optimum are counted"
            ],
            side,
            verdict=_verdict(("heatmap", len(side) > 0 and agrees == len(side))),
        )
    )

    losing = A.losing_configurations(frame)
    fixed_max_acc = losing["max_quality"].get("fixed", (None, math.nan))[1]
    count_ok = losing["count"] == CLAIM_LOSING
    ratio_ok = losing["count"] == 0 or losing["min_cost_ratio"] >= CLAIM_LOSING_MIN_RATIO
    acc_ok = math.isnan(fixed_max_acc) or fixed_max_acc <= CLAIM_LOSING_MAX_ACCEPTANCE
    checks.append(
        Section(
            "5. 14% of configs lose (80/576); all have cost_ratio >= 0.25 and acceptance <= 0.70",
            [
                f"this sweep: {losing['count']} of {losing['total']} ({losing['fraction']:.1%})",
                f"cheapest losing draft: cost ratio {_fmt(losing['min_cost_ratio'])} "
                f"({'consistent with' if ratio_ok else 'contradicts'} cost_ratio >= 0.25)",
                "highest acceptance among losing fixed-model configurations: "
                + (
                    "none loses (consistent with acceptance <= 0.70)"
                    if math.isnan(fixed_max_acc)
                    else f"{fixed_max_acc:g} "
                    f"({'consistent with' if acc_ok else 'contradicts'} acceptance <= 0.70)"
                ),
            ],
            verdict=_verdict(
                ("count", count_ok),
                ("cost_ratio >= 0.25", ratio_ok),
                ("acceptance <= 0.70", acc_ok),
            ),
        )
    )
    return checks


def markdown_table(table: pd.DataFrame, index: bool = False) -> str:
    """A DataFrame as a GitHub Markdown table (floats to 4 significant digits)."""
    frame = table.reset_index() if index else table

    def text(value: object) -> str:
        if isinstance(value, float | np.floating):
            return "n/a" if math.isnan(value) else f"{float(value):.4g}"
        return str(value)

    header = "| " + " | ".join(str(c) for c in frame.columns) + " |"
    rule = "|" + "|".join(" --- " for _ in frame.columns) + "|"
    body = ["| " + " | ".join(text(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join([header, rule, *body])


def findings_markdown(frame: pd.DataFrame, source: str = "") -> str:
    """The findings report: the analysis, then each of the original's findings checked."""
    col = A.speedup_column(frame)
    out = ["# Findings", ""]
    out.append(
        f"From `{source}`: {len(frame)} configurations"
        + (" (exact values only)" if col == "speedup_exact" else "")
        + ". Generated by `spectui analyze --markdown`; every number below is computed from "
        "that file."
    )
    for section in analysis_sections(frame):
        out += ["", f"## {section.title}"]
        out += [""] + [f"- {line}" for line in section.lines] if section.lines else []
        if section.table is not None and len(section.table):
            index = section.title.startswith("Optimal K")
            out += ["", markdown_table(section.table, index=index)]
    out += ["", "## The original's findings, checked", ""]
    for check in original_findings(frame):
        out += [f"### {check.title}", "", f"**{check.verdict}**", ""]
        out += [f"- {line}" for line in check.lines]
        if check.table is not None and len(check.table):
            out += ["", markdown_table(check.table)]
        out.append("")
    return "\n".join(out).rstrip() + "\n"
