"""``spectui lab`` as a user runs it: the lab's verdicts (the lossless rules emit the target,
typical acceptance and a broken residual do not), the curves against temperature, JSON, and
hostile values refused in one line."""

from __future__ import annotations

import json
import re

import pytest

SMALL = ("--vocab", "500", "--family-size", "8", "--mismatch", "noise", "--mismatch-size", "1")


def test_the_lab_table_and_the_curves(cli):
    status, out, err = cli("lab", *SMALL, "--broken", "--temperature", "0,1", "--tokens", "80000")
    assert status == 0, err
    line = re.compile(r"^(\w+(?: \(broken\))?)\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+\S+\s+(yes|no)", re.M)
    verdict = {m.group(1): m.group(2) for m in line.finditer(out)}
    assert verdict == {
        "rejection": "yes",
        "one_hot": "yes",
        "exact_match": "yes",
        "greedy": "no",  # at temperature 1 the target's argmax is not p
        "typical": "no",
        "rejection (broken)": "no",
        "one_hot (broken)": "no",
    }
    # At temperature 0 every rule accepts when the argmaxes agree: one value across the row.
    row = re.search(r"^\s*0\s+1\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)$", out, re.M)
    assert row is not None and len(set(row.groups())) == 1, out
    assert "exact speedup by rule:" in out


def test_json_gives_the_rows_and_the_lossless_rules_test_clean(cli):
    status, out, err = cli("lab", *SMALL, "--tokens", "50000", "--temperature", "0.7", "--json")
    assert status == 0, err
    data = json.loads(out)
    lab = {row["rule"]: row for row in data["lab"]}
    for rule in ("rejection", "one_hot", "exact_match"):
        assert lab[rule]["lossless"] and lab[rule]["tv_from_p"] < 1e-12  # p, to rounding
        assert abs(lab[rule]["measured"] - lab[rule]["acceptance"]) < 0.01
    assert lab["rejection"]["acceptance"] >= lab["exact_match"]["acceptance"]
    assert {c["rule"] for c in data["curves"]} == set(lab) and len(data["curves"]) == 5
    # Acceptance by rank (4 candidates by default): the first rank is the rule's acceptance.
    assert set(data["by_rank"]) == set(lab)
    for rule, ranks in data["by_rank"].items():
        assert len(ranks) == 4 and sum(ranks) <= 1 + 1e-12
        assert ranks[0] == pytest.approx(lab[rule]["acceptance"], abs=1e-12)


def test_the_ranks_table_gives_a_tree_its_rank_probabilities(cli):
    status, out, err = cli("lab", *SMALL, "--tokens", "1000", "--temperature", "1",
                           "--ranks", "3", "--accept-rule", "one_hot")  # fmt: skip
    assert status == 0, err
    assert "acceptance by rank at a tree node of 3 candidates:" in out
    flag = re.search(r"a tree with the one_hot rule: --rank-probs ([\d.,]+)$", out, re.M)
    assert flag is not None, out
    status, tree_out, err = cli("run", "--shape", "tree", "--rank-probs", flag.group(1), "--json")
    assert status == 0, err
    assert json.loads(tree_out)["config"]["shape.rank_probs"] == flag.group(1)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--temperature", "-1"), "argument --temperature:"),
        (("--temperature", "0,,1"), "argument --temperature: expected 1 to 64"),
        (("--top-p", "0"), "argument --top-p:"),
        (
            ("--tokens", "10"),
            "argument --tokens: '10' is not allowed; expected an integer in [1000,",
        ),
        (("--draft-model", "fixed"), "draft_model: the lab needs the distribution model"),
        (("--ranks", "0"), "argument --ranks: '0' is not allowed; expected an integer in [1, 32]"),
        (("--vocab", "100", "--entropy-easy", "9"), "acceptance.entropy_easy: must be below"),
    ],
)
def test_bad_input_is_one_line_naming_the_flag(cli, args, message):
    status, out, err = cli("lab", *args)
    assert status == 2 and out == ""
    assert message in err and err.count("\n") <= 2 and "Traceback" not in err
