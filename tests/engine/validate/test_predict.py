"""The two predictions, checked against the formulas worked by hand (not by the engine)."""

from __future__ import annotations

import pytest

from engine.validate.predict import calibrated, fit_overhead, from_specs
from engine.validate.table import parse_table, shipped_table

# The additive roofline of docs/model.md with today's efficiencies, typed out here.
H100_BW, H100_F = 3.35e12, 989e12
A100_BW, A100_F = 2.039e12, 312e12
ETA_W, ETA_KV, ETA_F = 0.81, 1.0, 0.77


def pass_s(params, layers, d_model, kv_per_token, w, context, bw, flops):
    weights = params * 2 / (ETA_W * bw)
    kv = context * kv_per_token / (ETA_KV * bw)
    compute = (2 * params * w + 4 * layers * d_model * context * w) / (ETA_F * flops)
    return weights + kv + compute


LLAMA_8B = (8_030_261_248, 32, 4096, 2 * 32 * 8 * 128 * 2)
EAGLE_HEAD = (776_998_912, 1, 4096, 2 * 1 * 8 * 128 * 2)
VICUNA_13B = (13_015_864_320, 40, 5120, 2 * 40 * 40 * 128 * 2)
MEDUSA_HEADS = (760_238_080, 1, 5120, 2 * 1 * 40 * 128 * 2)


def entry(entry_id):
    return next(e for e in shipped_table() if e.id == entry_id)


def test_a_chain_from_specs_is_tokens_per_cycle_over_the_roofline_cycle():
    # vLLM #20780, EAGLE-1 at K = 3: AL 2.29, 3 head passes and a verify pass of 4 tokens,
    # batch 1, mean context 512 (the table states no lengths).
    step = pass_s(*LLAMA_8B, 1, 512, H100_BW, H100_F)
    cycle = pass_s(*LLAMA_8B, 4, 512, H100_BW, H100_F) + 3 * pass_s(
        *EAGLE_HEAD, 1, 512, H100_BW, H100_F
    )
    predicted = from_specs(entry("vllm-20780-eagle1-k3")).value
    assert predicted == pytest.approx(2.29 / (cycle / step), rel=1e-12)
    assert entry("vllm-20780-eagle1-k3").measured == pytest.approx(7.07 / 4.29)


def test_heads_inside_the_verify_pass_cost_one_pass_at_context_zero():
    # Spec-Bench Medusa: a 64-token verify pass and the 4 heads over 64 positions, no KV.
    step = pass_s(*VICUNA_13B, 1, 512, A100_BW, A100_F)
    cycle = pass_s(*VICUNA_13B, 64, 512, A100_BW, A100_F) + pass_s(
        *MEDUSA_HEADS, 64, 0, A100_BW, A100_F
    )
    predicted = from_specs(entry("specbench-a100-v13b-medusa")).value
    assert predicted == pytest.approx(2.39 / (cycle / step), rel=1e-12)


SERIES = """
[[series]]
id = "s"
category = "batch 1"
status = "ok"
source = "somewhere"
url = "https://example.org"
read = "2026-12-02"
hardware = "h100"
target = "llama-3.1-8b"
method = "EAGLE-1"
draft = "eagle-llama-3.1-8b"
batch = 1
acceptance = "AL"
setup = "setup"
note = "note"
outcome = "speedup"
"""


def sweep(points, extra=""):
    """A series whose cycles cost exactly 1.2 + 0.1 K steps, with ``points`` (K, M) and
    their speedups, plus ``extra`` entries."""
    text = SERIES
    for k, m, *speedup in points:
        value = speedup[0] if speedup else m / (1.2 + 0.1 * k)
        text += f'[[entry]]\nid = "s-k{k}"\nseries = "s"\nk = {k}\nmean_length = {m}\n'
        text += f"speedup = {value}\n"
    return parse_table(text + extra, "t.toml")


def test_calibrated_fits_the_rest_of_the_series():
    table = sweep([(2, 2.0), (3, 2.4), (4, 2.7), (6, 3.0)])
    held = table[2]
    assert calibrated(held, table).value == pytest.approx(2.7 / (1.2 + 0.1 * 4), rel=1e-9)


