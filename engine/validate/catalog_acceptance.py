"""The acceptance of an entry whose source reports none: the catalog's (docs/validation.md,
"Catalog acceptance").

An entry of the "catalog acceptance" group (:func:`needs_catalog`: its source reports no
acceptance for the run, ``acceptance_assumed`` or no ``mean_length`` / ``draft_acceptance``
at all) is predicted with the mean accepted length M that the acceptance catalog
(engine/acceptance/data/catalog.toml) gives for its setup, never with a figure of its own
source:

1. every catalog row of the entry's own source is left out (:func:`same_publication`: the
   same address, or the same publication at another address: an arXiv paper by its number,
   a GitHub issue or pull request by its repository and number, a file of a repository by
   its path at any commit);
2. of the rest, the nearest rows for the entry's method, target, draft, dataset and
   temperature (:func:`engine.acceptance.nearest.nearest_rows`: same target and head, same
   target, same family, the method on another target);
3. one registered acceptance model fitted to them
   (:func:`engine.acceptance.catalog_fit.fit_rows`), and its M at the entry's K (a chain);
   for a tree, at the tree's depth when the rows state theirs, else at the K the rows were
   fitted at (their own M: the catalog's tree rows measure their own tree, and how M changes
   with a tree's shape is not modelled).

The same rule for every entry: no entry and no source has a choice of its own. The entry's
own table fields (``mean_length`` assumed from another run, before the catalog) predict
nothing of the entry; they are kept for the calibration of the other entries of its series
that state their own acceptance (engine.validate.report.rows_of).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from engine.validate.table import Entry

if TYPE_CHECKING:
    from engine.acceptance.catalog import Catalog, Row
    from engine.acceptance.catalog_fit import CatalogFit
    from engine.acceptance.nearest import Nearest

CATALOG_GROUP = "catalog acceptance"

_ARXIV_URL = re.compile(r"arxiv\.org/(?:abs|pdf|html)/(\d{4}\.\d{4,5})")
_ARXIV_TEXT = re.compile(r"arxiv(?:\.org/(?:abs|pdf|html)/|[: ]\s*)(\d{4}\.\d{4,5})")
_GITHUB = re.compile(
    r"^https?://(?:www\.)?github\.com/([^/#?]+)/([^/#?]+)"
    r"(?:/(?:issues|pull|pulls|discussions)/(\d+)|/(?:blob|tree|raw)/[^/#?]+/([^#?]*))?"
)
_PARENS = re.compile(r"\s*\([^)]*\)")


def publication_keys(url: str, source: str = "") -> frozenset[tuple[str, ...]]:
    """What names one publication, from an address and a source's words: ``("arxiv", id)``
    for an arXiv paper (in the address or named in the words: "arXiv:2401.15077v3"),
    ``("github", repo, "#N")`` for an issue or pull request (one numbering), ``("github",
    repo, path)`` for a file at any commit, ``("github", repo)`` for a whole repository,
    else ``("url", address)`` without scheme, query, fragment and trailing slash."""
    text = url.strip().lower()
    keys: set[tuple[str, ...]] = set()
    github = _GITHUB.match(text)
    arxiv = _ARXIV_URL.search(text)
    if github:
        owner, repo, number, path = github.groups()
        where = f"{owner}/{repo.removesuffix('.git')}"
        if number:
            keys.add(("github", where, f"#{number}"))
        elif path:
            keys.add(("github", where, path.strip("/")))
        else:
            keys.add(("github", where))
    elif arxiv:
        keys.add(("arxiv", arxiv.group(1)))
    else:
        bare = re.sub(r"^[a-z]+://(?:www\.)?", "", text).split("#")[0].split("?")[0]
        keys.add(("url", bare.rstrip("/")))
    keys.update(("arxiv", found) for found in _ARXIV_TEXT.findall(source.lower()))
    return frozenset(keys)


def same_publication(a: frozenset[tuple[str, ...]], b: frozenset[tuple[str, ...]]) -> bool:
    """Whether two sets of :func:`publication_keys` name one publication: a key in common,
    or a whole repository and a file or thread of it."""
    if a & b:
        return True
    repos_a = {k[1] for k in a if k[0] == "github" and len(k) == 2}
    repos_b = {k[1] for k in b if k[0] == "github" and len(k) == 2}
    return any(k[0] == "github" and k[1] in repos_a for k in b) or any(
        k[0] == "github" and k[1] in repos_b for k in a
    )


def own_rows(entry: Entry, catalog: Catalog) -> tuple[Row, ...]:
    """The catalog rows of ``entry``'s own source (the same address or publication)."""
    mine = publication_keys(str(entry.url), str(entry.source))
    return tuple(
        row for row in catalog.rows if same_publication(mine, publication_keys(row.url, row.source))
    )


