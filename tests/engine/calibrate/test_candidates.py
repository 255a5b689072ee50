"""Calibration's candidates come from the acceptance registry: a model registered as
``fittable`` is fitted, compared, chosen and drawn from without engine.calibrate.fit
naming it; each built-in model's fit methods answer for it."""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine.acceptance.base import AcceptanceModel
from engine.acceptance.fitting import bootstrap_counts, log_likelihood, wilson_interval
from engine.calibrate import fit
from engine.calibrate.fit import (
    calibrate,
    candidates,
    fixed_from_mean,
    model_rates,
    posterior_values,
)
from engine.calibrate.logs import Window
from engine.core.config import SpecConfig, field
from engine.core.parts import ACCEPTANCE


def counted(position_accepted: tuple[float, ...], drafts: float) -> Window:
    """A vLLM v1 window of ``drafts`` drafts at K = len(position_accepted)."""
    k, accepted = len(position_accepted), int(sum(position_accepted))
    mean = 1.0 + accepted / drafts
    return Window("vllm-v1", 1, "", drafts, int(drafts * k), accepted, k, mean, position_accepted)


def halving_counts(q: float, m: int, drafts: int, seed: int) -> Window:
    """Counts whose conditional rate halves at each position: q, q/2, q/4, ..."""
    rng = np.random.default_rng(seed)
    reached, cumulative = drafts, []
    for i in range(m):
        reached = int(rng.binomial(reached, q * 0.5**i))
        cumulative.append(float(reached))
    return counted(tuple(cumulative), float(drafts))


class _Halving(AcceptanceModel):
    """A test model: one parameter, the rate halving with depth. Its fit is a fine grid."""

    name = "halving_test"
    description = "P(accept) at position i = q / 2^(i-1)"
    fittable = True
    fields = (field("acceptance.halving_q", 0.9, label="q", kind="prob", help="halving: q"),)

    def position_probs(self, config, k):
        return config.halving_q * 0.5 ** np.arange(k, dtype=float)

    def fit(self, accepted, reached):
        accepted, reached = np.atleast_2d(accepted), np.atleast_2d(reached)
        grid = np.linspace(1e-6, 1 - 1e-6, 20_001)
        rates = grid[:, None] * 0.5 ** np.arange(accepted.shape[1])
        best = [
            grid[np.argmax(log_likelihood(a, n, rates))]
            for a, n in zip(accepted, reached, strict=True)
        ]
        return [self.scenario_values({"acceptance.halving_q": float(q)}) for q in best]


@pytest.fixture
def halving():
    ACCEPTANCE.register(_Halving)
    yield ACCEPTANCE["halving_test"]
    ACCEPTANCE.unregister("halving_test")


def test_the_candidates_are_the_registrys_fittable_models_simplest_first():
    fittable = set(ACCEPTANCE.where(lambda model: model.fittable))
    assert {model.name for model in candidates()} == fittable
    assert [model.name for model in candidates()] == [
        "fixed",
        "position_decay",
        "beta_round",
        "per_position",
    ]


def test_a_registered_fittable_model_is_fitted_compared_and_chosen(halving):
    assert [model.name for model in candidates()][:2] == ["fixed", "halving_test"]
    cal = calibrate([halving_counts(0.9, 4, 20_000, seed=1)])
    assert [m.name for m in cal.models] == [
        "fixed",
        "halving_test",
        "position_decay",
        "beta_round",
        "per_position",
    ]
    assert cal.chosen.name == "halving_test"
    fit = cal.chosen
    assert fit.parameters == 1
    assert fit.values["draft_model"] == "halving_test"
    assert fit.values["acceptance.halving_q"] == pytest.approx(0.9, abs=0.01)
    trials = sum(r.reached for r in cal.positions)
    assert fit.criterion == pytest.approx(-2 * fit.log_likelihood + math.log(trials))
    assert "halving_test" in cal.notes[0] and "halving_test" in cal.notes[1]
    assert cal.config(SpecConfig()).draft_model == "halving_test"
    # the default posterior: counts redrawn from the fitted rates, the model refitted
    draws = posterior_values(cal, 40, seed=2)
    q = np.array([v["acceptance.halving_q"] for v in draws])
    assert len(set(q.tolist())) > 10 and abs(q.mean() - 0.9) < 0.02
    assert all(v["draft_model"] == "halving_test" for v in draws)


