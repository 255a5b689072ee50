"""docs/validation.md: the report of ``spectui validate --markdown FILE``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from engine.validate.catalog_acceptance import CATALOG_GROUP, runs_text
from engine.validate.predict import DEFAULT_CONTEXT, METHOD_TITLES, METHODS, OverheadFit
from engine.validate.report import (
    CATALOG_GOALS,
    GOALS,
    MODEL_FREE,
    OWN,
    KSweep,
    Report,
    Row,
    Summary,
    best_k_counts,
    catalog_goal_text,
    goal_text,
    k_sweeps,
    overhead_text,
    percent,
    summarise,
)
from engine.validate.table import LeftOut

UNEXPLAINED = "unexplained: the table gives no reason for this miss"


def _efficiencies() -> str:
    """The roofline's default efficiencies, as a scenario gets them (its fields)."""
    from engine.core.config import DEFAULTS

    keys = ("cost.eta_w", "cost.eta_kv", "cost.eta_f", "cost.t0_us")
    return ", ".join(f"{key.removeprefix('cost.')} = {DEFAULTS[key]:g}" for key in keys)


def _escaped(text: str) -> str:
    """``text`` in a Markdown table cell: its own ``|`` escaped."""
    return text.replace("|", "\\|")


def _cell(row: Row, method: str) -> str:
    value, error = row.predictions[method].value, row.error(method)
    if value is None or error is None:
        return "-"
    return f"{value:.3f} ({percent(error, signed=True)}, {row.verdict(method)})"


def _setup(row: Row) -> str:
    e = row.entry
    return f"{e.hardware} x{e.gpus or 1}, {e.target}, {e.method}, {e.shape_text}, {e.batch_text}"


def _ids_text(rows: Sequence[Row], method_errors: bool = True) -> str:
    """The entries, each series' run of three or more collapsed to its first and last id,
    with their errors (``method_errors``: only the methods that miss, else from specs)."""
    runs: list[list[Row]] = []
    for r in rows:
        if runs and runs[-1][-1].entry.series == r.entry.series and r.entry.series is not None:
            runs[-1].append(r)
        else:
            runs.append([r])
    parts = []
    for run in runs:
        methods = sorted({m for r in run for m in (r.misses if method_errors else ["specs"])})
        spans = []
        for m in methods:
            chosen = [r for r in run if not method_errors or m in r.misses]
            errors = [e for r in chosen if (e := r.error(m)) is not None]
            low, high = min(errors), max(errors)
            span = percent(low, signed=True)
            if len(errors) > 1 and high != low:
                span += f" to {percent(high, signed=True)}"
            spans.append(f"{METHOD_TITLES[m]} {span}")
        if len(run) > 2:
            name = f"**{run[0].entry.id}** to **{run[-1].entry.id}** ({len(run)} entries)"
        else:
            name = " and ".join(f"**{r.entry.id}**" for r in run)
        parts.append(f"{name}: {', '.join(spans)}")
    return "; ".join(parts)


def _missing_term(fit: OverheadFit, rows: Sequence[Row]) -> str:
    """What one per-pass overhead does to the predictions from specs, in words."""
    worse = [
        r
        for r in rows
        if r.entry.id in fit.errors
        and (error := r.error("specs")) is not None
        and abs(fit.errors[r.entry.id]) > abs(error)
    ]
    errors = [e for r in rows if r.group in OWN and (e := r.error("specs")) is not None]
    return (
        f"{sum(e > 0 for e in errors)} of {len(errors)} predictions from specs (own "
        "acceptance) are too optimistic: the roofline prices a pass by the bytes and FLOPs "
        "it moves, with no fixed cost per pass (kernel launches, the runtime between "
        "passes). The one global set fitted once to those entries adds that missing term, an "
        "overhead t0 on every pass, and nothing else. It is fitted on the entries it is "
        "scored on (one number for all of them), so it says how much of the error one such "
        f"term explains, not how well a new setup is predicted; and {fit.t0_us:g} us a pass "
        "is large next to a decoding step of a few milliseconds: it stands for whatever "
        "each runtime adds per pass, which differs by engine, draft and batch, as the misses "
        f"below say. It makes {len(worse)} entries worse ({_ids_text(worse, False)}: the "
        "errors with today's defaults)."
    )


