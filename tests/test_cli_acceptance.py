"""``spectui acceptance`` in process: the lines a user reads for a small filter (checked by
hand against engine/acceptance/data/catalog.toml), the refusals, --json, and counts read
from the catalog."""

from __future__ import annotations

import json

import engine  # noqa: F401  (registers the parts)
from engine.acceptance.catalog import MEASURES, METHODS, load_catalog


def _summary() -> str:
    catalog = load_catalog()
    return (
        f"{len(catalog.rows)} rows in the catalog ({len(catalog.methods)} methods, "
        f"{len(catalog.targets)} targets, {len(catalog.sources)} sources)"
    )


def test_a_small_filter_prints_each_row_its_fit_and_its_source(cli) -> None:  # type: ignore[no-untyped-def]
    status, out, err = cli("acceptance", "--method", "eagle", "--target", "meta-llama-3-8b")
    assert (status, err) == (0, "")
    lines = out.splitlines()
    # catalog.toml, series vllm-16035: EAGLE, meta-llama/Meta-Llama-3-8B-Instruct, head
    # lmsys/sglang-EAGLE-LLaMA3-Instruct-8B, MT-Bench (question.jsonl), no temperature,
    # chain, mean_length with the bonus: 1.89 at K = 2, 2.08 at K = 4.
    assert lines[:11] == [
        f"{_summary()}; 2 match, in 1 setup",
        "",
        "EAGLE on meta-llama/Meta-Llama-3-8B-Instruct, draft lmsys/sglang-EAGLE-LLaMA3-Instruct-8B",
        "  dataset MT-Bench (question.jsonl), temperature not stated",
        "  vllm-16035-k2: chain, K = 2",
        "    printed: k=2: ... Accpt Len: 1.89",
        "    mean accepted length, bonus included: M = 1.890; fitted 1.890 (+0.0 %)",
        "  vllm-16035-k4: chain, K = 4",
        "    printed: k=4: ... Accpt Len: 2.08",
        "    mean accepted length, bonus included: M = 2.080; fitted 2.080 (+0.0 %)",
        "  fit: position_decay base 0.588 factor 0.876, fitted to 2 rows of vllm-16035 "
        "(max error 0.0 %); 2 parameters for 2 points: M between and beyond them is the "
        "model's",
    ]
    # Two points, two parameters: exact at K = 2 and 4. By hand with base 0.588, factor
    # 0.876: M(1) = 1.588, M(3) = M(2) + 0.588^3 0.876^3 = 1.8909 + 0.1366 = 2.0275.
    assert lines[11] == "  fitted M by K:"
    assert lines[12].split() == ["K", "1", "2", "3", "4", "5", "6", "7", "8"]
    assert lines[13].split()[:5] == ["M", "1.59", "1.89", "2.03", "2.08"]
    assert lines[14].startswith("  source: vllm-project/vllm PR #16035")
    assert lines[15] == "    https://github.com/vllm-project/vllm/pull/16035"
    assert "━━ fitted M by K   o measured (row's K)" in out  # the chart's legend


def test_a_row_without_k_says_the_k_it_was_fitted_at(cli) -> None:  # type: ignore[no-untyped-def]
    status, out, _ = cli(
        "acceptance", "--method", "EAGLE", "--target", "vicuna-7b", "--dataset", "spec-bench"
    )
    assert status == 0
    # Spec-Bench's leaderboards on a 3090 and an A100: EAGLE 3.57 and 3.58, no K, greedy.
    assert out.splitlines()[0] == f"{_summary()}; 2 match, in 2 setups"
    assert "  specbench-3090-vicuna-7b-eagle: tree, K = 5 assumed (not stated)" in out
    assert "  specbench-a100-vicuna-7b-eagle: tree, K = 5 assumed (not stated)" in out
    assert "  dataset Spec-Bench (all six categories), T = 0" in out
    # 3.57 at K = 5 is a = 0.786 (0.786 + 0.6178 + 0.4856 + 0.3817 + 0.3000 = 2.5711).
    assert "  fit: fixed rate 0.786, fitted to 1 row of specbench-3090-vicuna-7b-eagle" in out
    assert "K = 5 assumed (the row states no K" in out


def test_per_position_rows_show_every_prefix(cli) -> None:  # type: ignore[no-untyped-def]
    status, out, _ = cli("acceptance", "--target", "Llama-3.1-8B", "--draft", "RedHatAI")
    assert status == 0
    # vllm-test-al-llama3-8b-eagle3: cumulative rates 0.7296, 0.5208, 0.3545 at K = 3.
    assert (
        "    cumulative per-position rates r_i, accepted at i over drafts (M = 1 + sum r_i): "
        "M = 2.605;"
    ) in out
    assert "    M of positions 1..j: measured 1.730 2.250 2.605; fitted " in out