def test_a_mean_length_alone_fits_the_constant_model_only(halving, monkeypatch):
    """Found by its property, wherever it stands among the candidates."""
    mean_only = Window("sglang", 1, "", 400.0, None, None, 3, 2.5, None)
    last_first = list(reversed(candidates()))
    monkeypatch.setattr(fit, "candidates", lambda: last_first)
    cal = calibrate([mean_only])
    constant = [m.name for m in candidates() if m.constant_rate_field is not None]
    assert [m.name for m in cal.models] == constant == ["fixed"]
    assert cal.chosen.parameters == 1
    assert cal.chosen.values == {"draft_model": "fixed", "acceptance_rate": fixed_from_mean(2.5, 3)}


@pytest.mark.parametrize(
    ("name", "rates", "parameters"),
    [
        ("fixed", [0.7] * 5, 1),
        ("position_decay", list(0.9 * 0.8 ** np.arange(5)), 2),
        ("beta_round", list((2.0 + np.arange(5)) / (3.0 + np.arange(5))), 2),
        ("per_position", [0.6, 0.9, 0.5, 0.8, 0.7], 5),
    ],
)
def test_each_built_in_fit_recovers_its_own_rates(name, rates, parameters):
    """Expected counts (no noise) of a model's rates: its fit gives those rates back."""
    model = ACCEPTANCE[name]
    reached = 1e6 * np.concatenate(([1.0], np.cumprod(rates)[:-1]))
    accepted = reached * np.array(rates)
    (values,) = model.fit(accepted, reached)
    assert values["draft_model"] == name
    assert model_rates(name, values, 5) == pytest.approx(rates, abs=2e-5)
    assert model.fit_parameters(5) == parameters


def test_each_fit_gives_one_scenario_per_row_of_counts():
    accepted = np.array([[90.0, 70.0, 40.0], [50.0, 20.0, 5.0]])
    reached = np.array([[100.0, 90.0, 70.0], [100.0, 50.0, 20.0]])
    for model in candidates():
        both = model.fit(accepted, reached)
        assert both == [
            model.fit(accepted[0], reached[0])[0],
            model.fit(accepted[1], reached[1])[0],
        ]
        assert both[0] != both[1]


def test_a_model_that_is_not_fittable_says_so():
    with pytest.raises(NotImplementedError, match="markov"):
        ACCEPTANCE["markov"].fit(np.ones((1, 3)), np.ones((1, 3)))


def test_the_closed_form_fits_by_hand():
    """90 of 100, 70 of 90, 40 of 70: fixed's rate pools them (200 / 260) with Wilson's
    interval of the pool; per_position keeps each (0.9, 7/9, 4/7)."""
    cal = calibrate([counted((90.0, 70.0, 40.0), 100.0)])
    by_name = {m.name: m for m in cal.models}
    fixed = by_name["fixed"]
    assert fixed.values == {"draft_model": "fixed", "acceptance_rate": 200 / 260}
    assert fixed.interval == {"acceptance_rate": wilson_interval(200, 260)}
    assert by_name["per_position"].values == {
        "draft_model": "per_position",
        "acceptance.rates": "0.9,0.777778,0.571429",
    }
    assert by_name["per_position"].interval == by_name["position_decay"].interval == {}


def test_bootstrap_counts_follow_the_share_of_drafts_that_went_on():
    """Pooled windows, one with a shorter list: of 80 accepted at position 2, only 40 went
    on to position 3. Every draft accepted (rates 1): 150, 150, then half of 150."""
    accepted, reached = np.array([120.0, 80.0, 30.0]), np.array([150.0, 120.0, 40.0])
    rng = np.random.default_rng(0)
    sim_a, sim_n = bootstrap_counts(rng, np.ones(3), accepted, reached, draws=2)
    assert sim_n.tolist() == [[150.0, 150.0, 75.0]] * 2
    assert sim_a.tolist() == sim_n.tolist()
