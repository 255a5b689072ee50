"""The catalog group (engine.validate.catalog_acceptance): an entry whose source reports no
acceptance is predicted with the acceptance catalog's nearest rows, never with a row of its
own source; worked on a made-up table and catalog, and read off the shipped table."""

from __future__ import annotations

import pytest

from engine.acceptance.catalog import parse_catalog
from engine.validate.catalog_acceptance import (
    CATALOG_GROUP,
    catalog_acceptance_of,
    needs_catalog,
    publication_keys,
    same_publication,
)
from engine.validate.predict import Prediction
from engine.validate.report import (
    Row,
    Summary,
    best_k_counts,
    catalog_goal_text,
    group_of,
    k_sweeps,
    rows_of,
)
from engine.validate.table import Entry, parse_table, shipped_table
from tests.engine.validate.test_predict import EAGLE_HEAD, H100_BW, H100_F, LLAMA_8B, pass_s

# --- One publication, several addresses -------------------------------------------------


def same(a_url, b_url, a_source="", b_source=""):
    return same_publication(publication_keys(a_url, a_source), publication_keys(b_url, b_source))


def test_an_arxiv_paper_is_one_publication_at_any_address_or_version():
    assert same("https://arxiv.org/abs/2401.15077", "https://arxiv.org/pdf/2401.15077v3")
    # Named in a source's words ("arXiv:2401.15077v3"), at another address.
    assert same(
        "https://arxiv.org/abs/2401.15077",
        "https://github.com/SafeAILab/EAGLE",
        b_source="EAGLE (Li et al., arXiv:2401.15077v3), Table 2",
    )
    assert not same("https://arxiv.org/abs/2401.15077", "https://arxiv.org/abs/2503.01840")


def test_a_github_thread_and_a_file_are_one_publication_whatever_the_commit():
    # Issues and pull requests share one numbering.
    assert same(
        "https://github.com/vllm-project/vllm/pull/16937",
        "https://github.com/vllm-project/vllm/issues/16937",
    )
    assert not same(
        "https://github.com/vllm-project/vllm/pull/16937",
        "https://github.com/vllm-project/vllm/issues/20780",
    )
    assert same(
        "https://github.com/hemingkx/Spec-Bench/blob/fd2c1cd7/Leaderboard.md",
        "https://github.com/hemingkx/Spec-Bench/blob/main/Leaderboard.md",
    )
    assert not same(
        "https://github.com/hemingkx/Spec-Bench/blob/main/Leaderboard.md",
        "https://github.com/hemingkx/Spec-Bench/blob/main/README.md",
    )
    # A whole repository and one of its files.
    assert same("https://github.com/a/b", "https://github.com/a/b/blob/main/x.md")
    assert same("https://example.org/page/", "http://www.example.org/page#table-2")


# --- A made-up table and catalog ---------------------------------------------------------

ROW = """
[[row]]
id = "{id}"
method = "EAGLE"
target = "meta-llama/Llama-3.1-8B-Instruct"
draft = "{draft}"
dataset = "MT-Bench"
shape = "chain"
k = 3
measure = "mean_length"
bonus = true
value = {m}
printed = "AL {m}"
source = "{source}"
url = "{url}"
read = "2026-12-08"
"""
CATALOG = parse_catalog(
    # "own": the entry's paper, its head; "other": another source, another head.
    ROW.format(
        id="own",
        draft="yuhuili/EAGLE-LLaMA3.1-Instruct-8B",
        m=3.0,
        source="the paper, arXiv:2501.00001v2",
        url="https://arxiv.org/pdf/2501.00001v2",
    )
    + ROW.format(
        id="other",
        draft="someone/another-head",
        m=2.0,
        source="a blog",
        url="https://example.org/blog",
    ),
    "made-up.toml",
)
ENTRY = """
[[entry]]
id = "{id}"
category = "batch 1"
status = "ok"
source = "the paper"
url = "{url}"
read = "2026-12-08"
hardware = "h100"
target = "llama-3.1-8b"
method = "{method}"
draft = "eagle-llama-3.1-8b"
dataset = "MT-Bench"
k = 3
batch = 1
acceptance_assumed = true
mean_length = 3.5
acceptance = "not reported"
speedup = 1.5
outcome = "1.5x"
setup = "setup"
note = "note"
"""


def made_up(method="EAGLE-1", url="https://arxiv.org/abs/2501.00001"):
    return parse_table(ENTRY.format(id="e", url=url, method=method), "t.toml")[0]


def test_the_rows_of_the_entrys_own_source_are_left_out():
    # Same target and head is the nearest level: the paper's own row, were it allowed.
    found = catalog_acceptance_of(made_up(), CATALOG)
    assert found.excluded == ("own",)
    assert found.rows == ("other",)
    assert found.nearest is not None and found.nearest.level == "same target"
    # One row at K = 3: the fit is exact there, M = 2.0 (not the table's assumed 3.5).
    assert found.mean_length == pytest.approx(2.0, abs=1e-5)
    assert "1 row of its own source left out" in found.text
    # An entry of another source takes the nearest row, the one of its head.
    elsewhere = catalog_acceptance_of(made_up(url="https://example.com/x"), CATALOG)
    assert elsewhere.excluded == () and elsewhere.rows == ("own",)
    assert elsewhere.nearest is not None and elsewhere.nearest.level == "same target and head"
    assert elsewhere.mean_length == pytest.approx(3.0, abs=1e-5)


