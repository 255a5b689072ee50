"""`spectui validate`: predictions against published measurements, asserted on what it
prints and writes; docs/validation.md is its output."""

from __future__ import annotations

import json
from pathlib import Path

from engine.validate import temperature
from engine.validate.markdown import UNEXPLAINED, markdown
from engine.validate.report import report_of, rows_of
from engine.validate.table import shipped_left_out, shipped_table

DOC = Path(__file__).resolve().parent.parent / "docs" / "validation.md"


def line_of(out: str, entry_id: str) -> list[str]:
    for line in out.splitlines():
        if line.startswith(entry_id + " "):
            return line.split()
    raise AssertionError(f"no line for {entry_id} in:\n{out}")


def test_each_entry_is_a_line_with_its_measured_value_and_both_predictions(cli):
    status, out, err = cli("validate")
    assert status == 0, err
    assert all(len(line) <= 80 for line in out.splitlines())
    # vLLM #20780, EAGLE-1 at K = 3: 7.07 ms / 4.29 ms.
    cells = line_of(out, "vllm-20780-eagle1-k3")
    assert cells[1] == "1.648"
    assert cells[3].endswith("%") and cells[4] in ("10%", "25%", "miss")
    assert cells[6].endswith("%") and cells[7] in ("10%", "25%", "miss")
    # Alone on its bench (llama.cpp on a V100): no calibrated prediction.
    assert line_of(out, "llamacpp-3649-v100-160m")[-3:] == ["-", "-", "-"]
    assert line_of(out, "specbench-a100-v13b-eagle2")[-3] != "-"
    assert "from specs: median" in out and "calibrated: median" in out
    assert "(goal <= 25 %)" in out and "(goal <= 10 %)" in out
    pending = [e for e in shipped_table() if e.pending]
    assert f"pending ({len(pending)})" in out
    assert f"  {pending[0].id}: needs " in out


def test_json_has_every_entry_with_predictions_and_the_summary(cli):
    status, out, _ = cli("validate", "--json")
    assert status == 0
    data = json.loads(out)
    assert [e["id"] for e in data["entries"]] == [e.id for e in shipped_table()]
    first = data["entries"][0]
    assert set(first["predictions"]) == {"specs", "calibrated"}
    assert first["predictions"]["specs"]["verdict"] in ("within 10 %", "within 25 %", "miss")
    groups = {(s["method"], s["group"]) for s in data["summary"]}
    assert ("specs", "all") in groups and ("calibrated", "pending") in groups


def test_only_prints_the_entries_asked_for(cli):
    status, out, _ = cli("validate", "--only", "vllm-20780-eagle3-k4,specbench-a100-v13b-sps")
    assert status == 0
    assert line_of(out, "vllm-20780-eagle3-k4") and line_of(out, "specbench-a100-v13b-sps")
    assert "vllm-20780-eagle1-k3" not in out
    # Still fitted to the rest of its series, which --only leaves out of the report.
    assert line_of(out, "vllm-20780-eagle3-k4")[5] != "-"


def test_an_unknown_id_is_one_line_and_status_2(cli):
    status, out, err = cli("validate", "--only", "vllm-20780-eagle1-k3,vllm-20780-eagle1-k9")
    assert status == 2 and out == ""
    assert err == (
        "spectui validate: error: --only: no entry 'vllm-20780-eagle1-k9' (did you mean "
        "vllm-20780-eagle1-k7, vllm-20780-eagle1-k6, vllm-20780-eagle1-k5?)\n"
    )
    status, _, err = cli("validate", "--only", "x" * 100_000)
    assert status == 2 and len(err) < 200 and "`spectui validate` lists them" in err
    status, _, err = cli("validate", "--only", "a,,b")
    assert status == 2 and "expected ID,ID,..." in err and "Traceback" not in err


def test_markdown_is_written_whole(cli, tmp_path):
    target = tmp_path / "validation.md"
    status, _, err = cli("validate", "--markdown", str(target))
    assert status == 0 and f"report written to {target}" in err
    assert target.read_text(encoding="utf-8") == markdown(
        report_of(shipped_table()), shipped_left_out(), temperature.predictions()
    )
    assert [p.name for p in tmp_path.iterdir()] == ["validation.md"]  # no temporary left


def test_markdown_to_a_directory_or_missing_folder_is_one_line(cli, tmp_path):
    status, _, err = cli("validate", "--markdown", str(tmp_path))
    assert status == 2 and err == f"spectui validate: error: {tmp_path}: is a directory\n"
    missing = tmp_path / "no" / "such.md"
    status, out, err = cli("validate", "--markdown", str(missing))
    assert status == 2 and out == ""  # refused before the report is printed
    assert err == f"spectui validate: error: --markdown: {missing.parent}: no such directory\n"


