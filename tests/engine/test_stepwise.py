"""The stepwise Monte Carlo of K policies (engine.simulate.stepwise): exact values, the common
random
stream, and each policy's rule."""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine.core.config import SpecConfig
from engine.core.runs import RunStopped
from engine.cost.models import build_cost
from engine.policies.threshold import ThresholdChooser
from engine.simulate.exact import expected_sequence_time_us, survival
from engine.simulate.stepwise import (
    MAX_CHUNK_SEQUENCES,
    Acceptance,
    Policy,
    chunk_size,
    price_tables,
    simulate_policy,
)

K_MAX = 32
Z = 4.5  # standard errors: fixed seeds make each check deterministic, this keeps it robust


def prices(config: SpecConfig, k_max: int = K_MAX) -> tuple[np.ndarray, np.ndarray]:
    """(draft_us, cycle_us) tables of the config's cost model, (T + 1, k_max + 1)."""
    return price_tables(
        build_cost(config), config.tokens_per_seq, k_max, config.batch_size, config.prompt_len
    )


def iid(p: float, k_max: int = K_MAX) -> Acceptance:
    """i.i.d. acceptance p at every position, one regime."""
    return Acceptance(survival=(p ** np.arange(k_max + 1))[None, :])


def markov(p_easy: float, p_hard: float, stay: float, easy_frac: float) -> Acceptance:
    rows = [p_easy ** np.arange(K_MAX + 1), p_hard ** np.arange(K_MAX + 1)]
    return Acceptance(survival=np.array(rows), stay=stay, mix=np.array([easy_frac, 1 - easy_frac]))


def run(acceptance, policy, config, n=1000, entropy=(7,), **kw):
    draft, cycle = prices(config)
    return simulate_policy(
        acceptance,
        policy,
        tokens=config.tokens_per_seq,
        n_sequences=n,
        draft_us=draft,
        cycle_us=cycle,
        batch=config.batch_size,
        clamp=config.tail == "clamp",
        entropy=list(entropy),
        **kw,
    )


def assert_mean_time(result, expected: float) -> None:
    times = result.sequence_time_us
    se = times.std(ddof=1) / math.sqrt(times.size)
    assert abs(times.mean() - expected) < Z * se, (times.mean(), expected, se)


LINEAR = dict(cost_model="linear", draft_cost_us=30.0, verify_cost_us=200.0, verify_token_us=15.0)
ROOFLINE = dict(
    cost_model="roofline",
    gpu="h100",
    target="llama-3.1-8b",
    draft="llama-3.2-1b",
    batch_size=8,
    prompt_len=512,
)
ACCEPTANCE = {
    "fixed": dict(draft_model="fixed", acceptance_rate=0.75),
    "position_decay": dict(draft_model="position_decay", decay_base=0.95, decay_factor=0.9),
}


@pytest.mark.parametrize("tail", ["full", "clamp"])
@pytest.mark.parametrize("model", list(ACCEPTANCE))
@pytest.mark.parametrize("cost", ["linear", "roofline"])
def test_fixed_k_matches_the_exact_expected_time(tail, model, cost):
    config = SpecConfig(
        k=4,
        tokens_per_seq=48,
        tail=tail,
        **ACCEPTANCE[model],
        **(LINEAR if cost == "linear" else ROOFLINE),
    )
    acceptance = Acceptance(survival=np.concatenate(([1.0], survival(config, K_MAX)))[None, :])
    result = run(acceptance, Policy("fixed", k=4), config, n=2000)
    assert_mean_time(result, expected_sequence_time_us(config))
    # Every cycle drafted 4 (the full tail) or fewer only at the end (clamp).
    assert result.k_counts[4] == result.cycles - result.k_counts[:4].sum()
    assert result.k_counts[5:].sum() == 0
    if tail == "full":
        assert result.drafted == 4 * result.cycles


