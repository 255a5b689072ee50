"""The regime map (engine.analysis.regime): its values are speedup_exact's, its K* is the project's
rule, its no-pay cells are marked, and the known results of serving come out of it."""

from __future__ import annotations

import numpy as np
import pytest

from engine.analysis.regime import BATCH_SIZES, CONTEXTS, KS, RunStopped, regime_map
from engine.core.config import ConfigError, SpecConfig
from engine.core.kernel import cycle_costs
from engine.cost.models import build_cost
from engine.simulate.exact import exact_metrics_many, speedup_exact

# The scenario: Llama-3.1-8B verifying on an H100 (bf16, default efficiencies).
H100_8B = SpecConfig(cost_model="roofline", gpu="h100", target="llama-3.1-8b", acceptance_rate=0.8)
ONE_B = H100_8B.replace(draft="llama-3.2-1b")
EAGLE = H100_8B.replace(draft="eagle-llama-3.1-8b")


@pytest.fixture(scope="module")
def one_b_map():
    return regime_map(ONE_B)


@pytest.fixture(scope="module")
def eagle_map():
    return regime_map(EAGLE)


def test_default_axes_and_shapes(one_b_map):
    m = one_b_map
    assert m.batch_sizes == (1, 2, 4, 8, 16, 32, 64, 128, 256, 512) == BATCH_SIZES
    assert m.contexts == tuple(1024 * 2**i for i in range(8)) == CONTEXTS
    assert m.contexts[0] == 1024 and m.contexts[-1] == 131072
    assert m.ks == tuple(range(1, 17)) == KS
    assert m.speedup.shape == (10, 8, 16)
    for name in ("k_opt", "speedup_opt", "tie", "pays", "step_us", "verify_ratio"):
        assert getattr(m, name).shape == (10, 8), name
    assert np.all(np.isfinite(m.speedup)) and np.all(m.speedup > 0)


@pytest.mark.parametrize(
    "base",
    [
        ONE_B,
        ONE_B.replace(tail="clamp", tokens_per_seq=37),
        H100_8B.replace(cost_model="roofline_max", draft_model="position_decay"),
        SpecConfig(cost_model="linear", verify_token_us=15.0, acceptance_rate=0.7),
    ],
    ids=["roofline", "roofline-clamp", "roofline_max-decay", "linear"],
)
def test_every_value_is_speedup_exact_bit_for_bit(base):
    """The batched DP is the exact DP: each cell equals speedup_exact of its config."""
    batches, contexts, ks = (1, 16, 512), (0, 1024, 65536), (1, 2, 5, 16)
    m = regime_map(base, batches, contexts, ks)
    for i, b in enumerate(batches):
        for j, c in enumerate(contexts):
            for n, k in enumerate(ks):
                config = base.replace(batch_size=b, prompt_len=c, k=k)
                assert m.speedup[i, j, n] == speedup_exact(config), (b, c, k)


def test_the_map_is_the_batch_of_its_configurations():
    """One dynamic program: the map's speedups are exact_metrics_many's over every
    batch x context x K configuration at once (one call, one array of 3 x 2 x 3)."""
    base = ONE_B.replace(tail="clamp", tokens_per_seq=300, draft_model="position_decay")
    batches, contexts, ks = (1, 64, 300), (0, 4096), (1, 3, 8)
    m = regime_map(base, batches, contexts, ks)
    configs = [
        base.replace(batch_size=b, prompt_len=c, k=k) for b in batches for c in contexts for k in ks
    ]
    many = exact_metrics_many(configs)["speedup_exact"].reshape(m.speedup.shape)
    assert np.array_equal(m.speedup, many)


def test_table_cost_values_are_speedup_exact(tmp_path):
    table = tmp_path / "lat.csv"
    table.write_text(
        "batch_size,tokens,verify_us,draft_us\n"
        "1,1,1000,50\n1,8,1100,400\n64,1,1500,80\n64,8,4000,640\n"
    )
    base = SpecConfig(cost_model="table", cost_table=str(table), acceptance_rate=0.7)
    m = regime_map(base, (1, 8, 64), (1024,), (1, 3, 7))
    for i, b in enumerate(m.batch_sizes):
        for n, k in enumerate(m.ks):
            config = base.replace(batch_size=b, prompt_len=1024, k=k)
            assert m.speedup[i, 0, n] == speedup_exact(config)


def test_k_star_is_the_brute_force_argmax(one_b_map, eagle_map):
    for m in (one_b_map, eagle_map):
        ks = np.array(m.ks)
        for i in range(len(m.batch_sizes)):
            for j in range(len(m.contexts)):
                row = m.speedup[i, j]
                assert m.k_opt[i, j] == ks[int(np.argmax(row))]  # first max: smaller K
                assert m.speedup_opt[i, j] == row.max()
                assert m.tie[i, j] == (np.count_nonzero(row == row.max()) > 1)


