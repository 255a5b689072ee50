"""Distributions from a file (engine.acceptance.dist_file, issue #28): NPY and CSV read the
same, the shipped example is what its script makes, rates come from the file's contexts, and
a hostile file is refused in one line that never shows its contents."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import numpy as np
import pytest

from engine.acceptance import dist_file
from engine.core.config import SpecConfig
from engine.core.fields import ConfigError
from engine.core.parts import ACCEPTANCE

REPO = Path(__file__).resolve().parents[2]
# Position 1: two contexts; position 2: one context's pair repeated.
ARRAY = np.array(
    [
        [[[0.5, 0.3, 0.2], [0.2, 0.5, 0.3]], [[1.0, 0.0, 0.0], [0.5, 0.5, 0.0]]],
        [[[0.6, 0.4, 0.0], [0.6, 0.4, 0.0]], [[0.6, 0.4, 0.0], [0.6, 0.4, 0.0]]],
    ]
)


def write_csv(path: Path, array: np.ndarray, extra: str = "") -> Path:
    lines = ["position,context,side,a,b,c"]
    for i, position in enumerate(array):
        for c, context in enumerate(position):
            for side, probs in zip(("target", "draft"), context, strict=True):
                lines.append(f"{i + 1},{c + 1},{side}," + ",".join(f"{p:.17g}" for p in probs))
    path.write_text("\n".join(lines) + "\n" + extra)
    return path


def rates(path: Path, k: int, **fields: object) -> np.ndarray:
    config = SpecConfig().replace(
        **{
            "draft_model": "distribution",
            "acceptance.dist_file": str(path),
            **{f"acceptance.{key}": value for key, value in fields.items()},
        }
    )
    return ACCEPTANCE.of(config).position_probs(config, k)


def test_npy_and_csv_give_the_rates_of_the_files_contexts(tmp_path):
    np.save(tmp_path / "d.npy", ARRAY)
    csv = write_csv(tmp_path / "d.csv", ARRAY)
    by_npy, by_csv = rates(tmp_path / "d.npy", 3), rates(csv, 3)
    assert by_npy == pytest.approx(by_csv, abs=1e-15)
    # Position 1: sum min(p, q) is 0.7 and 0.5; position 2 gives 1; position 3 uses the last.
    assert by_npy == pytest.approx([0.6, 1.0, 1.0])
    assert rates(csv, 1, accept_rule="one_hot") == pytest.approx([(0.3 + 1.0) / 2])


def test_the_shipped_example_is_what_its_script_makes():
    spec = importlib.util.spec_from_file_location("make", REPO / "examples/make_distributions.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    shipped = (REPO / "examples/distributions.csv").read_text()
    assert shipped == "\n".join(module.table()) + "\n"
    assert dist_file.read_distributions(str(REPO / "examples/distributions.csv")).shape == (
        3, 6, 2, 64,
    )  # fmt: skip


SECRET = "s3cr3t-value"


def _missing_draft(path: Path) -> None:
    write_csv(path, ARRAY[:, :1])
    path.write_text(path.read_text().replace("1,1,draft", "1,2,draft"))


BAD_CSV = {
    "a malformed line": (
        lambda p: write_csv(p, ARRAY, f"1,1,target,{SECRET},0,1\n"),
        "line 10 must be",
    ),
    "a wrong header": (
        lambda p: p.write_text(f"{SECRET},context,side,a,b\n"),
        "line 1 must be the header",
    ),
    "a negative": (
        lambda p: write_csv(p, ARRAY * np.where(ARRAY > 0.9, -1, 1)),
        "position 1, context 2, target: holds a negative",
    ),
    "a sum off 1": (
        lambda p: write_csv(p, ARRAY * 1.01),
        "position 1, context 1, target: does not sum to 1",
    ),
    "a missing side": (_missing_draft, "position 1, context 1 has no draft"),
    "not text": (lambda p: p.write_bytes(b"\xff\xfe" + SECRET.encode()), "not a text file"),
}


@pytest.mark.parametrize("case", sorted(BAD_CSV))
def test_a_bad_csv_is_refused_in_one_line_without_its_contents(tmp_path, case):
    make, message = BAD_CSV[case]
    path = tmp_path / "bad.csv"
    make(path)
    with pytest.raises(ConfigError) as error:
        dist_file.read_distributions(str(path))
    assert error.value.field == "acceptance.dist_file"
    assert message in str(error.value) and SECRET not in str(error.value)
    assert "\n" not in str(error.value)


def test_bad_npy_files_and_things_that_are_not_files(tmp_path, monkeypatch):
    np.save(tmp_path / "shape.npy", ARRAY[0])
    nan = ARRAY.copy()
    nan[1, 0, 1, 2] = np.nan
    np.save(tmp_path / "nan.npy", nan)
    (tmp_path / "junk.npy").write_bytes(b"not numpy at all")
    os.mkfifo(tmp_path / "fifo.csv")
    (tmp_path / "dir.npy").mkdir()
    expected = {
        "shape.npy": "shape (positions, contexts, 2, vocabulary)",
        "nan.npy": "position 2, context 1, draft: holds a negative, infinite or NaN",
        "junk.npy": "not an NPY array file",
        "fifo.csv": "cannot read",
        "dir.npy": "cannot read",
        "missing.csv": "cannot read",
    }
    for name, message in expected.items():
        with pytest.raises(ConfigError) as error:
            dist_file.read_distributions(str(tmp_path / name))
        assert message in str(error.value), name
    monkeypatch.setattr(dist_file, "FILE_MAX_BYTES", 100)
    write_csv(tmp_path / "big.csv", ARRAY)
    with pytest.raises(ConfigError) as error:
        dist_file.read_distributions(str(tmp_path / "big.csv"))
    assert "cannot read" in str(error.value)
