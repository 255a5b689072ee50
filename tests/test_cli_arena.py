"""`spectui arena`: leaderboards on the command line, asserted on what they print."""

from __future__ import annotations

import json
import re

import pytest

from engine.core.config import SpecConfig
from engine.simulate.policies import exact_speedup
from spectui.cli import main

SMALL = ["--n-sequences", "200", "--tokens-per-seq", "96"]


@pytest.fixture
def run(cli):
    """`spectui arena ARGS` in this process (the `cli` fixture of tests/conftest.py)."""
    return lambda *args: cli("arena", *args)


ROW = re.compile(r"^(?P<label>\S.*?)\s+(?P<exact>\d+\.\d\dx|—)\s+(?P<rest>\d.*)$")


def _rows(out: str) -> dict[str, list[str]]:
    """The printed leaderboard rows by policy label: the cells after the label."""
    rows = {}
    for line in out.splitlines():
        found = ROW.match(line)
        if found:
            rest = found["rest"].split()
            cells = [found["exact"], *rest]
            rows[found["label"]] = cells
    return rows


def test_a_markov_preset_prints_every_policy_with_exact_values(run):
    status, out, err = run("--preset", "bursty-code-chat", *SMALL)
    assert status == 0, err
    assert out.startswith("Arena: markov (easy 0.9, hard 0.3, stay 0.95, easy share 0.5)")
    rows = _rows(out)
    assert {"oracle", "hf_heuristic K0=4", "goodput w=4"} <= set(rows)
    best = [name for name in rows if name.endswith("*")]
    assert len(best) == 1 and rows[best[0]][2] == "ref"
    scenario = SpecConfig(draft_model="markov", k=4, n_sequences=200, tokens_per_seq=96).replace(
        **{"policy.name": "oracle"}
    )
    assert rows["oracle"][0] == f"{exact_speedup(scenario):.2f}x"
    assert rows["goodput w=4"][0] == "—"  # Monte Carlo only, and it says so
    # The oracle beats the best fixed K by a clear paired margin
    gain = rows["oracle"][2]
    value, ci = (float(x) for x in gain.split("±"))
    assert value > 3 * ci > 0
    assert "95 % paired interval" in out


def test_json_has_every_figure(run):
    status, out, _ = run("--preset", "hf-vs-fixed", *SMALL, "--json")
    assert status == 0
    boards = json.loads(out)
    assert [b["scenario"]["acceptance_rate"] for b in boards] == [0.3, 0.6, 0.9, 0.97]
    for board in boards:
        policies = [s["policy"] for s in board["standings"]]
        assert "oracle" in policies and f"fixed K={board['best_fixed_k']}" in policies
        for standing in board["standings"]:
            assert standing["method"] in ("exact", "Monte Carlo")
            if not standing["best_fixed"]:
                assert standing["gain_ci95"] < standing["gain_ci95_unpaired"]
    low = boards[0]["standings"]
    hf = next(s for s in low if s["policy"] == "hf_heuristic K0=5 ≤32")
    assert hf["mean_k"] < 2.0  # K collapses at acceptance 0.3


def test_policy_flags_choose_one_contender(run):
    status, out, _ = run("--policy", "hf_heuristic", "--k", "3", *SMALL)
    assert status == 0
    # Exactly two rows: the policy the flags give and the best fixed K, the reference
    rows = _rows(out)
    assert len(rows) == 2 and "hf_heuristic K0=3" in rows
    (best,) = [name for name in rows if name.startswith("fixed K=") and name.endswith(" *")]
    assert rows[best][2] == "ref"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--policy", "threshold"],
            "policy.name: threshold needs per-token confidences, which draft_model fixed "
            "does not give; use draft_model confidence",
        ),
        (
            ["--draft-model", "per_position", "--policy", "oracle"],
            "policy.name: oracle would choose k up to policy.k_max 32 from the per_position "
            "table, which gives only 3 rates (acceptance.rates)",
        ),
        (["--rates", "0.9,1.5"], "argument --rates: '0.9,1.5' is not allowed; expected 1 to"),
        (["--schedule", "4:2"], "argument --schedule: '4:2' is not allowed; expected BATCH:K"),
    ],
)
def test_bad_input_is_one_line_naming_the_fields(run, args, message):
    status, _, err = run(*args, *SMALL)
    assert status == 2
    assert message in err
    assert "Traceback" not in err and len(err.strip().splitlines()) <= 2  # usage + the error


def test_sweeps_of_the_new_models_and_policies_analyse(tmp_path, capsys, monkeypatch):
    """A sweep over the acceptance models beyond the original and over policies writes
    rows that `spectui analyze` reads back (parameters left at their defaults have no
    column; rates are text)."""
    monkeypatch.setenv("NO_COLOR", "1")
    preset = tmp_path / "new.toml"
    preset.write_text(
        'description = "new models"\n[config]\nn_sequences = 50\n'
        '[[grid]]\ndraft_model = ["per_position", "beta_round", "markov", "confidence"]\n'
        "k = [2, 4]\n"
        '[[grid]]\n"policy.name" = ["fixed", "hf_heuristic", "goodput"]\n'
    )
    out = tmp_path / "new.csv"
    assert main(["sweep", "--preset", str(preset), "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["analyze", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "per_position (rates 0.9,0.8,0.7), K=" in printed or "Optimal K, per_position" in printed
    assert "Optimal K, markov" in printed


def test_a_policy_that_loses_captures_no_share_of_the_oracles_gain(run):
    """capt is a share of the oracle's gain: "-42%" for a loss is no share (issue 22)."""
    status, out, err = run("--preset", "bursty-code-chat", *SMALL)
    assert status == 0, err
    rows = _rows(out)
    losing = [cells for cells in rows.values() if cells[2].startswith("-")]
    gaining = [cells for cells in rows.values() if cells[2].startswith("+")]
    assert losing and gaining  # fixed K=2 loses to the best fixed K; the oracle gains
    assert all(cells[3] == "—" for cells in losing), losing
    assert rows["oracle"][3] == "100%"
    assert "capt: share of the oracle's gain captured (— : no gain" in " ".join(out.split())


def test_the_default_roster_starts_at_k_within_the_bound(run, tmp_path):
    """A preset whose K is above policy.k_max and that lists no contenders: the policies
    that start at K start at the bound, the others keep the preset's K; every one the
    registry has that chooses k cycle by cycle is in the standings."""
    preset = tmp_path / "high-k.toml"
    preset.write_text(
        'description = "K above the bound"\n[config]\ndraft_model = "confidence"\n'
        'k = 12\n"policy.k_max" = 8\nn_sequences = 20\ntokens_per_seq = 32\n',
        encoding="utf-8",
    )
    status, out, err = run("--preset", str(preset), "--json")
    assert status == 0, err
    (board,) = json.loads(out)
    ks = {s["policy"]: s["config"]["k"] for s in board["standings"] if not s["best_fixed"]}
    assert ks == {
        "hf_heuristic K0=8": 8,
        "goodput w=16": 8,
        "schedule K=5": 12,
        "threshold p_min=0.75": 12,
        "threshold h=0.5": 12,
        "oracle": 12,
    }
