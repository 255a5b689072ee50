"""distribution: acceptance computed from target and draft distributions over a vocabulary
(engine.acceptance.rules; docs/model.md, "Acceptance from distributions").

The family: a cycle is easy or hard (hard with P = ``hard_frac``, for all its positions);
each difficulty has ``family_size`` targets (contexts), Zipf over ``vocab`` tokens, whose
entropies are the difficulty's (``entropy_easy``, ``entropy_hard`` bits) times
``exp(0.15 z)`` for a standard normal z per context (from a fixed seed: the family is the
same every run). The draft is the target with a mismatch (``mismatch``: temperature, noise
or truncation, of ``mismatch_size``), which grows with depth: at position i it is
``mismatch_size x (1 + mismatch_growth (min(i, 64) - 1))`` (truncation keeps that many
times fewer tokens). Both sides sample after ``temperature``, ``top_k``, ``top_p`` and
``min_p``, each side the ones ``sampler`` gives it in its order (engine.acceptance.samplers);
the ``accept_rule`` decides (rules.RULES).

Position i's acceptance in difficulty g is the mean over its contexts of the rule's
acceptance probability (computed, not sampled: in closed form for a temperature or
truncation mismatch, engine.acceptance.power_law); the cycle's survival is
``P(n >= j) = sum_g P(g) prod_{i <= j} a_{g,i}``, so the conditional rates need not fall
geometrically (a cycle that got far is more likely easy).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from functools import lru_cache
from typing import TYPE_CHECKING, Any, NamedTuple

from engine.acceptance.base import AcceptanceModel
from engine.acceptance.rule_names import MISMATCHES, RULES
from engine.acceptance.samplers import SAMPLERS
from engine.acceptance.samplers import help_text as sampler_help
from engine.core.config import field
from engine.core.fields import ConfigError
from engine.core.parts import ACCEPTANCE

if TYPE_CHECKING:
    import numpy as np

VOCAB_MAX = 1 << 18
CONTEXTS_MAX = 4096
JITTER = 0.15  # the log-sd of a context's entropy around its difficulty's
FAMILY_SEED = 0xD157
ENTRIES_MAX = 1 << 25  # family_size x vocab: the work of one position (and its bound)
GROWTH_DEPTH = 64  # the mismatch grows to this position and stays


def _field(key: str, default: Any, label: str, help: str, **spec: Any) -> Any:
    return field(f"acceptance.{key}", default, label=label, help=f"distribution: {help}",
                 seed_key=True, **spec)  # fmt: skip


@ACCEPTANCE.register
class FromDistributions(AcceptanceModel):
    name = "distribution"
    description = (
        "acceptance computed from Zipf target and mismatched draft distributions, by rule "
        "(rejection, one_hot, exact_match, greedy, typical), after temperature and top-k/p"
    )
    fields = (
        _field("accept_rule", "rejection", "rule", "the acceptance rule", kind="choice",
               choices=RULES),
        _field("vocab", 32000, "vocab", "tokens in the vocabulary", kind="int", low=2,
               high=VOCAB_MAX),
        _field("entropy_easy", 1.5, "H easy", "an easy context's target entropy (bits)",
               kind="number", low=0.01, high=18.0),
        _field("entropy_hard", 5.0, "H hard", "a hard context's target entropy (bits)",
               kind="number", low=0.01, high=18.0),
        _field("hard_frac", 0.3, "hard frac", "P(a cycle is hard)", kind="prob"),
        _field("mismatch", "temperature", "mismatch", "how the draft differs from the target",
               kind="choice", choices=MISMATCHES),
        _field("mismatch_size", 1.3, "mismatch", "the draft's temperature ratio (> 0), its "
               "logits' noise sd (<= 20) or the tokens it keeps (>= 1)", kind="number",
               low=0.0, high=float(VOCAB_MAX)),
        _field("mismatch_growth", 0.0, "growth", "the mismatch's growth per position",
               kind="number", low=0.0, high=10.0),
        _field("temperature", 1.0, "temp", "sampling temperature of both sides (0: argmax)",
               kind="number", low=0.0, high=10.0),
        _field("top_k", 0, "top k", "keep the k most probable tokens (0: off)", kind="int",
               low=0, high=VOCAB_MAX),
        _field("top_p", 1.0, "top p", "keep the smallest set holding this mass (1: off)",
               kind="number", low=0.0, high=1.0, low_open=True),
        _field("min_p", 0.0, "min p", "drop tokens below min_p x the top one's probability",
               kind="number", low=0.0, high=0.99),
        _field("sampler", "hf", "sampler", "whose sampling transforms, in whose order "
               f"(engine/acceptance/samplers.py): {sampler_help()}", kind="choice",
               choices=tuple(SAMPLERS)),
        _field("dist_file", "", "dist file", "target and draft distributions from a file (NPY "
               "or CSV, engine/acceptance/dist_file.py) instead of the Zipf family", kind="path",
               optional=True),
        _field("family_size", 64, "contexts", "contexts of each difficulty", kind="int", low=1,
               high=CONTEXTS_MAX),
    )  # fmt: skip

    def params_text(self, config: Any) -> str:
        sampling = (
            f"{config.accept_rule}, temperature {config.temperature:g}, top_k {config.top_k}, "
            f"top_p {config.top_p:g}, min_p {config.min_p:g} as {config.sampler}"
        )
        if config.dist_file:
            return f"{sampling}, from {config.dist_file}"
        return (
            f"{sampling}; Zipf over {config.vocab} tokens, {config.entropy_easy:g}/"
            f"{config.entropy_hard:g} bits (hard {config.hard_frac:g}), {config.mismatch} "
            f"{config.mismatch_size:g} (growth {config.mismatch_growth:g}), "
            f"{config.family_size} contexts"
        )

    def position_probs(self, config: Any, k: int) -> np.ndarray:
        import numpy as np

        check(config)
        return np.array(_conditional(family_of(config), difficulty_weights(config), k))

    def survival(self, config: Any, k: int) -> np.ndarray:
        """``P(n >= j)``, j = 0..k, of the family (module docstring)."""
        import numpy as np

        check(config)
        return np.array(_survival(family_of(config), difficulty_weights(config), k))


@lru_cache(maxsize=256)
def _conditional(family: Family, weights: tuple[float, float], k: int) -> tuple[float, ...]:
    """The conditional rates ``P(n >= j) / P(n >= j - 1)``, j = 1..k (0 past a survival of
    0), clipped to [0, 1]: cached, as the reference engine asks for them token by token."""
    import numpy as np

    survival = np.array(_survival(family, weights, k))
    with np.errstate(divide="ignore", invalid="ignore"):
        rates = np.where(survival[:-1] > 0, survival[1:] / survival[:-1], 0.0)
    return tuple(np.clip(rates, 0.0, 1.0).tolist())


@lru_cache(maxsize=256)
def _survival(family: Family, weights: tuple[float, float], k: int) -> tuple[float, ...]:
    import numpy as np

    out = np.zeros(k + 1)
    for g, weight in enumerate(weights):
        if weight == 0.0:
            continue
        rates = [position_rate(family, g, _depth(family, i)) for i in range(1, k + 1)]
        out += weight * np.concatenate(([1.0], np.cumprod(rates)))
    return tuple(out.tolist())


def difficulty_weights(config: Any) -> tuple[float, float]:
    """P(easy), P(hard): a file's contexts are one difficulty."""
    if config.dist_file:
        return (1.0, 0.0)
    return (1.0 - config.hard_frac, config.hard_frac)


