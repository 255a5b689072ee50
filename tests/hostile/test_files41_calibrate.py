"""``spectui calibrate``'s files, issue #41: ``--cost-points`` CSVs and serving logs read
their numbers in ASCII digits only, and counts a server cannot reach, or a mean acceptance
length a K cannot give, are one line naming the row or line, never a fit. Each case asserts
the line the user sees."""

from __future__ import annotations

from pathlib import Path

import pytest

LOGS = Path(__file__).parent.parent / "fixtures" / "logs"
LOG = str(LOGS / "vllm_v1_mean_length.log")
RULE = "k >= 0, mean_length >= 1, tpot > 0 (finite numbers; k <= 1024, mean_length <= k + 1)"
COLUMNS = "expected columns k,mean_length,tpot with numbers"


def error_line(cli, *args: str) -> str:
    status, out, err = cli("calibrate", *args)
    assert status == 2 and out == ""
    (line,) = err.strip().splitlines()
    return line


def points(tmp_path: Path, rows: str) -> Path:
    path = tmp_path / "points.csv"
    path.write_text("k,mean_length,tpot\n" + rows)
    return path


# ------------------------------------------------------------------ --cost-points


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        # int() reads "١٢" as 12, float() "５" as 5 and "1_0" as 10: each was fitted.
        ("0,1,7\n1,1.5,8\n١٢,2,9\n", "row 4: {c}: column 1 (k) is not a whole number"),
        ("0,1,7\n1,1.5,５\n2,2,9\n", "row 3: {c}: column 3 (tpot) is not a number"),
        (
            "# a comment\n0,1,7\n1,1.5,8\n2,1_0,9\n",
            "row 5: {c}: column 2 (mean_length) is not a number",
        ),
    ],
)
def test_cost_points_in_other_digits_are_refused_naming_row_and_column(
    cli, tmp_path, rows, message
):
    path = points(tmp_path, rows)
    line = error_line(cli, LOG, "--cost-points", str(path))
    assert line == (
        f"spectui calibrate: error: --cost-points: {path}: "
        + message.format(c=COLUMNS)
        + " in ASCII digits"
    )


@pytest.mark.parametrize(
    ("rows", "shown"),
    [
        # Before: fitted silently, recommending K = 1 at 0.38x. A cycle of K = 1 emits the
        # target's token and at most the one drafted: M <= 2.
        ("0,1,7\n1,3.5,8\n2,3.9,9\n", "row 3: {r}; column 2 (mean_length) is 3.5 at k = 1"),
        ("0,1.5,7\n1,1.5,8\n2,2,9\n", "row 2: {r}; column 2 (mean_length) is 1.5 at k = 0"),
        ("0,1,7\n1,1.5,8\n1025,2,9\n", "row 4: {r}; column 1 (k) is 1025"),
        ("0,1,7\n1,1.5,inf\n2,2,9\n", "row 3: {r}; column 3 (tpot) is inf"),
    ],
)
def test_cost_points_outside_their_ranges_are_one_line(cli, tmp_path, rows, shown):
    path = points(tmp_path, rows)
    line = error_line(cli, LOG, "--cost-points", str(path))
    assert line == f"spectui calibrate: error: --cost-points: {path}: " + shown.format(r=RULE)


def test_a_mean_length_of_k_plus_one_is_accepted(cli, tmp_path):
    # Every draft accepted: M = K + 1 exactly is the edge of the range, not beyond it.
    path = points(tmp_path, "0,1,7\n1,2,8\n2,3,9\n")
    status, out, err = cli("calibrate", LOG, "--cost-points", str(path), "--calibrate-k-max", "2")
    assert status == 0, err
    # steps = tpot x M / 7: (1, 16/7) and (2, 27/7), a line of slope 11/7 through 5/7.
    assert "a cycle costs 0.714 + 1.571 x K target steps" in out


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        # One K twice: before, fit_linear_cost's ValueError was a traceback.
        ("0,1,7\n2,1.5,8\n2,1.6,9\n", "needs a k = 0 row (plain decoding) and two or more K"),
        ("0,1,7\n1,1.5,8\n0,1,6\n2,2,9\n", "row 4: a second k = 0 row (plain decoding is row 2)"),
        # 1e300 / 1e-300 overflows: a cycle's cost in steps must be a number a scenario takes.
        (
            "0,1,1e-300\n1,2,1e300\n2,2,1\n",
            "row 3: a cycle of tpot x mean_length over row 2's tpot costs more than "
            "1,000,000 plain steps (tpot in other units?)",
        ),
    ],
)
def test_cost_points_that_cannot_be_fitted_are_one_line(cli, tmp_path, rows, message):
    path = points(tmp_path, rows)
    line = error_line(cli, LOG, "--cost-points", str(path))
    assert line == f"spectui calibrate: error: --cost-points: {path}: {message}"


def test_a_fitted_cost_outside_the_linear_costs_range_is_one_line(cli, tmp_path):
    # K = 1023 at 999,999 steps and K = 1024 at 1 step: a line of slope -999,998 through
    # 1023 x 999,998 + 999,999 = 1,023,997,953 steps at K = 0, beyond 1e9 us of fixed cost.
    path = points(tmp_path, "0,1,1\n1023,1,999999\n1024,1,1\n")
    line = error_line(cli, LOG, "--cost-points", str(path))
    assert line.startswith(
        f"spectui calibrate: error: --cost-points: {path}: the fitted cost, 1.024e+09 + "
        "-1e+06 x K target steps, is outside the linear cost's range (cost.draft_fixed_us: "
    )