def test_totals_add_up():
    config = SpecConfig(k=3, tokens_per_seq=40, tail="clamp", **LINEAR)
    result = run(iid(0.7), Policy("hf_heuristic", k=3), config, n=300)
    assert result.k_counts.sum() == result.cycles
    assert int((np.arange(K_MAX + 1) * result.k_counts).sum()) == result.drafted
    assert result.accepted <= result.drafted
    # Clamp: a cycle drafts at most r - 1, so nothing is emitted past T and no accepted
    # draft is discarded.
    assert result.accepted + result.cycles == 300 * 40
    assert result.kept == result.accepted
    full = run(iid(0.7), Policy("fixed", k=3), config.replace(tail="full"), n=300)
    discarded = full.accepted + full.cycles - 300 * 40
    assert 0 < discarded <= 300 * 3
    assert full.kept < full.accepted
    # Linear cost: drafting k tokens costs k * draft_cost_us.
    assert full.draft_time_us == pytest.approx(full.drafted * 30.0)


@pytest.mark.parametrize(
    ("acceptance", "message"),
    [
        (Acceptance(survival=np.ones((1, 5))), "survival must be"),
        (Acceptance(survival=np.array([[1.0] + [0.5] * 31 + [0.6]])), "non-increasing"),
        (Acceptance(survival=np.ones((2, K_MAX + 1)), mix=np.array([0.6, 0.6])), "mix"),
        (Acceptance(survival=np.ones((1, K_MAX + 1)), stay=1.5), "stay"),
        (Acceptance(beta=(0.0, 1.0)), "beta"),
        (Acceptance(), "survival table or beta"),
    ],
)
def test_inconsistent_acceptance_is_refused(acceptance, message):
    config = SpecConfig(tokens_per_seq=16, **LINEAR)
    with pytest.raises(ValueError, match=message):
        run(acceptance, Policy("fixed", k=2), config, n=2)
    with pytest.raises(ValueError, match="k_max"):
        run(iid(0.5), Policy("fixed", k=2, k_max=K_MAX + 1), config, n=2)


def test_the_same_entropy_gives_the_same_run_and_another_a_different_one():
    config = SpecConfig(k=4, tokens_per_seq=64, **LINEAR)
    acceptance = markov(0.9, 0.3, 0.9, 0.5)
    a = run(acceptance, Policy("goodput", k=4), config, n=500, entropy=(3, 1))
    b = run(acceptance, Policy("goodput", k=4), config, n=500, entropy=(3, 1))
    c = run(acceptance, Policy("goodput", k=4), config, n=500, entropy=(3, 2))
    assert np.array_equal(a.sequence_time_us, b.sequence_time_us)
    assert (a.cycles, a.drafted, a.accepted, a.kept) == (b.cycles, b.drafted, b.accepted, b.kept)
    assert not np.array_equal(a.sequence_time_us, c.sequence_time_us)


@pytest.mark.parametrize(
    "acceptance", [iid(0.6), markov(0.9, 0.3, 0.9, 0.5)], ids=["iid", "markov"]
)
def test_policies_see_the_same_acceptance_draws_step_by_step(acceptance):
    """Step j of a sequence draws the same uniform under K = 1 and K = 3: the accepted
    counts agree as n1 == min(n3, 1) at every step both run, and so do the regimes."""
    config = SpecConfig(tokens_per_seq=30, **LINEAR)
    for entropy in range(40):
        one = run(acceptance, Policy("fixed", k=1), config, n=1, entropy=(entropy,), trace=True)
        three = run(acceptance, Policy("fixed", k=3), config, n=1, entropy=(entropy,), trace=True)
        assert one.trace is not None and three.trace is not None
        steps = min(one.trace["k"].size, three.trace["k"].size)
        assert np.array_equal(
            one.trace["accepted"][:steps], np.minimum(three.trace["accepted"][:steps], 1)
        )
        assert np.array_equal(one.trace["regime"][:steps], three.trace["regime"][:steps])


