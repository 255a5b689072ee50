"""Acceptance against temperature (engine.validate.temperature): the published rows as the
issue quotes them, the fit and the prediction against the distribution model's own rates,
the table's checks, and what `spectui validate` prints."""

from __future__ import annotations

import json

import pytest

from engine.validate import temperature


def test_the_rows_hold_leviathan_et_al_table_3():
    """T = 0 values as issue #28 quotes them; T = 1 as the paper's Table 3."""
    _, rows = temperature.predictions()
    by_id = {r.id: (r.alpha_t0, r.alpha_t1, r.top_k) for r in rows}
    assert by_id == {
        "lev-ende-t5-small": (0.75, 0.62, 0),
        "lev-ende-t5-base": (0.80, 0.68, 0),
        "lev-ende-t5-large": (0.82, 0.71, 0),
        "lev-cnndm-t5-small": (0.65, 0.53, 0),
        "lev-cnndm-t5-base": (0.73, 0.55, 0),
        "lev-cnndm-t5-large": (0.74, 0.56, 0),
        "lev-lamda-100m": (0.61, 0.57, 40),
        "lev-lamda-2b": (0.71, 0.71, 40),
        "lev-lamda-8b": (0.75, 0.74, 40),
        "lev-gpt-6m": (0.88, 0.89, 0),
    }


def _model_rate(sd: float, temperature_: float, top_k: int, rule: str) -> float:
    from engine.core.parts import ACCEPTANCE

    config = temperature.base_config().replace(
        **{
            "acceptance.mismatch_size": sd,
            "acceptance.temperature": temperature_,
            "acceptance.top_k": top_k,
            "acceptance.accept_rule": rule,
        }
    )
    return float(ACCEPTANCE.of(config).position_probs(config, 1)[0])


def test_the_fit_and_the_prediction_are_the_models_own_rates():
    """A row's fitted sd gives, through the distribution model (every context's p and q
    built and the rule applied), its fitted T = 0 acceptance and its predicted T = 1 one."""
    _, rows = temperature.predictions()
    row = next(r for r in rows if r.id == "lev-lamda-8b")  # top-40 on both sides
    assert _model_rate(row.sigma, 0.0, row.top_k, "greedy") == pytest.approx(row.fitted_t0)
    assert _model_rate(row.sigma, 1.0, row.top_k, "rejection") == pytest.approx(
        row.predicted_t1, abs=1e-12
    )
    assert abs(row.fitted_t0 - row.alpha_t0) < 0.012  # a step of the 64-context family


def test_the_fit_takes_the_middle_of_the_nearest_step():
    import numpy as np

    critical = [(np.array([3.0, 1.0, 2.0, 4.0]), 1.0)]  # 4 contexts: steps of 0.25
    # sd in (2, 3]: the contexts with critical sd >= sd are 3 and 4: 0.5.
    assert temperature.fit_sd(0.5, critical) == (2.5, 0.5)
    assert temperature.fit_sd(0.8, critical) == (1.5, 0.75)
    assert temperature.fit_sd(1.0, critical) == (0.5, 1.0)


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ('id = "x"\ntarget = "t"\ndraft = "d"\nalpha_t0 = 0.5', "row 1: field 'alpha_t1'"),
        (
            'id = "x"\ntarget = "t"\ndraft = "d"\nalpha_t0 = 1.5\nalpha_t1 = 0.5',
            "row 1: alpha_t0 must be in (0, 1)",
        ),
    ],
)
def test_a_bad_row_is_refused_naming_it(row, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        temperature.parse(f"[source]\nsource = 's'\n[[row]]\n{row}\n")


def test_validate_prints_the_section_and_only_selects_its_rows(cli):
    status, out, err = cli("validate", "--only", "lev-lamda-8b,lev-gpt-6m")
    assert status == 0, err
    assert out.startswith("acceptance against temperature (Leviathan et al., Table 3):")
    lines = {line.split()[0]: line.split() for line in out.splitlines() if line.startswith("lev")}
    assert set(lines) == {"lev-lamda-8b", "lev-gpt-6m"}
    # row, T=0, sd, fitted, predicted, measured, error
    assert lines["lev-gpt-6m"][1] == "0.88" and lines["lev-gpt-6m"][5] == "0.89"
    assert all(len(line) <= 80 for line in out.splitlines())
    status, out, _ = cli("validate", "--only", "lev-ende-t5-base", "--json")
    data = json.loads(out)
    assert [r["id"] for r in data["temperature"]] == ["lev-ende-t5-base"]
    row = data["temperature"][0]
    assert row["error"] == pytest.approx(row["predicted_t1"] / 0.68 - 1)
