"""docs/model.md is the model's contract: it exists, docstrings cite it, and it names every
metric the engine reports."""

from __future__ import annotations

from pathlib import Path

from engine.simulate.simulator import METRIC_NAMES

REPO = Path(__file__).resolve().parent.parent
MODEL = REPO / "docs" / "model.md"


def test_no_source_cites_a_document_outside_the_repo():
    for folder in ("engine", "spectui", "tests"):
        for path in (REPO / folder).rglob("*.py"):
            if path == Path(__file__).resolve():
                continue
            assert "SEMANTICS.md" not in path.read_text(encoding="utf-8"), path


def test_the_engine_cites_the_model_page():
    assert MODEL.is_file()
    cited = [p for p in (REPO / "engine").rglob("*.py") if "docs/model.md" in p.read_text()]
    assert cited


def test_the_model_page_names_every_metric_and_tail_rule():
    text = MODEL.read_text(encoding="utf-8")
    for name in (*METRIC_NAMES, "full", "clamp", "fixed", "position_decay", "entropy_aware"):
        assert f"`{name}`" in text, name


def test_the_model_page_names_every_scenario_field_and_part():
    """Each newer (dotted) field key, each cost model and each part's name is described."""
    from engine.core.config import PARTS, SCENARIO_FIELDS

    text = MODEL.read_text(encoding="utf-8")
    names = [name for _, choices in PARTS.values() for name in choices]
    for name in (*SCENARIO_FIELDS, *names):
        assert f"`{name}`" in text, name
