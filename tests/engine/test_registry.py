"""Every list of parts a user meets equals its registry (engine.core.parts), in the same
order: the CLI's choices for the choosing flag, the form's select, ``PARTS``, the choosing
field's choices, and, for the built-in parts, each package's ``BUILT_IN`` and the table of
parts in docs/model.md. Checked with the built-in parts alone and with one more part of
each kind registered (which a list of its own would miss).
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import engine.acceptance
import engine.cost.models
import engine.policies
import engine.proposers
import engine.shapes
from engine.acceptance.base import AcceptanceModel
from engine.core.config import FIELD_SPECS, PARTS, SpecConfig
from engine.core.parts import REGISTRIES, Registry
from engine.cost.part import CostPart
from engine.policies.base import PolicyPart
from engine.proposers.base import ProposerPart
from engine.shapes.base import ShapePart

MODEL_DOC = Path(__file__).resolve().parents[2] / "docs" / "model.md"
BUILT_IN = {
    "acceptance": engine.acceptance.BUILT_IN,
    "cost": engine.cost.models.BUILT_IN,
    "policy": engine.policies.BUILT_IN,
    "shape": engine.shapes.BUILT_IN,
    "proposer": engine.proposers.BUILT_IN,
}


# One more part of each kind, with no fields: only its name is listed.
class _ExtraAcceptance(AcceptanceModel):
    name = "extra_acceptance"
    description = "every draft accepted with probability one half"

    def position_probs(self, config: Any, k: int) -> Any:
        import numpy as np

        return np.full(k, 0.5)


class _ExtraCost(CostPart):
    name = "extra_cost"
    description = "a draft pass 1 us, a verify pass 10 us"

    def build(self, config: Any) -> Any:
        from engine.cost.linear import LinearCost

        return LinearCost(1.0, 10.0)


class _ExtraPolicy(PolicyPart):
    name = "extra_policy"
    description = "K every cycle, on the stepwise engine"
    adaptive = False

    def k_bound(self, config: Any) -> int:
        return int(config.k)


class _ExtraShape(ShapePart):
    name = "extra_shape"
    description = "a chain by another name"


class _ExtraProposer(ProposerPart):
    name = "extra_proposer"
    description = "a draft model by another name"


EXTRA = {
    "acceptance": _ExtraAcceptance,
    "cost": _ExtraCost,
    "policy": _ExtraPolicy,
    "shape": _ExtraShape,
    "proposer": _ExtraProposer,
}


@pytest.fixture(params=["built-in", "one more"])
def registered(request: pytest.FixtureRequest) -> Iterator[bool]:
    """The built-in parts alone (False), or with one more part of each kind (True)."""
    extra = request.param == "one more"
    if not extra:
        yield False
        return
    for kind, cls in EXTRA.items():
        REGISTRIES[kind].register(cls)
    try:
        yield True
    finally:
        for kind, cls in EXTRA.items():
            REGISTRIES[kind].unregister(cls.name)


def _cli_choices(selector: str) -> dict[str, tuple[str, ...]]:
    """The choices of the flag that sets ``selector``, by subcommand that has it."""
    from spectui.cli.parser import build_parser

    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    found = {}
    for command, subparser in sub.choices.items():
        for action in subparser._actions:
            if action.dest == selector:
                found[command] = tuple(action.choices or ())
    return found


def _form_choices(selector: str) -> tuple[str, ...]:
    """What the form's select for ``selector`` offers, on the default scenario."""
    from textual.widgets import Select

    from spectui.widgets.param_form import FORM_FIELDS, ParamForm

    assert selector in FORM_FIELDS
    config = SpecConfig()
    form = ParamForm(config)
    form._row(selector, config.get(selector))
    select = form._fields[selector]
    assert isinstance(select, Select)
    return tuple(str(value) for _, value in select._options)


def _model_doc_parts() -> dict[str, tuple[str, tuple[str, ...]]]:
    """docs/model.md's table of parts: each kind's choosing field and names, in order."""
    table = {}
    for line in MODEL_DOC.read_text(encoding="utf-8").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != 4 or cells[0] not in REGISTRIES:
            continue
        names = re.sub(r"\([^)]*\)", "", cells[2])  # "`fixed` (`k = K`, ...)": the name
        table[cells[0]] = (cells[1].strip("`"), tuple(re.findall(r"`([a-z0-9_]+)`", names)))
    return table


