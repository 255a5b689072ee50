"""The test of the seam (issue #24): a new acceptance model, cost model and K policy, defined
in a module of their own outside the project, registered, and seen everywhere a user meets
parts, with no other file changed.

The module (:data:`PARTS_SOURCE`, the worked example of docs/scenarios.md, "Adding a part")
is written to a temporary folder and imported, which registers its three parts:

- ``harmonic``: P(accept) at draft position i = a / (a + i), one field
  ``acceptance.harmonic_a``; cycles independent, so exact values hold;
- ``flat``: a draft pass and a verify pass each cost a flat time, fields
  ``cost.flat_verify_us`` and ``cost.flat_draft_us``; context and batch ignored;
- ``half``: every cycle drafts ceil(K / 2) tokens, at least ``policy.half_min``; a
  stepwise policy without an exact program (Monte Carlo only).

The fixture unregisters them afterwards. Each test then looks where a user would: ``spectui
run --help``, ``run --json``'s figures, a preset naming them, a sweep's CSV, the arena and
the app's form.
"""

from __future__ import annotations

import asyncio
import csv
import importlib.util
import json
import math
import pkgutil
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from textual.widgets import Select

import engine
import engine.policies
import spectui.cli as cli_package
from engine.core.config import FIELD_SPECS, SpecConfig
from engine.core.parts import ACCEPTANCE, COST, POLICY
from engine.presets import load_preset_file
from tests.test_cli import spectui


def _import_all() -> None:
    """Every module of the engine and the command line, and the form, imported before the
    parts register (as in any process that has loaded them already): whatever they derive
    from the registries must follow a later registration, not keep what it saw at import."""
    for package in (engine, cli_package):
        for module in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            importlib.import_module(module.name)
    importlib.import_module("spectui.widgets.param_form")


_import_all()

# The new parts' module, as a plug-in would write it (each part in its own file would do
# as well). docs/scenarios.md shows the harmonic model from it.
PARTS_SOURCE = '''
"""Three parts from outside the project: harmonic, flat and half."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from engine.acceptance.base import AcceptanceModel
from engine.core.fields import field
from engine.core.parts import ACCEPTANCE, COST, POLICY
from engine.cost.part import CostPart
from engine.policies.base import Chooser, PolicyPart


@ACCEPTANCE.register
class Harmonic(AcceptanceModel):
    name = "harmonic"
    description = "P(accept) at position i = a / (a + i)"
    fields = (
        field(
            "acceptance.harmonic_a",
            4.0,
            label="harm a",
            kind="number",
            low=0.0,
            high=1e6,
            low_open=True,
            help="harmonic: P(accept) at draft position i is a / (a + i)",
            seed_key=True,
        ),
    )

    def position_probs(self, config: Any, k: int) -> Any:
        import numpy as np

        a = config.harmonic_a
        return a / (a + np.arange(1, k + 1, dtype=float))


@COST.register
class Flat(CostPart):
    name = "flat"
    description = "a draft pass and a verify pass each cost a flat time"
    brief = "flat times"
    context_dependent = False
    batch_dependent = False
    fields = (
        field(
            "cost.flat_verify_us",
            100.0,
            label="flat ver",
            kind="number",
            low=1e-3,
            high=1e9,
            unit="us",
            help="flat: one verify pass",
        ),
        field(
            "cost.flat_draft_us",
            25.0,
            label="flat dft",
            kind="number",
            low=0.0,
            high=1e9,
            unit="us",
            help="flat: one draft pass",
        ),
    )

    def build(self, config: Any) -> Any:
        from engine.cost.linear import LinearCost

        return LinearCost(draft_cost_us=config.flat_draft_us, verify_cost_us=config.flat_verify_us)


class HalfChooser(Chooser):
    def __init__(self, k: int, rows: int) -> None:
        import numpy as np

        self.k = np.full(rows, k, dtype=np.int64)

    def choose(self, r: Any, regime: Any, q: Any) -> Any:
        return self.k


@POLICY.register
class Half(PolicyPart):
    name = "half"
    description = "draft half of K, rounded up, every cycle"
    brief = "k = ceil(K / 2)"
    adaptive = False  # policy.k_max does not bound it
    fields = (
        field(
            "policy.half_min",
            1,
            label="half min",
            kind="int",
            low=0,
            high=1024,
            help="half: the fewest tokens a cycle drafts",
        ),
    )

    def k_bound(self, config: Any) -> int:
        return max(math.ceil(config.k / 2), config.half_min)

    def stepwise_policy(self, config: Any, oracle_k: Any = None) -> Any:
        policy = super().stepwise_policy(config, oracle_k)
        return dataclasses.replace(policy, k=self.k_bound(config))

    def chooser(self, policy: Any, rows: int, batch: int, cycle_us: Any) -> Chooser:
        return HalfChooser(policy.k, rows)
'''