def _best_k_text(sweeps: Sequence[KSweep]) -> str:
    """``best K right (the K of the fastest point) in K sweeps of one setup: from specs 1 of
    2 with their own acceptance and 1 of 1 with the catalog's; calibrated ...``."""
    parts = []
    for method in METHODS:
        counts = []
        for group, words in (
            ("all", "with their own acceptance"),
            (CATALOG_GROUP, "with the catalog's"),
        ):
            right, judged = best_k_counts(sweeps, group, method)
            if judged:
                counts.append(f"{right} of {judged} {words}")
        if counts:
            parts.append(f"{METHOD_TITLES[method]} {' and '.join(counts)}")
    sizes = ", ".join(
        f"{s.ids[0]} to {s.ids[-1]} (K {','.join(map(str, s.ks))}: fastest measured K = "
        f"{s.measured_best})"
        for s in sweeps
    )
    return (
        "best K right (the K of the fastest point) in K sweeps of one setup: "
        f"{'; '.join(parts)} (the sweeps: {sizes})"
    )


def _catalog_section(rows: Sequence[Row]) -> list[str]:
    """The catalog group: how each entry's acceptance is chosen, and per run of entries the
    rows, their fit and how near they are."""
    chosen = [r for r in rows if r.catalog is not None and not r.entry.pending]
    if not chosen:
        return []
    out = [
        "",
        f"## {CATALOG_GROUP[0].upper()}{CATALOG_GROUP[1:]}",
        "",
        f"The {len(chosen)} entries whose source reports no acceptance for the run are "
        "predicted, by both methods, with the mean accepted length M (bonus token included) "
        "that the acceptance catalog (engine/acceptance/data/catalog.toml) gives for their "
        "setup, never with a figure of their own source. Every catalog row of the entry's "
        "own source is left out (the same address, or the same publication at another: an "
        "arXiv paper by its number, a GitHub issue or pull request by its repository and "
        "number, a repository's file at any commit). Of the rest, the nearest rows for the "
        "entry's method, target, draft, dataset and temperature are chosen as `--method` "
        "chooses them (same target and head, same target, same family, the method on another "
        "target; within a level the asked dataset, the nearest temperature, then the setup "
        "with the most rows), one registered acceptance model is fitted to them as `spectui "
        "acceptance` fits them, and the entry takes its M at the entry's K: a chain's K; a "
        "tree's depth when the rows state theirs, else the K the rows were fitted at (their "
        "own M: a tree row measures its own tree, and how M changes with a tree's shape is "
        "not modelled). The same rule for every entry; no entry or source has a choice of its "
        "own. The figure the table assumed before the catalog (another run's M) predicts "
        "nothing of the entry; it still calibrates the entries of its series that state their "
        "own acceptance, whose figures are what they were.",
        "",
    ]
    out += [_catalog_against_assumed(chosen), ""]
    accepted = {r.entry.id: r.catalog for r in chosen if r.catalog is not None}
    texts = runs_text([r.entry for r in chosen], accepted)
    runs: list[list[Row]] = []
    for r in chosen:
        if runs and accepted[runs[-1][-1].entry.id].source_text == accepted[r.entry.id].source_text:
            runs[-1].append(r)
        else:
            runs.append([r])
    for text, run in zip(texts, runs, strict=True):
        first = accepted[run[0].entry.id]
        used = ", ".join(first.rows) if first.rows else "none"
        left = (
            f"; left out as its own source: {', '.join(first.excluded)}" if first.excluded else ""
        )
        out.append(f"- {_escaped(text)}. Rows used: {used}{left}.")
    return out


def _catalog_against_assumed(chosen: Sequence[Row]) -> str:
    """The catalog group against the acceptance the table assumed before the catalog
    (another run's M): how far the two M are apart, and the median error from specs with
    each."""
    import statistics

    from engine.validate.predict import from_specs

    with_catalog, with_assumed, apart = [], [], []
    for r in chosen:
        error = r.error("specs")
        if error is not None:
            with_catalog.append(abs(error))
        assumed = r.entry.tokens_per_cycle
        if assumed is None or r.catalog is None or r.catalog.mean_length is None:
            continue
        apart.append(abs(r.catalog.mean_length / assumed - 1.0))
        value = from_specs(r.entry).value  # the entry as the table gives it
        if value is not None:
            with_assumed.append(abs(value / r.entry.measured - 1.0))
    if not with_catalog or not apart:
        return ""
    close = sum(a <= 0.01 for a in apart)
    median = percent(statistics.median(with_catalog))
    text = f"From specs the group's median absolute error is {median}"
    if with_assumed:
        text += (
            f"; with the M the table assumed before the catalog (another run's) it was "
            f"{percent(statistics.median(with_assumed))}"
        )
    return (
        f"{text}. The catalog's M is within 1 % of the assumed one for {close} of the "
        f"{len(apart)} entries that carried one (at most {percent(max(apart))} apart): for those "
        "the acceptance is the same, and what misses is the cost of their cycle, as the misses "
        "below explain."
    )