def test_paired_sequence_times_are_strongly_correlated():
    config = SpecConfig(tokens_per_seq=128, **LINEAR)
    acceptance = markov(0.9, 0.3, 0.95, 0.5)
    n = 2000
    fixed = run(acceptance, Policy("fixed", k=4), config, n=n, entropy=(5,))
    adaptive = run(acceptance, Policy("hf_heuristic", k=4), config, n=n, entropy=(5,))
    other = run(acceptance, Policy("hf_heuristic", k=4), config, n=n, entropy=(6,))
    paired = np.corrcoef(fixed.sequence_time_us, adaptive.sequence_time_us)[0, 1]
    unpaired = np.corrcoef(fixed.sequence_time_us, other.sequence_time_us)[0, 1]
    assert paired > 0.8
    assert abs(unpaired) < Z / math.sqrt(n)
    # So the paired difference's standard error is far below the unpaired one.
    difference = fixed.sequence_time_us - adaptive.sequence_time_us
    se_paired = difference.std(ddof=1) / math.sqrt(n)
    se_apart = math.hypot(
        fixed.sequence_time_us.std(ddof=1), adaptive.sequence_time_us.std(ddof=1)
    ) / math.sqrt(n)
    assert se_paired < 0.5 * se_apart


def test_the_documented_stream_reproduces_a_sequence():
    """Redraw sequence 0's stream by hand, as the module docstring states it, and replay
    the policy: regimes and accepted counts match the run (markov, two regimes)."""
    acceptance = markov(0.8, 0.2, 0.7, 0.4)
    config = SpecConfig(tokens_per_seq=25, tail="clamp", **LINEAR)
    rows = 3
    result = run(acceptance, Policy("fixed", k=2), config, n=rows, entropy=(11, 4), trace=True)
    assert result.trace is not None
    rng = np.random.default_rng([11, 4, 0])
    cdf = np.cumsum(acceptance.mix)
    surv = acceptance.survival
    regime, r = -1, 25
    for step in range(result.trace["k"].size):
        x = rng.random(rows)[0]
        if step == 0:
            regime = int(np.searchsorted(cdf, x, side="right"))
        elif x >= acceptance.stay:
            regime = int(
                np.searchsorted(cdf, (x - acceptance.stay) / (1 - acceptance.stay), side="right")
            )
        u = rng.random(rows)[0]
        k = min(2, r - 1)
        n = min(k, int((surv[regime, 1:] > u).sum()))
        assert (result.trace["regime"][step], result.trace["k"][step]) == (regime, k)
        assert (result.trace["r"][step], result.trace["accepted"][step]) == (r, n)
        r -= min(n + 1, r)
    assert r == 0


def test_chunks_are_multiples_of_the_batch_and_each_draws_its_own_stream():
    assert chunk_size(10_000, 1) == MAX_CHUNK_SEQUENCES
    assert chunk_size(10_000, 96) % 96 == 0
    assert chunk_size(10, 96) == 10
    config = SpecConfig(tokens_per_seq=16, **LINEAR)
    n = MAX_CHUNK_SEQUENCES + 5
    result = run(iid(0.5), Policy("fixed", k=2), config, n=n, entropy=(9,))
    alone = run(iid(0.5), Policy("fixed", k=2), config, n=MAX_CHUNK_SEQUENCES, entropy=(9,))
    # The first chunk does not depend on how many sequences follow it.
    assert np.array_equal(result.sequence_time_us[:MAX_CHUNK_SEQUENCES], alone.sequence_time_us)
    assert result.sequence_time_us.size == n


# ---- The per-token confidence model and threshold policies -------------------------------


def test_confidence_model_under_fixed_k_is_iid_at_the_mean_confidence():
    a, b = 3.0, 1.5
    mean_q = a / (a + b)
    config = SpecConfig(
        k=3, tokens_per_seq=48, draft_model="fixed", acceptance_rate=mean_q, **LINEAR
    )
    result = run(Acceptance(beta=(a, b)), Policy("fixed", k=3), config, n=2000)
    assert_mean_time(result, expected_sequence_time_us(config))
    one = run(Acceptance(beta=(a, b)), Policy("fixed", k=1), config, n=2000)
    rate = one.accepted / one.drafted
    assert abs(rate - mean_q) < Z * math.sqrt(mean_q * (1 - mean_q) / one.drafted)


