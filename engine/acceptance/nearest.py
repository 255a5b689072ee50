"""The catalog's nearest rows for a method and what a scenario knows about its setup.

:func:`nearest_rows` chooses, from the acceptance catalog (engine.acceptance.catalog), the
rows of one method that are nearest to a scenario's target, draft (or head), dataset and
temperature, and the one setup among them to fit an acceptance model to
(engine.acceptance.catalog_fit). Levels, nearest first (:data:`LEVELS`):

1. "same target and head": the method on the scenario's target, with its draft (when the
   scenario names one; without one, any head the catalog has for that target);
2. "same target": the method on the scenario's target, another draft or head;
3. "same family": the method on a target of the same model family (:func:`model_family`:
   Llama-3.1-8B and Llama-3.3-70B are both llama-3.x);
4. "same method on another target": the method on any target;
5. "nothing": the catalog has no row of the method.

Within the nearest level that has rows: the rows of the asked dataset if there are any,
then, when a temperature is asked, the rows measured at the nearest stated temperature.
Those rows are grouped into setups (engine.acceptance.catalog_fit.setup_key: the same
source series, draft, dataset, temperature, shape and engine; only K differs), and the
setup with the most rows is the one to fit (ties: the nearest temperature, then the
catalog's order).

Names are matched once each: a method to the catalog's :data:`~engine.acceptance.catalog.
METHODS` by :func:`resolve_method` (case, spaces, hyphens and underscores aside, or an
alias of :data:`ALIASES`); a model to a row's target or draft by :func:`model_key`; a
dataset by :func:`dataset_key`.

This module imports no numpy (the fit does, when it fits).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from engine.acceptance.catalog import METHODS, Catalog, Row, convert_length_over
from engine.acceptance.catalog_fit import setup_key

LEVELS = (
    "same target and head",
    "same target",
    "same family",
    "same method on another target",
    "nothing",
)

# Other names of a catalog method, the one table of them. A method's own name needs none:
# case, spaces, hyphens and underscores aside, "eagle3", "EAGLE 3", "ngram" and "mtp" find
# EAGLE-3, n-gram and MTP.
ALIASES = {
    "eagle1": "EAGLE",
    "pld": "n-gram",
    "prompt-lookup": "n-gram",
    "lookup": "n-gram",
    "suffix": "suffix decoding",
    "sps": "draft model",
    "multi-token-prediction": "MTP",
}


class CatalogLookupError(ValueError):
    """A method or dataset the catalog does not know: one line naming the known ones."""

    def __init__(self, flag: str, message: str) -> None:
        super().__init__(f"{flag}: {message}")
        self.flag = flag


def _name_key(text: str) -> str:
    return re.sub(r"[\s_\-]+", "", text.strip().lower())


def method_names() -> tuple[str, ...]:
    """The names :func:`resolve_method` takes: the catalog's methods, then the aliases."""
    return (*METHODS, *ALIASES)


def method_proposer(method: str) -> str | None:
    """The registered proposer that drafts catalog method ``method`` (one of METHODS): the
    first whose ``catalog_method`` it is (engine.proposers), or None (a draft model or head:
    the scenario's proposer stays)."""
    from engine.core.parts import PROPOSER

    found = PROPOSER.where(lambda part: getattr(part, "catalog_method", None) == method)
    return found[0] if found else None


def resolve_method(name: str) -> str:
    """The catalog method (one of METHODS) that ``name`` names, ignoring case, spaces,
    hyphens and underscores, or through :data:`ALIASES`. CatalogLookupError naming the
    known methods and aliases otherwise."""
    key = _name_key(name)
    for method in METHODS:
        if _name_key(method) == key:
            return method
    for alias, method in ALIASES.items():
        if _name_key(alias) == key:
            return method
    shown = name if len(name) <= 40 else name[:40] + "..."
    raise CatalogLookupError(
        "--method",
        f"unknown method {shown!r}; known: {', '.join(METHODS)} (also: {', '.join(ALIASES)})",
    )


# --- Models: one key for a spec id and a Hugging Face id -------------------------------

_PARENS = re.compile(r"\([^)]*\)")
_QUANT = re.compile(
    r"\b(?:fp8|fp16|bf16|nvfp4|mxfp4|int4|int8|awq|gptq|gguf|q\d+(?:_[a-z0-9]+)*)\b"
)
_VERSION = re.compile(r"(?<=[-_ ])v\d+(?:\.\d+)+\b")  # a release's -v1.3 (Vicuna)
_DATE = re.compile(r"(?<=[-_ ])\d{4}\b")  # a checkpoint's date (DeepSeek-V3-0324)
_TOKEN = re.compile(r"[a-z]+|\d+(?:\.\d+)*")
# Words that name a variant of the same weights' use, not another model.
_VARIANT_WORDS = frozenset({"instruct", "it", "chat", "hf", "base"})
_SIZE_UNITS = frozenset({"b", "m", "k", "x"})  # 8b, 160m, 8x7b: a size, not a version


