"""engine.calibrate.logs: every fixture (real logs, see each file's "# source:" line) parses to
the counts worked out by hand from its text; rejected windows carry their reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.calibrate.logs import SOURCES, LogError, Window, parse_log, parse_log_file

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "logs"


def parse(name: str):
    return parse_log_file(FIXTURES / name)


def only(windows: list[Window]) -> Window:
    assert len(windows) == 1, windows
    return windows[0]


def test_every_fixture_names_its_source_and_parses():
    names = sorted(p.name for p in FIXTURES.iterdir())
    assert len(names) == 16
    for name in names:
        text = (FIXTURES / name).read_text()
        assert text.startswith("# source: "), name
        result = parse_log(text, name)
        assert all(w.source in SOURCES for w in result.windows + result.rejected)


def test_vllm_v1_earliest_forms_counts_only():
    # "Speculative metrics: Draft acceptance rate: 1.000, Number of accepted tokens: 66, ..."
    # and "SpecDecoding metrics: Draft acceptance rate: 100.0%, Accepted: 66 tokens, ...".
    result = parse("vllm_v1_earliest.log")
    assert (result.lines, result.skipped, len(result.rejected)) == (3, 1, 0)
    assert [w.line for w in result.windows] == [2, 3]
    for w in result.windows:
        assert w.source == "vllm-v1"
        assert (w.drafted, w.accepted) == (66, 66)
        assert w.drafts is None and w.k is None and w.mean_length is None
        assert w.position_accepted is None and w.cumulative_rates is None


def test_vllm_v1_rate_mean_counts_positions_order():
    # Draft acceptance rate: 38.8%, Mean acceptance length: 2.16, Accepted: 150 tokens,
    # Drafted: 387 tokens, Per-position acceptance rate: 0.543, 0.357, 0.264.
    # 150 / 1.16 = 129.3 drafts; the whole K that fits is 3, so drafts = 387 / 3 = 129.
    result = parse("vllm_v1_mean_length.log")
    assert (result.lines, result.skipped) == (3, 2)  # the source comment, the Engine 000 line
    w = only(result.windows)
    assert (w.source, w.line, w.k, w.drafts, w.drafted, w.accepted) == (
        "vllm-v1",
        3,
        3,
        129,
        387,
        150,
    )
    assert w.mean_length == 2.16
    assert w.position_accepted == pytest.approx((0.543 * 129, 0.357 * 129, 0.264 * 129))
    assert w.cumulative_rates == pytest.approx((0.543, 0.357, 0.264))


def test_vllm_v1_order_with_throughputs():
    # ..., Mean acceptance length: 5.44, Accepted throughput: ..., Drafted throughput: ...,
    # Accepted: 262 tokens, Drafted: 295 tokens, Per-position acceptance rate: (5 rates).
    # 262 / 4.44 = 59.0 drafts -> K = 295 / 59 = 5; 1 + 262 / 59 = 5.4407 ~ 5.44.
    w = only(parse("vllm_v1_throughput.log").windows)
    assert (w.k, w.drafts, w.drafted, w.accepted) == (5, 59, 295, 262)
    assert len(w.position_accepted or ()) == 5


def test_vllm_v1_latest_order_and_nothing_accepted():
    # Mean acceptance length: 2.37, ..., Accepted: 89 tokens, Drafted: 975 tokens,
    # 15 per-position rates, Avg Draft acceptance rate: 9.1% -> 89 / 1.37 = 65 drafts, K = 15.
    # Then three lines with 0 accepted of 495 and five 0.000 rates: drafts = 495 / 5 = 99.
    result = parse("vllm_v1_avg_rate.log")
    assert (result.lines, result.skipped, len(result.rejected)) == (6, 2, 0)
    first, *nothing = result.windows
    assert (first.k, first.drafts, first.accepted, first.drafted) == (15, 65, 89, 975)
    assert first.cumulative_rates is not None and len(first.cumulative_rates) == 15
    assert [(w.line, w.k, w.drafts, w.accepted, w.mean_length) for w in nothing] == [
        (4, 5, 99, 0, 1.0),
        (5, 5, 99, 0, 1.0),
        (6, 5, 99, 0, 1.0),
    ]


def test_a_per_position_list_shorter_than_k():
    # Synthetic line (vLLM field order): K = 4 from the counts (150 / 1.5 = 100 drafts,
    # 400 / 100 = 4) but only three rates; M >= 1 + sum r_i is all that can be checked.
    line = (
        "SpecDecoding metrics: Mean acceptance length: 2.50, Accepted: 150 tokens, "
        "Drafted: 400 tokens, Per-position acceptance rate: {}"
    )
    w = only(parse_log(line.format("0.600, 0.500, 0.300")).windows)
    assert (w.k, w.drafts) == (4, 100)
    assert w.position_accepted == pytest.approx((60, 50, 30))
    # The same with rates that sum past M - 1 (1 + 1.7 = 2.7 > 2.5): rejected.
    too_much = parse_log(line.format("0.700, 0.600, 0.400") + "\n" + line.format("0.6, 0.5, 0.3"))
    assert [w.line for w in too_much.windows] == [2]
    assert only(too_much.rejected).problems == ("M 2.5 < 1 + sum r_i 2.7",)


def test_vllm_v0_emitted_tokens_give_mean_length():
    # K = 3, 13311 draft tokens -> 4437 drafts; 10616 emitted = drafts + accepted prefix, so
    # accepted = 10616 - 4437 = 6179 and M = 10616 / 4437.
    result = parse("vllm_v0.log")
    assert (result.lines, result.skipped) == (3, 2)
    w = only(result.windows)
    assert (w.source, w.k, w.drafts, w.drafted, w.accepted) == ("vllm-v0", 3, 4437, 13311, 6179)
    assert w.mean_length == pytest.approx(10616 / 4437)
    assert w.position_accepted is None


def test_vllm_v0_totals_are_differenced():
    # Totals 5 draft tokens / 1 emitted, then 15 / 3 (K = 5): intervals of 1 draft (0 accepted)
    # and (15 - 5) / 5 = 2 drafts with 3 - 1 = 2 emitted (0 accepted).
    result = parse("vllm_v0_cumulative.log")
    assert [(w.drafts, w.drafted, w.accepted, w.mean_length) for w in result.windows] == [
        (1, 5, 0, 1.0),
        (2, 10, 0, 1.0),
    ]


def test_vllm_v0_inconsistent_efficiency_is_rejected():
    line = (
        "Speculative metrics: Draft acceptance rate: 0.642, System efficiency: 0.700, "
        "Number of speculative tokens: 3, Number of accepted tokens: 8547, "
        "Number of draft tokens: 13311, Number of emitted tokens: 10616."
    )
    with pytest.raises(LogError) as error:
        parse_log(line)
    assert str(error.value).endswith(
        "1 rejected (line 1: system efficiency 0.700 != emitted / (drafts (K + 1)) 0.5982)"
    )


def test_prometheus_scrapes_give_interval_windows():
    # Scrape 1, engines 0 + 1: drafts 1000 + 600, tokens 3000 + 1800, accepted 1900 + 1100,
    # positions 800 + 470, 620 + 360, 480 + 270. Scrape 2: 1500 + 900, 4500 + 2700,
    # 2800 + 1650, positions 1190 + 710, 910 + 540, 700 + 400.
    result = parse("vllm_prometheus.prom")
    # skipped: the source comment, num_requests_running HELP, TYPE and two samples, and the
    # spec_decode_num_drafts_created sample.
    assert (result.lines, result.skipped, len(result.rejected)) == (40, 6, 0)
    totals, interval = result.windows
    assert (totals.line, totals.drafts, totals.drafted, totals.accepted, totals.k) == (
        7,
        1600,
        4800,
        3000,
        3,
    )
    assert totals.position_accepted == (1270, 980, 750)
    assert (interval.line, interval.drafts, interval.drafted, interval.accepted) == (
        29,
        2400 - 1600,
        7200 - 4800,
        4450 - 3000,
    )
    assert interval.position_accepted == (1900 - 1270, 1450 - 980, 1100 - 750)
    assert interval.mean_length == 1 + 1450 / 800


def test_prometheus_counter_reset_is_rejected():
    text = "\n".join(
        [
            'vllm:spec_decode_num_drafts_total{engine="0"} 100.0',
            'vllm:spec_decode_num_draft_tokens_total{engine="0"} 300.0',
            'vllm:spec_decode_num_accepted_tokens_total{engine="0"} 150.0',
            'vllm:spec_decode_num_drafts_total{engine="0"} 10.0',
            'vllm:spec_decode_num_draft_tokens_total{engine="0"} 30.0',
            'vllm:spec_decode_num_accepted_tokens_total{engine="0"} 15.0',
        ]
    )
    result = parse_log(text)
    assert only(result.windows).drafts == 100
    bad = only(result.rejected)
    assert bad.line == 4
    assert "a counter went down between scrapes (server restarted?)" in bad.problems


def test_vllm_bench_serve_section():
    # Drafts 6393, Draft tokens 19179 (K = 3), Accepted 14090, M = 1 + 14090 / 6393 = 3.204.
    result = parse("vllm_bench_serve.txt")
    # skipped: the source comment, 12 report lines before the section, the closing "====".
    assert (result.lines, result.skipped) == (24, 14)
    w = only(result.windows)
    assert (w.source, w.line, w.k, w.drafts, w.drafted, w.accepted, w.mean_length) == (
        "vllm-bench",
        14,
        3,
        6393,
        19179,
        14090,
        3.20,
    )
    assert w.cumulative_rates == pytest.approx((0.8342, 0.7291, 0.6407))
    text = (FIXTURES / "vllm_bench_serve.txt").read_text()
    changed = parse_log(text.replace("19179", "17000") + text)
    assert [w.line for w in changed.windows] == [24 + 14]
    assert "K = drafted / drafts = 2.66 is not a whole number" in only(changed.rejected).problems


def test_vllm_offline_summaries():
    # eagle: 2189 drafts, 6567 tokens (K = 3), 3187 accepted, rates 0.77, 0.45, 0.24;
    # ngram: 993 drafts, 4960 tokens (K = 5 within 2 %: 4.995), 3562 accepted;
    # K = 10: 20468 drafts, 204680 tokens, 48266 accepted, ten rates.
    result = parse("vllm_offline_spec_decode.txt")
    assert len(result.rejected) == 0
    assert [(w.line, w.k, w.drafts, w.drafted, w.accepted) for w in result.windows] == [
        (5, 3, 2189, 6567, 3187),
        (19, 5, 993, 4960, 3562),
        (34, 10, 20468, 204680, 48266),
    ]
    assert result.windows[0].cumulative_rates == pytest.approx((0.77, 0.45, 0.24))
    assert len(result.windows[2].position_accepted or ()) == 10
    # skipped: 2 source comments; before block 1: dashes, "num generation tokens", dashes;
    # before block 2 the same 3 lines (the trailing dashes of block 1 end nothing); before
    # block 3 one dashes line.
    assert (result.lines, result.skipped) == (49, 9)


def test_sglang_accept_len_is_a_mean_only():
    result = parse("sglang_decode.log")
    assert (result.lines, result.skipped) == (3, 2)  # the source comment, the Prefill line
    w = only(result.windows)
    assert (w.source, w.line, w.mean_length) == ("sglang", 3, 3.13)
    assert w.drafts is None and w.accepted is None and w.k is None and w.position_accepted is None


def test_sglang_early_format():
    result = parse("sglang_decode_old.log")
    assert [(w.line, w.mean_length) for w in result.windows] == [(2, 3.42), (3, 3.18)]
    assert (result.lines, result.skipped) == (3, 1)


def test_llama_cpp_lookup_summary():
    # n_drafted = 712, n_accept = 410, accept = 57.584 % (410 / 712 = 0.575843): no drafts.
    result = parse("llamacpp_lookup.txt")
    assert (result.lines, result.skipped) == (7, 1)
    w = only(result.windows)
    assert (w.source, w.line, w.drafted, w.accepted, w.drafts) == ("llama.cpp", 2, 712, 410, None)
    assert w.text.count("\n") == 5
    changed = parse_log(
        (FIXTURES / "llamacpp_lookup.txt").read_text().replace("57.584%", "60.000%") + "x\n"
        "draft acceptance rate = 0.5 (  1 accepted /   2 generated)"
    )
    assert "acceptance rate 0.6 != accepted / drafted 0.5758" in only(changed.rejected).problems


def test_llama_cpp_mean_len_line():
    # 5995 accepted / 9089 generated, mean len 4.30: drafts = 5995 / 3.30; drafts vary in
    # length in llama.cpp, so no K.
    w = only(parse("llamacpp_mean_len.log").windows)
    assert (w.source, w.drafted, w.accepted, w.k) == ("llama.cpp", 9089, 5995, None)
    assert w.drafts == pytest.approx(5995 / 3.30)


def test_llama_cpp_statistics_supersede_per_request_lines():
    # The statistics line: 87 drafts, 259 tokens, 167 accepted, mean 2.92 (1 + 167 / 87 =
    # 2.9195), rates (0.805, 0.632, 0.483) summing to 1.92.
    result = parse("llamacpp_per_position.log")
    w = only(result.windows)
    assert (w.line, w.drafts, w.drafted, w.accepted, w.mean_length) == (7, 87, 259, 167, 2.92)
    assert w.cumulative_rates == pytest.approx((0.805, 0.632, 0.483))
    # skipped: source comment, 4 print_timing lines, release, idle (the request line is used).
    assert (result.lines, result.skipped) == (9, 7)


def test_llama_cpp_one_window_per_drafter():
    result = parse("llamacpp_server_mtp.log")
    assert [(w.line, w.drafts, w.drafted, w.accepted) for w in result.windows] == [
        (9, 3, 192, 43),
        (10, 727, 1447, 1135),
    ]
    empty = only(result.rejected)
    assert (empty.line, empty.problems) == (8, ("no drafts in this window",))
    # skipped: source comment, 2 print_timing lines, 3 timing lines, release, idle.
    assert result.skipped == 8


def test_llama_cpp_old_line_without_statistics():
    w = only(
        parse_log("draft acceptance rate = 0.81944 (  118 accepted /   144 generated)").windows
    )
    assert (w.drafted, w.accepted, w.drafts, w.mean_length) == (144, 118, None, None)


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        (
            "SpecDecoding metrics: Draft acceptance rate: 38.8%, Mean acceptance length: 2.16, "
            "Accepted: 150 tokens, Drafted: 387 tokens, Per-position acceptance rate: "
            "0.357, 0.543, 0.264",
            "cumulative rates rise at position 2: 0.543 > 0.357",
        ),
        (
            "SpecDecoding metrics: Draft acceptance rate: 38.8%, Mean acceptance length: 2.40, "
            "Accepted: 150 tokens, Drafted: 387 tokens, Per-position acceptance rate: "
            "0.543, 0.357, 0.264",
            "M 2.4 != 1 + sum r_i 2.164",
        ),
        (
            "SpecDecoding metrics: Draft acceptance rate: 100.0%, Accepted: 70 tokens, "
            "Drafted: 66 tokens",
            "accepted 70 > drafted 66",
        ),
        (
            "SpecDecoding metrics: Draft acceptance rate: 50.0%, Accepted: 30 tokens, "
            "Drafted: 66 tokens",
            "acceptance rate 0.5 != accepted / drafted 0.4545",
        ),
    ],
)
def test_inconsistent_windows_are_rejected_with_the_reason(line, problem):
    good = "SpecDecoding metrics: Accepted: 66 tokens, Drafted: 66 tokens"
    result = parse_log(f"{line}\n{good}")
    assert only(result.windows).line == 2
    bad = only(result.rejected)
    assert (bad.line, bad.text) == (1, line)
    assert problem in bad.problems


def test_nothing_usable_is_one_line_error(tmp_path):
    with pytest.raises(LogError) as error:
        parse_log("hello\n\nworld\n", "LOGFILE")
    assert str(error.value) == (
        "LOGFILE: nothing usable in 3 lines: no speculative decoding metrics "
        "(vLLM, SGLang, llama.cpp)"
    )
    with pytest.raises(LogError) as error:
        parse_log("SpecDecoding metrics: Accepted: 70 tokens, Drafted: 66 tokens", "x.log")
    assert str(error.value) == (
        "x.log: nothing usable in 1 lines: 1 rejected (line 1: accepted 70 > drafted 66)"
    )
    missing = tmp_path / "missing.log"
    with pytest.raises(LogError, match="missing.log: cannot read"):
        parse_log_file(missing)
    assert isinstance(LogError("x"), ValueError)


def test_a_mixed_file_with_noise():
    # Per-file skipped counts worked out in the tests above (source comments included).
    parts = [
        ("vllm_v1_mean_length.log", 1, 2),
        ("sglang_decode.log", 1, 2),
        ("vllm_bench_serve.txt", 1, 14),
        ("vllm_prometheus.prom", 2, 6),
        ("llamacpp_mean_len.log", 1, 2),
        ("vllm_v0.log", 1, 2),
    ]
    noise = ["Traceback (most recent call last):", '  File "x.py", line 1', "", "KeyError: 3"]
    text = "\n".join(noise + [(FIXTURES / n).read_text() for n, _, _ in parts] + noise)
    result = parse_log(text)
    assert len(result.windows) == sum(n for _, n, _ in parts)
    assert result.rejected == []
    assert result.skipped == sum(s for _, _, s in parts) + 2 * 3
    assert [w.source for w in result.windows] == [
        "vllm-v1",
        "sglang",
        "vllm-bench",
        "vllm-prometheus",
        "vllm-prometheus",
        "llama.cpp",
        "vllm-v0",
    ]
    assert [w.line for w in result.windows] == sorted(w.line for w in result.windows)


# Malformed numbers (review of issue 13): each is a rejected window, never a traceback.
MALFORMED = {
    "rate list": "SpecDecoding metrics: Mean acceptance length: 2.00, Accepted: 30 tokens, "
    "Drafted: 90 tokens, Per-position acceptance rate: 0.5.3, 0.3, 0.2",
    "llama.cpp rates": "x | draft acceptance = 0.5 ( 5 accepted / 10 generated), mean len = "
    "2.0, acceptance rate per position = (abc)",
    "empty rates": "x | draft acceptance = 0.5 ( 5 accepted / 10 generated), mean len = 2.0, "
    "acceptance rate per position = ( , )",
    "NaN counter": "vllm:spec_decode_num_drafts_total 100\n"
    "vllm:spec_decode_num_draft_tokens_total NaN\n"
    "vllm:spec_decode_num_accepted_tokens_total 50",
    "infinite counter": "vllm:spec_decode_num_drafts_total 100\n"
    "vllm:spec_decode_num_draft_tokens_total +Inf\n"
    "vllm:spec_decode_num_accepted_tokens_total 50",
    "K = 0": "Speculative metrics: Draft acceptance rate: 0.5, System efficiency: 0.5, Number "
    "of speculative tokens: 0, Number of accepted tokens: 5, Number of draft tokens: 10, "
    "Number of emitted tokens: 10.",
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_malformed_numbers_are_a_rejected_window(case):
    with pytest.raises(
        LogError, match="nothing usable .* 1 rejected .*numbers that cannot be read"
    ):
        parse_log(MALFORMED[case], "bad.log")
    mixed = parse_log(MALFORMED[case] + "\n" + GOOD_V1, "mixed.log")
    assert len(mixed.windows) == 1 and len(mixed.rejected) == 1


GOOD_V1 = (
    "SpecDecoding metrics: Mean acceptance length: 2.00, Accepted: 100 tokens, Drafted: 300 "
    "tokens, Per-position acceptance rate: 0.500, 0.300, 0.200"
)


def test_a_window_accepting_almost_nothing_is_consistent():
    """M 1.00 as printed, 1 of 1,250 drafted accepted, 5 positions listed: 250 drafts at
    K = 5, M = 1 + 1/250 = 1.004, which prints as 1.00."""
    line = (
        "SpecDecoding metrics: Mean acceptance length: 1.00, Accepted: 1 tokens, Drafted: "
        "1250 tokens, Per-position acceptance rate: 0.004, 0.000, 0.000, 0.000, 0.000"
    )
    (window,) = parse_log(line).windows
    assert window.drafts == 250 and window.k == 5 and window.position_accepted[0] == 1


def test_prometheus_created_timestamps_are_not_counts():
    """prometheus_client exposes a *_created gauge (a Unix time, ~1.8e9) beside every
    counter: adding it would swamp the counts."""
    result = parse_log_file(FIXTURES / "vllm_prometheus_created.prom")
    (window,) = result.windows
    assert (window.drafts, window.drafted, window.accepted) == (1000, 3000, 1500)
    assert window.position_accepted == (700.0, 500.0, 300.0) and window.k == 3
