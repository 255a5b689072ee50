"""``spectui acceptance``: the acceptance catalog's rows that match, each setup's fitted model.

The rows of engine/acceptance/data/catalog.toml, filtered: ``--method`` names one method as
every command's ``--method`` does (engine.acceptance.nearest.resolve_method: case, spaces,
hyphens and underscores ignored, or an alias; ``eagle`` is EAGLE, not EAGLE-3, ``eagle3``
is EAGLE-3), ``--target``, ``--draft`` and ``--dataset`` match as case-insensitive
substrings (``llama-3.1-8b`` matches meta-llama/Llama-3.1-8B-Instruct, ``mt-bench`` every
MT-Bench variant). A method the catalog cannot name, or a target, draft or dataset that
matches no row, is one line naming the known ones (exit 2); names that are each known
but share no row are one line saying so (exit 0). The matching rows are grouped by setup
(:func:`engine.acceptance.catalog_fit.setups`), each setup fitted to one registered
acceptance model (:func:`engine.acceptance.catalog_fit.fit_rows`) and shown with each row as
printed, its measure's definition, M converted, the fit's error against it, the fitted M by
K = 1..8 (a table, and a terminal chart when at most CHART_SETUPS_MAX setups match) and
the sources.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import Any

from spectui.errors import UsageError

CURVE_K = tuple(range(1, 9))  # the fitted curve is shown at K = 1..8
CHART_SETUPS_MAX = 4  # a chart per setup for at most this many setups
CHART_SIZE = (60, 14)  # columns, rows of one chart
NAME_SHOWN_MAX = 40  # characters of an unknown name echoed back

# What each of the catalog's measures is (engine.acceptance.catalog.MEASURES; a test checks
# that every measure has its line).
DEFINITIONS = {
    "mean_length": "mean accepted length, bonus included",
    "mean_length/no bonus": "mean accepted length, bonus excluded (M = value + 1)",
    "cumulative_rates": "cumulative per-position rates r_i, accepted at i over drafts "
    "(M = 1 + sum r_i)",
    "conditional_rates": "conditional per-position rates p_i (M = 1 + sum p_1...p_i)",
    "accepted_per_drafted": "accepted per drafted, (M - 1)/K",
}

FILTERS = (("method", "--method"), ("target", "--target"), ("draft", "--draft"))


def add_parser(sub: Any) -> None:
    acceptance = sub.add_parser(
        "acceptance",
        help="the acceptance catalog: published rows, each setup's fitted model, sources",
        description="List the acceptance catalog's rows (published measurements of "
        "acceptance, each with its source) that match the filters, grouped by setup, each "
        "setup with the acceptance model fitted to it: the fitted mean accepted length by K, "
        "its error against each row, and the sources. --method names one method (case, "
        "spaces and hyphens ignored, or an alias: eagle3, ngram, pld, mtp); --target, "
        "--draft and --dataset match substrings (case ignored).",
    )
    acceptance.add_argument("--method", metavar="M", help="a method of the catalog, or an alias")
    acceptance.add_argument("--target", metavar="T", help="part of a target's name")
    acceptance.add_argument("--draft", metavar="D", help="part of a draft's or head's name")
    acceptance.add_argument("--dataset", metavar="X", help="part of a dataset's name")
    acceptance.add_argument("--json", action="store_true", help="print everything as JSON")


def definition(row: Any) -> str:
    """The measure of ``row`` in words."""
    if row.measure == "mean_length" and not row.bonus:
        return DEFINITIONS["mean_length/no bonus"]
    return DEFINITIONS[row.measure]


def _shown(text: str) -> str:
    return text if len(text) <= NAME_SHOWN_MAX else text[:NAME_SHOWN_MAX] + "..."


def _matches(row: Any, args: argparse.Namespace) -> bool:
    if args.method is not None and row.method != args.method:
        return False
    for name in ("target", "draft", "dataset"):
        wanted = getattr(args, name)
        if wanted is not None and wanted.casefold() not in (getattr(row, name) or "").casefold():
            return False
    return True


def _check_names(rows: Sequence[Any], args: argparse.Namespace) -> None:
    """Refuse a name the catalog does not know (one line naming the known ones); a method
    becomes the catalog's own name for it (engine.acceptance.nearest.resolve_method, as
    every command's --method takes it)."""
    from engine.acceptance.nearest import CatalogLookupError, resolve_method

    if args.method is not None:
        try:
            args.method = resolve_method(args.method)
        except CatalogLookupError as error:
            raise UsageError(str(error)) from None
    for name in ("target", "draft", "dataset"):
        wanted = getattr(args, name)
        if wanted is None:
            continue
        known = sorted({getattr(row, name) for row in rows if getattr(row, name)})
        if not any(wanted.casefold() in value.casefold() for value in known):
            raise UsageError(
                f"--{name}: no {name} in the catalog contains {_shown(wanted)!r}; known: "
                + ", ".join(known)
            )


