"""engine.simulate.policy_exact: exact expectations of a sequence under a K policy.

Checked against engine.simulate.exact (fixed K, one regime, real cost models), against a brute force
that recurses over every state of small sequences in plain Python, against a Monte Carlo of
the process, and by properties that must hold whatever the implementation (the oracle is the
best policy, a chain that forgets is i.i.d., deterministic acceptance gives counts by hand).
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest

from engine.core.config import SpecConfig
from engine.core.kernel import context_length, cycle_costs, cycle_times
from engine.cost.models import build_cost
from engine.simulate import exact
from engine.simulate.policy_exact import POLICIES, PolicyExact, Regimes, policy_exact

REL = 1e-12

# ---- helpers -------------------------------------------------------------------------------


def config_prices(config: SpecConfig, k_max: int) -> np.ndarray:
    """cycle_us[r, k] of a configuration's cost model: k drafts at the context of r."""
    r = np.arange(config.tokens_per_seq + 1)
    r[0] = 1  # unused row, a valid context
    context = context_length(config, r)[:, None]
    ks = np.arange(k_max + 1)[None, :]
    times = cycle_times(build_cost(config), ks, config.batch_size, context)[2]
    return np.array(np.broadcast_to(times, (r.size, k_max + 1)), dtype=np.float64)


def config_regimes(config: SpecConfig, k_max: int) -> Regimes:
    return Regimes(np.concatenate(([1.0], exact.survival(config, k_max)))[None, :])


def random_case(
    seed: int, regimes: int, k_max: int, tokens: int, monotone: bool = True
) -> tuple[Regimes, np.ndarray]:
    """Random survival rows, chain and prices, strictly increasing in k unless not
    ``monotone`` (then drafting past the end may be cheaper); no exact ties."""
    rng = np.random.default_rng(seed)
    cond = rng.uniform(0.05, 0.95, size=(regimes, k_max))
    survival = np.concatenate([np.ones((regimes, 1)), np.cumprod(cond, axis=1)], axis=1)
    mix = rng.dirichlet(np.ones(regimes))
    stay = float(rng.uniform(0.2, 0.95))
    steps = rng.uniform(1.0, 30.0, size=(tokens + 1, k_max + 1))
    prices = np.cumsum(steps, axis=1) + 100.0 if monotone else steps + 100.0
    return Regimes(survival, stay=stay, mix=mix), prices


def brute_force(
    regimes: Regimes,
    prices: np.ndarray,
    tokens: int,
    policy: str,
    k: int,
    k_max: int,
    clamp: bool,
) -> tuple[list[float], list[list[int]] | None]:
    """Every expectation by recursion over the full state (r, K_c, regime), in Python floats:
    [time, cycles, drafted, accepted, kept, cycles that drafted 0, 1, ..., k_max], and the
    oracle's choices (None for other policies)."""
    surv = [[float(x) for x in row[: k_max + 1]] + [0.0] for row in regimes.survival]
    count, stay, mix = len(surv), regimes.stay, [float(x) for x in regimes.mix]

    def move(g: int, h: int) -> float:
        return stay * (g == h) + (1.0 - stay) * mix[h]

    def outcome(m: int, d: int, g: int) -> float:
        return surv[g][m] - surv[g][m + 1] if m < d else surv[g][d]

    @functools.cache
    def value(r: int, g: int) -> tuple[float, int]:  # the oracle's V(r, g) and k*(r, g)
        best, best_k = math.inf, -1
        for d in range(min(k_max, r - 1) + 1 if clamp else k_max + 1):
            total = float(prices[r][d])
            for m in range(d + 1):
                rest = r - min(m + 1, r)
                if rest:
                    ahead = sum(move(g, h) * value(rest, h)[0] for h in range(count))
                    total += outcome(m, d, g) * ahead
            if total < best:
                best, best_k = total, d
        return best, best_k

    @functools.cache
    def remaining(r: int, state: int, g: int) -> tuple[float, ...]:
        own = min(state, r - 1) if clamp else state  # fixed K or K_c, with the tail rule
        d = value(r, g)[1] if policy == "oracle" else own
        out = [float(prices[r][d]), 1.0, float(d), 0.0, 0.0] + [0.0] * (k_max + 1)
        out[5 + d] = 1.0
        for m in range(d + 1):
            p = outcome(m, d, g)
            out[3] += p * m
            out[4] += p * min(m, r)
            rest = r - min(m + 1, r)
            if not rest:
                continue
            after = state
            if policy == "hf_heuristic":
                after = min(state + 2, k_max) if (m == d and d >= 1) else max(1, state - 1)
            for h in range(count):
                weight = p * move(g, h)
                for i, x in enumerate(remaining(rest, after, h)):
                    out[i] += weight * x
        return tuple(out)

    totals = [0.0] * (5 + k_max + 1)
    for g in range(count):
        for i, x in enumerate(remaining(tokens, k, g)):
            totals[i] += mix[g] * x
    choices = None
    if policy == "oracle":
        choices = [[0] * count] + [
            [value(r, g)[1] for g in range(count)] for r in range(1, tokens + 1)
        ]
    return totals, choices