def test_threshold_p_min_zero_drafts_k_max_and_above_one_drafts_k_min():
    config = SpecConfig(tokens_per_seq=64, **LINEAR)
    beta = Acceptance(beta=(2.0, 2.0))
    always = run(beta, Policy("threshold", rule="p_min", p_min=0.0, k_min=2, k_max=6), config, n=50)
    assert always.k_counts[6] == always.cycles
    never = run(beta, Policy("threshold", rule="p_min", p_min=1.01, k_min=2, k_max=6), config, n=50)
    assert never.k_counts[2] == never.cycles
    # In between, drafting stops before the first token under p_min.
    some = run(
        beta,
        Policy("threshold", rule="p_min", p_min=0.5, k_min=0, k_max=K_MAX),
        config,
        n=50,
        trace=True,
    )
    assert some.k_counts[0] > 0 and some.k_counts[1:].sum() > 0


def test_threshold_rules_on_a_hand_example():
    q = np.array(
        [[0.9, 0.8, 0.5, 0.9, 0.9], [0.99, 0.99, 0.99, 0.99, 0.99], [0.3, 0.9, 0.9, 0.9, 0.9]]
    )
    r = np.full(3, 100)
    regime = np.full(3, -1)

    def chosen(**kw):
        return ThresholdChooser(Policy("threshold", **kw), 3).choose(r, regime, q).tolist()

    # 1 - prod q: 0.1, 0.28, 0.64 > 0.5 -> stop at 3 (the crossing token drafted); never; 0.7.
    assert chosen(rule="h", h=0.5, k_min=0, k_max=5) == [3, 5, 1]
    assert chosen(rule="h", h=0.5, k_min=2, k_max=4) == [3, 4, 2]
    # p_min = 0.6: the leading tokens with q >= 0.6.
    assert chosen(rule="p_min", p_min=0.6, k_min=0, k_max=5) == [2, 5, 0]
    assert chosen(rule="p_min", p_min=0.8, k_min=0, k_max=5) == [2, 5, 0]  # q = p_min drafts


def test_threshold_h_rule_follows_the_drawn_confidences():
    """Sequence 0's first cycle under the h rule, recomputed from the documented stream."""
    a, b, h = 4.0, 1.0, 0.6
    config = SpecConfig(tokens_per_seq=64, **LINEAR)
    for entropy in range(10):
        result = run(
            Acceptance(beta=(a, b)),
            Policy("threshold", rule="h", h=h, k_min=1, k_max=20),
            config,
            n=1,
            entropy=(entropy,),
            trace=True,
        )
        assert result.trace is not None
        rng = np.random.default_rng([entropy, 0])
        q = rng.beta(a, b, size=(1, K_MAX))[0]
        u = rng.random((1, K_MAX))[0]
        crossed = np.flatnonzero(1 - np.cumprod(q) > h)
        k = int(np.clip(crossed[0] + 1 if crossed.size else K_MAX, 1, 20))
        accepted = u[:k] < q[:k]
        n = int(k if accepted.all() else np.argmin(accepted))
        assert (result.trace["k"][0], result.trace["accepted"][0]) == (k, n)
        assert result.trace["q_mean"][0] == pytest.approx(q[:k].mean())


def test_a_threshold_policy_without_confidences_is_refused_naming_both():
    config = SpecConfig(tokens_per_seq=16, **LINEAR)
    with pytest.raises(ValueError, match="threshold.*survival"):
        run(iid(0.8), Policy("threshold"), config, n=2)


# ---- hf_heuristic, markov regimes, goodput, oracle -------------------------------------


def test_hf_heuristic_climbs_by_two_to_k_max_and_falls_to_one():
    config = SpecConfig(tokens_per_seq=400, **LINEAR)
    high = run(iid(1.0), Policy("hf_heuristic", k=5, k_max=20), config, n=1, trace=True)
    assert high.trace is not None
    assert high.trace["k"][:12].tolist() == [5, 7, 9, 11, 13, 15, 17, 19, 20, 20, 20, 20]
    low = run(iid(0.0), Policy("hf_heuristic", k=5, k_max=20), config, n=1, trace=True)
    assert low.trace is not None
    assert low.trace["k"][:8].tolist() == [5, 4, 3, 2, 1, 1, 1, 1]
    assert low.k_counts[1] == low.cycles - 4
    # A plain step (k = 0) is not a fully accepted cycle: K goes to 1, then climbs.
    start = run(iid(1.0), Policy("hf_heuristic", k=0, k_max=20), config, n=1, trace=True)
    assert start.trace is not None
    assert start.trace["k"][:4].tolist() == [0, 1, 3, 5]