@pytest.mark.parametrize("kind", list(REGISTRIES))
def test_every_list_of_parts_equals_its_registry(kind: str, registered: bool) -> None:
    registry: Registry[Any] = REGISTRIES[kind]
    names = registry.names()
    assert (EXTRA[kind].name in names) is registered
    assert PARTS[kind] == (registry.selector, names)
    spec = FIELD_SPECS[registry.selector]
    assert spec.kind == "choice" and spec.choices == names
    # The command line: run and arena (every subcommand with the scenario's flags).
    cli = _cli_choices(registry.selector)
    assert {"run", "arena"} <= set(cli)
    assert set(cli.values()) == {names}
    # The app's form.
    assert _form_choices(registry.selector) == names
    if not registered:
        # Each package imports its built-in parts in the order every list shows them.
        assert tuple(BUILT_IN[kind]) == names
        # docs/model.md names each part of each kind, in the registry's order.
        assert _model_doc_parts()[kind] == (registry.selector, names)


def test_the_arenas_help_names_every_built_in_policy() -> None:
    """``spectui arena --help`` lists the registered policies in words, in their order."""
    from engine.core.parts import POLICY
    from spectui.cli.parser import build_parser

    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    text = " ".join((sub.choices["arena"].description or "").split())
    listed = re.search(r"Run K policies \(([^)]*)\)", text)
    assert listed is not None, text
    assert tuple(listed.group(1).split(", ")) == POLICY.names()


def test_the_exact_programs_the_policies_name_exist() -> None:
    """A policy with exact values names one of the exact program's policies."""
    from engine.core.parts import POLICY
    from engine.simulate.policy_exact import POLICIES

    base = SpecConfig(draft_model="confidence")  # every policy can run on it
    programs = {}
    for name in POLICY:
        part = POLICY[name]
        program = part.exact_program(base.replace(**{"policy.name": name}))
        assert (program is not None) is part.exact, name
        if program is not None:
            programs[name] = program[0]
    assert programs and set(programs.values()) <= set(POLICIES)


def _keyed_model(keyed: bool) -> type[AcceptanceModel]:
    """An acceptance model named "keyed" with one field, which keys the random stream or not."""
    from engine.core.fields import field

    class Keyed(AcceptanceModel):
        name = "keyed"
        description = "every draft accepted with probability one half"
        fields = (
            field(
                "acceptance.keyed_a",
                0.5,
                label="keyed a",
                kind="number",
                low=0.0,
                high=1.0,
                help="keyed: a parameter it ignores",
                seed_key=keyed,
            ),
        )

        def position_probs(self, config: Any, k: int) -> Any:
            import numpy as np

            return np.full(k, 0.5)

    return Keyed


def test_a_seed_key_follows_the_fields_its_part_declares_now() -> None:
    """A configuration's random stream is keyed by what its parts declare now: the same
    scenario, after its model registered again with its field now keying the stream,
    draws anew (a key remembered from before the change would draw the same numbers)."""
    from engine.core.config import seed_key_values
    from engine.core.runs import seed_key

    acceptance = REGISTRIES["acceptance"]
    acceptance.register(_keyed_model(keyed=False))
    try:
        config = SpecConfig(draft_model="keyed")
        before = seed_key(config)
        assert "acceptance.keyed_a" not in seed_key_values(config)
        acceptance.unregister("keyed")
        acceptance.register(_keyed_model(keyed=True))
        assert seed_key_values(config)["acceptance.keyed_a"] == "0.5"
        assert seed_key(config) != before
    finally:
        acceptance.unregister("keyed")


def test_a_scenario_hashed_before_a_registration_still_finds_its_equal() -> None:
    """A scenario keeps its hash, but a part registered since gives it one more field (its
    default): it equals a scenario made now, so it must hash alike (a cache keyed by the
    two would hold two entries for one scenario)."""
    acceptance = REGISTRIES["acceptance"]
    early = SpecConfig(k=3)
    hash(early)
    acceptance.register(_keyed_model(keyed=True))
    try:
        now = SpecConfig(k=3)
        assert now == early and hash(now) == hash(early)
    finally:
        acceptance.unregister("keyed")
    assert hash(SpecConfig(k=3)) == hash(early)
