"""The policy arena: common random numbers, paired intervals, and what it must show
(issue 12): i.i.d. acceptance leaves adaptive policies little, bursty acceptance does not;
Hugging Face's K collapses and climbs; goodput turns speculation down where verifying
extra tokens costs."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from engine.analysis.arena import (
    best_fixed_k,
    contender_labels,
    default_contenders,
    paired_difference,
    roster,
    run_arena,
    standing_cells,
)
from engine.core.config import ConfigError, SpecConfig
from engine.core.kernel import Z95
from engine.core.parts import POLICY
from engine.simulate.policies import exact_speedup, simulate_policy_config

MARKOV = SpecConfig(
    draft_model="markov",
    p_easy=0.9,
    p_hard=0.3,
    stay=0.95,
    easy_frac=0.5,
    k=4,
    n_sequences=600,
    tokens_per_seq=128,
)


def _policy(config: SpecConfig, name: str, **changes: object) -> SpecConfig:
    return config.replace(**{"policy.name": name, **changes})


@pytest.fixture(scope="module")
def markov_arena():
    contenders = [
        _policy(MARKOV, "hf_heuristic"),
        _policy(MARKOV, "goodput", window=4),
        _policy(MARKOV, "fixed", k=2),
        _policy(MARKOV, "oracle"),
    ]
    return run_arena(MARKOV, contenders)


def test_the_best_fixed_k_runs_first_then_the_oracle(markov_arena):
    rows = markov_arena.standings
    k_star, speedups = best_fixed_k(MARKOV, 32)
    assert rows[0].is_best_fixed and rows[0].config.k == k_star == markov_arena.best_fixed_k
    assert speedups[k_star - 1] == max(speedups)
    assert rows[1].policy == "oracle"
    assert rows[0].gain == 0.0 and rows[0].gain_ci95 == 0.0
    assert sum(r.is_best_fixed for r in rows) == 1


def test_paired_interval_is_narrower_than_unpaired(markov_arena):
    for row in markov_arena.standings[1:]:
        assert 0 < row.gain_ci95 < 0.75 * row.gain_ci95_unpaired, row.label


def test_paired_gain_of_exact_policies_holds_the_exact_difference(markov_arena):
    """The Monte Carlo paired gain of a policy with an exact value is within its interval
    (widened to 4.5 standard errors: 2.3 x the 95 % half-width) of the exact difference."""
    reference = markov_arena.standings[0].speedup_exact
    for row in markov_arena.standings[1:]:
        if row.method != "exact":
            continue
        exact_gain = row.speedup_exact - reference
        assert abs(row.gain - exact_gain) <= 2.3 * row.gain_ci95, (row.label, row.gain, exact_gain)


def test_each_row_says_whether_it_is_exact(markov_arena):
    methods = {r.policy: r.method for r in markov_arena.standings}
    assert methods == {
        "fixed": "exact",
        "oracle": "exact",
        "hf_heuristic": "exact",
        "goodput": "Monte Carlo",
    }
    goodput = next(r for r in markov_arena.standings if r.policy == "goodput")
    cells = standing_cells(goodput)
    assert cells[1] == "—" and goodput.method == "Monte Carlo"
    oracle = next(r for r in markov_arena.standings if r.policy == "oracle")
    assert standing_cells(oracle)[1] == f"{oracle.speedup_exact:.2f}x"


def test_common_random_numbers_are_the_same_draws_for_every_policy():
    """Fixed K = 1 and K = 3 on i.i.d. acceptance: each sequence's first cycle accepts
    min(n, 1) of what K = 3 accepted, because both read the same first uniform."""
    base = SpecConfig(acceptance_rate=0.6, n_sequences=1, tokens_per_seq=64)
    for seed in range(20):
        one = simulate_policy_config(_policy(base, "fixed", k=1, seed=seed), trace=True)
        three = simulate_policy_config(_policy(base, "fixed", k=3, seed=seed), trace=True)
        assert one.trace is not None and three.trace is not None
        assert one.trace["accepted"][0] == min(three.trace["accepted"][0], 1)


def test_the_arena_is_reproducible_and_its_rows_equal_lone_runs(markov_arena):
    again = simulate_policy_config(markov_arena.standings[1].config)
    assert np.array_equal(again.sequence_time_us, markov_arena.standings[1].sequence_time_us)


def test_iid_acceptance_leaves_little_to_adapt_and_bursts_do_not():
    """Under the original's i.i.d. acceptance the oracle beats the best fixed K by under
    1 % at T = 256 (what remains comes from the last cycles); under long markov regimes
    (stay 0.95, p 0.9 / 0.3) by over 20 %. Exact values."""
    iid = SpecConfig(acceptance_rate=0.8, tokens_per_seq=256)
    _, speedups = best_fixed_k(iid, 32)
    oracle = exact_speedup(_policy(iid, "oracle"))
    assert 0 <= oracle / speedups.max() - 1 < 0.01
    bursty = MARKOV.replace(tokens_per_seq=256)
    _, speedups = best_fixed_k(bursty, 32)
    assert exact_speedup(_policy(bursty, "oracle")) / speedups.max() - 1 > 0.20


def test_hf_heuristic_collapses_at_low_acceptance_and_climbs_at_high():
    low = SpecConfig(acceptance_rate=0.3, n_sequences=200, tokens_per_seq=1024)
    high = low.replace(acceptance_rate=0.97)
    result_low = run_arena(low, [_policy(low, "hf_heuristic")])
    result_high = run_arena(high, [_policy(high, "hf_heuristic")])
    hf_low, hf_high = result_low.standings[1], result_high.standings[1]
    assert hf_low.k_share[1] > 0.5 and hf_low.mean_k < 2.0
    # K climbs to policy.k_max (32): the k drafted most often, and over half the cycles
    # draft 25 or more
    assert int(np.argmax(hf_high.k_share)) == 32 and hf_high.k_share[25:].sum() > 0.5
    # It costs against the best fixed K in both (exact values)
    assert hf_low.speedup_exact < result_low.standings[0].speedup_exact
    assert hf_high.speedup_exact < result_high.standings[0].speedup_exact


def test_goodput_turns_speculation_down_where_verifying_costs():
    free = SpecConfig(acceptance_rate=0.7, n_sequences=200, tokens_per_seq=256)
    costly = free.replace(**{"cost.verify_token_us": 60.0})
    mean_k = {}
    for name, scenario in (("free", free), ("costly", costly)):
        result = run_arena(scenario, [_policy(scenario, "goodput", k=4)])
        mean_k[name] = result.standings[1].mean_k
    assert mean_k["costly"] < 0.6 * mean_k["free"], mean_k
    roof = free.replace(
        **{"cost.model": "roofline", "workload.prompt_len": 1024, "tokens_per_seq": 128}
    )
    by_batch = {}
    for batch in (1, 128):
        scenario = roof.replace(**{"workload.batch_size": batch})
        result = run_arena(scenario, [_policy(scenario, "goodput", k=4)])
        by_batch[batch] = result.standings[1].mean_k
    assert by_batch[128] < by_batch[1], by_batch


def test_default_contenders_fit_the_model():
    names = [c.policy for c in default_contenders(SpecConfig())]
    assert names == ["hf_heuristic", "goodput", "schedule", "oracle"]
    confident = SpecConfig(draft_model="confidence")
    assert [c.policy for c in default_contenders(confident)].count("threshold") == 2
    table = SpecConfig(draft_model="per_position", rates="0.9,0.8,0.7")
    assert default_contenders(table)[-1].k_max == 3


def test_a_policy_that_cannot_work_is_refused_naming_both():
    with pytest.raises(ConfigError, match="threshold.*draft_model markov") as err:
        _policy(MARKOV, "threshold")
    assert err.value.field == "policy.name"
    with pytest.raises(ConfigError, match="oracle.*per_position.*acceptance.rates"):
        SpecConfig(draft_model="per_position", rates="0.9,0.8").replace(**{"policy.name": "oracle"})


def test_paired_difference_by_hand():
    a = np.array([10.0, 12.0, 14.0])
    b = a + 1.0  # perfectly correlated, so var(d) = (g_a + g_b)^2 var(a) / n
    diff, paired, unpaired = paired_difference(100.0, a, b)
    assert diff == pytest.approx(100 / 12 - 100 / 13)
    g_a, g_b, var = -100 / 12**2, 100 / 13**2, 4.0  # var(a) = var(b) = 4
    assert paired == pytest.approx(Z95 * abs(g_a + g_b) * (var / 3) ** 0.5)
    assert unpaired == pytest.approx(Z95 * ((g_a**2 + g_b**2) * var / 3) ** 0.5)


def test_the_best_fixed_k_is_sought_beyond_the_contenders():
    """A schedule drafting 2 does not bound the search: at acceptance 0.97 the best fixed K
    is far above 8."""
    scenario = SpecConfig(acceptance_rate=0.97, n_sequences=50, tokens_per_seq=256)
    contender = _policy(scenario, "schedule", schedule="1:2")
    result = run_arena(scenario, [contender])
    _, speedups = best_fixed_k(scenario, 64)
    assert result.best_fixed_k == int(np.argmax(speedups)) + 1 > 8


def test_every_contender_sees_the_same_draws_whatever_its_bound():
    """On the confidence model the draws cover one width for the whole arena: hf_heuristic
    bounded at 32 and at 40 (it never drafts above 8 here) give the same sequence times."""
    scenario = SpecConfig(draft_model="confidence", n_sequences=300, tokens_per_seq=64, k=3)
    low = _policy(scenario, "hf_heuristic", k=3)
    high = _policy(scenario, "hf_heuristic", k=3, **{"policy.k_max": 40})
    rows = run_arena(scenario, [low, high]).standings[1:]
    assert np.array_equal(rows[0].sequence_time_us, rows[1].sequence_time_us)
    assert rows[0].label != rows[1].label


def test_labels_tell_every_contender_apart():
    scenario = SpecConfig(draft_model="confidence")
    contenders = [
        _policy(scenario, "goodput", k=2),
        _policy(scenario, "goodput", k=6),
        _policy(scenario, "threshold", k_min=1),
        _policy(scenario, "threshold", k_min=4),
    ]
    from engine.analysis.arena import contender_labels

    labels = contender_labels(contenders)
    assert len(set(labels)) == 4, labels


def test_the_leaderboard_ranks_by_the_shared_draws():
    scenario = SpecConfig(n_sequences=10, batch_size=7)
    result = run_arena(scenario, [_policy(scenario, "goodput")])
    speedups = [s.speedup for s in result.ranked()]
    assert speedups == sorted(speedups, reverse=True)


def test_a_per_position_arena_keeps_the_oracle_the_ceiling():
    scenario = SpecConfig(draft_model="per_position", rates="0.95", n_sequences=200)
    result = run_arena(scenario, default_contenders(scenario))
    oracle = next(s for s in result.standings if s.policy == "oracle")
    assert result.best_fixed_k == 1
    assert all(
        oracle.speedup_exact >= s.speedup_exact for s in result.standings if s.method == "exact"
    )
    assert any(
        "per_position gives rates for 1 position (acceptance.rates)" in n for n in result.notes
    )


def test_progress_tells_the_share_of_each_policys_tokens():
    """The best fixed K runs first, alone, for many seconds on a large scenario: progress
    says how far it is, not only that it runs (issue 22)."""
    calls = []
    scenario = SpecConfig(n_sequences=300, tokens_per_seq=512)
    result = run_arena(
        scenario, [_policy(scenario, "hf_heuristic")], on_progress=lambda *a: calls.append(a)
    )
    reference = [c for c in calls if c[0] == 0]
    assert reference[0] == (0, 2, f"fixed K={result.best_fixed_k}", 0.0)
    shares = [c[3] for c in reference]
    assert shares == sorted(shares) and shares[-1] == 1.0
    assert any(0.0 < share < 1.0 for share in shares)  # told while it runs
    assert {c[2] for c in reference} == {f"fixed K={result.best_fixed_k}"}
    assert calls[-1] == (2, 2, "", 1.0)


def test_the_default_roster_is_every_policy_that_chooses_k_by_cycle():
    """In the order the arena lists them: those any model runs, then those that read
    confidences, the oracle last; fixed K is the reference, always added."""
    assert roster() == ("hf_heuristic", "goodput", "schedule", "threshold", "oracle")
    confident = SpecConfig(draft_model="confidence", k=3)
    assert contender_labels(default_contenders(confident)) == [
        "hf_heuristic K0=3",
        "goodput w=16",
        "schedule K=5",
        "threshold p_min=0.75",
        "threshold h=0.5",
        "oracle",
    ]


def test_default_contenders_start_at_k_within_the_bound():
    """A scenario's K above policy.k_max: the policies that start at K (hf_heuristic,
    goodput) start at the bound; the others keep the scenario's K."""
    scenario = SpecConfig(draft_model="confidence", k=12).replace(**{"policy.k_max": 8})
    ks = {(c.policy, c.rule): c.k for c in default_contenders(scenario)}
    assert ks[("hf_heuristic", "p_min")] == ks[("goodput", "p_min")] == 8
    assert ks[("threshold", "h")] == ks[("oracle", "p_min")] == 12
    bad = SpecConfig(draft_model="confidence", k_min=9).replace(**{"policy.k_max": 8})
    with pytest.raises(ConfigError, match="policy.k_min: 9 is above policy.k_max 8"):
        default_contenders(bad)  # any other refusal is the contender's error, as before