def test_calibrated_leaves_the_held_out_point_out():
    # K = 4's own measurement is far off the line: its prediction must not move with it.
    table = sweep([(2, 2.0), (3, 2.4), (4, 2.7, 9.0), (6, 3.0)])
    assert calibrated(table[2], table).value == pytest.approx(2.7 / 1.6, rel=1e-9)


def test_calibrated_uses_only_points_of_the_same_setup():
    other = (
        '[[entry]]\nid = "s-other"\nseries = "s"\ndraft = "llama-3.2-1b"\nk = 5\n'
        "mean_length = 2.0\nspeedup = 0.5\n"
    )
    table = sweep([(2, 2.0), (3, 2.4), (4, 2.7)], other)
    assert calibrated(table[2], table).value == pytest.approx(2.7 / 1.6, rel=1e-9)
    # Alone in its setup, the other draft gets the overhead per pass fitted to the rest.
    fit = fit_overhead(table[:3])
    assert calibrated(table[3], table).value == from_specs(table[3], fit.t0_us).value


def test_a_sweep_of_two_k_falls_back_to_the_overhead_fitted_to_the_other_point():
    table = sweep([(2, 2.0), (3, 2.4)])
    fit = fit_overhead(table[1:])
    assert calibrated(table[0], table).value == from_specs(table[0], fit.t0_us).value


def test_a_pending_entry_is_not_predicted():
    pending = [e for e in shipped_table() if e.pending]
    assert pending
    for e in pending:
        assert from_specs(e).value is None and from_specs(e).why_none == e.status
        assert calibrated(e, shipped_table()).value is None


def test_every_entry_that_is_not_pending_is_predicted_from_specs_finitely():
    for e in shipped_table():
        if not e.pending:
            value = from_specs(e).value
            assert value is not None and 0.0 < value < 100.0, e.id


LLAMA_2_7B = (6_738_415_616, 32, 4096, 2 * 32 * 32 * 128 * 2)
TINYLLAMA = (1_100_048_384, 22, 2048, 2 * 22 * 4 * 64 * 2)
LLAMA_160M = (162_417_408, 12, 768, 2 * 12 * 12 * 64 * 2)


def test_calibrated_on_a_bench_fits_one_overhead_per_pass_to_the_other_entries():
    # llama.cpp #8499 on an A100: the 160M model's cost ratio 0.1120 (79.75 / 712.15 t/s)
    # fixes the overhead t0 that the 1.1B model's prediction then pays on both passes
    # (context 128: no prompt, 256 tokens generated).
    step = pass_s(*LLAMA_2_7B, 1, 128, A100_BW, A100_F)
    small = pass_s(*LLAMA_160M, 1, 128, A100_BW, A100_F)
    ratio = 0.1120
    t0 = (ratio * step - small) / (1 - ratio)  # (small + t0) / (step + t0) = ratio
    tiny = pass_s(*TINYLLAMA, 1, 128, A100_BW, A100_F)
    expected = (tiny + t0) / (step + t0)
    table = shipped_table()
    predicted = calibrated(entry("llamacpp-8499-a100-1.1b"), table).value
    assert predicted == pytest.approx(expected, rel=2e-3)  # t0 on a 10 us grid
    assert predicted != pytest.approx(from_specs(entry("llamacpp-8499-a100-1.1b")).value)


def test_an_entry_alone_on_its_bench_has_no_calibrated_prediction():
    prediction = calibrated(entry("llamacpp-3649-v100-160m"), shipped_table())
    assert prediction.value is None and prediction.why_none == "no other entry of its series"


def test_the_overhead_fit_leaves_the_held_out_entry_out():
    # The held-out entry's own measurement, however far off, does not move its prediction.
    far, near = sweep([(2, 2.0), (3, 2.4, 9.0)]), sweep([(2, 2.0), (3, 2.4, 1.0)])
    assert calibrated(far[1], far).value == calibrated(near[1], near).value


