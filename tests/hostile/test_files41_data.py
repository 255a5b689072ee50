"""Distribution files (``--dist-file``, engine.acceptance.dist_file), issue #41: numbers in
ASCII digits only, and a file's implied size checked before anything that size is
allocated. Each case is what ``spectui run`` prints: one line, exit status 2."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from numpy.lib import format as npy

HEADER = "position,context,side,a,b\n"
GOOD = "1,1,target,0.5,0.5\n1,1,draft,0.25,0.75\n"
# The CSV rows' shape, as the messages say it (vocabulary of 2).
ROW = "a position, a context, target or draft and 2 probabilities"


def run_dist(cli, path: Path) -> tuple[int, str, str]:
    return cli("run", "--draft-model", "distribution", "--dist-file", str(path))


def error_line(cli, path: Path) -> str:
    status, out, err = run_dist(cli, path)
    assert status == 2 and out == ""
    (line,) = err.strip().splitlines()
    return line


@pytest.mark.parametrize(
    ("row", "column"),
    [
        ("١,1,draft,0.25,0.75", "column 1 (position) is not a whole number"),
        ("1,５,draft,0.25,0.75", "column 2 (context) is not a whole number"),
        ("1,1,draft,0.25,1_0", "column 5 is not a number"),
        ("1,1,draft,٠.25,0.75", "column 4 is not a number"),
    ],
)
def test_a_csv_number_in_other_digits_is_refused_naming_its_line_and_column(
    cli, tmp_path, row, column
):
    # int() reads "١" as 1 and "５" as 5, float() "1_0" as 10: each was read as a number.
    path = tmp_path / "d.csv"
    path.write_text(HEADER + "1,1,target,0.5,0.5\n" + row + "\n")
    assert error_line(cli, path) == (
        f"spectui run: error: acceptance.dist_file: {path}: line 3 must be {ROW}: {column} "
        "in ASCII digits"
    )


@pytest.mark.parametrize("context", ["1000000000", "100000000000000000000", "16777217"])
def test_a_csv_context_beyond_the_bound_is_one_line_not_an_allocation(cli, tmp_path, context):
    # Before: np.empty((1, 10**9, 2, 2)) asked for 29.8 GiB; 1e20 overflowed numpy's
    # dimensions. The bound: 2**26 probabilities, 2 x 2 a context, so 2**24 contexts.
    path = tmp_path / "d.csv"
    path.write_text(HEADER + GOOD + f"1,{context},target,0.5,0.5\n")
    assert error_line(cli, path) == (
        f"spectui run: error: acceptance.dist_file: {path}: line 4, column 2: contexts in "
        "[1, 16,777,216] (at most 67,108,864 probabilities in all, 2 to a distribution)"
    )


def test_csv_positions_and_contexts_together_are_bounded_before_allocating(cli, tmp_path):
    # Each row is within its own bound, but 64 positions x 2**24 contexts x 2 x 2 is not.
    path = tmp_path / "d.csv"
    path.write_text(HEADER + GOOD + "64,1,target,0.5,0.5\n1,16777216,target,0.5,0.5\n")
    assert error_line(cli, path) == (
        f"spectui run: error: acceptance.dist_file: {path}: more than 67,108,864 probabilities"
    )


def lying_npy(path: Path, shape: tuple[int, ...], values: int) -> Path:
    """An NPY file whose header says ``shape`` (float64) followed by ``values`` values."""
    with path.open("wb") as handle:
        npy.write_array_header_1_0(handle, {"descr": "<f8", "fortran_order": False, "shape": shape})
        handle.write(np.full(values, 0.5).tobytes())
    return path


@pytest.mark.parametrize("contexts", [10**9, 10**20])
def test_an_npy_header_with_a_huge_shape_is_one_line(cli, tmp_path, contexts):
    # Before: np.load allocated what the header said: 29.8 GiB, or an OverflowError.
    path = lying_npy(tmp_path / "d.npy", (1, contexts, 2, 2), 4)
    assert error_line(cli, path) == (
        f"spectui run: error: acceptance.dist_file: {path}: more than 67,108,864 probabilities"
    )


def test_an_npy_header_that_lies_about_its_shape_allocates_nothing(cli, tmp_path):
    # Within the bound (64 x 4096 x 2 x 128 = 2**26 values, 512 MiB of float64), but the
    # file holds 4 values (32 bytes) after its header: np.load allocated the 512 MiB first.
    path = lying_npy(tmp_path / "d.npy", (64, 4096, 2, 128), 4)
    error_line(cli, path)  # once untraced: what the first run imports is not counted
    tracemalloc.start()
    try:
        line = error_line(cli, path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert line == (
        f"spectui run: error: acceptance.dist_file: {path}: its header's shape "
        "(64, 4096, 2, 128) needs 536,870,912 bytes of data; the file holds 32"
    )
    assert peak < 32 << 20


def test_an_npy_header_with_a_small_lie_is_refused_and_an_honest_one_is_read(cli, tmp_path):
    path = lying_npy(tmp_path / "d.npy", (1, 2, 2, 2), 4)  # says 8 values, holds 4
    assert error_line(cli, path) == (
        f"spectui run: error: acceptance.dist_file: {path}: its header's shape (1, 2, 2, 2) "
        "needs 64 bytes of data; the file holds 32"
    )
    honest = lying_npy(tmp_path / "ok.npy", (1, 2, 2, 2), 8)
    from engine.acceptance.dist_file import read_distributions

    assert read_distributions(str(honest)).tolist() == [[[[0.5, 0.5]] * 2] * 2]


def test_the_lab_bounds_a_files_contexts_as_the_familys_before_running(cli, tmp_path):
    # The lab runs every rule token by token on each context, one at a time: before, a file
    # of 2**24 contexts (within the file's bound) ran for hours. The family's bound: 4096.
    path = tmp_path / "d.npy"
    np.save(path, np.full((1, 4097, 2, 2), 0.5))
    status, out, err = cli("lab", "--dist-file", str(path), "--tokens", "1000")
    assert status == 2 and out == ""
    assert err.strip() == (
        f"spectui lab: error: --dist-file: {path}: 4,097 contexts; the lab runs each rule on "
        "every context, at most 4,096 (as --family-size)"
    )