def _filters_text(args: argparse.Namespace) -> str:
    given = [
        f"--{name} {getattr(args, name)}"
        for name in ("method", "target", "draft", "dataset")
        if getattr(args, name) is not None
    ]
    return " ".join(given)


def command(args: argparse.Namespace) -> int:
    from engine.acceptance.catalog import load_catalog
    from engine.acceptance.catalog_fit import fit_rows, setups

    catalog = load_catalog()
    _check_names(catalog.rows, args)
    rows = [row for row in catalog.rows if _matches(row, args)]
    summary = (
        f"{len(catalog.rows)} rows in the catalog ({len(catalog.methods)} methods, "
        f"{len(catalog.targets)} targets, {len(catalog.sources)} sources)"
    )
    if not rows:
        given = _filters_text(args)
        together = " together" if given.count("--") > 1 else ""
        print(f"no catalog row matches {given}{together} (each name is known); {summary}")
        return 0
    groups = setups(rows)
    fits = [fit_rows(group) for group in groups]
    if args.json:
        print(json.dumps(_json(catalog, args, rows, fits), indent=1))
        return 0
    setups_text = "1 setup" if len(groups) == 1 else f"{len(groups)} setups"
    print(f"{summary}; {len(rows)} match, in {setups_text}")
    charts = len(fits) <= CHART_SETUPS_MAX
    for fit in fits:
        print()
        print("\n".join(setup_lines(fit)))
        if charts:
            print(chart_text(fit))
    if not charts:
        print()
        print(
            f"(charts are drawn for at most {CHART_SETUPS_MAX} setups: narrow the filters "
            "to see them)"
        )
    return 0


def _temperature(row: Any) -> str:
    return "temperature not stated" if row.temperature is None else f"T = {row.temperature:g}"


def _k_text(row: Any) -> str:
    from engine.acceptance.catalog_fit import row_k

    k, assumed = row_k(row)
    shape = row.shape if row.tree_nodes is None else f"{row.shape} of {row.tree_nodes} nodes"
    return f"{shape}, K = {k} assumed (not stated)" if assumed else f"{shape}, K = {k}"


def setup_lines(fit: Any) -> list[str]:
    """The lines of one setup: what it is, each row, the fit, the curve, the sources."""
    first = fit.rows[0]
    draft = f", draft {first.draft}" if first.draft else ""
    lines = [
        f"{first.method} on {first.target}{draft}",
        f"  dataset {first.dataset}, {_temperature(first)}",
    ]
    points = {}
    for point in fit.points:
        points.setdefault(point.row_id, []).append(point)
    for row in fit.rows:
        own = next(p for p in points[row.id] if p.positions == p.k)
        hit = "" if row.hit_rate is None else f", hit rate {row.hit_rate:g}"
        lines.append(f"  {row.id}: {_k_text(row)}{hit}")
        lines.append(f"    printed: {row.printed}")
        lines.append(
            f"    {definition(row)}: M = {row.mean_length:.3f}; fitted {own.fitted:.3f} "
            f"({_percent(own.error)})"
        )
        prefixes = points[row.id]
        if len(prefixes) > 1:
            measured = " ".join(f"{p.measured:.3f}" for p in prefixes)
            fitted = " ".join(f"{p.fitted:.3f}" for p in prefixes)
            lines.append(f"    M of positions 1..j: measured {measured}; fitted {fitted}")
    lines.append(f"  fit: {fit.describe()}")
    lines.append("  fitted M by K:")
    lines.append("  K  " + " ".join(f"{k:>5}" for k in CURVE_K))
    lines.append("  M  " + " ".join(f"{fit.mean_length(k):5.2f}" for k in CURVE_K))
    for source, url in _sources(fit.rows):
        lines.append(f"  source: {source}")
        lines.append(f"    {url}")
    return lines