def test_k_star_depends_on_the_cell():
    """Not one K for the whole map: the optimum moves with batch and context."""
    m = regime_map(EAGLE, contexts=(1024, 131072))
    assert len(set(m.k_opt.ravel().tolist())) >= 3


def test_no_k_pays_is_marked_and_ties_go_to_the_smaller_k():
    """A draft that is never accepted and costs nothing: every K gives exactly the baseline's
    time, speedup 1.0, so no K pays (it must be > 1), every K ties and K* is the smallest."""
    base = SpecConfig(acceptance_rate=0.0, draft_cost_us=0.0)
    m = regime_map(base, (1, 4), (0, 1024), (2, 3, 5))
    assert np.all(m.speedup == 1.0)
    assert not m.pays.any()
    assert m.tie.all()
    assert np.all(m.k_opt == 2)


def test_pays_is_best_speedup_above_one():
    base = H100_8B.replace(acceptance_rate=0.6)
    m = regime_map(base, (1, 128, 256, 512), (0, 1024))
    assert np.array_equal(m.pays, m.speedup_opt > 1.0)
    assert m.pays.any() and not m.pays.all()


# ---- The known results (issue #10), from the engine's numbers --------------------------------


def test_verification_is_nearly_free_at_batch_one(one_b_map):
    """Batch 1 decoding is weight-bound: checking K + 1 tokens costs about one step.

    The additive roofline adds the (small) compute and KV terms, so a few percent; the ideal
    (max) roofline gives exactly one step until the ridge."""
    assert np.all(one_b_map.verify_ratio[0] < 1.05)
    assert np.all(one_b_map.verify_ratio[0] >= 1.0)
    ideal = regime_map(ONE_B.replace(cost_model="roofline_max"), batch_sizes=(1,))
    assert np.all(ideal.verify_ratio[0] == pytest.approx(1.0, abs=1e-9))


def _verify_ratio(config: SpecConfig) -> float:
    costs = cycle_costs(config)
    return costs.limit_verify_us / costs.limit_step_us


def test_verification_stops_being_free_at_the_ridge():
    """H100: 989e12 FLOP/s over 3.35e12 B/s. A bf16 pass of N tokens does 2 FLOPs per
    parameter per token and reads 2 bytes per parameter, so compute overtakes the weight
    reads at N = 989e12 / 3.35e12 = 295 tokens: batch x (K + 1) below it verifies for the
    price of a step (ideal roofline, no context), above it the verify pass grows with N."""
    ridge = 989e12 / 3.35e12
    assert 295 < ridge < 296
    base = H100_8B.replace(cost_model="roofline_max", prompt_len=0, tokens_per_seq=1)
    cost = build_cost(base)
    step = cost.verify_us(1, 1, 0)
    # Widths per sequence at batch 1: the first w whose pass costs more than a step.
    ratios = np.asarray(cost.verify_us(np.arange(1, 401), 1, 0)) / step
    first_slower = int(np.argmax(ratios > 1.0 + 1e-9)) + 1
    assert first_slower == 296
    # In batch x (K + 1) terms, at the cycle's own shapes:
    assert _verify_ratio(base.replace(batch_size=64, k=3)) == pytest.approx(1.0)  # 256 tokens
    assert _verify_ratio(base.replace(batch_size=128, k=3)) == pytest.approx(512 / ridge, rel=1e-3)
    # The additive roofline charges the compute all along: far from free at the same point.
    assert _verify_ratio(base.replace(cost_model="roofline", batch_size=128, k=3)) > 1.5


def test_optimal_k_falls_as_batch_grows_at_short_context(one_b_map, eagle_map):
    """At 1k context, bigger batches make each drafted token dearer to verify, so K* falls."""
    for m, (first, last) in ((one_b_map, (4, 2)), (eagle_map, (6, 3))):
        column = m.k_opt[:, 0]
        assert column[0] == first and column[-1] == last
        assert np.all(np.diff(column) <= 0)  # never rises with batch
        assert np.all(np.diff(m.speedup_opt[:, 0]) < 0)  # and the gain shrinks
        assert m.verify_ratio[-1, 0] > 1.2 * m.verify_ratio[0, 0]


def test_speculation_stops_paying_at_large_batch_and_short_context():
    """Where speculation should be off. Honest finding: at acceptance 0.8 every cell of the
    default map (1k..128k) pays, because at 1k tokens the KV cache of a large batch already
    outweighs the 16 GB of weights and keeps the verify pass memory-bound. The no-pay region
    shows with a weaker draft (acceptance 0.6) at short context (prompt 0 and 256 tokens):
    past batch 128, where batch x (K + 1) >= 256 x 2 crosses the ridge."""
    weak = ONE_B.replace(acceptance_rate=0.6)
    for cost_model in ("roofline", "roofline_max"):
        m = regime_map(weak.replace(cost_model=cost_model), contexts=(0, 256, 1024, 32768))
        off = {(b, c) for i, b in enumerate(m.batch_sizes) for j, c in enumerate(m.contexts)}
        off = {(b, c) for (b, c) in off if not m.pays[m.batch_sizes.index(b), m.contexts.index(c)]}
        assert (256, 0) in off and (512, 0) in off and (512, 256) in off, cost_model
        assert all(b >= 256 for b, _ in off), cost_model  # small batches always pay
        assert all(c <= 256 for _, c in off), cost_model  # long context makes it pay again
    assert np.all(regime_map(ONE_B).pays)  # the default map at acceptance 0.8: all pay