def test_markov_with_stay_one_keeps_each_sequence_in_its_start_regime():
    # Easy: every draft accepted; hard: none. At K = 1 an easy sequence takes T / 2 cycles,
    # a hard one T: a sequence that switched would take a time in between.
    config = SpecConfig(tokens_per_seq=64, draft_cost_us=10.0, verify_cost_us=100.0)
    acceptance = markov(1.0, 0.0, 1.0, 0.3)
    n = 4000
    result = run(acceptance, Policy("fixed", k=1), config, n=n)
    easy_time, hard_time = 32 * 110.0, 64 * 110.0
    times = result.sequence_time_us
    assert np.all((times == easy_time) | (times == hard_time))
    share = float(np.mean(times == easy_time))
    assert abs(share - 0.3) < Z * math.sqrt(0.3 * 0.7 / n)


def test_markov_regimes_have_the_stationary_share_and_the_redraw_rule():
    stay, easy = 0.8, 0.3
    config = SpecConfig(tokens_per_seq=8000, **LINEAR)
    result = run(markov(0.9, 0.3, stay, easy), Policy("fixed", k=0), config, n=1, trace=True)
    assert result.trace is not None
    regime = result.trace["regime"]
    assert regime.size == 8000  # plain steps: one token each, and every one advances the chain
    is_easy = regime == 0
    # Autocorrelation stay**lag inflates the variance by (1 + stay) / (1 - stay).
    se = math.sqrt(easy * (1 - easy) / regime.size * (1 + stay) / (1 - stay))
    assert abs(is_easy.mean() - easy) < Z * se
    # P(easy -> easy) = stay + (1 - stay) * easy: a redraw may land on the same regime.
    after_easy = is_easy[1:][is_easy[:-1]]
    p_keep = stay + (1 - stay) * easy
    assert abs(after_easy.mean() - p_keep) < Z * math.sqrt(p_keep * (1 - p_keep) / after_easy.size)


def test_goodput_turns_speculation_off_when_drafting_costs_too_much():
    config = SpecConfig(
        tokens_per_seq=200, draft_cost_us=5000.0, verify_cost_us=100.0, verify_token_us=10.0
    )
    window = 8
    result = run(iid(0.8), Policy("goodput", k=4, window=window), config, n=20, trace=True)
    assert result.trace is not None
    k = result.trace["k"]
    # The first cycle has no estimates: k = 4. Then plain steps until the window holds no
    # drafting cycle, when it probes with k = 4 again.
    period = window + 1
    expected = np.where(np.arange(k.size) % period == 0, 4, 0)
    assert np.array_equal(k, expected)
    assert result.k_counts[0] > 0.8 * result.cycles


def test_goodput_drafts_deep_when_everything_is_accepted_and_drafts_are_cheap():
    config = SpecConfig(
        tokens_per_seq=300, draft_cost_us=1.0, verify_cost_us=100.0, verify_token_us=1.0
    )
    result = run(iid(1.0), Policy("goodput", k=3, k_max=24), config, n=4, trace=True)
    assert result.trace is not None
    assert result.trace["k"][:4].tolist() == [3, 24, 24, 24]


def test_goodput_picks_the_smallest_k_on_ties():
    """Nothing is ever accepted and every k costs the same: every k has the same goodput,
    and the policy takes k = 0 once it has estimates."""
    tokens = 40
    flat = np.full((tokens + 1, K_MAX + 1), 100.0)
    result = simulate_policy(
        iid(0.0),
        Policy("goodput", k=3, window=1000),
        tokens=tokens,
        n_sequences=1,
        draft_us=np.zeros_like(flat),
        cycle_us=flat,
        entropy=[1],
        trace=True,
    )
    assert result.trace is not None
    assert result.trace["k"].tolist() == [3] + [0] * (tokens - 1)


