"""The policy arena: K policies compared on one scenario, on common random numbers.

Every contender is the scenario with its own policy fields (``policy.name``, K, ...). All
of them see the same random numbers (engine.simulate.policies: sequence s's j-th cycle draws the
same uniforms under every policy), so one policy's luck is the other's, and the paired
difference of two speedups has a much narrower interval than the two intervals apart
(docs/model.md, "K policies").

A leaderboard row (:class:`Standing`) gives the Monte Carlo speedup on those numbers with
its 95 % interval, the exact speedup where the policy's state can be enumerated (fixed,
hf_heuristic, schedule, oracle), the paired gain over the best fixed K with its interval,
the share of the oracle's gain the policy captures, the mean k drafted, the waste and how
often each k was drafted.

The best fixed K is found exactly (fixed K has an exact value under every acceptance
model): the arena adds "fixed K*" when the contenders do not list it, runs it first, then
the oracle, then the others in their order, and reports each row as it finishes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from engine.analysis.formatting import policy_text
from engine.core.config import ConfigError, SpecConfig
from engine.core.kernel import Z95
from engine.core.parts import ACCEPTANCE, POLICY

# How a row's speedup was obtained.
EXACT = "exact"
MONTE_CARLO = "Monte Carlo"


@dataclass
class Standing:
    """One row of a leaderboard: a policy's figures on the scenario."""

    label: str  # "fixed K=4", "hf_heuristic from K=5", "oracle", ...
    config: SpecConfig
    speedup: float  # Monte Carlo, on the common random numbers
    ci95: float  # its 95 % half-width (sequences are the independent units)
    speedup_exact: float  # NaN where the policy has no exact value
    gain: float  # paired Monte Carlo speedup minus the best fixed K's (0 for that row)
    gain_ci95: float  # the paired 95 % half-width
    gain_ci95_unpaired: float  # what the half-width would be without pairing
    captured: float  # gain / the oracle's gain; NaN when the oracle's gain is within noise
    mean_k: float  # drafted tokens per cycle
    waste: float  # drafted tokens not kept, over drafted tokens
    k_share: np.ndarray  # fraction of cycles that drafted k = 0..K_max
    cycles: int = 0
    is_best_fixed: bool = False
    # The per-sequence times behind the paired figures (not shown).
    sequence_time_us: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)

    @property
    def policy(self) -> str:
        return self.config.policy

    @property
    def method(self) -> str:
        """ "exact" when the policy has an exact value, else "Monte Carlo"."""
        return EXACT if math.isfinite(self.speedup_exact) else MONTE_CARLO

    @property
    def best_speedup(self) -> float:
        """The exact speedup where there is one, else the Monte Carlo one."""
        return self.speedup_exact if math.isfinite(self.speedup_exact) else self.speedup


@dataclass
class ArenaResult:
    """A leaderboard for one scenario, best first."""

    scenario: SpecConfig
    standings: list[Standing]
    best_fixed_k: int
    notes: list[str] = field(default_factory=list)

    def ranked(self) -> list[Standing]:
        """Best first, by the Monte Carlo speedup on the shared draws: the order of the
        paired gains (an exact value and another row's estimate are never compared)."""
        return sorted(self.standings, key=lambda s: -s.speedup)


def paired_difference(
    baseline_us: float, times_a: np.ndarray, times_b: np.ndarray
) -> tuple[float, float, float]:
    """Speedup of A minus speedup of B, measured on the same sequences (paired), with its
    95 % half-width by the delta method, and the half-width the two runs would give if
    they were independent (no covariance term).

    Speedup = baseline / mean time; d = b / mean(a) - b / mean(b). Its gradient in the two
    means is (-b / mean(a)^2, b / mean(b)^2), so var(d) = (g_a^2 var(a) + g_b^2 var(b) +
    2 g_a g_b cov(a, b)) / n; pairing keeps the covariance, which is large and positive
    when both policies see the same draws (g_a g_b < 0, so it narrows the interval).
    """
    n = times_a.size
    mean_a, mean_b = float(times_a.mean()), float(times_b.mean())
    diff = baseline_us / mean_a - baseline_us / mean_b
    if n < 2:
        return diff, math.nan, math.nan
    g_a, g_b = -baseline_us / mean_a**2, baseline_us / mean_b**2
    cov = np.cov(times_a, times_b, ddof=1)
    unpaired = g_a**2 * cov[0, 0] + g_b**2 * cov[1, 1]
    paired = max(0.0, unpaired + 2 * g_a * g_b * cov[0, 1])
    return diff, Z95 * math.sqrt(paired / n), Z95 * math.sqrt(unpaired / n)