def fields(result: PolicyExact) -> list[float]:
    head = [result.time_us, result.cycles, result.drafted, result.accepted, result.kept]
    return head + result.k_cycles.tolist()


# ---- fixed K against engine.simulate.exact
# ----------------------------------------------------------

ENGINE_CASES = {
    "fixed-full-linear": dict(k=4, acceptance_rate=0.7, tokens_per_seq=200),
    "fixed-clamp-token-cost": dict(k=6, acceptance_rate=0.85, tokens_per_seq=150, tail="clamp")
    | {"cost.verify_token_us": 12.0},
    "decay-full-token-cost": dict(
        k=5, draft_model="position_decay", decay_base=0.9, decay_factor=0.95, tokens_per_seq=300
    )
    | {"cost.verify_token_us": 7.5},
    "decay-clamp": dict(k=3, draft_model="position_decay", tokens_per_seq=97, tail="clamp"),
    "roofline-clamp": dict(k=3, tokens_per_seq=120, tail="clamp")
    | {"cost.model": "roofline", "cost.gpu": "h100", "cost.draft": "llama-3.2-1b"},
    "roofline-full-batch": dict(k=7, tokens_per_seq=64, acceptance_rate=0.6)
    | {"cost.model": "roofline", "cost.gpu": "h100", "workload.batch_size": 64},
}


@pytest.mark.parametrize("case", list(ENGINE_CASES))
def test_fixed_k_matches_engine_exact(case):
    config = SpecConfig().replace(**ENGINE_CASES[case])
    k_max = config.k + 3  # wider tables than the policy uses
    result = policy_exact(
        config_regimes(config, k_max),
        config_prices(config, k_max),
        config.tokens_per_seq,
        policy="fixed",
        k=config.k,
        k_max=k_max,
        clamp=config.tail == "clamp",
    )
    assert result.time_us == pytest.approx(exact.expected_sequence_time_us(config), rel=REL)
    speedup = cycle_costs(config).baseline_us / result.time_us
    assert speedup == pytest.approx(exact.speedup_exact(config), rel=REL)
    emitted_per_cycle = exact.tokens_per_cycle_at_length(config)
    tokens = config.tokens_per_seq
    if config.tail == "clamp":  # every cycle keeps its verifier token: kept + cycles = T
        assert result.kept + result.cycles == pytest.approx(tokens, rel=REL)
        assert emitted_per_cycle == pytest.approx(tokens / result.cycles, rel=1e-9)
    assert result.k_cycles.sum() == pytest.approx(result.cycles, rel=REL)
    assert result.oracle_k is None


# ---- brute force over every state ----------------------------------------------------------