def test_a_batch_sweep_fits_a_cost_linear_in_the_batch_leaving_the_point_out():
    text = SERIES.replace("batch = 1\n", "k = 3\n")
    for b, speedup in ((1, 2.0), (2, 1.8), (4, 1.5), (8, 0.9)):
        text += f'[[entry]]\nid = "s-b{b}"\nseries = "s"\nbatch = {b}\nmean_length = 2.4\n'
        text += f"speedup = {speedup}\n"
    table = parse_table(text, "t.toml")
    # Without batch 4: cycle steps 2.4 / speedup = 1.2, 1.333, 2.667 at batch 1, 2, 8.
    xs, ys = [1, 2, 8], [2.4 / 2.0, 2.4 / 1.8, 2.4 / 0.9]
    mean_x, mean_y = sum(xs) / 3, sum(ys) / 3
    slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / sum(
        (x - mean_x) ** 2 for x in xs
    )
    expected = 2.4 / (mean_y + slope * (4 - mean_x))
    assert calibrated(table[2], table).value == pytest.approx(expected, rel=1e-12)
    moved = parse_table(text.replace("speedup = 1.5", "speedup = 9.0"), "t.toml")
    assert calibrated(moved[2], moved).value == pytest.approx(expected, rel=1e-12)


def test_the_overhead_fit_scores_a_cost_ratio_as_a_ratio():
    # A cost ratio whose series carries a mean length is still a draft pass over a step.
    text = SERIES.replace('acceptance = "AL"', 'acceptance = "AL"\nmean_length = 2.0')
    text += '[[entry]]\nid = "s-c"\nseries = "s"\ncost_ratio = 0.3\n'
    (ratio,) = parse_table(text, "t.toml")
    fit = fit_overhead([ratio])
    assert fit is not None
    assert fit.errors["s-c"] == pytest.approx(from_specs(ratio, fit.t0_us).value / 0.3 - 1)


def test_a_cycle_that_drafts_nothing_is_one_step_whatever_the_specs():
    # vLLM #49548: speculation on, K = 0, on a GPU and a model the spec files do not hold.
    text = SERIES.replace('hardware = "h100"', 'hardware = "H100 NVL"').replace(
        'target = "llama-3.1-8b"', 'target = "gemma-4-31B-it-qat-FP8"'
    )
    text += '[[entry]]\nid = "s-k0"\nseries = "s"\nk = 0\nmean_length = 1.0\n'
    text += "tpot_ms = 15.317\nbaseline_tpot_ms = 14.374\n"
    (zero,) = parse_table(text, "t.toml")
    assert from_specs(zero).value == 1.0
    assert zero.measured == pytest.approx(14.374 / 15.317)
    assert from_specs(zero, t0_us=500.0).value == 1.0  # a pass's overhead is the step's too


def test_a_tensor_parallel_entry_is_priced_over_its_gpus():
    # SGLang #4716: the 70B target and its EAGLE-3 head each over 8 H100s.
    from engine.validate.predict import roofline_of

    cost = roofline_of(entry("sglang-4716-l33-70b-tp8"))
    assert (cost.target_run.tp, cost.draft_run.tp) == (8, 8)
    assert cost.target.id == "llama-3.3-70b" and cost.draft.id == "eagle3-llama-3.3-70b"


def test_an_entry_under_load_is_the_simulators_closed_loop():
    # A closed loop of 2, 4 requests of 64 tokens: the makespans of speculation off and on.
    from engine.validate.under_load import runs_of, under_load

    text = SERIES + (
        '[[entry]]\nid = "s-c2"\nseries = "s"\nk = 3\nmean_length = 2.5\nconcurrency = 2\n'
        "requests = 4\noutput = 64\nprompt = 100\nwall_s = 1.0\nbaseline_wall_s = 1.5\n"
    )
    (entry,) = parse_table(text, "t.toml")
    off, spec = runs_of(entry)
    assert off.summary.requests == spec.summary.requests == 4
    assert from_specs(entry).value == pytest.approx(off.end_s / spec.end_s, rel=1e-12)
    assert under_load(entry).value > 1.0  # 2.5 tokens a cycle on a cheap EAGLE head pays