def test_the_catalog_group_is_predicted_with_the_catalogs_mean_length():
    entry = made_up()
    assert needs_catalog(entry) and group_of(entry) == CATALOG_GROUP
    (row,) = rows_of((entry,), catalog=CATALOG)
    # M 2.0 over the roofline's cycle: 3 head passes and a verify pass of 4 tokens, at
    # batch 1 and the default context of 512, in decoding steps.
    step = pass_s(*LLAMA_8B, 1, 512, H100_BW, H100_F)
    cycle = pass_s(*LLAMA_8B, 4, 512, H100_BW, H100_F) + 3 * pass_s(
        *EAGLE_HEAD, 1, 512, H100_BW, H100_F
    )
    assert row.predictions["specs"].value == pytest.approx(2.0 / (cycle / step), rel=1e-5)
    assert row.catalog is not None and row.catalog.rows == ("other",)


def test_a_method_the_catalog_lacks_is_no_prediction_with_its_reason():
    (row,) = rows_of((made_up(method="something else"),), catalog=CATALOG)
    assert row.predictions["specs"] == Prediction(
        None, "the catalog gives no acceptance: method 'something else': not in the catalog"
    )
    # A method's parenthesised detail aside: "EAGLE (eager)" is EAGLE.
    assert catalog_acceptance_of(made_up(method="EAGLE (eager)"), CATALOG).rows == ("other",)


# --- Best K of K sweeps, by hand ---------------------------------------------------------


def point(k, measured, specs):
    """A chain at K = ``k`` of one series, with its own acceptance (M 2.0)."""
    values = {
        "id": f"s-k{k}",
        "series": "s",
        "status": "ok",
        "category": "batch 1",
        "hardware": "h100",
        "target": "t",
        "method": "m",
        "k": k,
        "mean_length": 2.0,
        "speedup": measured,
    }
    entry = Entry(values)
    return Row(entry, {"specs": Prediction(specs), "calibrated": Prediction(measured)})


def test_the_best_k_is_the_fastest_point_measured_and_predicted():
    # Measured fastest at K = 3; from specs fastest at K = 2; calibrated as measured.
    rows = [point(2, 1.5, 1.7), point(3, 1.6, 1.6), point(4, 1.4, 1.5)]
    (sweep,) = k_sweeps(rows)
    assert sweep.ks == (2, 3, 4) and sweep.measured_best == 3
    assert sweep.predicted_best == {"specs": 2, "calibrated": 3}
    assert best_k_counts([sweep], "all", "specs") == (0, 1)
    assert best_k_counts([sweep], "all", "calibrated") == (1, 1)
    assert best_k_counts([sweep], CATALOG_GROUP, "specs") == (0, 0)
    # One K alone is no sweep.
    assert k_sweeps(rows[:1]) == []


def test_the_catalog_goal_is_the_median_and_the_share_of_best_k_right():
    summary = Summary("specs", CATALOG_GROUP, 4, 4, 0.12, 0.5)
    assert catalog_goal_text([summary], []) == (
        "from specs, catalog acceptance: median 12.0 % (goal <= 15 %): met; no K sweep to "
        "judge the best K by (goal >= 80 % right)"
    )
    worse = Summary("specs", CATALOG_GROUP, 4, 4, 0.151, 0.5)
    assert "median 15.1 % (goal <= 15 %): not met" in catalog_goal_text([worse], [])


# --- The shipped table -------------------------------------------------------------------


def shipped(entry_id):
    return next(r for r in rows_of(shipped_table()) if r.entry.id == entry_id)


def test_the_eagle_papers_batch_runs_never_use_the_papers_own_tau():
    # The EAGLE paper (arXiv 2401.15077) reports tau 3.94 at batch 1 only; its batch-2 run
    # takes Spec-Bench's EAGLE on Vicuna-7B (3.57, its tree's own M), not 3.94.
    row = shipped("eagle-paper-v7b-bs2")
    assert row.catalog is not None and row.catalog.rows == ("specbench-3090-vicuna-7b-eagle",)
    assert row.catalog.mean_length == pytest.approx(3.57, abs=1e-4)
    assert row.catalog.nearest is not None and row.catalog.nearest.level == "same target"
    assert row.catalog.nearest.rows[0].url.startswith("https://github.com/hemingkx/Spec-Bench")


def test_entries_that_state_their_acceptance_keep_it():
    row = shipped("vllm-20780-eagle1-k3")
    assert row.catalog is None and row.group == "batch 1"
    # The batch-1 run of the EAGLE paper keeps its Table 2 tau.
    assert shipped("eagle-paper-v7b-bs1").catalog is None


def test_a_tree_whose_rows_state_no_depth_takes_their_own_mean_length():
    # A tree row of unstated depth (M 3.0) is fitted at K = 5 (the default K); a tree entry
    # of depth 3 takes the row's own M, not the fitted model's M at K = 3.
    catalog = parse_catalog(
        ROW.format(
            id="tree", draft="someone/head", m=3.0, source="a blog", url="https://example.org/b"
        )
        .replace('shape = "chain"', 'shape = "tree"')
        .replace("k = 3\n", ""),
        "tree.toml",
    )
    text = ENTRY.format(id="t", url="https://example.com/t", method="EAGLE").replace(
        "k = 3\n", "verify_width = 26\ndraft_passes = 3\ndraft_width = 4\n"
    )
    found = catalog_acceptance_of(parse_table(text, "t.toml")[0], catalog)
    assert found.rows == ("tree",) and found.k == 5
    assert found.mean_length == pytest.approx(3.0, abs=1e-5)
    assert "a tree: M at the K the rows were fitted at, their own" in found.text