@pytest.mark.parametrize("clamp", [False, True], ids=["full", "clamp"])
@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_every_field_matches_brute_force(policy, clamp, seed):
    # seed 3: one regime; seed 4: prices not monotone in k (a long draft may be cheaper).
    k_max = 4 if seed != 3 else 3
    tokens = 8 if seed != 2 else 5
    regimes, prices = random_case(
        seed, regimes=2 if seed != 3 else 1, k_max=k_max, tokens=tokens, monotone=seed != 4
    )
    starts = range(0, k_max + 1) if policy == "fixed" else range(1, k_max + 1)
    for k in starts if policy != "oracle" else [1]:
        result = policy_exact(regimes, prices, tokens, policy=policy, k=k, k_max=k_max, clamp=clamp)
        want, choices = brute_force(regimes, prices, tokens, policy, k, k_max, clamp)
        assert fields(result) == pytest.approx(want, rel=1e-12, abs=1e-12), (policy, k)
        if policy == "oracle":
            assert result.oracle_k is not None
            assert result.oracle_k.tolist() == choices
        else:
            assert result.oracle_k is None


def test_brute_force_on_a_sticky_chain_with_a_wide_table():
    # stay close to 1, K_max above T (full cycles that overshoot), survival columns beyond k_max.
    regimes, prices = random_case(7, regimes=2, k_max=6, tokens=6)
    sticky = Regimes(regimes.survival, stay=0.999, mix=regimes.mix)
    for policy, k in [("hf_heuristic", 2), ("oracle", 1), ("fixed", 5)]:
        result = policy_exact(sticky, prices, 6, policy=policy, k=k, k_max=5)
        want, _ = brute_force(sticky, prices, 6, policy, k, 5, False)
        assert fields(result) == pytest.approx(want, rel=1e-12, abs=1e-12), policy