def check(config: Any) -> None:
    """The cross-field bounds a field's own range cannot state, in one line each."""
    if config.dist_file:
        from engine.acceptance.dist_file import read_distributions, vocabulary

        vocab = vocabulary(read_distributions(config.dist_file))
        if config.top_k > vocab:
            raise ConfigError(
                "acceptance.top_k", f"must be at most the file's vocabulary ({vocab})"
            )
        return
    most = math.log2(config.vocab)
    for key, value in (
        ("entropy_easy", config.entropy_easy),
        ("entropy_hard", config.entropy_hard),
    ):
        if value >= most:
            raise ConfigError(
                f"acceptance.{key}",
                f"must be below log2(vocab) = {most:.4g} bits (the entropy of a uniform "
                f"target over {config.vocab} tokens)",
            )
    size = config.mismatch_size
    if config.mismatch == "temperature" and not 0.05 <= size <= 20.0:
        raise ConfigError("acceptance.mismatch_size", "a temperature ratio must be in [0.05, 20]")
    if config.mismatch == "noise" and not size <= 20.0:
        raise ConfigError("acceptance.mismatch_size", "a noise sd must be in [0, 20]")
    if config.mismatch == "truncation" and not (1 <= size <= config.vocab and size == int(size)):
        raise ConfigError(
            "acceptance.mismatch_size",
            f"the tokens a truncated draft keeps must be a whole number in [1, {config.vocab}]",
        )
    if config.top_k > config.vocab:
        raise ConfigError("acceptance.top_k", f"must be at most vocab ({config.vocab})")
    if config.family_size * config.vocab > ENTRIES_MAX:
        raise ConfigError(
            "acceptance.family_size",
            f"family_size x vocab must be at most {ENTRIES_MAX:,} (here "
            f"{config.family_size * config.vocab:,}): use fewer contexts or a smaller vocabulary",
        )