def test_goodput_batch_groups_share_their_estimates():
    """Sequences of one batch group choose from the group's estimates: the same draws
    give another run when the sequences are grouped."""
    config = SpecConfig(tokens_per_seq=64, batch_size=4, **LINEAR)
    draft, cycle = prices(config)
    common = dict(tokens=64, draft_us=draft, cycle_us=cycle, entropy=[2], clamp=False)
    grouped = simulate_policy(iid(0.7), Policy("goodput", k=2), n_sequences=8, batch=8, **common)
    alone = simulate_policy(iid(0.7), Policy("goodput", k=2), n_sequences=8, batch=1, **common)
    # Same draws, different estimates: the runs differ.
    assert not np.array_equal(grouped.sequence_time_us, alone.sequence_time_us)


def test_oracle_follows_its_table_at_the_true_regime():
    config = SpecConfig(tokens_per_seq=80, **LINEAR)
    table = np.zeros((81, 2), dtype=np.int64)
    table[:, 0] = 6  # easy: draft 6; hard: plain steps
    table[:10, 0] = 2  # near the end, fewer
    result = run(
        markov(0.9, 0.2, 0.9, 0.5), Policy("oracle", oracle_k=table), config, n=1, trace=True
    )
    assert result.trace is not None
    r, regime = result.trace["r"], result.trace["regime"]
    assert np.array_equal(result.trace["k"], table[r, regime])
    assert set(regime.tolist()) == {0, 1}


def test_oracle_needs_its_table():
    config = SpecConfig(tokens_per_seq=16, **LINEAR)
    with pytest.raises(ValueError, match="oracle_k"):
        run(iid(0.8), Policy("oracle"), config, n=2)
    with pytest.raises(ValueError, match="oracle_k"):
        run(iid(0.8), Policy("oracle", oracle_k=np.zeros((17, 2), dtype=int)), config, n=2)


# ---- Run control ---------------------------------------------------------------------------


def test_should_stop_abandons_the_run_and_progress_reaches_every_token():
    config = SpecConfig(tokens_per_seq=256, **LINEAR)
    with pytest.raises(RunStopped):
        run(iid(0.5), Policy("fixed", k=1), config, n=10, should_stop=lambda: True)
    told: list[int] = []
    run(iid(0.5), Policy("fixed", k=1), config, n=10, progress=told.append)
    assert told[-1] == 10 * 256
    assert len(told) > 1 and told == sorted(told)


# ---- A literal reference: the documented stream and rules, one row at a time -------------


