"""Predictions under load (engine.validate.under_load): the speedup each kind of entry
compares, from runs whose figures are worked out by hand, and a made-up TPOT entry's closed
loop against the roofline typed out in test_predict."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from engine.serve.metrics import Summary
from engine.validate.table import Entry, parse_table
from engine.validate.under_load import runs_of, speedup_of, under_load
from tests.engine.validate.test_predict import (
    EAGLE_HEAD,
    H100_BW,
    H100_F,
    LLAMA_8B,
    SERIES,
    pass_s,
)


def run(tpot_s, end_s):
    """A run of one request of 101 tokens, the first at 0.1 s, then one every ``tpot_s``;
    the run ends at ``end_s``."""
    summary = Summary()
    last = 0.1 + 100 * tpot_s
    summary.add_requests(
        np.array([0.0]), np.array([0.1]), np.array([last]), np.array([101]), np.array([101]),
        np.inf, np.inf,
    )  # fmt: skip
    return SimpleNamespace(summary=summary, end_s=end_s)


OFF, SPEC = run(0.020, 3.0), run(0.008, 1.5)  # TPOT 20 ms and 8 ms


def test_a_tpot_entry_compares_the_mean_tpots():
    entry = Entry({"tpot_ms": 4.0, "baseline_tpot_ms": 10.0})
    assert speedup_of(entry, OFF, SPEC) == pytest.approx(20 / 8, rel=1e-12)


def test_a_wall_time_entry_compares_the_makespans():
    entry = Entry({"wall_s": 1.0, "baseline_wall_s": 2.0})
    assert speedup_of(entry, OFF, SPEC) == pytest.approx(3.0 / 1.5, rel=1e-12)


def test_a_throughput_entry_compares_tokens_a_second():
    # 101 tokens from the arrival at 0 to the last token: at 2.1 s off, 0.9 s speculating.
    entry = Entry({"tokens_per_s": 300.0, "baseline_tokens_per_s": 100.0})
    assert speedup_of(entry, OFF, SPEC) == pytest.approx(2.1 / 0.9, rel=1e-12)


def test_a_made_up_tpot_entry_under_load_is_faster_by_about_the_cycles_gain():
    # One request at a time, two of them, 100-token prompts and 64-token answers, K = 3 with
    # 2.5 tokens a cycle on an EAGLE head: the mean context is 132 tokens.
    text = SERIES + (
        '[[entry]]\nid = "s-tpot"\nseries = "s"\nk = 3\nmean_length = 2.5\nconcurrency = 1\n'
        "requests = 2\noutput = 64\nprompt = 100\ntpot_ms = 5.0\nbaseline_tpot_ms = 10.0\n"
    )
    (entry,) = parse_table(text, "t.toml")
    step = pass_s(*LLAMA_8B, 1, 132, H100_BW, H100_F)
    cycle = pass_s(*LLAMA_8B, 4, 132, H100_BW, H100_F) + 3 * pass_s(
        *EAGLE_HEAD, 1, 132, H100_BW, H100_F
    )
    off, _ = runs_of(entry)
    # Off, every token after the first is one decoding step, at contexts 101 to 163.
    assert off.summary.figures(1, 0.0)["tpot_mean_ms"] == pytest.approx(1e3 * step, rel=1e-4)
    # Speculating, 2.5 tokens a cycle on average (the draws of two requests: within 5 %).
    predicted = under_load(entry).value
    assert predicted == pytest.approx(2.5 * step / cycle, rel=0.05)
    assert predicted > 1.5