def test_oracle_plans_for_a_chain_that_redraws_every_cycle():
    # stay = 0: the next cycle's regime is drawn afresh from mix, whatever the current one,
    # so the oracle must value what lies ahead under the chain, not under the regime it
    # is in now (an oracle that assumed its regime persists drafts too much in the easy
    # regime and too little in the hard one). mix is not symmetric: P(g' | g) is not its
    # own transpose.
    k_max, tokens = 5, 10
    j = np.arange(k_max + 1)
    regimes = Regimes(np.stack([0.9**j, 0.3**j]), stay=0.0, mix=np.array([0.3, 0.7]))
    prices = np.array(np.broadcast_to(100.0 + 20.0 * j, (tokens + 1, k_max + 1)))
    result = policy_exact(regimes, prices, tokens, policy="oracle", k_max=k_max)
    want, choices = brute_force(regimes, prices, tokens, "oracle", 1, k_max, False)
    assert result.oracle_k is not None
    assert result.oracle_k.tolist() == choices
    assert fields(result) == pytest.approx(want, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("clamp", [False, True], ids=["full", "clamp"])
@pytest.mark.parametrize("k_max", [0, 1])
def test_edge_sizes_match_brute_force(k_max, clamp):
    # T = 1..3, K_max = 0 or 1, three regimes: the padding rows and the states' bounds.
    for tokens in (1, 2, 3):
        regimes, prices = random_case(20 + tokens, regimes=3, k_max=1, tokens=tokens)
        for policy in POLICIES if k_max else ("fixed", "oracle"):
            k = k_max if policy != "oracle" else 1
            result = policy_exact(
                regimes, prices, tokens, policy=policy, k=k, k_max=k_max, clamp=clamp
            )
            want, _ = brute_force(regimes, prices, tokens, policy, k, k_max, clamp)
            assert fields(result) == pytest.approx(want, rel=1e-12, abs=1e-12), (policy, tokens)


def simulate(
    regimes: Regimes,
    prices: np.ndarray,
    tokens: int,
    policy: str,
    k: int,
    clamp: bool,
    oracle_k: np.ndarray | None,
    sequences: int,
    seed: int,
) -> np.ndarray:
    """Monte Carlo of the process as docs/model.md tells it, one row per sequence: time,
    cycles, drafted, accepted, kept. The first regime from the mix; after every cycle the
    regime is kept with probability stay, else redrawn from the mix."""
    rng = np.random.default_rng(seed)
    surv = regimes.survival
    regime = rng.choice(regimes.count, size=sequences, p=regimes.mix)
    left = np.full(sequences, tokens)
    state = np.full(sequences, k)  # fixed K or K_c
    out = np.zeros((sequences, 5))
    while (live := left > 0).any():
        r = np.maximum(left, 1)
        if oracle_k is not None:
            drafted = oracle_k[r, regime]
        else:
            drafted = np.minimum(state, r - 1) if clamp else state
        u = rng.random(sequences)
        # n = the number of positions j = 1..d whose survival exceeds u (S is non-increasing)
        position = np.arange(1, surv.shape[1])
        accepted = np.sum((u[:, None] < surv[regime, 1:]) & (position <= drafted[:, None]), axis=1)
        cycle = np.stack(
            [prices[r, drafted], np.ones(sequences), drafted, accepted, np.minimum(accepted, r)],
            axis=1,
        )
        out[live] += cycle[live]
        if policy == "hf_heuristic":
            full = (accepted == drafted) & (drafted >= 1)
            state = np.where(
                full, np.minimum(state + 2, surv.shape[1] - 1), np.maximum(1, state - 1)
            )
        left = np.where(live, left - np.minimum(accepted + 1, r), 0)
        redraw = rng.random(sequences) >= regimes.stay
        regime = np.where(redraw, rng.choice(regimes.count, size=sequences, p=regimes.mix), regime)
    return out


@pytest.mark.parametrize("clamp", [False, True], ids=["full", "clamp"])
@pytest.mark.parametrize("policy", POLICIES)
def test_every_field_matches_monte_carlo(policy, clamp):
    k_max, tokens, sequences = 6, 40, 20_000
    j = np.arange(k_max + 1)
    regimes = Regimes(np.stack([0.9**j, 0.35**j]), stay=0.85, mix=np.array([0.6, 0.4]))
    prices = np.broadcast_to(200.0 + 25.0 * j, (tokens + 1, k_max + 1))
    result = policy_exact(regimes, prices, tokens, policy=policy, k=3, k_max=k_max, clamp=clamp)
    draws = simulate(regimes, prices, tokens, policy, 3, clamp, result.oracle_k, sequences, seed=12)
    mean = draws.mean(axis=0)
    standard_error = draws.std(axis=0, ddof=1) / np.sqrt(sequences)
    want = np.array(fields(result)[:5])
    assert np.all(np.abs(mean - want) <= 5.0 * standard_error + 1e-9), (mean, want)


# ---- properties ----------------------------------------------------------------------------


@pytest.mark.parametrize("clamp", [False, True], ids=["full", "clamp"])
def test_oracle_is_the_best_policy(clamp):
    k_max, tokens = 8, 60
    j = np.arange(k_max + 1)
    regimes = Regimes(np.stack([0.9**j, 0.3**j]), stay=0.9, mix=np.array([0.4, 0.6]))
    prices = np.broadcast_to(200.0 + 25.0 * j, (tokens + 1, k_max + 1))
    oracle = policy_exact(regimes, prices, tokens, policy="oracle", k_max=k_max, clamp=clamp)
    others = [
        policy_exact(regimes, prices, tokens, policy=p, k=k, k_max=k_max, clamp=clamp)
        for p, ks in (("fixed", range(k_max + 1)), ("hf_heuristic", range(1, k_max + 1)))
        for k in ks
    ]
    best_other = min(o.time_us for o in others)
    assert oracle.time_us <= best_other * (1 + 1e-12)
    # Knowing the regime is worth something here: the oracle drafts more when it is easy.
    assert oracle.time_us < best_other * 0.99
    assert oracle.oracle_k is not None
    assert np.all(oracle.oracle_k[10:, 0] > oracle.oracle_k[10:, 1])


@pytest.mark.parametrize("clamp", [False, True], ids=["full", "clamp"])
def test_oracle_ties_go_to_the_smallest_k(clamp):
    # At most one draft is ever accepted and every cycle costs the same: k = 1, 2, ..., K_max
    # are the same choice, so the oracle drafts 1 (and 0 in the last cycle, r = 1).
    k_max, tokens = 5, 20
    survival = np.zeros((2, k_max + 1))
    survival[:, 0], survival[:, 1] = 1.0, [0.7, 0.2]
    regimes = Regimes(survival, stay=0.8, mix=np.array([0.5, 0.5]))
    prices = np.full((tokens + 1, k_max + 1), 100.0)
    result = policy_exact(regimes, prices, tokens, policy="oracle", k_max=k_max, clamp=clamp)
    assert result.oracle_k is not None
    assert result.oracle_k[1].tolist() == [0, 0]
    assert np.all(result.oracle_k[2:] == 1)


@pytest.mark.parametrize("clamp", [False, True], ids=["full", "clamp"])
def test_oracle_without_drafts_is_the_baseline(clamp):
    regimes, prices = random_case(4, regimes=2, k_max=4, tokens=40)
    result = policy_exact(regimes, prices, 40, policy="oracle", k_max=0, clamp=clamp)
    assert result.time_us == pytest.approx(prices[1:, 0].sum(), rel=REL)
    assert result.cycles == pytest.approx(40.0, rel=REL)
    assert result.drafted == 0.0 and result.accepted == 0.0 and result.kept == 0.0
    assert result.oracle_k is not None and not result.oracle_k.any()
    assert result.k_cycles.tolist() == pytest.approx([40.0], rel=REL)


@pytest.mark.parametrize("clamp", [False, True], ids=["full", "clamp"])
@pytest.mark.parametrize("policy,k", [("fixed", 3), ("fixed", 0), ("hf_heuristic", 2)])
def test_a_chain_that_forgets_is_iid_acceptance(policy, k, clamp):
    # stay = 0: each cycle's regime is a fresh draw from the mix, so acceptance is i.i.d.
    # with the mixed survival f S_easy + (1 - f) S_hard (for policies that cannot see it).
    k_max, tokens, easy = 6, 80, 0.35
    j = np.arange(k_max + 1)
    rows = np.stack([0.92**j, 0.4**j])
    prices = np.broadcast_to(150.0 + 30.0 * j, (tokens + 1, k_max + 1))
    markov = Regimes(rows, stay=0.0, mix=np.array([easy, 1 - easy]))
    iid = Regimes((easy * rows[0] + (1 - easy) * rows[1])[None, :])
    got, want = (
        policy_exact(r, prices, tokens, policy=policy, k=k, k_max=k_max, clamp=clamp)
        for r in (markov, iid)
    )
    assert fields(got) == pytest.approx(fields(want), rel=1e-12, abs=1e-12)
    sticky = policy_exact(
        Regimes(rows, stay=0.95, mix=markov.mix), prices, tokens, policy=policy, k=k, k_max=k_max
    )
    if k:  # the same stationary acceptance, but bursty: not the i.i.d. value
        assert sticky.time_us != pytest.approx(want.time_us, rel=1e-3)


@pytest.mark.parametrize("policy", POLICIES)
def test_identical_regimes_are_one_regime(policy):
    regimes, prices = random_case(5, regimes=1, k_max=5, tokens=70)
    twice = Regimes(np.repeat(regimes.survival, 2, axis=0), stay=0.7, mix=np.array([0.3, 0.7]))
    one, two = (
        policy_exact(r, prices, 70, policy=policy, k=2, k_max=5, clamp=True)
        for r in (regimes, twice)
    )
    assert fields(two) == pytest.approx(fields(one), rel=1e-12)


def test_hf_heuristic_climbs_when_every_draft_is_accepted():
    # Acceptance 1: K_c = 1, 3, 5, 7, 8, 8, ... (K_max = 8); a cycle emits K_c + 1 tokens.
    k_max, tokens = 8, 40
    prices = np.broadcast_to(100.0 + np.arange(k_max + 1), (tokens + 1, k_max + 1))
    result = policy_exact(
        Regimes(np.ones((1, k_max + 1))), prices, tokens, policy="hf_heuristic", k=1, k_max=k_max
    )
    drafts, left = [], tokens
    for kc in [1, 3, 5, 7] + [8] * 10:
        if left <= 0:
            break
        drafts.append(kc)
        last_left, left = left, left - (kc + 1)
    # 2 + 4 + 6 + 8 = 20 tokens, then 9 per cycle: 29, 38, and the last cycle needs 2.
    assert drafts == [1, 3, 5, 7, 8, 8, 8] and last_left == 2
    assert result.cycles == len(drafts)
    assert result.k_cycles.tolist() == [0, 1, 0, 1, 0, 1, 0, 1, 3]
    assert result.time_us == sum(100.0 + d for d in drafts)
    assert result.drafted == result.accepted == sum(drafts)
    assert result.kept == sum(drafts[:-1]) + last_left  # the cut keeps 2 of 8 drafts


def test_hf_heuristic_collapses_to_one_when_nothing_is_accepted():
    # Acceptance 0: K_c = 5, 4, 3, 2, 1, 1, ...; each cycle emits one token.
    k_max, tokens = 6, 12
    survival = np.zeros((1, k_max + 1))
    survival[0, 0] = 1.0
    prices = np.broadcast_to(100.0 + 10.0 * np.arange(k_max + 1), (tokens + 1, k_max + 1))
    for clamp in (False, True):
        result = policy_exact(
            Regimes(survival), prices, tokens, policy="hf_heuristic", k=5, k_max=k_max, clamp=clamp
        )
        drafts = [5, 4, 3, 2] + [1] * 8
        if clamp:
            drafts[-1] = 0  # r = 1: no drafts
        assert result.cycles == tokens
        assert result.k_cycles.tolist() == [drafts.count(d) for d in range(k_max + 1)]
        assert result.time_us == pytest.approx(sum(100.0 + 10.0 * d for d in drafts), rel=REL)
        assert result.accepted == 0.0 and result.kept == 0.0


@pytest.mark.parametrize("policy", POLICIES)
def test_clamped_sequences_keep_every_verifier_token(policy):
    # Under clamp n <= r - 1, so each cycle keeps its n accepted drafts and its verifier
    # token: kept + cycles = T. Under full, some accepted drafts are cut: kept <= accepted.
    regimes, prices = random_case(6, regimes=2, k_max=10, tokens=300)
    for clamp in (False, True):
        result = policy_exact(regimes, prices, 300, policy=policy, k=4, k_max=10, clamp=clamp)
        assert result.k_cycles.sum() == pytest.approx(result.cycles, rel=REL)
        assert result.kept <= result.accepted * (1 + REL)
        assert result.drafted == pytest.approx(float(np.arange(11) @ result.k_cycles), rel=REL)
        if clamp:
            assert result.kept + result.cycles == pytest.approx(300.0, rel=REL)
        elif policy == "oracle":
            # Drafts cost time: the oracle never drafts past the end, so nothing is cut.
            assert result.oracle_k is not None
            assert np.all(result.oracle_k[1:] <= np.arange(300)[:, None])
            assert result.kept == pytest.approx(result.accepted, rel=REL)
        else:
            assert result.kept < result.accepted


def test_bad_input_is_refused():
    regimes, prices = random_case(1, regimes=2, k_max=4, tokens=8)
    with pytest.raises(ValueError, match="unknown policy"):
        policy_exact(regimes, prices, 8, policy="goodput", k_max=4)
    with pytest.raises(ValueError, match="fixed k"):
        policy_exact(regimes, prices, 8, policy="fixed", k=5, k_max=4)
    with pytest.raises(ValueError, match="starting k"):
        policy_exact(regimes, prices, 8, policy="hf_heuristic", k=0, k_max=4)
    with pytest.raises(ValueError, match="k_max"):
        policy_exact(regimes, prices, 8, policy="oracle", k_max=5)
    with pytest.raises(ValueError, match="cycle_us"):
        policy_exact(regimes, prices[:-1], 8, policy="oracle", k_max=4)
    with pytest.raises(ValueError, match="non-increasing"):
        Regimes(np.array([[1.0, 0.5, 0.6]]))
    with pytest.raises(ValueError, match="survival\\[:, 0\\]"):
        Regimes(np.array([[0.9, 0.5]]))
    with pytest.raises(ValueError, match="mix"):
        Regimes(np.ones((2, 3)), stay=0.5)
    with pytest.raises(ValueError, match="stay"):
        Regimes(np.ones((1, 3)), stay=1.5)
