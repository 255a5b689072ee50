"""``spectui run --proposer ngram|suffix``: the proposer's figures as a user reads them, each
with where it came from, and bad values refused in one line (exit 2, no traceback)."""

from __future__ import annotations

import json

import pytest

# T = 2, K = 1, a = 0.8, h = 0.5, verify 200 + 20 a checked draft, look-up 10 us:
# speedup 2 x 200 / (220 x (2 - 0.4)) = 25/22 = 1.136 (tests/engine/test_proposers.py).
SMALL = (
    "run",
    "--proposer",
    "ngram",
    "--k",
    "1",
    "--tokens-per-seq",
    "2",
    "--verify-token-us",
    "20",
    "--cpu-us",
    "10",
    "--n-sequences",
    "400",
)


def _row(out: str, name: str) -> list[str]:
    """The cells of the table row that starts with ``name`` (a box's borders dropped)."""
    for line in out.splitlines():
        text = line.strip().strip("│").strip()
        if text.startswith(name + "  ") or text == name:
            return text[len(name) :].split()
    raise AssertionError(f"no row {name!r} in:\n{out}")


def test_run_shows_the_proposers_figures(cli):
    status, out, err = cli(*SMALL, "--hit-rate", "0.5")
    assert status == 0, err
    assert _row(out, "speedup (exact)")[0] == "1.136"
    assert "proposer ngram" in out
    look_up = _row(out, "look-up")
    assert look_up[:2] == ["10.000", "us"] and "as given" in " ".join(look_up)
    assert _row(out, "hit rate")[:3] == ["0.500", "as", "given"]
    observed = _row(out, "hit rate observed")
    assert 0.45 < float(observed[0]) < 0.55
    # K = 1: a step that drafted drafted one token.
    assert _row(out, "drafted per step")[1] == "1.000"
    assert "acceptance on hit" in out


def test_run_says_where_the_defaults_came_from(cli):
    status, out, err = cli("run", "--proposer", "suffix", "--n-sequences", "50")
    assert status == 0, err
    text = " ".join(out.split())
    assert "1.500 us" in text and "llama.cpp ngram-simple" in text
    assert "0.547" in text and "vLLM PR #24344" in text
    assert "assumed, no source" in text  # the suffix's mean match length
    # About 4,000 steps, each drafting with probability 0.547: 0.547 +- 4 x 0.008.
    assert abs(float(_row(out, "hit rate observed")[0]) - 0.547) < 0.032


def test_a_draft_model_run_shows_no_proposer(cli):
    status, out, _ = cli("run", "--n-sequences", "20")
    assert status == 0 and "proposer" not in out and "hit rate" not in out


def test_run_json_has_the_proposers_figures(cli):
    status, out, err = cli(*SMALL, "--hit-rate", "0.5", "--json")
    assert status == 0, err
    payload = json.loads(out)
    assert payload["config"]["proposer.name"] == "ngram"
    assert payload["metrics"]["speedup_exact"] == pytest.approx(25 / 22, rel=1e-12)
    figures = payload["proposer"]
    assert figures["name"] == "ngram" and figures["hit_rate"] == 0.5
    assert figures["lookup_us"] == 10.0
    assert figures["steps_drafted"] <= figures["steps"]
    assert figures["drafted_per_hit"] == 1.0
    # A draft model's JSON has no proposer block.
    status, out, _ = cli("run", "--n-sequences", "20", "--json")
    assert status == 0 and "proposer" not in json.loads(out)


@pytest.mark.parametrize(
    ("args", "flag", "allowed"),
    [
        (("--proposer", "ngram", "--hit-rate", "1.5"), "--hit-rate", "[0, 1]"),
        (("--proposer", "ngram", "--hit-rate", "\u0660.\u0665"), "--hit-rate", "ASCII"),
        (("--proposer", "suffix", "--mean-match", "0"), "--mean-match", "[1, 1024]"),
        (("--proposer", "ngram", "--cpu-us", "nan"), "--cpu-us", "[0, 1e6]"),
        (("--proposer", "lookahead"), "--proposer", "'model', 'ngram', 'suffix'"),
        (("--proposer", "ngram", "--policy", "goodput"), "policy.name", "policy fixed"),
    ],
)
def test_bad_values_are_refused_in_one_line(cli, args, flag, allowed):
    status, out, err = cli("run", *args)
    assert status == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert flag in lines[0] and allowed in lines[0] and "Traceback" not in err