# Two policies from outside the project, in a module of their own: "halfway" drafts half
# of policy.k_max (rounded up), which bounds it; "pinned" drafts K, which it does not.
LATER_POLICIES = """
from typing import Any

from engine.core.fields import ConfigError
from engine.core.parts import POLICY
from engine.policies.base import K_MAX_FIELD, Chooser, PolicyPart


class Always(Chooser):
    def __init__(self, k: int, rows: int) -> None:
        import numpy as np

        self.k = np.full(rows, k, dtype=np.int64)

    def choose(self, r: Any, regime: Any, q: Any) -> Any:
        return self.k


@POLICY.register
class Halfway(PolicyPart):
    name = "halfway"
    description = "draft half of policy.k_max, rounded up, every cycle"
    fields = (K_MAX_FIELD,)

    def check(self, config: Any) -> None:  # the engine runs K within the bound only
        if config.k > config.k_max:
            raise ConfigError("k", f"{config.k} is above policy.k_max {config.k_max}")

    def chooser(self, policy: Any, rows: int, batch: int, cycle_us: Any) -> Chooser:
        return Always((policy.k_max + 1) // 2, rows)


@POLICY.register
class Pinned(PolicyPart):
    name = "pinned"
    description = "draft K every cycle, on the stepwise engine"
    adaptive = False

    def k_bound(self, config: Any) -> int:
        return int(config.k)

    def chooser(self, policy: Any, rows: int, batch: int, cycle_us: Any) -> Chooser:
        return Always(policy.k, rows)
"""