def _depth(family: Family, position: int) -> int:
    """The position whose contexts ``position`` has: a file's own up to its last; else
    itself up to GROWTH_DEPTH, the same at every position when the mismatch does not grow."""
    if family.source:
        from engine.acceptance.dist_file import read_distributions

        return min(position, read_distributions(family.source[0]).shape[0])
    return min(position, GROWTH_DEPTH) if family.growth > 0 else 1


class Family(NamedTuple):
    """What a position's rate depends on (a cache key): the fields that make the contexts,
    the rule, the sampling transforms, and a distributions file's name and stamp."""

    vocab: int
    entropy_easy: float
    entropy_hard: float
    mismatch: str
    size: float
    growth: float
    rule: str
    temperature: float
    top_k: int
    top_p: float
    min_p: float
    sampler: str
    contexts: int
    source: tuple[Any, ...]


def family_of(config: Any) -> Family:
    return Family(
        int(config.vocab),
        float(config.entropy_easy),
        float(config.entropy_hard),
        str(config.mismatch),
        float(config.mismatch_size),
        float(config.mismatch_growth),
        str(config.accept_rule),
        float(config.temperature),
        int(config.top_k),
        float(config.top_p),
        float(config.min_p),
        str(config.sampler),
        int(config.family_size),
        _source(config.dist_file),
    )


def context_count(family: Family) -> int:
    """The contexts of one difficulty: the file's, else ``family_size``."""
    if family.source:
        from engine.acceptance.dist_file import read_distributions

        return int(read_distributions(family.source[0]).shape[1])
    return family.contexts


def _source(path: str) -> tuple[Any, ...]:
    """A file's name and stamp (its distributions are read again when it changes)."""
    if not path:
        return ()
    import os

    info = os.stat(path)
    return (path, info.st_mtime_ns, info.st_size)


def family_contexts(family: Family, difficulty: int, position: int) -> Iterator[Any]:
    """The ``difficulty``'s contexts (0 easy, 1 hard) at ``position`` of ``family``, a block
    at a time: (p, q) row pairs, each side after its sampling transforms."""
    from engine.acceptance import rules as d

    vocab, n = family.vocab, family.contexts
    sampling = (family.temperature, family.top_k, family.top_p, family.min_p)
    target_order, draft_order = SAMPLERS[family.sampler][:2]
    if family.source:  # the file's contexts at this position
        from engine.acceptance.dist_file import logits, position_of, read_distributions

        array = read_distributions(family.source[0])
        here = array[position_of(array, position)]
        step = d.block_rows(array.shape[3])
        for start in range(0, here.shape[0], step):
            block = here[start : start + step]
            yield (
                d.sampled(logits(block[:, 0]), *sampling, target_order),
                d.sampled(logits(block[:, 1]), *sampling, draft_order),
            )
        return
    exponents = zipf_exponents(family, difficulty)
    size_here = mismatch_at(family, position)
    step = d.block_rows(vocab)
    for start in range(0, n, step):
        target = d.zipf_logits(exponents[start : start + step], vocab)
        draft = d.draft_logits(
            target, family.mismatch, size_here, noise_rng(family, difficulty, start)
        )
        yield (
            d.sampled(target, *sampling, target_order),
            d.sampled(draft, *sampling, draft_order),
        )


def noise_rng(family: Family, difficulty: int, start: int) -> np.random.Generator:
    """The generator of the noise drafts of the block of contexts from ``start``: each
    context's own noise, the same at every position (scaled by depth)."""
    import numpy as np

    return np.random.default_rng([FAMILY_SEED, difficulty, family.vocab, family.contexts, start])