NEW_FIELDS = (
    "acceptance.harmonic_a",
    "cost.flat_verify_us",
    "cost.flat_draft_us",
    "policy.half_min",
)


@pytest.fixture
def new_parts(tmp_path: Path) -> Iterator[ModuleType]:
    """The three parts registered (by importing their module), unregistered afterwards."""
    path = tmp_path / "seam_parts.py"
    path.write_text(PARTS_SOURCE, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("seam_parts", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["seam_parts"] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop("seam_parts", None)
        for registry, name in ((ACCEPTANCE, "harmonic"), (COST, "flat"), (POLICY, "half")):
            if name in registry:
                registry.unregister(name)
    assert not set(NEW_FIELDS) & set(FIELD_SPECS)  # the table follows the removal too


def _flag_help(text: str, flag: str) -> str:
    """The help line of ``flag`` in ``--help``'s text (the line that starts with it)."""
    for line in text.splitlines():
        if line.strip().startswith(flag + " ") or line.strip() == flag:
            return line
    raise AssertionError(f"{flag} is not in the help:\n{text}")


def _harmonic_survival(a: float, k: int) -> list[float]:
    """P(n >= j), j = 1..k: the products of a / (a + i), by hand."""
    out, running = [], 1.0
    for i in range(1, k + 1):
        running *= a / (a + i)
        out.append(running)
    return out


def test_run_help_offers_each_new_part_and_its_fields(new_parts):
    help_text = spectui("run", "--help").stdout
    choices = {
        "--draft-model": "harmonic",
        "--cost": "flat",
        "--policy": "half",
    }
    for flag, name in choices.items():
        line = _flag_help(help_text, flag)
        offered = line.split("{", 1)[1].split("}", 1)[0].split(",")
        assert offered[-1] == name, line  # registration order: after the built-in ones
    assert "harmonic: P(accept) at draft position i is a / (a + i) (default: 4)" in help_text
    assert "--flat-verify-us F" in help_text and "flat: one verify pass, us" in help_text
    assert "--flat-draft-us F" in help_text and "flat: one draft pass, us" in help_text
    assert "--half-min N" in help_text and "half: the fewest tokens a cycle drafts" in help_text
    # The field choosing the cost model names each model with its brief.
    assert "flat (flat times)" in " ".join(help_text.split())
    arena_help = " ".join(spectui("arena", "--help").stdout.split())
    built_in = ", ".join(engine.policies.BUILT_IN)  # then the new one, registered last
    assert f"Run K policies ({built_in}, half)" in arena_help


def test_without_the_parts_their_names_and_flags_are_refused():
    help_text = spectui("run", "--help").stdout
    for word in ("harmonic", "--flat-verify-us", "--half-min"):
        assert word not in help_text
    ran = spectui("run", "--draft-model", "harmonic", check=False)
    assert ran.returncode == 2 and "invalid choice: 'harmonic'" in ran.stderr


def test_run_json_gives_the_exact_values_of_harmonic_and_flat(new_parts):
    """A fixed K on the new acceptance and cost models: exact values, equal to the ones
    worked out by hand from a / (a + i) and the flat times; the cycle's times as built."""
    k, a, draft, verify = 5, 3.0, 25.0, 120.0
    ran = spectui(
        "run",
        "--json",
        "--draft-model",
        "harmonic",
        "--harmonic-a",
        str(a),
        "--cost",
        "flat",
        "--flat-verify-us",
        str(verify),
        "--k",
        str(k),
        "--n-sequences",
        "40",
        "--tokens-per-seq",
        "32",
    )
    out = json.loads(ran.stdout)
    assert out["config"]["draft_model"] == "harmonic"
    assert out["config"]["acceptance.harmonic_a"] == a
    assert out["config"]["cost.model"] == "flat"
    assert out["config"]["cost.flat_verify_us"] == verify
    assert "cost.flat_draft_us" not in out["config"]  # at its default: not written
    metrics = out["metrics"]
    tokens = 1.0 + sum(_harmonic_survival(a, k))
    cycle = k * draft + verify
    assert metrics["tokens_per_cycle_exact"] == pytest.approx(tokens, rel=1e-12)
    assert metrics["speedup_limit"] == pytest.approx(tokens * verify / cycle, rel=1e-12)
    assert math.isfinite(metrics["speedup_exact"]) and metrics["speedup_exact"] > 1.0
    assert metrics["cost_ratio"] == pytest.approx(draft / verify)
    assert out["cost"]["draft_us"] == k * draft and out["cost"]["verify_us"] == verify
    # The Monte Carlo estimate agrees with the exact value within its interval (x3).
    assert abs(metrics["speedup"] - metrics["speedup_exact"]) < 3 * metrics["speedup_ci95"]


def test_run_json_of_the_half_policy_has_no_exact_value(new_parts):
    """half has no exact program: speedup_exact is NaN (null in JSON); each cycle drafts
    ceil(K / 2), or policy.half_min when that is more."""
    for k, half_min, drafts in ((7, 1, 4), (2, 3, 3)):
        ran = spectui(
            "run",
            "--json",
            "--policy",
            "half",
            "--half-min",
            str(half_min),
            "--k",
            str(k),
            "--n-sequences",
            "20",
            "--tokens-per-seq",
            "24",
        )
        out = json.loads(ran.stdout)
        assert out["config"]["policy.name"] == "half"
        metrics = out["metrics"]
        assert metrics["speedup_exact"] is None
        assert math.isfinite(metrics["speedup"])
        assert metrics["drafted_tokens"] == drafts * metrics["cycles"]


def test_a_preset_names_the_new_parts_and_their_fields(new_parts, tmp_path):
    preset = tmp_path / "seam.toml"
    preset.write_text(
        """description = "the seam's parts"
[config]
draft_model = "harmonic"
"acceptance.harmonic_a" = 2.5
k = 6
[config.cost]
model = "flat"
flat_verify_us = 150.0
flat_draft_us = 15.0
[config.policy]
name = "half"
half_min = 2
""",
        encoding="utf-8",
    )
    config = load_preset_file(preset).config
    assert config == SpecConfig(
        draft_model="harmonic",
        harmonic_a=2.5,
        k=6,
        cost_model="flat",
        flat_verify_us=150.0,
        flat_draft_us=15.0,
        policy="half",
        half_min=2,
    )
    # The CLI runs it (half: ceil(6 / 2) = 3 drafts a cycle).
    out = json.loads(spectui("run", "--preset", str(preset), "--json").stdout)
    assert out["config"]["policy.half_min"] == 2
    assert out["metrics"]["drafted_tokens"] == 3 * out["metrics"]["cycles"]
    # A new field is checked as any other: the file, the key and the range.
    preset.write_text('[config]\ndraft_model = "harmonic"\n"acceptance.harmonic_a" = 0\n')
    ran = spectui("run", "--preset", str(preset), check=False)
    assert ran.returncode != 0
    assert "acceptance.harmonic_a" in ran.stderr and "(0, 1e6]" in ran.stderr


def test_a_sweep_writes_the_new_fields_as_csv_columns(new_parts, tmp_path):
    """A grid over the new model's field: each of the new fields a column (a newer field is
    written when set away from its default, as every other); the varied one holds each
    value; half's exact cells are empty, its Monte Carlo ones filled."""
    preset = tmp_path / "seam-sweep.toml"
    preset.write_text(
        """[config]
draft_model = "harmonic"
"cost.model" = "flat"
"cost.flat_verify_us" = 80.0
"cost.flat_draft_us" = 10.0
"policy.name" = "half"
"policy.half_min" = 2
k = 6
n_sequences = 20
tokens_per_seq = 16
[[grid]]
"acceptance.harmonic_a" = [2.0, 5.0]
""",
        encoding="utf-8",
    )
    out = tmp_path / "sweep.csv"
    spectui("sweep", "--preset", str(preset), "--out", str(out), "--workers", "1")
    with out.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    columns = list(rows[0])
    for key in ("draft_model", *NEW_FIELDS, "cost.model", "policy.name"):
        assert key in columns, key
    assert [row["acceptance.harmonic_a"] for row in rows] == ["2.0", "5.0"]
    assert {row["draft_model"] for row in rows} == {"harmonic"}
    assert {(row["cost.flat_verify_us"], row["cost.flat_draft_us"]) for row in rows} == {
        ("80.0", "10.0")
    }
    assert {row["policy.half_min"] for row in rows} == {"2"}
    assert all(row["speedup_exact"] == "" and float(row["speedup"]) > 0 for row in rows)
    # A larger a accepts more: more tokens per cycle.
    assert float(rows[1]["tokens_per_cycle"]) > float(rows[0]["tokens_per_cycle"])


def test_the_arena_runs_the_new_policy_when_asked(new_parts):
    ran = spectui(
        "arena",
        "--json",
        "--draft-model",
        "harmonic",
        "--policy",
        "half",
        "--half-min",
        "2",
        "--n-sequences",
        "20",
        "--tokens-per-seq",
        "16",
    )
    (board,) = json.loads(ran.stdout)
    assert board["scenario"]["draft_model"] == "harmonic"
    by_policy = {row["config"]["policy.name"]: row for row in board["standings"]}
    assert set(by_policy) == {"fixed", "half"}
    half = by_policy["half"]
    assert half["method"] == "Monte Carlo" and half["speedup_exact"] is None
    assert half["mean_k"] == 3.0  # ceil(5 / 2)
    assert by_policy["fixed"]["method"] == "exact"  # harmonic has exact values


def test_the_arenas_default_roster_includes_the_new_policy(new_parts):
    ran = spectui("arena", "--json", "--n-sequences", "10", "--tokens-per-seq", "12")
    (board,) = json.loads(ran.stdout)
    standings = {row["config"]["policy.name"]: row for row in board["standings"]}
    assert "half" in standings
    assert standings["half"]["method"] == "Monte Carlo"
    assert standings["half"]["mean_k"] == 3.0  # ceil(5 / 2), the default K


def test_an_arena_preset_sets_the_new_policys_field(new_parts, tmp_path):
    preset = tmp_path / "seam-arena.toml"
    preset.write_text(
        """[config]
n_sequences = 10
tokens_per_seq = 12
[[arena]]
"policy.name" = "half"
"policy.half_min" = [1, 4]
""",
        encoding="utf-8",
    )
    ran = spectui("arena", "--json", "--preset", str(preset))
    (board,) = json.loads(ran.stdout)
    halves = [row for row in board["standings"] if row["config"]["policy.name"] == "half"]
    assert sorted((row["config"]["policy.half_min"], row["mean_k"]) for row in halves) == [
        (1, 3.0),
        (4, 4.0),
    ]


def test_the_form_offers_the_new_parts_and_shows_their_fields(new_parts, monkeypatch):
    """In the side panel: each new part among its select's options; choosing it shows its
    fields' labels and sends the configuration that reads them. (An app session in a test
    outside tests/app: run in its own event loop, as tests/app/conftest.py runs those.)"""
    monkeypatch.setenv("SPECTUI_HIDE_TIMINGS", "1")
    asyncio.run(_form_session())


async def _form_session() -> None:
    from tests.app.hosts_form import FormHost, caught_up
    from tests.app.screen import screen_text

    app = FormHost("tiny")
    async with app.run_test(size=(100, 50)) as pilot:
        await caught_up(pilot, app)
        for widget_id, name, labels in (
            ("draft_model", "harmonic", ("harm a",)),
            ("cost_model", "flat", ("flat ver", "flat dft")),
            ("policy", "half", ("half min",)),
        ):
            select = app.query_one(f"#{widget_id}", Select)
            assert name in [value for _, value in select._options]
            for label in labels:
                assert label not in screen_text(app)
            select.value = name
            await caught_up(pilot, app)
            for label in labels:
                assert label in screen_text(app), label
        assert app.config is not None
        assert (app.config.draft_model, app.config.cost_model, app.config.policy) == (
            "harmonic",
            "flat",
            "half",
        )
        assert app.config.harmonic_a == 4.0 and app.config.half_min == 1


def test_the_worked_example_in_the_docs_is_the_one_tested_here():
    """docs/scenarios.md, "Adding a part", shows the harmonic model as this module defines
    it (its class, word for word)."""
    doc = (Path(__file__).resolve().parent.parent / "docs" / "scenarios.md").read_text(
        encoding="utf-8"
    )
    section = doc.split("\n## Adding a part\n", 1)[1]
    block = section.split("```python\n", 1)[1].split("```", 1)[0]
    example = block[block.index("@ACCEPTANCE.register") :]
    assert example.strip() and example in PARTS_SOURCE