def reference_run(acceptance, policy, tokens, rows, draft_us, cycle_us, batch, clamp, entropy):
    """Sequence times, (cycles, drafted, accepted, kept) and k counts of one chunk, by the
    module docstring read literally: a Python loop over steps and rows."""
    k_table = cycle_us.shape[1] - 1
    rng = np.random.default_rng([*entropy, 0])
    cdf = np.cumsum(acceptance.mix)
    regimes = cdf.size
    r = [tokens] * rows
    regime = [0] * rows
    hf_k = [policy.k] * rows
    history: list[list[tuple[int, int, int]]] = [[] for _ in range((rows + batch - 1) // batch)]
    times = [0.0] * rows
    totals = [0, 0, 0, 0]
    k_counts = np.zeros(k_table + 1, dtype=np.int64)
    by_accepted = np.zeros((2, k_table + 1), dtype=np.int64)  # all cycles; rejected ones
    step = 0
    while any(left > 0 for left in r):
        if regimes > 1:
            x = rng.random(rows)
            for s in range(rows):
                if step == 0:
                    regime[s] = int(np.searchsorted(cdf, x[s], side="right"))
                elif x[s] >= acceptance.stay:
                    y = (x[s] - acceptance.stay) / (1 - acceptance.stay)
                    regime[s] = int(np.searchsorted(cdf, y, side="right"))
        if acceptance.beta is None:
            u = rng.random(rows)
        else:
            q = rng.beta(*acceptance.beta, size=(rows, k_table))
            u_tok = rng.random((rows, k_table))
        observed = []
        for s in range(rows):
            if r[s] == 0:
                continue
            if policy.name == "fixed":
                k = policy.k
            elif policy.name == "hf_heuristic":
                k = hf_k[s]
            elif policy.name == "oracle":
                k = int(policy.oracle_k[r[s], regime[s]])
            elif policy.name == "threshold":
                k = k_table
                prod = 1.0
                for i in range(k_table):
                    prod *= q[s, i]
                    if policy.rule == "p_min" and q[s, i] < policy.p_min:
                        k = i
                        break
                    if policy.rule == "h" and 1 - prod > policy.h:
                        k = i + 1
                        break
                k = min(max(k, policy.k_min), policy.k_max)
            else:  # goodput
                seen = [
                    (kk, nn) for (j, kk, nn) in history[s // batch] if j > step - policy.window - 1
                ]
                rates = []
                for i in range(1, policy.k_max + 1):
                    reach = sum(1 for kk, nn in seen if kk >= i and nn >= i - 1)
                    acc = sum(1 for kk, nn in seen if nn >= i)
                    if reach == 0:
                        break
                    rates.append(acc / reach)
                if not rates:
                    k = policy.k
                else:
                    rates += [rates[-1]] * (policy.k_max - len(rates))
                    best, best_value, prod, total = 0, 1.0 / cycle_us[r[s], 0], 1.0, 0.0
                    for i in range(1, policy.k_max + 1):
                        prod *= rates[i - 1]
                        total += prod
                        value = (1.0 + total) / cycle_us[r[s], i]
                        if value > best_value:
                            best, best_value = i, value
                    k = best
            drafted = min(k, r[s] - 1) if clamp else k
            if acceptance.beta is None:
                surv = acceptance.survival[regime[s], 1:]
                n = min(drafted, int((surv > u[s]).sum()))
            else:
                n = 0
                while n < drafted and u_tok[s, n] < q[s, n]:
                    n += 1
            times[s] += cycle_us[r[s], drafted]
            totals[0] += 1
            totals[1] += drafted
            totals[2] += n
            totals[3] += min(n, r[s])
            k_counts[drafted] += 1
            by_accepted[0, n] += 1
            by_accepted[1, n] += n < drafted
            observed.append((s, drafted, n))
            if n == drafted >= 1:
                hf_k[s] = min(hf_k[s] + 2, policy.k_max)
            else:
                hf_k[s] = max(1, hf_k[s] - 1)
            r[s] -= min(n + 1, r[s])
        for s, drafted, n in observed:
            history[s // batch].append((step, drafted, n))
        step += 1
    return np.array(times), tuple(totals), k_counts, by_accepted


REFERENCE_CASES = {
    "fixed-markov-clamp": (markov(0.9, 0.3, 0.8, 0.5), Policy("fixed", k=3), 1, True),
    "hf-iid-full": (iid(0.75), Policy("hf_heuristic", k=2, k_max=9), 1, False),
    "hf-markov-clamp": (markov(0.95, 0.2, 0.9, 0.4), Policy("hf_heuristic", k=4), 1, True),
    "goodput-iid": (iid(0.8), Policy("goodput", k=2, k_max=12, window=3), 1, False),
    "goodput-batch": (markov(0.9, 0.3, 0.9, 0.5), Policy("goodput", k=3, window=5), 3, True),
    "threshold-p_min": (
        Acceptance(beta=(3.0, 1.0)),
        Policy("threshold", p_min=0.7, k_min=1, k_max=8),
        1,
        True,
    ),
    "threshold-h": (
        Acceptance(beta=(5.0, 1.0)),
        Policy("threshold", rule="h", h=0.5, k_min=2),
        1,
        False,
    ),
    "oracle": (
        markov(0.9, 0.2, 0.9, 0.5),
        Policy("oracle", oracle_k=np.tile(np.array([[5, 1]]), (31, 1))),
        1,
        True,
    ),
}


@pytest.mark.parametrize("case", list(REFERENCE_CASES))
def test_matches_a_literal_reference(case):
    acceptance, policy, batch, clamp = REFERENCE_CASES[case]
    config = SpecConfig(tokens_per_seq=30, **LINEAR)
    draft, cycle = prices(config)
    # A cost that grows with the context, so that goodput's choice depends on r.
    cycle = cycle * (1.0 + 0.01 * (30 - np.arange(31)))[:, None]
    rows = 7
    result = simulate_policy(
        acceptance,
        policy,
        tokens=30,
        n_sequences=rows,
        draft_us=draft,
        cycle_us=cycle,
        batch=batch,
        clamp=clamp,
        entropy=[17],
        position_counts=True,
    )
    times, totals, k_counts, by_accepted = reference_run(
        acceptance, policy, 30, rows, draft, cycle, batch, clamp, [17]
    )
    np.testing.assert_allclose(result.sequence_time_us, times, rtol=1e-12)
    assert (result.cycles, result.drafted, result.accepted, result.kept) == totals
    assert np.array_equal(result.k_counts, k_counts)
    assert np.array_equal(result.totals.accepted_counts, by_accepted[0])
    assert np.array_equal(result.totals.rejected_counts, by_accepted[1])
    # The kernel's totals: what the metrics are made of.
    assert result.totals.emitted == result.accepted + result.cycles
    assert result.totals.target_positions == result.drafted + result.cycles
    n, total, _ = result.totals.sequence_time_stats()
    assert n == rows and total == pytest.approx(times.sum(), rel=1e-12)


def test_traces_of_several_sequences():
    config = SpecConfig(tokens_per_seq=50, tail="clamp", **LINEAR)
    acceptance = Acceptance(beta=(3.0, 1.0))
    policy = Policy("threshold", p_min=0.6, k_max=10)
    one = run(acceptance, policy, config, n=20, trace=True)
    five = run(acceptance, policy, config, n=20, trace=5)
    assert one.trace is not None and five.trace is not None
    first = five.trace["sequence"] == 0
    for name in ("sequence", "r", "k", "accepted", "regime", "q_mean"):
        np.testing.assert_allclose(five.trace[name][first], one.trace[name], rtol=1e-12)
    assert five.trace["sequence"].tolist() == sorted(five.trace["sequence"].tolist())
    assert set(five.trace["sequence"].tolist()) == set(range(5))
    for s in range(5):
        mine = five.trace["sequence"] == s
        r, accepted = five.trace["r"][mine], five.trace["accepted"][mine]
        # Each cycle starts where the previous one left off; the last one ends the sequence.
        assert r[0] == 50
        assert np.array_equal(r[1:], r[:-1] - np.minimum(accepted[:-1] + 1, r[:-1]))
        assert r[-1] - min(accepted[-1] + 1, r[-1]) == 0
    assert np.isnan(five.trace["q_mean"][five.trace["k"] == 0]).all()


def test_position_counts_give_the_acceptance_by_position():
    from engine.core.runs import acceptance_by_position

    config = SpecConfig(tokens_per_seq=64, **LINEAR)
    result = run(iid(0.7), Policy("hf_heuristic", k=3), config, n=500, position_counts=True)
    accepted, rejected = result.totals.accepted_counts, result.totals.rejected_counts
    assert accepted is not None and rejected is not None
    assert accepted.sum() == result.cycles
    assert int((np.arange(K_MAX + 1) * accepted).sum()) == result.accepted
    observed = acceptance_by_position(accepted, rejected, 3)
    tested = accepted[1:].sum() + rejected[0]  # reached position 1
    assert abs(observed[0] - 0.7) < Z * math.sqrt(0.21 / tested)
    # Not asked for: not counted (the metrics then have no acceptance by position).
    plain = run(iid(0.7), Policy("hf_heuristic", k=3), config, n=500)
    assert plain.totals.accepted_counts is None and plain.totals.rejected_counts is None
    assert (plain.cycles, plain.kept) == (result.cycles, result.kept)