def zipf_exponents(family: Family, difficulty: int) -> np.ndarray:
    """The Zipf exponents of the ``difficulty``'s contexts (module docstring)."""
    import numpy as np

    from engine.acceptance import rules as d

    vocab, n = family.vocab, family.contexts
    rng = np.random.default_rng([FAMILY_SEED, difficulty, vocab, n])
    entropy = (family.entropy_easy, family.entropy_hard)[difficulty] * np.exp(
        JITTER * rng.standard_normal(n)
    )
    entropy = np.clip(entropy, 1e-3, math.log2(vocab) - 1e-3)
    return d.zipf_exponent(entropy, vocab)


def mismatch_at(family: Family, position: int) -> float:
    """The mismatch's size at ``position``: grown by depth (truncation keeps fewer)."""
    stretch = 1.0 + family.growth * (position - 1)
    return family.size / stretch if family.mismatch == "truncation" else family.size * stretch


@lru_cache(maxsize=4096)
def position_rate(family: Family, difficulty: int, position: int) -> float:
    """Position ``position``'s mean acceptance over the ``difficulty``'s contexts (0 easy,
    1 hard) of ``family``: in closed form where both sides are power laws (a temperature or
    truncation mismatch: engine.acceptance.power_law), else distribution by distribution."""
    from engine.acceptance import rules as d

    if not family.source and family.mismatch != "noise":
        return float(_ordered_rates(family, difficulty, position).mean())
    total = sum(
        float(d.acceptance(p, q, family.rule).sum())
        for p, q in family_contexts(family, difficulty, position)
    )
    return total / context_count(family)


def _ordered_rates(family: Family, difficulty: int, position: int) -> np.ndarray:
    """Each context's acceptance at ``position`` by power sums (power_law's docstring)."""
    import numpy as np

    from engine.acceptance import power_law

    target = zipf_exponents(family, difficulty)
    size = mismatch_at(family, position)
    if family.mismatch == "temperature":
        draft, keep = target / size, family.vocab
    else:  # truncation: the target's first `size` ranks (growth makes it a fraction)
        draft, keep = target, max(1, min(round(size), family.vocab))
    sampling = (family.temperature, family.top_k, family.top_p, family.min_p)
    a, n_p = _target_side(family, difficulty)
    cap = np.full(target.size, keep, dtype=np.int64)
    b, n_q = power_law.side(draft, cap, *sampling, SAMPLERS[family.sampler].draft)
    return power_law.acceptance(a, n_p, b, n_q, family.rule)


@lru_cache(maxsize=64)
def _target_side(family: Family, difficulty: int) -> tuple[np.ndarray, np.ndarray]:
    """The target's side in closed form: the same at every position."""
    import numpy as np

    from engine.acceptance import power_law

    target = zipf_exponents(family, difficulty)
    cap = np.full(target.size, family.vocab, dtype=np.int64)
    sampling = (family.temperature, family.top_k, family.top_p, family.min_p)
    return power_law.side(target, cap, *sampling, SAMPLERS[family.sampler].target)


def rank_rates(config: Any, ranks: int, rules: tuple[str, ...] = RULES) -> dict[str, np.ndarray]:
    """Acceptance by rank at a tree node offering ``ranks`` candidates, by rule
    (rules.rank_acceptance): the mean over the family's contexts at the first position,
    weighted by difficulty; what a tree scenario's ``shape.rank_probs`` reads."""
    import numpy as np

    from engine.acceptance.rules import rank_acceptance

    check(config)
    family = family_of(config)
    out = {rule: np.zeros(ranks) for rule in rules}
    for g, weight in enumerate(difficulty_weights(config)):
        if weight == 0.0:
            continue
        share = weight / context_count(family)
        for p, q in family_contexts(family, g, 1):
            for rule in rules:
                out[rule] += share * rank_acceptance(p, q, rule, ranks).sum(axis=0)
    return out


def rank_probs_text(probs: Any) -> str:
    """The ``shape.rank_probs`` text of rank probabilities: each rounded down to 6 decimals,
    so that their sum stays at most 1."""
    return ",".join(f"{math.floor(float(p) * 1e6) / 1e6:.6f}".rstrip("0").rstrip(".") or "0"
                    for p in probs)  # fmt: skip