def needs_catalog(entry: Entry) -> bool:
    """Whether ``entry`` is predicted with the catalog's acceptance: a speedup, not pending,
    whose source reports no acceptance for the run (``acceptance_assumed``, or none at
    all)."""
    if entry.pending or entry.quantity != "speedup":
        return False
    return entry.assumed or entry.tokens_per_cycle is None


@dataclass(frozen=True)
class EntryAcceptance:
    """An entry's acceptance from the catalog: ``mean_length`` (M, bonus included; None when
    the catalog gives none, ``why_none`` says why) at ``k``, the ``nearest`` rows and their
    ``fit``, the ``excluded`` rows (the entry's own source) and a note on the dataset."""

    method: str
    k: int | None
    mean_length: float | None
    nearest: Nearest | None = None
    fit: CatalogFit | None = None
    excluded: tuple[str, ...] = ()
    dataset_note: str | None = None
    why_none: str = ""
    at_fitted_k: bool = False  # a tree of unstated depth: M at the K the rows were fitted at

    @property
    def rows(self) -> tuple[str, ...]:
        """The ids of the catalog rows used."""
        return () if self.nearest is None else tuple(row.id for row in self.nearest.rows)

    @property
    def source_text(self) -> str:
        """One line, M aside: the fit, the rows with their sources and how near, what was
        left out; or why there is no M."""
        if self.mean_length is None or self.fit is None or self.nearest is None:
            return self.why_none
        parts = [self.fit.describe(), self.nearest.description]
        if self.at_fitted_k:
            parts.append("a tree: M at the K the rows were fitted at, their own")
        if self.dataset_note:
            parts.append(self.dataset_note)
        count = len(self.excluded)
        if count:
            parts.append(f"{count} row{'s' if count != 1 else ''} of its own source left out")
        return "; ".join(parts)

    @property
    def text(self) -> str:
        """``M 2.300 at K = 3: <source_text>``, or why there is no M."""
        if self.mean_length is None:
            return self.why_none
        return f"M {self.mean_length:.3f} at K = {self.k}: {self.source_text}"


def _method(catalog_method: str) -> str | None:
    from engine.acceptance.nearest import CatalogLookupError, resolve_method

    for name in (catalog_method, _PARENS.sub("", catalog_method)):
        try:
            return resolve_method(name)
        except CatalogLookupError:
            continue
    return None


def _entry_k(entry: Entry, fit: CatalogFit) -> tuple[int, bool]:
    """The K the entry's M is read at, and whether it is the rows' fitted K (a tree whose
    rows state no depth)."""
    from engine.acceptance.catalog_fit import row_k

    if not entry.is_tree:
        return int(entry.k), False
    if all(row.k is not None for row in fit.rows) and int(entry.draft_passes or 0) >= 1:
        return int(entry.draft_passes), False
    return row_k(fit.rows[0])[0], True


@lru_cache(maxsize=256)
def _fit(rows: tuple[Row, ...]) -> CatalogFit:
    """:func:`engine.acceptance.catalog_fit.fit_rows` of ``rows``, once per set of rows (the
    entries of one series share theirs)."""
    from engine.acceptance.catalog_fit import fit_rows

    return fit_rows(rows)


