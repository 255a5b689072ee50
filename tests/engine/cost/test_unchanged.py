"""Nothing changes for an existing configuration (issue #26): every cost setting of the
presets shipped before the issue (regime-study's every 40th) prices its cycles to the last
bit as it did then. tests/fixtures/presets/prices.json holds each setting's fields and a
digest of its cycle-cost table, recorded before the change (tests/fixtures/presets/record.py)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from engine.core.config import SpecConfig
from engine.core.kernel import cycle_costs

FIXTURE = Path(__file__).parents[2] / "fixtures" / "presets" / "prices.json"


def digest(costs) -> str:
    """The recording script's digest: every array of the table and its figures, bit for bit."""
    h = hashlib.sha256()
    for a in (costs.k, costs.draft_us, costs.verify_us, costs.cycle_us, costs.step_us):
        h.update(np.ascontiguousarray(a).tobytes())
    for x in (
        costs.baseline_us,
        costs.limit_draft_us,
        costs.limit_verify_us,
        costs.limit_cycle_us,
        costs.limit_step_us,
        costs.cost_ratio,
    ):
        h.update(float(x).hex().encode())
    h.update(str(costs.bound).encode())
    return h.hexdigest()[:16]


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
