"""The registries of parts (engine.core.parts) and the scenario that follows them.

A part registered, refused or taken back changes the table of fields (engine.core.config)
at once; a scenario made before a part registered still reads its fields' defaults.
"""

from __future__ import annotations

import dataclasses
import pickle

import pytest

import engine.acceptance
import engine.cost.models
import engine.policies
import engine.shapes
from engine.acceptance.base import AcceptanceModel
from engine.core.config import (
    CONFIG_FIELDS,
    DEFAULTS,
    FIELD_SPECS,
    SCENARIO_FIELDS,
    ConfigError,
    SpecConfig,
    field,
    reads,
)
from engine.core.parts import ACCEPTANCE, COST, POLICY, SHAPE, Part


class _Flat(AcceptanceModel):
    name = "flat_test"
    description = "every position accepted with the same q"
    fields = (field("acceptance.flat_q", 0.7, label="q", kind="prob", help="flat_test: q"),)

    def position_probs(self, config, k):
        import numpy as np

        return np.full(k, config.flat_q)


@pytest.fixture
def flat():
    ACCEPTANCE.register(_Flat)
    yield _Flat
    ACCEPTANCE.unregister("flat_test")


def test_the_registries_hold_the_built_in_parts_in_their_order():
    """Each registry holds its package's ``BUILT_IN`` parts in that order (every list a user
    meets is the registry's: tests/engine/test_registry.py), the original's first. A new
    built-in part is its name in ``BUILT_IN``, not a line here."""
    for registry, package in (
        (ACCEPTANCE, engine.acceptance),
        (COST, engine.cost.models),
        (POLICY, engine.policies),
        (SHAPE, engine.shapes),
    ):
        assert registry.names() == tuple(package.BUILT_IN), registry.noun
    original = ("fixed", "position_decay", "entropy_aware")
    assert ACCEPTANCE.names()[:3] == original
    assert ACCEPTANCE.where(lambda part: part.original) == original
    # The original's cost model, K policy and shape: each choosing field's default.
    assert (COST.names()[0], POLICY.names()[0], SHAPE.names()[0]) == ("linear", "fixed", "chain")


def test_the_original_columns_come_first_in_the_original_order():
    assert tuple(CONFIG_FIELDS) == (
        "draft_model",
        "k",
        "acceptance_rate",
        "draft_cost_us",
        "verify_cost_us",
        "decay_base",
        "decay_factor",
        "entropy_high",
        "entropy_low",
        "entropy_frac",
        "n_sequences",
        "tokens_per_seq",
        "seed",
        "tail",
    )
    # Each part's newer fields follow the field that chooses it.
    newer = list(SCENARIO_FIELDS)
    assert newer.index("cost.model") < newer.index("cost.gpu") < newer.index("policy.name")
    assert newer.index("policy.name") < newer.index("policy.k_max") < newer.index("shape.name")


def test_a_shared_field_is_read_by_every_part_that_declares_it():
    assert FIELD_SPECS["acceptance.beta_a"].part == ("draft_model", ("beta_round", "confidence"))
    assert FIELD_SPECS["policy.k_max"].part == (
        "policy.name",
        ("hf_heuristic", "threshold", "goodput", "oracle"),
    )
    assert FIELD_SPECS["cost.gpu"].part == ("cost.model", ("roofline", "roofline_max"))


def test_a_registered_model_is_a_choice_with_its_field_and_default(flat):
    assert "flat_test" in FIELD_SPECS["draft_model"].choices
    assert FIELD_SPECS["acceptance.flat_q"].part == ("draft_model", ("flat_test",))
    assert DEFAULTS["acceptance.flat_q"] == 0.7
    assert "acceptance.flat_q" in SCENARIO_FIELDS
    config = SpecConfig(draft_model="flat_test", flat_q=0.5)
    assert config.flat_q == 0.5 and reads(config, "acceptance.flat_q")
    assert config.to_dict()["acceptance.flat_q"] == 0.5
    with pytest.raises(ConfigError, match=r"^acceptance.flat_q: 1.5 is not allowed"):
        SpecConfig(draft_model="flat_test", flat_q=1.5)


