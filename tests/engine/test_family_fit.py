"""Calibration meets distributions (engine.calibrate.family_fit, issue #28): counts drawn
from the family itself are recognised (rule and temperature inside their intervals), a
rate no rule can give is refused, and `spectui calibrate --family` prints and returns it."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from engine.calibrate import family_fit as ff
from engine.core.parts import ACCEPTANCE

LOGS = Path(__file__).parent.parent / "fixtures" / "logs"


def drawn_counts(rule, temperature, size, drafts, seed, growth=0.0):
    """Per-position counts of ``drafts`` cycles of K = 4 from the family's own rates."""
    config = ff.family_config().replace(
        **{
            "acceptance.accept_rule": rule,
            "acceptance.temperature": temperature,
            "acceptance.mismatch_size": size,
            "acceptance.mismatch_growth": growth,
        }
    )
    rates = ACCEPTANCE.of(config).position_probs(config, 4)
    rng, reached, accepted, n = np.random.default_rng(seed), [], [], drafts
    for rate in rates:
        a = int(rng.binomial(n, rate))
        reached.append(n)
        accepted.append(a)
        n = a
    return accepted, reached


def test_a_one_hot_draft_at_a_temperature_is_recognised():
    fits = {f.rule: f for f in ff.fit_rules(*drawn_counts("one_hot", 0.7, 1.3, 20_000, 3))}
    one_hot = fits["one_hot"]
    assert one_hot.consistent and one_hot.low <= 0.7 <= one_hot.high
    assert np.isnan(one_hot.size) and np.isnan(one_hot.growth)
    assert "a one-hot (argmax) draft at T ~ " in ff.verdict(list(fits.values()))


def test_a_sampled_draft_is_fitted_near_its_mismatch_and_no_rule_fits_an_impossible_log():
    counts = drawn_counts("rejection", 1.0, 1.5, 20_000, 4, growth=0.3)
    fits = {f.rule: f for f in ff.fit_rules(*counts)}
    rejection = fits["rejection"]
    assert rejection.consistent and rejection.low <= 1.0 <= rejection.high
    assert rejection.growth > 0.0
    # Four positions: G^2 on four degrees of freedom, whose tail is e^(-x/2) (1 + x/2).
    assert rejection.dof == 4
    half = rejection.deviance / 2
    assert rejection.p_value == pytest.approx(math.exp(-half) * (1 + half))
    # Falling rates (0.9, 0.3, 0.1): the family's mix of easy and hard cycles makes its
    # conditional rates rise with depth, and its growth is too slow for this fall.
    falling = ff.fit_rules([9_000, 900, 27], [10_000, 9_000, 900])
    assert not any(f.consistent for f in falling)
    assert ff.verdict(falling).startswith("no rule of the distribution family fits")


def test_calibrate_family_prints_the_rules_and_the_verdict(cli):
    status, out, err = cli("calibrate", str(LOGS / "llamacpp_per_position.log"), "--family")
    assert status == 0, err
    assert "the distribution family (its defaults, a temperature mismatch" in out
    rows = {line.split()[0]: line.split() for line in out.splitlines()
            if line.split() and line.split()[0] in ff.RULES}  # fmt: skip
    assert set(rows) == set(ff.RULES) and rows["one_hot"][3:5] == ["-", "-"]
    assert "your rates look like" in out or "no rule of the distribution family" in out
    status, out, _ = cli("calibrate", str(LOGS / "llamacpp_per_position.log"), "--family",
                         "--json")  # fmt: skip
    family = json.loads(out)["family"]
    assert [f["rule"] for f in family] == list(rows)  # best first, as printed
    for f in family:
        assert f["low"] <= f["temperature"] <= f["high"] and 0 <= f["p_value"] <= 1
        assert (f["size"] is None) == (f["rule"] == "one_hot")


def test_a_log_without_positions_is_refused_in_one_line(cli):
    status, out, err = cli("calibrate", str(LOGS / "sglang_decode.log"), "--log-k", "3",
                           "--family")  # fmt: skip
    assert status == 2 and out == "" and "Traceback" not in err
    assert "--family: the log gives no per-position counts" in err and err.count("\n") == 1