@lru_cache(maxsize=1024)
def catalog_acceptance_of(entry: Entry, catalog: Catalog | None = None) -> EntryAcceptance:
    """``entry``'s acceptance from ``catalog`` (the shipped one by default), as the module
    docstring describes."""
    from engine.acceptance.catalog import Catalog, load_catalog
    from engine.acceptance.nearest import CatalogLookupError, nearest_rows, resolve_dataset

    catalog = load_catalog() if catalog is None else catalog
    method = _method(str(entry.method))
    if method is None:
        return EntryAcceptance(
            str(entry.method), None, None, why_none=f"method {entry.method!r}: not in the catalog"
        )
    excluded = own_rows(entry, catalog)
    left = tuple(row for row in catalog.rows if row not in excluded)
    if not left:
        return EntryAcceptance(
            method, None, None, excluded=tuple(r.id for r in excluded), why_none="no other row"
        )
    others = Catalog(left)
    dataset, note = entry.dataset, None
    if dataset is not None:
        try:
            resolve_dataset(others, dataset)
        except CatalogLookupError:
            dataset, note = None, f"no catalog row of dataset {entry.dataset!r}"
    nearest = nearest_rows(
        others,
        method,
        target=entry.target,
        draft=entry.draft,
        dataset=dataset,
        temperature=entry.temperature,
    )
    ids = tuple(row.id for row in excluded)
    if not nearest.found:
        return EntryAcceptance(
            method, None, None, nearest, excluded=ids, why_none=nearest.description
        )
    try:
        fit = _fit(nearest.rows)
    except ValueError as error:
        return EntryAcceptance(
            method, None, None, nearest, excluded=ids, why_none=f"not fitted ({error})"
        )
    k, at_fitted = _entry_k(entry, fit)
    return EntryAcceptance(
        method,
        k,
        1.0 if k == 0 else fit.mean_length(k),
        nearest,
        fit,
        ids,
        note,
        at_fitted_k=at_fitted,
    )


def with_catalog_acceptance(entry: Entry, acceptance: EntryAcceptance) -> Entry:
    """``entry`` as it is predicted: its table acceptance replaced by the catalog's M (none
    when the catalog gives none)."""
    values = {
        name: value
        for name, value in entry.values.items()
        if name not in ("mean_length", "draft_acceptance")
    }
    if acceptance.mean_length is not None:
        values["mean_length"] = acceptance.mean_length
    return Entry(values)


@lru_cache(maxsize=16)
def predicted_table(
    table: tuple[Entry, ...], catalog: Catalog | None = None
) -> tuple[tuple[Entry, ...], dict[str, EntryAcceptance]]:
    """``table`` with each entry of the catalog group as it is predicted
    (:func:`with_catalog_acceptance`), and those entries' acceptances by id. Cached: an
    entry under load is simulated once per substituted entry."""
    accepted = {e.id: catalog_acceptance_of(e, catalog) for e in table if needs_catalog(e)}
    out = tuple(
        with_catalog_acceptance(e, accepted[e.id]) if e.id in accepted else e for e in table
    )
    return out, accepted


def runs_text(entries: Sequence[Entry], accepted: dict[str, EntryAcceptance]) -> list[str]:
    """One line per run of consecutive entries whose acceptance comes from the same rows and
    fit: ``a to b (3 entries): M 2.088 (K = 2), 2.398 (K = 4), 2.455 (K = 7): <source_text>``
    (``M 2.300 at K = 3: ...`` when they share one)."""
    runs: list[list[Entry]] = []
    for e in entries:
        if runs and accepted[runs[-1][-1].id].source_text == accepted[e.id].source_text:
            runs[-1].append(e)
        else:
            runs.append([e])
    lines = []
    for run in runs:
        first = accepted[run[0].id]
        if len(run) > 2:
            name = f"{run[0].id} to {run[-1].id} ({len(run)} entries)"
        else:
            name = " and ".join(e.id for e in run)
        if first.mean_length is None:
            lines.append(f"{name}: no M: {first.why_none}")
            continue
        pairs = list(dict.fromkeys((a.k, a.mean_length) for a in (accepted[e.id] for e in run)))
        if len(pairs) == 1:
            ms = f"M {pairs[0][1]:.3f} at K = {pairs[0][0]}"
        else:
            ms = "M " + ", ".join(f"{m:.3f} (K = {k})" for k, m in pairs)
        lines.append(f"{name}: {ms}: {first.source_text}")
    return lines
