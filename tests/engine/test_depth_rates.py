"""The depth_rates acceptance model: a rate set by the drafter's K (hand-worked)."""

from __future__ import annotations

import pytest

import engine  # noqa: F401  (registers the parts)
from engine.core.config import SpecConfig
from engine.simulate.exact import tokens_per_cycle


def _config(rates: str, k: int) -> SpecConfig:
    return SpecConfig().replace(
        **{"draft_model": "depth_rates", "acceptance.depth_rates": rates}, k=k
    )


def test_the_mean_length_follows_the_rate_of_each_k() -> None:
    # Rates 0.5 at K = 1, 0.8 at K = 2 (and beyond): M(1) = 1.5, M(2) = 1 + 0.8 + 0.64 =
    # 2.44, M(3) = 2.44 + 0.512 = 2.952.
    assert tokens_per_cycle(_config("0.5,0.8", 1)) == pytest.approx(1.5)
    assert tokens_per_cycle(_config("0.5,0.8", 2)) == pytest.approx(2.44)
    assert tokens_per_cycle(_config("0.5,0.8", 3)) == pytest.approx(2.952)


def test_the_mean_length_can_fall_with_k() -> None:
    # 0.9 at K = 1 (M = 1.9), 0.3 at K = 2 (M = 1 + 0.3 + 0.09 = 1.39).
    assert tokens_per_cycle(_config("0.9,0.3", 1)) == pytest.approx(1.9)
    assert tokens_per_cycle(_config("0.9,0.3", 2)) == pytest.approx(1.39)


def test_a_cycle_cut_short_drafts_a_prefix_of_the_same_chain() -> None:
    from engine.acceptance.depth_rates import DepthRates

    config = _config("0.9,0.3,0.6", 3)
    assert list(DepthRates().position_probs(config, 1)) == [0.6]
    assert list(DepthRates().position_probs(config, 3)) == [0.6, 0.6, 0.6]
    assert DepthRates().params_text(config) == "rate by K 0.9,0.3,0.6 (0.6 at K = 3)"