def best_fixed_k(scenario: SpecConfig, k_max: int) -> tuple[int, np.ndarray]:
    """The fixed K in 1..k_max with the largest exact speedup on the scenario (the smallest
    on a tie), and every K's exact speedup (one batched exact program)."""
    from engine.simulate.exact import exact_metrics_many

    fixed = [scenario.replace(**{"policy.name": "fixed", "k": k}) for k in range(1, k_max + 1)]
    speedups = exact_metrics_many(fixed)["speedup_exact"]
    return int(np.argmax(speedups)) + 1, speedups


def table_reach(scenario: SpecConfig) -> int | None:
    """How many positions the scenario's acceptance model gives values for (per_position:
    its table's; None for a model that gives any number): its arena keeps every policy
    within them, so that the oracle, which may not choose k beyond them, stays the
    ceiling."""
    return ACCEPTANCE.of(scenario).positions(scenario)


def arena_k_max(scenario: SpecConfig, contenders: Sequence[SpecConfig]) -> int:
    """How far the search for the best fixed K goes: every k any contender may draft, and
    at least 1..32 (a per_position scenario: its table's positions)."""
    from engine.core.config import K_MAX_POLICY, policy_k_max

    reach = table_reach(scenario)
    if reach is not None:
        return reach
    return max([K_MAX_POLICY, *(policy_k_max(c) for c in contenders)])


def contender_labels(configs: Sequence[SpecConfig]) -> list[str]:
    """How a leaderboard names each contender: the policy and its main parameter; where two
    would read the same, their bound on k too; where they still do, every parameter."""
    plain = [policy_text(c) for c in configs]
    labels = [
        policy_text(c, bound=plain.count(text) > 1) for c, text in zip(configs, plain, strict=True)
    ]
    return [
        policy_text(c, bound=True, detail=True) if labels.count(text) > 1 else text
        for c, text in zip(configs, labels, strict=True)
    ]


def roster() -> tuple[str, ...]:
    """The policies an arena runs when none are given, in the order it lists them: every
    registered policy that chooses k cycle by cycle (fixed K is the reference the arena
    always adds), in registration order, those that read the draft's confidences after
    the others and the oracle (which reads the exact program's plan: the ceiling) last.
    The built-in ones: hf_heuristic, goodput, schedule, threshold, oracle."""
    stepwise = [POLICY[name] for name in POLICY.where(lambda part: part.stepwise)]
    ordered = sorted(stepwise, key=lambda part: (part.uses_plan, part.needs_confidences))
    return tuple(part.name for part in ordered)


def default_contenders(scenario: SpecConfig) -> list[SpecConfig]:
    """The contenders of an arena that is given none: each policy of :func:`roster` in each
    of its :meth:`~engine.policies.base.PolicyPart.variants` (both threshold rules), at the
    scenario's K, or, for a policy that starts at K (Hugging Face's heuristic, goodput) and
    refuses one above its bound, at that bound; a policy that reads confidences only where
    the draft sees them. (The best fixed K is always added.) Where the acceptance model
    gives values for a few positions only (per_position's table), every policy stays
    within them (``policy.k_max``), and one that ``policy.k_max`` does not bound (the
    batch schedule) is left out."""
    k_max = scenario.k_max
    reach = table_reach(scenario)
    if reach is not None:
        k_max = min(k_max, reach)
    start = min(scenario.k, k_max)
    confidences = ACCEPTANCE.of(scenario).confidences
    contenders = []
    for name in roster():
        part = POLICY[name]
        if part.needs_confidences and not confidences:
            continue
        if reach is not None and not part.adaptive:
            continue
        for variant in part.variants():
            changes = {"policy.k_max": k_max, POLICY.selector: name, **variant}
            try:
                contender = scenario.replace(**changes)
            except ConfigError as err:
                if err.field != "k":
                    raise
                contender = scenario.replace(**changes, k=start)
            contenders.append(contender)
    return contenders