@pytest.fixture
def later_policies(tmp_path: Path) -> Iterator[ModuleType]:
    """The two policies registered (by importing their module), unregistered afterwards."""
    path = tmp_path / "later_policies.py"
    path.write_text(LATER_POLICIES, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("later_policies", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["later_policies"] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop("later_policies", None)
        for name in ("halfway", "pinned"):
            if name in POLICY:
                POLICY.unregister(name)


def test_a_policy_registered_later_runs_in_the_default_arena(later_policies):
    assert roster()[3:5] == ("halfway", "pinned")  # after schedule, before threshold
    scenario = SpecConfig(n_sequences=20, tokens_per_seq=48, k=3).replace(**{"policy.k_max": 8})
    rows = {s.label: s for s in run_arena(scenario, default_contenders(scenario)).standings}
    assert {"halfway", "pinned"} <= set(rows)
    assert rows["halfway"].mean_k == 4.0 and rows["pinned"].mean_k == 3.0
    assert standing_cells(rows["halfway"])[1] == "—"  # no exact program: Monte Carlo only


def test_a_table_of_few_positions_keeps_only_policies_its_bound_holds(later_policies):
    """per_position gives 3 rates: halfway's bound becomes 3 (it drafts 2; it refuses the
    scenario's K 5 above it, so it starts at 3); pinned, which policy.k_max does not bound,
    is left out, as the schedule is."""
    table = SpecConfig(draft_model="per_position", rates="0.9,0.8,0.7", n_sequences=20)
    contenders = default_contenders(table)
    assert [c.policy for c in contenders] == ["hf_heuristic", "goodput", "halfway", "oracle"]
    assert {c.k_max for c in contenders} == {3}
    assert contenders[2].k == 3
    rows = {s.label: s for s in run_arena(table, contenders).standings}
    assert rows["halfway"].mean_k == 2.0