def _percent(error: float) -> str:
    """A relative error as "+0.3 %" (never "-0.0 %")."""
    value = round(100 * error, 1)
    return f"{value + 0.0 if value else 0.0:+.1f} %"


def _sources(rows: Sequence[Any]) -> list[tuple[str, str]]:
    seen: dict[tuple[str, str], None] = {}
    for row in rows:
        seen.setdefault((row.source, row.url), None)
    return list(seen)


def chart_text(fit: Any) -> str:
    """The fitted M by K = 1..8 (a line) and each row's measured M at its K (points), drawn
    with plotext as the other terminal plots are (spectui.plotting), without colour."""
    import plotext as plt

    from spectui.plotting.chart_style import GLYPHS, LINE_MARKER, PLAIN_MARKERS, nice_ticks

    figure = plt.main()
    figure.clear_figure()
    figure = plt.main()
    width, height = CHART_SIZE
    figure._limit_size(False, False)
    figure.plotsize(width, height)
    curve = [fit.mean_length(k) for k in CURVE_K]
    own = [p for p in fit.points if p.positions == p.k]
    measured = [p.measured for p in own]
    low, high = min([*curve, *measured]), max([*curve, *measured])
    figure.plot(list(CURVE_K), curve, marker=LINE_MARKER)
    figure.scatter([p.k for p in own], measured, marker=PLAIN_MARKERS[0])
    ticks = nice_ticks(low, high, 4)
    figure.yticks(ticks, [f"{t:g}" for t in ticks])
    figure.xticks(list(CURVE_K), [str(k) for k in CURVE_K])
    figure.xlabel("K")
    figure.ylabel("M")
    figure.theme("clear")
    text: str = figure.build()
    figure.clear_figure()
    legend = f"  {GLYPHS[LINE_MARKER]} fitted M by K   {PLAIN_MARKERS[0]} measured (row's K)"
    return "\n".join([plt.uncolorize(text), legend])


def _json(catalog: Any, args: argparse.Namespace, rows: Sequence[Any], fits: Sequence[Any]) -> Any:
    from engine.acceptance.catalog_fit import row_k

    def row_data(row: Any) -> dict[str, Any]:
        k, assumed = row_k(row)
        data = {
            name: getattr(row, name)
            for name in row.__dataclass_fields__
            if getattr(row, name) is not None
        }
        return {
            **data,
            "definition": definition(row),
            "mean_length": row.mean_length,
            "fitted_k": k,
            "k_assumed": assumed,
        }

    return {
        "catalog": {
            "rows": len(catalog.rows),
            "methods": list(catalog.methods),
            "targets": len(catalog.targets),
            "sources": len(catalog.sources),
        },
        "filters": {
            name: getattr(args, name)
            for name in ("method", "target", "draft", "dataset")
            if getattr(args, name) is not None
        },
        "rows": [row_data(row) for row in rows],
        "fits": [
            {
                "rows": [row.id for row in fit.rows],
                "model": fit.model,
                "values": fit.values,
                "parameters": fit.parameters,
                "describe": fit.describe(),
                "assumed": fit.assumed,
                "max_error": fit.max_error,
                "errors": [
                    {
                        "row": p.row_id,
                        "k": p.k,
                        "positions": p.positions,
                        "measured": p.measured,
                        "fitted": p.fitted,
                        "error": p.error,
                    }
                    for p in fit.points
                ],
                "mean_length_by_k": {str(k): fit.mean_length(k) for k in CURVE_K},
            }
            for fit in fits
        ],
        "sources": [{"source": s, "url": u} for s, u in _sources(rows)],
    }
