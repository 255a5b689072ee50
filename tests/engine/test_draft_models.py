import numpy as np
import pytest

from engine.config import SpecConfig
from engine.draft_models import DRAFT_MODELS, get_model, inert_parameters
from tests.engine.stats import Z_STRICT


def test_registry_and_reads():
    assert set(DRAFT_MODELS) == {"fixed", "position_decay", "entropy_aware"}
    assert get_model("fixed").reads == ("acceptance_rate",)
    assert set(get_model("position_decay").reads) == {"decay_base", "decay_factor"}
    assert set(get_model("entropy_aware").reads) == {"entropy_high", "entropy_low", "entropy_frac"}
    assert "acceptance_rate" in inert_parameters("entropy_aware")
    assert "decay_base" not in inert_parameters("position_decay")
    with pytest.raises(KeyError, match="known: fixed"):
        get_model("nope")


def test_position_probs_follow_semantics():
    c = SpecConfig(
        acceptance_rate=0.7,
        decay_base=0.8,
        decay_factor=0.5,
        entropy_high=0.9,
        entropy_low=0.2,
        entropy_frac=0.25,
    )
    assert np.allclose(get_model("fixed").position_probs(c, 3), [0.7, 0.7, 0.7])
    assert np.allclose(get_model("position_decay").position_probs(c, 3), [0.8, 0.4, 0.2])
    # 0.25 * 0.2 + 0.75 * 0.9 = 0.725
    assert np.allclose(get_model("entropy_aware").position_probs(c, 2), [0.725, 0.725])


@pytest.mark.parametrize("model", list(DRAFT_MODELS))
def test_token_level_sampling_matches_marginals(model):
    c = SpecConfig(
        draft_model=model,
        acceptance_rate=0.6,
        decay_base=0.9,
        decay_factor=0.8,
        entropy_high=0.95,
        entropy_low=0.3,
        entropy_frac=0.4,
    )
    rows, k = 40_000, 4
    accepts = get_model(model).sample_accepts(c, np.random.default_rng(1), rows, k)
    p = get_model(model).position_probs(c, k)
    se = np.sqrt(p * (1 - p) / rows)
    assert np.all(np.abs(accepts.mean(axis=0) - p) <= Z_STRICT * se)


def test_entropy_classes_are_independent_per_token():
    # If each token's class is drawn independently, two positions accept jointly with p^2.
    c = SpecConfig(draft_model="entropy_aware", entropy_high=1.0, entropy_low=0.0, entropy_frac=0.5)
    rows = 40_000
    acc = get_model("entropy_aware").sample_accepts(c, np.random.default_rng(2), rows, 2)
    both = (acc[:, 0] & acc[:, 1]).mean()
    assert abs(both - 0.25) <= Z_STRICT * np.sqrt(0.25 * 0.75 / rows)