def _model_tokens(name: str) -> list[str]:
    text = _PARENS.sub(" ", name.lower()).rsplit("/", 1)[-1]  # no owner, nothing in (...)
    text = _DATE.sub(" ", _VERSION.sub(" ", _QUANT.sub(" ", text)))
    tokens = [t for t in _TOKEN.findall(text) if t not in _VARIANT_WORDS]
    if tokens[:1] == ["meta"]:  # Meta-Llama-3-8B: the maker's name before the model's
        tokens = tokens[1:]
    return tokens


def model_key(name: str) -> str:
    """One key for a model's names: a spec id (``llama-3.1-8b``) and a Hugging Face id
    (``meta-llama/Llama-3.1-8B-Instruct``) of the same model have the same key. Read
    without the owner, anything in parentheses, case, separators, a quantisation
    (FP8, NVFP4, Q8_0), a release's version (-v1.3), a checkpoint's date (-0324), the
    words instruct, it, chat, hf, base, and a leading "Meta"."""
    return "-".join(_model_tokens(name))


def model_family(name: str) -> str:
    """A model's family: its name's leading words and, when a number follows them that is
    not a size, that number's whole part, "llama-3.x" for Llama-3.1-8B, Llama-3.3-70B and
    Meta-Llama-3-8B, "qwen-3.x" for Qwen3-8B and Qwen3-30B-A3B, "deepseek-3.x" for
    DeepSeek-V3 ("V3": a version); just the words when a size follows them ("vicuna" for
    Vicuna-7B and 33B, "mixtral" for Mixtral-8x7B). "" for a name without words."""
    tokens = _model_tokens(name)
    count = 0
    while count < len(tokens) and tokens[count].isalpha():
        count += 1
    words, rest = tokens[:count], tokens[count:]
    if len(words) > 1 and words[-1] == "v":  # DeepSeek-V3: "v" marks the version
        words = words[:-1]
    family = "-".join(words)
    if family and rest and rest[0][0].isdigit():
        unit = rest[1] if len(rest) > 1 else ""
        if unit not in _SIZE_UNITS:
            return f"{family}-{rest[0].split('.')[0]}.x"
    return family


def dataset_key(name: str) -> str:
    """One key for a dataset's names: case, separators and a parenthesised detail aside
    ("MT-Bench", "MT-bench" and "MT-Bench (80 questions)" are one dataset)."""
    return re.sub(r"[^a-z0-9]+", "", _PARENS.sub(" ", name.lower()))


def dataset_names(catalog: Catalog) -> tuple[str, ...]:
    """The catalog's datasets, one name each (its first spelling, without a parenthesised
    detail), in the catalog's order."""
    out: dict[str, str] = {}
    for row in catalog.rows:
        out.setdefault(dataset_key(row.dataset), _PARENS.sub("", row.dataset).strip())
    return tuple(v for k, v in out.items() if k)


def resolve_dataset(catalog: Catalog, name: str) -> str:
    """The dataset key of ``name`` when some row of ``catalog`` has it; CatalogLookupError
    naming the known datasets otherwise."""
    key = dataset_key(name)
    if key and any(dataset_key(row.dataset) == key for row in catalog.rows):
        return key
    shown = name if len(name) <= 40 else name[:40] + "..."
    raise CatalogLookupError(
        "--dataset", f"unknown dataset {shown!r}; known: {'; '.join(dataset_names(catalog))}"
    )


# --- The choice ------------------------------------------------------------------------


def _level(row: Row, target: str | None, draft: str | None) -> int:
    if target is not None and model_key(row.target) == model_key(target):
        if draft is None or (row.draft is not None and model_key(row.draft) == model_key(draft)):
            return 0
        return 1
    family = model_family(target) if target is not None else ""
    if family and model_family(row.target) == family:
        return 2
    return 3


def _distance(row: Row, temperature: float | None) -> float:
    if temperature is None:
        return 0.0
    return float("inf") if row.temperature is None else abs(row.temperature - temperature)


@dataclass(frozen=True)
class Nearest:
    """The rows chosen for a method (one setup; empty at level "nothing"), their level
    (one of :data:`LEVELS`), and one line saying which rows, their sources and how near."""

    method: str
    level: str
    rows: tuple[Row, ...]
    description: str
    why: str  # why this setup among the level's
    dataset_matched: bool | None  # None: no dataset asked
    candidates: int  # the method's rows at this level

    @property
    def found(self) -> bool:
        return bool(self.rows)