def test_an_unknown_method_names_the_known_ones(cli) -> None:  # type: ignore[no-untyped-def]
    status, out, err = cli("acceptance", "--method", "eagle4")
    assert (status, out) == (2, "")
    assert err.startswith(
        "spectui acceptance: error: --method: unknown method 'eagle4'; known: "
        f"{', '.join(METHODS)} (also: "
    )
    assert err.count("\n") == 1


def test_a_method_is_named_as_every_command_names_it(cli) -> None:  # type: ignore[no-untyped-def]
    # "eagle3" is EAGLE-3 (case and hyphens aside), as --method on run takes it; "eagle" is
    # EAGLE, not EAGLE-3. Qwen/Qwen3-8B has one EAGLE-3 row (vllm-test-al-qwen3-8b-eagle3)
    # and four AngelSlim ones (angelslim-vllm-qwen3-8b, one per dataset).
    status, out, _ = cli("acceptance", "--method", "eagle3", "--target", "Qwen/Qwen3-8B")
    assert status == 0
    assert out.splitlines()[0] == f"{_summary()}; 5 match, in 5 setups"
    assert out.count("EAGLE-3 on Qwen/Qwen3-8B") == 5
    # A known method and a known target with no row in common: known, so exit 0.
    status, out, _ = cli("acceptance", "--method", "P-EAGLE", "--target", "Qwen/Qwen3-8B")
    assert (status, out) == (
        0,
        "no catalog row matches --method P-EAGLE --target Qwen/Qwen3-8B together (each "
        f"name is known); {_summary()}\n",
    )


def test_an_unknown_dataset_names_the_known_ones(cli) -> None:  # type: ignore[no-untyped-def]
    status, _, err = cli("acceptance", "--dataset", "no such set")
    datasets = ", ".join(sorted({row.dataset for row in load_catalog().rows}))
    assert status == 2
    assert err.splitlines() == [
        "spectui acceptance: error: --dataset: no dataset in the catalog contains "
        f"'no such set'; known: {datasets}"
    ]


def test_known_names_without_a_common_row_say_so(cli) -> None:  # type: ignore[no-untyped-def]
    status, out, err = cli("acceptance", "--method", "EAGLE", "--dataset", "GSM8K")
    assert (status, err) == (0, "")
    assert out == (
        "no catalog row matches --method EAGLE --dataset GSM8K together (each name is "
        f"known); {_summary()}\n"
    )


def test_json_has_the_rows_the_fits_and_the_sources(cli) -> None:  # type: ignore[no-untyped-def]
    status, out, _ = cli("acceptance", "--method", "EAGLE", "--target", "meta-llama-3-8b", "--json")
    assert status == 0
    data = json.loads(out)
    catalog = load_catalog()
    assert set(data) == {"catalog", "filters", "rows", "fits", "sources"}
    assert data["catalog"]["rows"] == len(catalog.rows)
    assert data["catalog"]["methods"] == list(catalog.methods)
    assert data["filters"] == {"method": "EAGLE", "target": "meta-llama-3-8b"}
    assert [(r["id"], r["k"], r["mean_length"]) for r in data["rows"]] == [
        ("vllm-16035-k2", 2, 1.89),
        ("vllm-16035-k4", 4, 2.08),
    ]
    assert data["rows"][0]["definition"] == "mean accepted length, bonus included"
    (fit,) = data["fits"]
    assert fit["model"] == "position_decay"
    assert fit["values"]["draft_model"] == "position_decay"
    assert fit["rows"] == ["vllm-16035-k2", "vllm-16035-k4"]
    assert [e["measured"] for e in fit["errors"]] == [1.89, 2.08]
    assert list(fit["mean_length_by_k"]) == [str(k) for k in range(1, 9)]
    assert data["sources"] == [
        {
            "source": catalog.row("vllm-16035-k2").source,
            "url": "https://github.com/vllm-project/vllm/pull/16035",
        }
    ]


def test_many_setups_leave_the_charts_out_and_say_so(cli) -> None:  # type: ignore[no-untyped-def]
    status, out, _ = cli("acceptance", "--method", "MTP")
    assert status == 0
    assert out.rstrip().endswith(
        "(charts are drawn for at most 4 setups: narrow the filters to see them)"
    )
    assert "━━ fitted M by K" not in out


def test_every_measure_has_its_definition() -> None:
    from dataclasses import replace

    from spectui.cli.acceptance import DEFINITIONS, definition

    assert set(MEASURES) <= set(DEFINITIONS)
    # No shipped row counts without the bonus token yet; one that did says so (M 2.5 + 1).
    row = replace(load_catalog().row("vllm-16035-k2"), value=2.5, bonus=False)
    assert definition(row) == "mean accepted length, bonus excluded (M = value + 1)"
    assert row.mean_length == 3.5