def test_docs_validation_md_is_the_commands_output():
    assert DOC.read_text(encoding="utf-8") == markdown(
        report_of(shipped_table()), shipped_left_out(), temperature.predictions()
    ), "regenerate: .venv/bin/spectui validate --markdown docs/validation.md"


def test_every_miss_in_the_docs_is_explained():
    text = DOC.read_text(encoding="utf-8")
    assert UNEXPLAINED not in text
    misses = text[text.index("## Misses") : text.index("## Pending")]
    rows = rows_of(shipped_table())
    for row in rows:
        if not row.misses:
            continue
        # Its explanation's paragraph names it, or the run of its series it is in.
        assert row.entry.miss, row.entry.id
        paragraph = next(p for p in misses.split("\n\n") if row.entry.miss in p)
        named = {r.entry.id for r in rows if f"**{r.entry.id}**" in paragraph}
        run = [r.entry.id for r in rows if r.entry.series == row.entry.series and r.misses]
        assert row.entry.id in named or (run[0] in named and run[-1] in named), row.entry.id


def test_every_table_row_in_the_docs_has_its_headers_cells():
    import re

    cells = None
    for line in DOC.read_text(encoding="utf-8").splitlines():
        if not line.startswith("|"):
            cells = None
            continue
        count = len(re.findall(r"(?<!\\)\|", line))
        cells = count if cells is None else cells
        assert count == cells, line


def test_only_judges_no_goals(cli):
    status, out, _ = cli("validate", "--only", "vllm-20780-eagle1-k2")
    assert status == 0
    assert "(goal <=" not in out and "fitted once" not in out
    assert "(only the entries asked for: goals are judged over the whole table)" in out


def test_the_entries_without_acceptance_are_the_catalog_group(cli):
    status, out, _ = cli("validate")
    assert status == 0
    # The table's entries whose source reports no acceptance for the run, counted here.
    count = sum(e.assumed for e in shipped_table() if not e.pending)
    assert count > 0
    assert f"catalog acceptance ({count}): M from the nearest catalog rows of other sources" in out
    summary = next(line for line in out.splitlines() if "from specs, catalog acceptance " in line)
    assert summary.endswith(f"{count} of {count}")
    assert "from specs, catalog acceptance: median" in out and "(goal <= 15 %)" in out
    assert "acceptance assumed" not in out


def test_json_names_each_catalog_entrys_rows_and_the_k_sweeps(cli):
    status, out, _ = cli("validate", "--json")
    assert status == 0
    data = json.loads(out)
    by_id = {e["id"]: e for e in data["entries"]}
    # The EAGLE-3 paper's SGLang runs report no acceptance: the same head on the same target,
    # vLLM issue #20780's chains at K = 2..7, another source.
    found = by_id["eagle3-paper-eagle3-bs2"]["catalog"]
    assert found["rows"] == [f"vllm-20780-eagle3-k{k}" for k in range(2, 8)]
    assert found["level"] == "same target and head" and found["excluded"] == []
    assert found["k"] == 3 and by_id["eagle3-paper-eagle3-bs2"]["group"] == "catalog acceptance"
    assert by_id["vllm-20780-eagle3-k3"]["catalog"] is None
    assert ("specs", "catalog acceptance") in {(s["method"], s["group"]) for s in data["summary"]}
    # PR 16937's EAGLE-1 at K = 2, 4, 7: 201.69, 198 and 169.92 tokens/s, fastest at K = 2.
    sweep = next(s for s in data["k_sweeps"] if s["ids"][0] == "vllm-16937-eagle1-k2")
    assert sweep["ks"] == [2, 4, 7] and sweep["measured_best"] == 2
    assert sweep["group"] == "catalog acceptance"
    assert data["catalog_goals"] == {"median": 0.15, "best_k": 0.80}


def test_the_docs_say_where_the_catalog_group_stands_and_which_rows_it_used():
    text = DOC.read_text(encoding="utf-8")
    stands = text[text.index("## Where it stands") : text.index("## Entries")]
    assert "- from specs, catalog acceptance: median " in stands
    section = text[text.index("## Catalog acceptance") : text.index("## Misses")]
    assert "- eagle-paper-v7b-bs2 to eagle-paper-v7b-bs4 (3 entries): M 3.570 at K = 5" in section
    assert "Rows used: specbench-3090-vicuna-7b-eagle." in section
    # Before the catalog, the group's median from specs was 32.9 % (issue #42's figure).
    assert (
        "with the M the table assumed before the catalog (another run's) it was 32.9 %" in section
    )
