"""Nothing changes for an existing configuration (issue #26): every cost setting of the
presets shipped before the issue (regime-study's every 40th) prices its cycles to the last
bit as it did then. tests/fixtures/presets/prices.json holds each setting's fields and a
digest of its cycle-cost table, recorded before the change (tests/fixtures/presets/record.py)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from engine.core.config import SpecConfig
from engine.core.kernel import cycle_costs

FIXTURE = Path(__file__).parents[2] / "fixtures" / "presets" / "prices.json"


def _recording_script():
    spec = importlib.util.spec_from_file_location("record", FIXTURE.parent / "record.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


digest = _recording_script().digest  # the recording's digest, the one definition


def test_every_shipped_cost_setting_prices_its_cycles_as_before():
    rows = json.loads(FIXTURE.read_text())
    assert len(rows) > 400 and {row["preset"] for row in rows} >= {"regime-study", "batch-size"}
    assert sum(row["set"].get("cost.model") == "roofline" for row in rows) > 400
    changed = [
        (row["preset"], row["set"])
        for row in rows
        if digest(cycle_costs(SpecConfig().replace(**row["set"]))) != row["digest"]
    ]
    assert not changed, changed[:3]
