"""Table cost: bilinear interpolation, clamping with warnings, the CSV and vLLM readers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from engine.cost.table import (
    TableCost,
    TableError,
    read_table,
    read_table_csv,
    read_vllm_profile,
)

FIXTURES = Path(__file__).parent / "fixtures"
# vLLM's own DSD profile format; source and provenance in fixtures/SOURCES.md
# (vllm-project/vllm PR #32374, vllm/v1/spec_decode/dynamic/manager.py, _DYNAMIC_STATS_TEST).
VLLM_PROFILE = FIXTURES / "vllm_dynamic_sd_profile.json"

BATCHES = [1, 8, 64]
TOKENS = [1, 2, 4, 8]


def bilinear_latency(batch: float, tokens: float) -> float:
    """A function that bilinear interpolation reproduces exactly (linear in each axis)."""
    return 5000 + 20 * batch + 300 * tokens + 4 * batch * tokens


@pytest.fixture
def table() -> TableCost:
    grid = [[bilinear_latency(b, t) for t in TOKENS] for b in BATCHES]
    return TableCost(BATCHES, TOKENS, grid)


def test_grid_points_are_returned_as_given(table):
    for b in BATCHES:
        for t in TOKENS:
            assert table.verify_us(t, b) == bilinear_latency(b, t)
    assert table.warnings == ()


def test_bilinear_between_grid_points(table):
    # By hand: B = 4.5 is halfway 1..8, w = 3 halfway 2..4; the four corners are
    # (1,2) 5628, (1,4) 6236, (8,2) 5824, (8,4) 6488 -> mean 6044.
    assert table.verify_us(3, 4.5) == pytest.approx(6044.0, rel=1e-12)
    batch = np.array([2.0, 7.0, 30.0, 63.0])
    tokens = np.array([1.5, 3.0, 5.0, 7.5])
    want = [bilinear_latency(b, t) for b, t in zip(batch, tokens, strict=True)]
    np.testing.assert_allclose(table.verify_us(tokens, batch), want, rtol=1e-12)
    assert table.warnings == ()


def test_context_length_is_ignored_but_broadcast(table):
    got = table.verify_us(2, 8, np.array([0, 1024, 131072]))
    np.testing.assert_array_equal(got, [bilinear_latency(8, 2)] * 3)


def test_clamped_at_the_edges_with_a_warning(table):
    assert table.verify_us(16, 512) == bilinear_latency(64, 8)
    warnings = table.warnings
    assert len(warnings) == 2
    assert "batch_size 512 is outside the table's 1..64; used the time at batch_size 64" in (
        warnings[0] + warnings[1]
    )
    assert any("tokens 16 is outside the table's 1..8" in message for message in warnings)
    assert table.verify_us(2, 8) == bilinear_latency(8, 2)  # inside: nothing new
    assert len(table.warnings) == 2


def test_clamped_below_the_smallest_batch_once_per_axis_and_side():
    from_eight = TableCost(
        [8, 64], [2, 4], [[bilinear_latency(b, t) for t in (2, 4)] for b in (8, 64)]
    )
    np.testing.assert_array_equal(
        from_eight.verify_us(np.array([1, 2, 3]), np.array([[2], [4]])),
        [[bilinear_latency(8, 2), bilinear_latency(8, 2), bilinear_latency(8, 3)]] * 2,
    )
    assert from_eight.warnings == (
        "table: batch_size 2 is outside the table's 8..64; used the time at batch_size 8",
        "table: tokens 1 is outside the table's 2..4; used the time at tokens 2",
    )


def test_draft_times_from_the_table():
    no_draft = TableCost([1], [1, 4], [[100.0, 130.0]])
    assert no_draft.draft_us(3, 1) == 0.0
    with_draft = TableCost([1, 2], [1, 4], [[100.0, 130.0]] * 2, [[0.0, 30.0], [0.0, 60.0]])
    assert with_draft.draft_us(3, 1) == 30.0  # tokens = k + 1 = 4
    assert with_draft.draft_us(3, 1.5) == 45.0
    assert with_draft.draft_us(0, 2) == 0.0
    np.testing.assert_allclose(with_draft.draft_us(np.array([0, 1, 3]), 2), [0, 20, 60])


def test_csv_reader(tmp_path):
    path = tmp_path / "latency.csv"
    lines = ["batch_size,tokens,verify_us,draft_us"]
    for b in BATCHES:
        for t in TOKENS:
            lines.append(f"{b},{t},{bilinear_latency(b, t)},{10 * (t - 1)}")
    path.write_text("\n".join(reversed(lines[1:])).join([lines[0] + "\n", "\n"]))
    cost = read_table_csv(path)
    assert cost.verify_us(3, 4.5) == pytest.approx(6044.0)
    assert cost.draft_us(3, 8) == 30.0
    assert read_table(path).verify_us(1, 1) == bilinear_latency(1, 1)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "empty file"),
        (
            "batch,tokens,verify_us\n1,1,100\n",
            ":1: expected the header batch_size,tokens,verify_us",
        ),
        ("batch_size,tokens,verify_us\n1,1,abc\n", ":2: field 'verify_us' must be a number > 0"),
        ("batch_size,tokens,verify_us\n1,1,100\n0,1,100\n", ":3: field 'batch_size' must be a"),
        ("batch_size,tokens,verify_us\n1,1.5,100\n", ":2: field 'tokens' must be a whole number"),
        ("batch_size,tokens,verify_us\n1,1,100,5\n", ":2: expected 3 fields, got 4"),
        ("batch_size,tokens,verify_us\n1,1,100\n1,1,110\n", "batch_size 1, tokens 1 given twice"),
        (
            "batch_size,tokens,verify_us\n1,1,100\n1,2,110\n8,1,120\n",
            "missing batch_size 8, tokens 2",
        ),
        ("batch_size,tokens,verify_us\n", "no rows"),
    ],
)
def test_bad_csv_gives_one_line_naming_file_and_field(tmp_path, text, expected):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(TableError) as caught:
        read_table_csv(path)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(str(path))
    assert expected in message


def test_vllm_profile_reads_as_step_times():
    cost = read_vllm_profile(VLLM_PROFILE)
    assert list(cost.batch_sizes) == [1, 4, 16, 32, 64]
    assert list(cost.tokens) == [1, 2, 4, 5, 6, 8]  # K = 0, 1, 3, 4, 5, 7
    # A profiled point: batch 16, K = 3 -> 9.95 ms.
    assert cost.verify_us(4, 16) == pytest.approx(9950.0)
    assert cost.verify_us(1, 64) == pytest.approx(8530.0)  # K = 0: plain decoding
    # Drafting is inside the measured step.
    assert cost.draft_us(3, 16) == 0.0
    assert cost.warnings == ()


def test_vllm_profile_interpolates_as_vllm_does():
    # vLLM's manager interpolates linearly between batch sizes and between profiled K
    # (_get_batch_stats, _get_itl); by hand from the fixture:
    cost = read_vllm_profile(VLLM_PROFILE)
    # K = 2 (not profiled) at batch 1: halfway 7.97 and 9.41 ms.
    assert cost.verify_us(3, 1) == pytest.approx(8690.0)
    # Batch 10, K = 0: halfway 4 (6.87) and 16 (7.3) ms.
    assert cost.verify_us(1, 10) == pytest.approx(7085.0)
    # Batch 48, K = 6: halfway between batches 32 and 64 of halfway K 5 and 7:
    # batch 32: (12.81 + 14.86)/2 = 13.835; batch 64: (17.54 + 120.57)/2 = 69.055.
    assert cost.verify_us(7, 48) == pytest.approx(1000 * (13.835 + 69.055) / 2)
    # Beyond the profile: K = 9 clamps to K = 7, with a warning.
    assert cost.verify_us(10, 1) == pytest.approx(12290.0)
    assert cost.warnings == (
        f"{VLLM_PROFILE}: tokens 10 is outside the table's 1..8; used the time at tokens 8",
    )
    assert read_table(VLLM_PROFILE).verify_us(1, 1) == pytest.approx(6870.0)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{", "not valid JSON"),
        ("[1, 2]", "expected an object with 'batch_stats'"),
        ('{"batch_stats": {}}', "expected an object with 'batch_stats'"),
        ('{"batch_stats": {"x": {"0": 1.0}}}', "batch_stats[?]: field 'batch size' must be"),
        ('{"batch_stats": {"1": 5}}', "batch_stats[1]: expected an object of drafts"),
        ('{"batch_stats": {"1": {"0": -1}}}', "batch_stats[1][0]: field 'latency_ms' must be"),
        ('{"batch_stats": {"1": {"0": 5, "2": 6}, "4": {"0": 5}}}', "missing batch_size 4"),
    ],
)
def test_bad_vllm_profile(tmp_path, text, expected):
    path = tmp_path / "profile.json"
    path.write_text(text)
    with pytest.raises(TableError) as caught:
        read_vllm_profile(path)
    assert "\n" not in str(caught.value)
    assert str(caught.value).startswith(str(path))
    assert expected in str(caught.value)


def test_table_construction_errors():
    with pytest.raises(TableError, match="batch_size values must be >= 1 and strictly increasing"):
        TableCost([4, 1], [1], [[1.0], [2.0]])
    with pytest.raises(TableError, match=r"verify_us has shape \(1, 1\), expected \(1, 2\)"):
        TableCost([1], [1, 2], [[1.0]])
    range_ = r"verify_us at batch_size 1, tokens 2 must be a number in \[0.001, 1e9\]"
    with pytest.raises(TableError, match=range_):
        TableCost([1], [1, 2], [[1.0, 0.0]])