def test_long_context_makes_speculation_pay_again_at_large_batch(one_b_map, eagle_map):
    """MagicDec: at large batch, reading the KV cache dominates both target and draft
    passes, so verifying K + 1 tokens costs little more than one again. At batch 256 the
    speedup at 32k..128k context beats the one at 1k, by more with a one-layer EAGLE draft
    (whose own KV cache is tiny) than with Llama-3.2-1B (which reads a quarter as much KV)."""
    for m, gain in ((one_b_map, 1.2), (eagle_map, 1.8)):
        i = m.batch_sizes.index(256)
        at_1k = m.speedup_opt[i, m.contexts.index(1024)]
        for context in (32768, 65536, 131072):
            assert m.speedup_opt[i, m.contexts.index(context)] > gain * at_1k, context
        # and the verify pass is closer to free there
        assert m.verify_ratio[i, -1] < m.verify_ratio[i, 0]
    # The 1B draft's own KV reads grow with context too: at batch 1 long context hurts it.
    assert one_b_map.speedup_opt[0, -1] < one_b_map.speedup_opt[0, 0]


# ---- Progress, cancellation, bad input ------------------------------------------------------


def test_progress_and_stop():
    seen = []
    regime_map(ONE_B, (1, 2), (1024,), (1, 2, 3), on_progress=lambda d, t: seen.append((d, t)))
    assert seen == [(1, 4), (2, 4), (3, 4), (4, 4)]
    asked = []

    def stop() -> bool:
        asked.append(1)
        return len(asked) > 1

    with pytest.raises(RunStopped):
        regime_map(ONE_B, (1, 2), (1024,), (1, 2, 3), should_stop=stop)
    assert len(asked) == 2


def test_stop_within_a_long_sequence():
    """A long T is cancelled inside a K's DP, not only between Ks."""
    calls = []

    def stop() -> bool:
        calls.append(1)
        return len(calls) > 2

    with pytest.raises(RunStopped):
        regime_map(ONE_B.replace(tokens_per_seq=20000), (1,), (1024,), (4,), should_stop=stop)
    assert len(calls) == 3  # baselines, then inside the DP at r = 4096 and 8192


@pytest.mark.parametrize(
    ("axes", "field"),
    [
        ({"batch_sizes": (0, 4)}, "workload.batch_size"),
        ({"batch_sizes": (5000,)}, "workload.batch_size"),
        ({"contexts": (-1,)}, "workload.prompt_len"),
        ({"ks": (0,)}, "k"),
        ({"ks": ()}, "k"),
    ],
)
def test_bad_axes_name_the_field(axes, field):
    with pytest.raises(ConfigError, match=f"^{field}: "):
        regime_map(ONE_B, **axes)


def test_cell_rows_and_legend(one_b_map):
    rows = one_b_map.cell_rows()
    assert len(rows) == 80
    first = rows[0]
    assert (first["batch_size"], first["prompt_len"]) == (1, 1024)
    assert first["k_opt"] == 4 and first["speedup_k4"] == first["speedup_opt"]
    assert list(first)[-1] == "speedup_k16"
    legend = one_b_map.legend()
    assert "fixed acceptance_rate=0.8" in legend
    assert "roofline on h100: llama-3.1-8b verifies, llama-3.2-1b drafts" in legend
    assert "batch" not in legend  # the map varies the batch: no single batch in its legend


def test_a_markov_map_uses_the_regime_chain():
    """Markov acceptance ties cycles together: each cell is the exact program over
    (r, regime) for that cell (not the stationary marginal's i.i.d. cycles), and the form's
    policy does not enter the map of fixed K."""
    config = SpecConfig(
        draft_model="markov", stay=0.99, tokens_per_seq=64, cost_model="roofline"
    ).replace(**{"policy.name": "hf_heuristic"})
    found = regime_map(config, batch_sizes=(1, 64), contexts=(1024,), ks=(2, 6))
    for i, batch in enumerate((1, 64)):
        for m, k in enumerate((2, 6)):
            cell = config.replace(
                **{"policy.name": "fixed", "k": k, "batch_size": batch, "prompt_len": 1024}
            )
            assert found.speedup[i, 0, m] == speedup_exact(cell)