def _short_source(row: Row) -> str:
    """Who and what, from a row's ``source``: up to its first quotation, parenthesis or
    colon, without a commit (its ``url`` has it)."""
    text = re.split(r", '| \(|: ", row.source, maxsplit=1)[0]
    text = re.sub(r" at commit [0-9a-f]{40}", "", text)
    return text if len(text) <= 90 else text[:87] + "..."


def _ks(rows: Iterable[Row]) -> str:
    ks = sorted({row.k for row in rows if row.k is not None})
    if not ks:
        return "K not stated"
    if len(ks) > 2 and ks == list(range(ks[0], ks[-1] + 1)):
        return f"K {ks[0]}..{ks[-1]}"
    return "K " + ",".join(str(k) for k in ks)


def nearest_rows(
    catalog: Catalog,
    method: str,
    *,
    target: str | None = None,
    draft: str | None = None,
    dataset: str | None = None,
    temperature: float | None = None,
) -> Nearest:
    """The catalog's nearest rows of ``method`` (a name :func:`resolve_method` takes) for a
    scenario's ``target`` and ``draft`` (spec or Hugging Face ids), ``dataset`` and
    ``temperature`` (None: not known), as the module docstring describes."""
    name = resolve_method(method)
    asked = None if dataset is None else resolve_dataset(catalog, dataset)
    rows = [row for row in catalog.rows if row.method == name]
    if not rows:
        return Nearest(
            name,
            LEVELS[-1],
            (),
            f"{name}: nothing in the catalog (no row of this method)",
            "",
            None if asked is None else False,
            0,
        )
    best = min(_level(row, target, draft) for row in rows)
    at_level = [row for row in rows if _level(row, target, draft) == best]
    level_setups = len({setup_key(row) for row in at_level})
    chosen, narrowed = at_level, []
    matched: bool | None = None
    if asked is not None:
        same = [row for row in at_level if dataset_key(row.dataset) == asked]
        matched = bool(same)
        if same and len(same) < len(chosen):
            narrowed.append(f"of dataset {dataset}")
        chosen = same or at_level
    if temperature is not None:
        nearest_t = min(_distance(row, temperature) for row in chosen)
        kept = [row for row in chosen if _distance(row, temperature) == nearest_t]
        if len(kept) < len(chosen):
            narrowed.append("at the nearest temperature")
        chosen = kept
    setups: dict[tuple[object, ...], list[Row]] = {}
    for row in chosen:
        setups.setdefault(setup_key(row), []).append(row)
    order = list(setups)

    def rank(key: tuple[object, ...]) -> tuple[int, float]:
        return -len(setups[key]), min(_distance(row, temperature) for row in setups[key])

    pick = min(order, key=lambda key: (*rank(key), order.index(key)))
    picked = tuple(setups[pick])
    tied = sum(rank(key) == rank(pick) for key in order)
    why = _why(level_setups, len(setups), narrowed, len(picked), tied)
    return Nearest(
        name,
        LEVELS[best],
        picked,
        _describe(name, LEVELS[best], picked, why, dataset, matched, temperature),
        why,
        matched,
        len(at_level),
    )


def _why(level_setups: int, setups: int, narrowed: list[str], rows: int, tied: int) -> str:
    """Why the setup chosen is the one: alone at its level, alone once narrowed to the
    dataset and temperature asked, or the one with the most rows (the first in the
    catalog's order among ties)."""
    where = "".join(f" {text}" for text in narrowed)
    if setups == 1:
        if level_setups == 1:
            return "the only setup at this level"
        return f"the only setup{where} (of {level_setups} at this level)"
    if tied == setups:
        each = f"{rows} row{'s' if rows != 1 else ''} each"
        return f"{setups} setups{where} of {each}: the first in the catalog"
    text = f"the most rows of {setups} setups{where}"
    return text + (f", the first in the catalog of {tied} tied" if tied > 1 else "")


def _describe(
    method: str,
    level: str,
    rows: tuple[Row, ...],
    why: str,
    dataset: str | None,
    matched: bool | None,
    temperature: float | None,
) -> str:
    first = rows[0]
    count = f"{len(rows)} row{'s' if len(rows) != 1 else ''}"
    of = f"{count} of {first.series}" if first.series else f"row {first.id}"
    head = f", {first.draft}" if first.draft else ""
    temp = "T not stated" if first.temperature is None else f"T {first.temperature:g}"
    setup = f"{first.target}{head}, {first.dataset}, {temp}, {first.shape} {_ks(rows)}"
    notes = [why]
    if matched is False:
        notes.append(f"no row of dataset {dataset!r} at this level")
    if temperature is not None and first.temperature != temperature:
        notes.append(f"none at T {temperature:g}")
    return (
        f"{method} from the catalog, {level}: {of} ({setup}; "
        f"{_short_source(first)}, {first.url}; {', '.join(notes)})"
    )


