import math

import pytest

from engine.core.config import FIELD_SPECS, ConfigError, SpecConfig, parse_value


def test_defaults_are_the_original_cli_defaults():
    # From the original's CLI reference (seed document).
    c = SpecConfig()
    assert (c.draft_model, c.k, c.acceptance_rate, c.draft_cost_us, c.verify_cost_us) == (
        "fixed",
        5,
        0.8,
        20.0,
        200.0,
    )
    assert (c.decay_base, c.decay_factor) == (0.9, 0.95)
    assert (c.entropy_high, c.entropy_low, c.entropy_frac) == (0.95, 0.5, 0.3)
    assert (c.n_sequences, c.tokens_per_seq, c.seed, c.tail) == (500, 128, 42, "full")
    assert c.cost_ratio == pytest.approx(0.1)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("k", 0),
        ("k", 1025),
        ("k", 2.5),
        ("k", True),
        ("k", "5"),
        ("k", math.nan),
        ("acceptance_rate", 1.0001),
        ("acceptance_rate", -0.1),
        ("acceptance_rate", math.nan),
        ("decay_factor", math.inf),
        ("entropy_frac", 2),
        ("draft_cost_us", -1.0),
        ("draft_cost_us", math.inf),
        ("verify_cost_us", 0.0),
        ("n_sequences", 0),
        ("tokens_per_seq", -5),
        ("seed", -1),
        ("draft_model", "medusa"),
        ("tail", "cut"),
    ],
)
def test_invalid_values_name_the_field_and_the_range(field, value):
    with pytest.raises(ConfigError) as info:
        SpecConfig(**{field: value})
    message = str(info.value)
    assert message.startswith(f"{field}: ")
    assert "expected" in message
    assert info.value.field == field


@pytest.mark.parametrize("p", [0.0, 1.0])
def test_probability_edges_are_valid(p):
    c = SpecConfig(acceptance_rate=p, decay_base=p, decay_factor=p, entropy_frac=p)
    assert c.acceptance_rate == p


def test_integral_float_is_accepted_for_integers_and_normalised():
    assert SpecConfig(k=7.0).k == 7
    assert isinstance(SpecConfig(k=7.0).k, int)


def test_replace_validates_and_rejects_unknown_fields():
    with pytest.raises(ConfigError, match="^k: "):
        SpecConfig().replace(k=0)
    with pytest.raises(ConfigError, match="^speculation: unknown parameter"):
        SpecConfig().replace(speculation=3)


def test_every_field_has_a_spec_and_round_trips():
    c = SpecConfig(k=9, tail="clamp", batch_size=8, cost_model="roofline")
    assert set(c.values()) == set(FIELD_SPECS)
    assert SpecConfig.from_dict(c.to_dict()) == c
    assert SpecConfig.from_dict(c.values()) == c


def test_a_record_holds_the_original_fields_and_only_newer_ones_set_away_from_default():
    from engine.core.config import CONFIG_FIELDS

    assert list(SpecConfig().to_dict()) == list(CONFIG_FIELDS)
    record = SpecConfig().replace(**{"workload.batch_size": 8, "cost.verify_token_us": 3}).to_dict()
    assert list(record) == [*CONFIG_FIELDS, "workload.batch_size", "cost.verify_token_us"]
    assert record["workload.batch_size"] == 8 and record["cost.verify_token_us"] == 3.0


def test_numpy_numbers_are_accepted():
    import numpy as np

    c = SpecConfig(k=np.int64(3), acceptance_rate=np.float32(0.5), n_sequences=np.uint16(7))
    assert (c.k, c.n_sequences) == (3, 7) and type(c.k) is int
    assert c.acceptance_rate == 0.5
    with pytest.raises(ConfigError, match="^k: "):
        SpecConfig(k=np.bool_(True))


@pytest.mark.parametrize(
    ("field", "value", "allowed"),
    [
        ("draft_cost_us", 1e12, "expected a number in [0, 1e9]"),
        ("verify_cost_us", 1e12, "expected a number in [0.001, 1e9]"),
        ("verify_cost_us", 5e-324, "expected a number in [0.001, 1e9]"),
    ],
)
def test_costs_name_their_real_bounds(field, value, allowed):
    with pytest.raises(ConfigError) as info:
        SpecConfig(**{field: value})
    assert str(info.value).endswith(allowed)


@pytest.mark.parametrize("k", [1, 1024])
@pytest.mark.parametrize(
    ("draft", "verify"),
    [
        (FIELD_SPECS["draft_cost_us"].high, FIELD_SPECS["verify_cost_us"].low),
        (FIELD_SPECS["draft_cost_us"].low, FIELD_SPECS["verify_cost_us"].high),
        (FIELD_SPECS["draft_cost_us"].high, FIELD_SPECS["verify_cost_us"].high),
        (FIELD_SPECS["draft_cost_us"].low, FIELD_SPECS["verify_cost_us"].low),
    ],
)
def test_every_accepted_cost_gives_finite_metrics(k, draft, verify):
    # verify 5e-324 with draft 1e9 used to be accepted: cost_ratio and compute_overhead
    # were inf and the speedup exactly 0.
    from engine.simulate.simulator import simulate

    config = SpecConfig(
        k=k, draft_cost_us=draft, verify_cost_us=verify, n_sequences=3, tokens_per_seq=50
    )
    metrics = simulate(config).metrics
    assert math.isfinite(config.cost_ratio)
    for name, value in metrics.items():
        assert math.isfinite(value), name
    assert metrics["speedup"] > 0 and metrics["speedup_exact"] > 0


@pytest.mark.parametrize(
    ("field", "text"),
    [("k", "٣"), ("n_sequences", "１０"), ("draft_cost_us", "٢٠"), ("seed", "4٢")],
)
def test_only_ascii_digits_are_numbers(field, text):
    with pytest.raises(ConfigError) as info:
        parse_value(field, text)
    assert str(info.value).startswith(f"{field}: {text!r} is not ")
    assert "expected" in str(info.value)


@pytest.mark.parametrize(
    ("field", "text", "value"),
    [("k", " 3 ", 3), ("draft_cost_us", "1e3", 1000.0), ("tail", "clamp", "clamp")],
)
def test_parse_value_reads_ascii_text(field, text, value):
    assert parse_value(field, text) == value
