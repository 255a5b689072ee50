"""benchmarks/tree_anchor.py and its fixture: Spec-Bench's published figures for token trees
(issue #14, "Anchors the README reports"), the implied cycle cost ``tau / speedup``, and the
roofline's cycle cost for each method's tree. No timing is asserted."""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import replace
from pathlib import Path
from types import ModuleType

import pytest

from engine.cost.specs import get_model

REPO = Path(__file__).resolve().parent.parent
LEADERBOARD = (
    "https://github.com/hemingkx/Spec-Bench/blob/fd2c1cd7d2201ef71db4c5f4e455008f017967bf/"
    "Leaderboard.md"
)
# Spec-Bench's A100 leaderboard, Vicuna-13B-v1.3: (#Mean Accepted Tokens, Overall speedup).
PUBLISHED = {
    "EAGLE-3": (5.71, 3.02),
    "EAGLE-2": (4.43, 2.46),
    "EAGLE": (3.64, 2.16),
    "Medusa": (2.39, 1.80),
    "SpS": (2.19, 1.54),
}


@pytest.fixture(scope="module")
def anchor() -> ModuleType:
    """benchmarks/tree_anchor.py, loaded by path (benchmarks/ is not a package)."""
    spec = importlib.util.spec_from_file_location("tree_anchor", REPO / "benchmarks/tree_anchor.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["tree_anchor"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_fixture_holds_the_published_figures(anchor: ModuleType) -> None:
    rows = {row.method: (row.tau, row.speedup) for row in anchor.read_anchors()}
    assert rows == PUBLISHED


def test_implied_cycle_cost_is_tau_over_speedup(anchor: ModuleType) -> None:
    for row in anchor.read_anchors():
        assert row.implied_cycle_steps == row.tau / row.speedup
    assert anchor.implied_cycle_steps(5.71, 3.02) == pytest.approx(1.8907, abs=1e-4)
    assert anchor.implied_cycle_steps(2.19, 1.54) == pytest.approx(1.4221, abs=1e-4)
    # A method that gains nothing per cycle costs one step per token.
    assert anchor.implied_cycle_steps(1.0, 1.0) == 1.0


def test_every_method_and_shape_has_a_source(anchor: ModuleType) -> None:
    sources = anchor.read_sources()
    assert any(source.count(LEADERBOARD) == 1 for source in sources)
    assert all("https://" in source for source in sources)
    for method in PUBLISHED:
        shape_sources = [s for s in sources if s.startswith(f"{method} ") or f" {method} " in s]
        assert shape_sources, f"no '# source:' line names {method}'s tree shape"


def test_tree_shapes_are_consistent(anchor: ModuleType) -> None:
    for row in anchor.read_anchors():
        assert row.verify_width == row.draft_nodes + 1  # every node and the root
        assert 1 <= row.depth <= row.draft_nodes
        assert row.drafter in anchor.DRAFTERS
        assert row.tau <= row.depth + 1  # accepted drafts along one path, plus the bonus


def test_vicuna_13b_spec_matches_its_config() -> None:
    model = get_model("vicuna-13b")
    layers, d, ffn, vocab = 40, 5120, 13824, 32000
    per_layer = 4 * d * d + 3 * d * ffn + 2 * d
    assert model.params == layers * per_layer + d + 2 * vocab * d  # untied lm_head
    assert (model.layers, model.d_model, model.kv_heads, model.head_dim) == (40, 5120, 40, 128)
    assert model.kv_bytes_per_token() == 819_200


def test_roofline_row_is_verify_plus_drafts_over_a_step(anchor: ModuleType) -> None:
    cost = anchor.roofline_cost()
    step = cost.verify_us(1, 1, anchor.CONTEXT)
    for row in anchor.table():
        a = row.anchor
        assert row.verify_steps == pytest.approx(cost.verify_us(a.verify_width, 1, 512) / step)
        assert row.model_cycle_steps == row.verify_steps + row.draft_steps
        assert row.model_speedup == pytest.approx(a.tau / row.model_cycle_steps)
        assert row.published_over_model == pytest.approx(
            a.implied_cycle_steps / row.model_cycle_steps
        )
    # A cycle that verifies one token and drafts nothing is one decoding step.
    plain = replace(anchor.read_anchors()[-1], verify_width=1, draft_passes=0)
    assert anchor.anchor_row(plain, cost).model_cycle_steps == pytest.approx(1.0)


@pytest.mark.parametrize("form", ["roofline", "roofline_max"])
def test_reconciling_overhead_reproduces_the_published_cost(anchor: ModuleType, form: str) -> None:
    """Put the reconciling t0 into the cost model: the roofline then gives the published
    cycle cost, for every method whose t0 is an overhead (positive)."""
    cost = anchor.roofline_cost(form)
    checked = 0
    for row in anchor.table(form):
        if row.reconciling_t0_us <= 0:
            continue
        with_overhead = replace(cost, t0_us=row.reconciling_t0_us)
        again = anchor.anchor_row(row.anchor, with_overhead)
        assert again.model_cycle_steps == pytest.approx(row.anchor.implied_cycle_steps)
        checked += 1
    assert checked >= 3


def test_main_prints_every_method(anchor: ModuleType, capsys: pytest.CaptureFixture) -> None:
    anchor.main()
    out = capsys.readouterr().out
    for method in PUBLISHED:
        assert f"\n{method} " in out
    assert LEADERBOARD in out