# --- The nearest rows' fit, for a scenario ---------------------------------------------


@dataclass(frozen=True)
class HitRate:
    """A model-free proposer's hit rate for :func:`catalog_acceptance`: ``value`` and where
    it comes from (``source``, in words), and whether a flag gave it (``given``: it wins
    over the rows'); else the rows' ``hit_rate`` where given, else ``value``, assumed."""

    value: float
    source: str
    given: bool = False


def _given_a_hit(rows: tuple[Row, ...], hit: HitRate) -> tuple[tuple[Row, ...], float, str]:
    """The rows as lengths given a hit (a row over all steps converted at the hit rate by
    engine.acceptance.catalog.convert_length_over), the hit rate, and one clause saying
    both."""
    from dataclasses import replace

    stated = [row.hit_rate for row in rows if row.hit_rate is not None]
    if hit.given or not stated:
        h = hit.value
        if hit.given:
            said = f"hit rate {h:g} {hit.source}"
        else:
            said = f"hit rate {h:g} assumed: {hit.source}; the rows give none"
    else:
        h = sum(stated) / len(stated)
        which = [row.id for row in rows if row.hit_rate is not None]
        said = f"hit rate {h:g} from the rows ({', '.join(which)})"
    out, converted = [], []
    for row in rows:
        if row.length_over != "all steps":
            out.append(row)
            continue
        m_hit = convert_length_over(row.mean_length, h, "all steps", "drafting steps")
        converted.append(f"{row.id} {row.mean_length:g} -> {m_hit:.4f}")
        value = m_hit if row.bonus else m_hit - 1.0
        out.append(replace(row, value=value, length_over="drafting steps"))
    if converted:
        how = (
            "given a hit: the rows' mean length over all steps converted, M_hit = "
            f"1 + (M_all - 1) / h at h = {h:g} ({'; '.join(converted)})"
        )
    else:
        how = "given a hit: the rows count the drafting steps (no conversion)"
    return tuple(out), h, f"{how}; {said}"


@dataclass(frozen=True)
class CatalogAcceptance:
    """The acceptance a scenario takes from the catalog (:func:`catalog_acceptance`):
    ``nearest`` (the rows), ``values`` (the fit's scenario values, ``draft_model`` first;
    empty when nothing is near or the rows could not be fitted), ``text`` (one line: the
    fitted model, its largest error and the rows with their sources and how near; or that
    nothing is near, or why the rows were not fitted) and ``assumed`` (what the fit
    assumed, or None)."""

    nearest: Nearest
    values: dict[str, object]
    text: str
    assumed: str | None = None
    hit_rate: float | None = None  # given a hit: the hit rate the rows were converted at

    @property
    def found(self) -> bool:
        return bool(self.values)


def catalog_acceptance(
    catalog: Catalog,
    method: str,
    scenario: Any,
    *,
    target: str | None = None,
    draft: str | None = None,
    dataset: str | None = None,
    temperature: float | None = None,
    hit: HitRate | None = None,
) -> CatalogAcceptance:
    """The fit (engine.acceptance.catalog_fit.fit_rows) of :func:`nearest_rows`, as
    ``scenario`` (a SpecConfig) takes it: ``scenario.replace(**values)``. With ``hit`` (a
    model-free proposer drafts), the fit is of the acceptance given a hit: each row over
    all steps converted at the hit rate (the rows' where they give one, else ``hit``'s,
    assumed), said in ``text``; ``values`` then holds the rows' hit rate when they give
    one and no flag did."""
    from engine.acceptance.catalog_fit import fit_rows
    from engine.core.parts import ACCEPTANCE

    nearest = nearest_rows(
        catalog, method, target=target, draft=draft, dataset=dataset, temperature=temperature
    )
    if not nearest.found:
        return CatalogAcceptance(nearest, {}, nearest.description)
    rows, h, given_a_hit = nearest.rows, None, ""
    try:
        if hit is not None:
            rows, h, given_a_hit = _given_a_hit(nearest.rows, hit)
            given_a_hit = f"; {given_a_hit}"
        fit = fit_rows(rows)
    except ValueError as err:
        return CatalogAcceptance(
            nearest, {}, f"{nearest.description}{given_a_hit}; not fitted ({err})", None, h
        )
    values = dict(fit.values)
    if hit is not None and h is not None and not hit.given and h != hit.value:
        values["proposer.hit_rate"] = h  # the rows' own
    fitted = scenario.replace(**values)
    label = ACCEPTANCE.of(fitted).label(fitted)
    error = max((abs(point.error) for point in fit.errors), default=0.0)
    text = f"{label} fitted within {100 * error:.1f} % to {nearest.description}{given_a_hit}"
    return CatalogAcceptance(nearest, values, text, fit.assumed, h)