def _summary_table(summaries: Sequence[Summary]) -> list[str]:
    out = [
        "| method | entries | predicted | median abs. error | within 10 % | kept apart |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for s in summaries:
        if s.entries or s.others:
            out.append(
                f"| {METHOD_TITLES[s.method]} | {s.group} | {s.predicted} of {s.entries} | "
                f"{percent(s.median)} | {percent(s.within_10)} | {s.others or ''} |"
            )
    return out


def markdown(
    report: Report, left_out: Sequence[LeftOut] = (), temperature: tuple[Any, Any] | None = None
) -> str:
    """The whole report (Markdown); ``left_out``: sources looked at and not used, and why;
    ``temperature``: the source and rows of engine.validate.temperature, a section last."""
    rows, fit = report.rows, report.fit
    summaries = summarise(rows)
    sweeps = k_sweeps(rows)
    ok = [r for r in rows if not r.entry.pending]
    own = [r for r in ok if r.group in OWN]
    catalog = [r for r in ok if r.group == CATALOG_GROUP]
    free = [r for r in ok if r.group == MODEL_FREE]
    pending = [r for r in rows if r.entry.pending]
    out = [
        "# How good are spectui's predictions?",
        "",
        "<!-- Generated by `spectui validate --markdown docs/validation.md` from "
        "engine/validate/data/measurements.toml; edit the table, not this file. -->",
        "",
        f"spectui predicts {len(ok)} published measurements of speculative decoding two ways: "
        f"{len(own)} with the acceptance their source reports, {len(catalog)} whose "
        "source reports none for that run, with the acceptance catalog's (its nearest rows "
        f"from other sources: kept apart, marked '{CATALOG_GROUP}')"
        + (
            f", and {len(free)} drafting without a draft model (n-gram / prompt lookup, "
            f"suffix decoding: the '{MODEL_FREE}' category, with their own acceptance)"
            if free
            else ""
        )
        + f". It keeps {len(pending)} more that need what it does not model yet (pending). "
        "No entry has a parameter of its own.",
        "",
        f"- **{METHOD_TITLES['specs']}**: the `roofline` cost model (additive form) on the "
        "shipped hardware and model data (engine/cost/data/) with one global set of "
        f"efficiencies, today's defaults ({_efficiencies()}), and the tokens per cycle the "
        "source reports. The speedup is tokens per cycle over the cycle's time in plain "
        "decoding steps: a chain's cycle is K draft passes and one verify pass of K + 1 "
        "tokens, a tree's its draft passes and one verify pass of the whole tree, at the "
        f"entry's batch and mean context (the prompt and half the output; {DEFAULT_CONTEXT} "
        "tokens where the source states no lengths). A cost ratio is one draft pass over one "
        "decoding step.",
        f"- **{METHOD_TITLES['calibrated']}**: the entry is left out and its cost fitted to "
        "the other points of its series (one source, one setup). In a sweep of K or of the "
        "batch (two other values or more, the rest of the setup the same), the cycle's cost "
        "in decoding steps, linear in the swept value, fitted by least squares, predicts the "
        "held-out point from its reported tokens per cycle. Otherwise the series' other "
        "entries on the same hardware and target (other methods or drafts) fit one overhead "
        "per pass t0 (the least median error on a 10 us grid), added to every pass of the "
        "roofline above. An entry alone in its series has no calibrated prediction.",
        *(
            [
                f"- **{MODEL_FREE}** (n-gram / prompt lookup, suffix decoding: no draft pass): "
                "from specs, a step is a CPU look-up (the proposer's default "
                "`proposer.cpu_us`) and, with the entry's hit rate (stated or assumed: its "
                "note says which), a target pass over the drafted tokens plus one, else a "
                "plain decoding step; the speedup is the tokens per step (every step, hits "
                "and misses) over the mean step. Calibrated only on the series' other "
                "entries of the same proposer: a model-free step has no draft pass, so a "
                "draft model's entries do not calibrate it, nor it theirs.",
            ]
            if free
            else []
        ),
        "",
        "Errors are predicted / measured - 1. Verdicts: within 10 %, within 25 %, miss.",
        "",
        "## Where it stands",
        "",
    ]
    if report.partial:
        out.append(
            "Only the entries asked for (`--only`): the goals are judged on the whole table."
        )
    else:
        for s in summaries:
            if s.group == "all":
                out.append(f"- {METHOD_TITLES[s.method]}: {goal_text(s)}.")
            if s.group == "all" and s.method == "specs" and fit is not None:
                out.append(f"- {overhead_text(fit)}.")
        if any(r.catalog is not None for r in rows):
            out.append(f"- {catalog_goal_text(summaries, sweeps)}.")
        if sweeps:
            out.append(f"- {_best_k_text(sweeps)}.")
    out += ["", *_summary_table(summaries)]
    if fit is not None and not report.partial:
        out += ["", _missing_term(fit, rows)]
    out += [
        "",
        f"Goals: median absolute error at most {100 * GOALS['calibrated']:.0f} % calibrated "
        f"and at most {100 * GOALS['specs']:.0f} % from specs, over the entries that are "
        f"neither pending nor predicted with the catalog's acceptance; for the "
        f"'{CATALOG_GROUP}' group (issue #42), median absolute error from specs at most "
        f"{100 * CATALOG_GOALS['median']:.0f} % and the best K right in at least "
        f"{100 * CATALOG_GOALS['best_k']:.0f} % of K sweeps.",
        "",
        "## Entries",
        "",
        "| entry | setup | measured | "
        + " | ".join(METHOD_TITLES[m] for m in METHODS)
        + " | from specs with the fitted t0 |",
        "| --- | --- | ---: | " + " | ".join("---" for _ in METHODS) + " | ---: |",
    ]
    for r in ok:
        with_t0 = None if fit is None else fit.errors.get(r.entry.id)
        assumed = f" ({CATALOG_GROUP})" if r.catalog is not None else ""
        out.append(
            f"| {r.entry.id} | {_setup(r)}{assumed} | {r.entry.measured:.3f} "
            f"{r.entry.quantity} | "
            + " | ".join(_cell(r, m) for m in METHODS)
            + f" | {percent(with_t0, signed=True)} |"
        )
    out += _catalog_section(rows)
    out += ["", "## Misses", ""]
    missed = [r for r in ok if r.misses]
    if not missed:
        out.append("None.")
    # One paragraph per explanation: the entries it explains, with their errors.
    by_reason: dict[str, list[Row]] = {}
    for r in missed:
        by_reason.setdefault(r.entry.miss or UNEXPLAINED, []).append(r)
    for reason, group in by_reason.items():
        out += [f"{_ids_text(group)}. {reason}", ""]
    out += [
        "## Pending",
        "",
        "| entry | needs | setup | outcome |",
        "| --- | --- | --- | --- |",
    ]
    for r in pending:
        out.append(
            f"| {r.entry.id} | {_escaped(r.entry.status.removeprefix('pending: needs '))} | "
            f"{_escaped(r.entry.setup)} | {_escaped(r.entry.outcome)} |"
        )
    if left_out:
        out += ["", "## Looked at and left out", ""]
        out += [f"- {x.source} ({x.url}, read {x.read}): {x.why}" for x in left_out]
    out += ["", "## Sources and setups", ""]
    # One paragraph per source and setup (a series' entries share them), then each entry's
    # acceptance and outcome as the source gives them.
    by_source: dict[tuple[str, ...], list[Row]] = {}
    for r in rows:
        e = r.entry
        by_source.setdefault((e.source, e.url, e.read, e.setup, e.note), []).append(r)
    for (source, url, read, setup, note), group in by_source.items():
        out += [f"{source} ({url}, read {read}). Setup: {setup}. Note: {note}", ""]
        out += [
            f"- **{r.entry.id}**: acceptance {r.entry.acceptance}; outcome {r.entry.outcome}"
            for r in group
        ]
        out.append("")
    if temperature is not None and temperature[1]:
        from engine.validate.temperature import markdown_lines

        out += markdown_lines(*temperature)
    return "\n".join(out).rstrip("\n") + "\n"