# The oracle's gain over the best fixed K below which "captured" is not shown: a share of
# almost nothing says nothing.
MATTERS = 0.01


def _gain_matters(gain: tuple[float, float], reference: float) -> bool:
    """Whether a gain (value, 95 % half-width) is beyond noise and at least
    :data:`MATTERS` of the reference speedup."""
    return bool(gain[0] > gain[1] and gain[0] >= MATTERS * reference)  # NaN: False


def run_arena(
    scenario: SpecConfig,
    contenders: Sequence[SpecConfig],
    *,
    on_standing: Callable[[Standing], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    on_progress: Callable[[int, int, str, float], None] | None = None,
) -> ArenaResult:
    """Run every contender on the scenario's common random numbers (see the module
    docstring); ``on_standing`` is told each row as it finishes, ``on_progress(done,
    total, running, share)`` counts contenders, names the one running ("" at the end) and
    tells the share of its tokens simulated so far (0 as it starts, then as it runs: the
    first, the best fixed K, runs alone on a large scenario for many seconds).
    Raises :class:`engine.core.runs.RunStopped` when ``should_stop()`` turns true (rows
    already reported stay valid)."""
    from engine.core.config import stream_width
    from engine.core.kernel import cycle_costs
    from engine.simulate.policies import exact_speedup, simulate_policy_config

    k_star, _ = best_fixed_k(scenario, arena_k_max(scenario, contenders))
    reference = scenario.replace(**{"policy.name": "fixed", "k": k_star})
    order = [c for c in contenders if POLICY.of(c).uses_plan]
    order += [c for c in contenders if not POLICY.of(c).uses_plan and c != reference]
    order = [reference, *order]
    baseline = cycle_costs(scenario).baseline_us
    labels = contender_labels(order)
    # One width of draws for all: every contender sees the very same numbers (the
    # confidence model draws a q per position up to it).
    width = max(stream_width(c) for c in order)
    standings: list[Standing] = []
    ref_times: np.ndarray | None = None
    speedup_ref = math.nan
    oracle_gain: tuple[float, float] | None = None
    for done, config in enumerate(order):
        step: Callable[[int], None] | None = None
        if on_progress is not None:
            on_progress(done, len(order), labels[done], 0.0)
            tokens = config.n_sequences * config.tokens_per_seq

            def step(produced: int, done: int = done, tokens: int = tokens) -> None:
                assert on_progress is not None
                on_progress(done, len(order), labels[done], min(1.0, produced / tokens))

        result = simulate_policy_config(config, should_stop=should_stop, width=width, progress=step)
        times = result.sequence_time_us
        n = times.size
        mean = float(times.mean())
        speedup = baseline / mean
        std = float(times.std(ddof=1)) if n > 1 else math.nan
        ci95 = Z95 * speedup * std / math.sqrt(n) / mean if n > 1 else math.nan
        if ref_times is None:
            ref_times, speedup_ref = times, speedup
        gain, gain_ci, gain_ci_unpaired = paired_difference(baseline, times, ref_times)
        if POLICY.of(config).uses_plan and oracle_gain is None:
            oracle_gain = (gain, gain_ci)
        captured = math.nan
        if oracle_gain is not None and _gain_matters(oracle_gain, speedup_ref):
            captured = gain / oracle_gain[0]
        k_counts = result.k_counts.astype(np.float64)
        standing = Standing(
            label=labels[done],
            config=config,
            speedup=speedup,
            ci95=ci95,
            speedup_exact=exact_speedup(config),
            gain=gain,
            gain_ci95=gain_ci,
            gain_ci95_unpaired=gain_ci_unpaired,
            captured=captured,
            mean_k=result.drafted / result.cycles if result.cycles else math.nan,
            waste=1.0 - result.kept / result.drafted if result.drafted else math.nan,
            k_share=k_counts / k_counts.sum() if k_counts.sum() else k_counts,
            cycles=result.cycles,
            is_best_fixed=config == reference,
            sequence_time_us=times,
        )
        standings.append(standing)
        if on_standing is not None:
            on_standing(standing)
    if on_progress is not None:
        on_progress(len(order), len(order), "", 1.0)
    notes = []
    if reach := table_reach(scenario):
        model = ACCEPTANCE.of(scenario)
        notes.append(
            f"{model.name} gives rates for {reach} position{'s' * (reach > 1)} "
            f"({', '.join(model.reads)}): the best "
            f"fixed K is sought within them, as the oracle chooses within them"
        )
    noisy = oracle_gain is not None and not math.isfinite(oracle_gain[1])
    if oracle_gain is not None and not noisy and not _gain_matters(oracle_gain, speedup_ref):
        notes.append(
            f"the oracle gains under {MATTERS:.0%} over the best fixed K (or within noise): "
            "no policy that sees only the past can gain more here"
        )
    return ArenaResult(scenario, standings, k_star, notes)


# ---- How a leaderboard reads (the CLI and the app's Arena view) ----------------------------

LEADERBOARD_COLUMNS = (
    "policy",
    "exact",
    "MC ±95%",
    "gain ±95%",
    "capt",
    "k avg",
    "waste",
    "k most",
)
# What the columns mean, under every leaderboard.
LEADERBOARD_LEGEND = (
    "exact: the exact speedup where the policy's state can be enumerated (— : Monte Carlo "
    "only); MC: the Monte Carlo speedup on the shared draws; gain: MC speedup minus the best "
    "fixed K's (*, ref) on the same draws, 95 % paired interval; capt: share of the oracle's "
    "gain captured (— : no gain, or the oracle's is within noise); k avg: mean k drafted; "
    "k most: the k drafted most often, k:% of cycles"
)


def _gain_text(standing: Standing) -> str:
    if standing.is_best_fixed:
        return "ref"
    if not math.isfinite(standing.gain):
        return "—"
    ci = f"±{standing.gain_ci95:.3f}" if math.isfinite(standing.gain_ci95) else ""
    return f"{standing.gain:+.3f}{ci}"


def k_share_text(share: np.ndarray, top: int = 2) -> str:
    """The k drafted most often, with their percentages of the cycles: "4:61 5:20"."""
    order = np.argsort(-share, kind="stable")[:top]
    return " ".join(f"{int(k)}:{share[k] * 100:.0f}" for k in order if share[k] >= 0.005)


def standing_cells(standing: Standing) -> tuple[str, ...]:
    """One leaderboard row as text, in :data:`LEADERBOARD_COLUMNS` order (the CLI's table
    and the app's Arena view)."""
    from engine.analysis.formatting import speedup_text

    mc = speedup_text(standing.speedup, unit="")
    if math.isfinite(standing.ci95):
        mc += f"±{standing.ci95:.2f}"
    # A share of the oracle's gain only for a policy that gains: a loss (-1598 %) is no share.
    shares = math.isfinite(standing.captured) and standing.gain > 0
    captured = f"{standing.captured:.0%}" if shares else "—"
    return (
        standing.label + (" *" if standing.is_best_fixed else ""),
        speedup_text(standing.speedup_exact, missing="—"),
        mc,
        _gain_text(standing),
        captured,
        f"{standing.mean_k:.2f}",
        f"{standing.waste:.0%}" if math.isfinite(standing.waste) else "—",
        k_share_text(standing.k_share),
    )


def scenario_text(scenario: SpecConfig) -> str:
    """The scenario an arena runs, in one line."""
    from engine.analysis.formatting import acceptance_text, cost_setting_text

    return (
        f"{acceptance_text(scenario)}; {cost_setting_text(scenario)}; "
        f"T={scenario.tokens_per_seq}, {scenario.n_sequences} sequences, tail {scenario.tail}, "
        f"seed {scenario.seed}"
    )


def policy_trace(config: SpecConfig) -> dict[str, np.ndarray]:
    """The cycles of sequence 0 under the configuration's policy (on the scenario's common
    random numbers): per cycle "r" (tokens still needed), "k" drafted, "accepted",
    "regime" (0 easy, 1 hard, -1 without regimes) and "q_mean" (the mean confidence of the
    drafted tokens, NaN without confidences)."""
    from engine.simulate.policies import simulate_policy_config

    one = config.replace(n_sequences=1)
    result = simulate_policy_config(one, trace=True)
    assert result.trace is not None
    return result.trace