# ------------------------------------------------------------------ serving logs


def log_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "x.log"
    path.write_text(text)
    return path


def test_a_prometheus_counter_of_1e308_drafts_is_rejected(cli, tmp_path):
    # Before: exit 0, "M = inf", and a recommendation of K = 15 at 6.40x.
    path = log_file(
        tmp_path,
        "# TYPE vllm:spec_decode_num_drafts_total counter\n"
        'vllm:spec_decode_num_drafts_total{engine="0"} 1e308\n'
        'vllm:spec_decode_num_draft_tokens_total{engine="0"} 1e308\n'
        'vllm:spec_decode_num_accepted_tokens_total{engine="0"} 1e308\n',
    )
    assert error_line(cli, str(path)) == (
        f"spectui calibrate: error: {path}: nothing usable in 4 lines: 1 rejected (line 2: "
        "numbers that cannot be read: line 2's vllm:spec_decode_num_drafts 1e308 is not a "
        "token count (a whole number, 0 to 1e15))"
    )


def test_prometheus_counters_summed_past_a_servers_counts_are_rejected():
    from engine.calibrate.logs import parse_log

    # Each engine's counter is within 1e15; their sum, 1.2e15 drafts, is not.
    text = "".join(
        f'vllm:spec_decode_num_{name}_total{{engine="{e}"}} {count}\n'
        for e in "01"
        for name, count in (("drafts", 6e14), ("draft_tokens", 6e14), ("accepted_tokens", 0))
    )
    result = parse_log(text + "SpecDecoding metrics: Accepted: 30 tokens, Drafted: 90 tokens")
    (rejected,) = result.rejected
    assert rejected.line == 1
    assert rejected.problems == ("a count above 1e+15, more than any server counts",)
    assert [w.source for w in result.windows] == ["vllm-v1"]


def test_a_llamacpp_count_of_400_digits_is_rejected(cli, tmp_path):
    # Before: an OverflowError (int too large to convert to float) from the checks.
    nines = "9" * 400
    path = log_file(
        tmp_path,
        f"slot print_timing: id 0 | task 0 | draft acceptance = 0.65959 ( {nines} accepted / "
        f"{nines} generated), mean len = 4.30\n",
    )
    assert error_line(cli, str(path), "--log-k", "3") == (
        f"spectui calibrate: error: {path}: nothing usable in 1 lines: 1 rejected (line 1: "
        f"generated {'9' * 59}… is not a token count (a whole number, 0 to 1e15))"
    )


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        # Each was read: "٣٠" as 30 accepted tokens, "３00" as 300 draft tokens.
        (
            "SpecDecoding metrics: Mean acceptance length: 2.00, Accepted: ٣٠ tokens, "
            "Drafted: 90 tokens, Per-position acceptance rate: 0.5, 0.3, 0.2\n",
            "accepted ٣٠ is not a token count (a whole number, 0 to 1e15)",
        ),
        (  # without M, the bad count is still a rejection, not a line of no metrics
            "SpecDecoding metrics: Accepted: ٣٠ tokens, Drafted: 90 tokens\n",
            "accepted ٣٠ is not a token count (a whole number, 0 to 1e15)",
        ),
        (
            "vllm:spec_decode_num_drafts_total 100\nvllm:spec_decode_num_draft_tokens_total "
            "３00\nvllm:spec_decode_num_accepted_tokens_total 50\n",
            "numbers that cannot be read: line 2's vllm:spec_decode_num_draft_tokens ３00 is "
            "not a token count (a whole number, 0 to 1e15)",
        ),
        (
            "x | draft acceptance = 0.5 ( ٥ accepted / 10 generated), mean len = 2.0\n",
            "accepted ٥ is not a token count (a whole number, 0 to 1e15)",
        ),
        (
            "Speculative metrics: Draft acceptance rate: 0.5, System efficiency: 0.5, Number "
            "of speculative tokens: 3, Number of accepted tokens: 5, Number of draft tokens: "
            "9, Number of emitted tokens: 1_0.\n",
            "emitted 1_0. is not a token count (a whole number, 0 to 1e15)",
        ),
    ],
)
def test_log_counts_in_other_digits_are_rejected_not_read(cli, tmp_path, text, problem):
    path = log_file(tmp_path, text)
    lines = text.count("\n")
    assert error_line(cli, str(path), "--log-k", "3") == (
        f"spectui calibrate: error: {path}: nothing usable in {lines} lines: 1 rejected "
        f"(line 1: {problem})"
    )


def test_a_mean_length_no_k_can_give_is_rejected(cli, tmp_path):
    # 99999 tokens a draft: more than K + 1 at every K a scenario takes (1024).
    path = log_file(tmp_path, "Decode batch. #running-req: 1, accept len: 99999.00\n")
    assert error_line(cli, str(path), "--log-k", "3") == (
        f"spectui calibrate: error: {path}: nothing usable in 1 lines: 1 rejected (line 1: "
        "M 1e+05 > K + 1 for every K up to 1024)"
    )


def test_a_number_that_only_starts_with_digits_is_not_read_as_them(cli, tmp_path):
    # "3_0" is no number; before, its "3" was read as SGLang's accept len (M = 3).
    path = log_file(tmp_path, "Decode batch. #running-req: 1, accept len: 3_0\n")
    assert error_line(cli, str(path), "--log-k", "3") == (
        f"spectui calibrate: error: {path}: nothing usable in 1 lines: no speculative decoding "
        "metrics (vLLM, SGLang, llama.cpp)"
    )