def test_taking_a_part_back_removes_its_name_and_fields(flat):
    ACCEPTANCE.unregister("flat_test")
    try:
        assert "flat_test" not in FIELD_SPECS["draft_model"].choices
        assert "acceptance.flat_q" not in FIELD_SPECS
        with pytest.raises(ConfigError, match=r"^draft_model: 'flat_test' is not allowed"):
            SpecConfig(draft_model="flat_test")
    finally:
        ACCEPTANCE.register(_Flat)  # the fixture takes it back


def test_a_scenario_made_before_a_part_registered_reads_its_defaults():
    before = SpecConfig()
    ACCEPTANCE.register(_Flat)
    try:
        assert before.flat_q == 0.7
        assert before == SpecConfig()
        assert hash(before) == hash(SpecConfig())
    finally:
        ACCEPTANCE.unregister("flat_test")


def test_a_name_taken_twice_or_badly_formed_is_refused():
    with pytest.raises(ValueError, match="'fixed' is registered already"):

        @ACCEPTANCE.register
        class Again(_Flat):
            name = "fixed"

    with pytest.raises(ValueError, match="needs a name of a-z"):

        @ACCEPTANCE.register
        class Upper(_Flat):
            name = "Flat"

    with pytest.raises(TypeError, match="not a cost"):
        COST.register(_Flat)
    assert "Flat" not in ACCEPTANCE and ACCEPTANCE.names()[0] == "fixed"


def test_a_field_that_clashes_with_another_declaration_is_refused_whole():
    class Clash(_Flat):
        name = "clash_test"
        fields = (field("acceptance.beta_a", 9.0, kind="prob", help="not the same field"),)

    with pytest.raises(ValueError, match="acceptance.beta_a differs"):
        ACCEPTANCE.register(Clash)
    assert "clash_test" not in ACCEPTANCE
    assert FIELD_SPECS["acceptance.beta_a"].default == 4.0

    class Core(_Flat):
        name = "core_test"
        fields = (field("k", 3, kind="int", low=1, high=9),)

    with pytest.raises(ValueError, match="k is a core field"):
        ACCEPTANCE.register(Core)
    assert "core_test" not in ACCEPTANCE


def test_a_part_needs_a_description():
    class Bare(Part):
        kind = "shape"
        name = "bare_test"

    with pytest.raises(ValueError, match="needs a one-line description"):
        SHAPE.register(Bare)


def test_an_unknown_part_is_named_with_the_known_ones():
    with pytest.raises(KeyError, match="unknown cost model 'nope'; known: linear, roofline"):
        COST["nope"]


def test_a_scenario_is_frozen_comparable_and_pickled_whole():
    config = SpecConfig(k=7, cost_model="roofline", batch_size=8)
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.k = 3
    with pytest.raises(TypeError, match="unexpected keyword argument 'kk'"):
        SpecConfig(kk=3)
    copy = pickle.loads(pickle.dumps(config))
    assert copy == config and hash(copy) == hash(config) and copy.k == 7
    assert config != SpecConfig(k=7)
    assert repr(SpecConfig()).startswith("SpecConfig(draft_model='fixed', k=5, acceptance_rate=0.8")


def test_a_part_cannot_claim_a_column_of_the_original_record():
    class Column(_Flat):
        name = "column_test"
        fields = (field("column_q", 0.5, original=2, kind="prob", help="column_test: q"),)

    with pytest.raises(ValueError, match="the same column of the original's record"):
        ACCEPTANCE.register(Column)
    assert tuple(CONFIG_FIELDS)[2] == "acceptance_rate" and "column_test" not in ACCEPTANCE
