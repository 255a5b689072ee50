"""A token tree from the form (issue 22, item 1): F5 runs it (it failed with an
AssertionError), its cycles replay as accepted paths, `x` writes the file `spectui run
--cycles-out` writes, and the Exact panel shows the tree's own cycle, as `spectui run
--shape tree` prints it (not the chain of the form's K)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from textual.app import App
from textual.containers import Vertical
from textual.widgets import Static

import spectui
import spectui.widgets.run_view as run_view
from engine.core.config import SpecConfig
from engine.presets import load_preset
from spectui.cli import main
from spectui.widgets.common import fmt
from spectui.widgets.cycle_table import MAX_PATH, CycleTable
from spectui.widgets.exact_panel import ExactPanel, exact_figures
from spectui.widgets.position_bar import PositionBar
from spectui.widgets.run_view import RunView
from tests.app.app_waits import booted
from tests.app.helpers import notifications, until
from tests.app.screen import region_text
from tests.app.test_form_cost import choose


def cli_run(capsys, *args: str) -> dict:
    """`spectui run ARGS --json` in this process: its JSON object."""
    assert main(["run", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def panel_value(text: str, label: str) -> str:
    """The value the Exact panel (its screen region) shows beside ``label``, which starts
    its row (after the border and the padding)."""
    for line in text.splitlines():
        inner = line[2:-1]
        if inner.startswith(label):
            return inner.removeprefix(label).strip()
    raise AssertionError(f"{label!r} not in the panel:\n{text}")


async def test_a_tree_from_the_form_runs_replays_exports_and_matches_the_cli(
    isolated_dirs, capsys, monkeypatch
):
    monkeypatch.setenv("NO_COLOR", "1")
    _, results = isolated_dirs
    cli_file = results.parent / "cli-cycles.csv"
    cli = cli_run(capsys, "--preset", "tiny", "--shape", "tree", "--cycles-out", str(cli_file))
    app = create_tiny_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await booted(pilot, app)
        await choose(pilot, app, "shape.name", "tree")
        assert app.config == load_preset("tiny").config.replace(shape="tree")
        # The Exact panel: the tree's cycle, 60 nodes in 7 levels, as the CLI prints it.
        exact_panel = app.query_one(ExactPanel)
        await until(pilot, lambda: "nodes/depth" in region_text(app, exact_panel))
        panel = region_text(app, exact_panel)
        assert panel_value(panel, "nodes/depth") == "60/7"
        assert cli["cost"]["tree_nodes"] == 60 and cli["cost"]["tree_depth"] == 7
        assert panel_value(panel, " draft us") == fmt(cli["cost"]["draft_us"]) == "140.000"
        assert panel_value(panel, " verify us") == fmt(cli["cost"]["verify_us"])
        exact = fmt(cli["metrics"]["speedup_exact"], speedup=True)
        assert panel_value(panel, "speedup ") == exact
        assert "breakeven" not in panel  # a chain's figure
        view = app.query_one(RunView)
        await pilot.press("f5")
        await until(pilot, lambda: view.result is not None or "failed" in _status(app))
        await pilot.pause()
        status = _status(app)
        assert "failed" not in status and not any("failed" in n for n in notifications(app))
        assert view.result is not None
        assert view.result.metrics["cycles"] == cli["metrics"]["cycles"]
        card = str(app.query_one("#card-speedup", Static).render())
        assert f"{cli['metrics']['speedup']:.3f}" in card
        # The replay: each cycle's accepted depth, kept tokens, time and path; its last
        # running speedup is the run's.
        await pilot.press("e")
        await pilot.pause()
        table = app.query_one(CycleTable)
        assert table.total == cli["metrics"]["cycles"]
        header = region_text(app, table).splitlines()[0]
        assert header.split()[:7] == ["seq", "cyc", "depth", "kept", "us", "speedup", "path"]
        with cli_file.open() as handle:
            last = handle.read().splitlines()[-1].split(",")
        # sequence,cycle,k,accepted,kept,cycle_time_us,cum_tokens,cum_time_us,node,path,...
        row = [cell.strip() for cell in table.get_row_at(table.row_count - 1)]
        assert row[:4] == [last[0], last[1], last[3], last[4]]
        assert row[4] == f"{float(last[5]):.0f}" and row[6] == last[9]
        assert row[5] == f"{cli['metrics']['speedup']:.3f}"
        # Acceptance by depth, one row per level of the tree.
        bar = region_text(app, app.query_one(PositionBar)).splitlines()
        assert [line[1] for line in bar[2:-1]] == list("1234567"), bar  # under "i obs p_i"
        # Depth 1 is reached with the rank probabilities' sum, 0.86 (not the form's accept).
        assert bar[2].endswith(" .86│"), bar
        await pilot.press("x")
        await until(pilot, lambda: len(_written(app)) == 1)
        # A run that keeps only its first records: the export runs it again, streaming.
        monkeypatch.setattr(run_view, "RECORDS_KEPT", 100)
        await pilot.press("f5")
        await until(pilot, lambda: view.result is not None or "failed" in _status(app))
        await pilot.pause()
        assert table.total == 100 < cli["metrics"]["cycles"]
        await pilot.press("x")
        await until(pilot, lambda: len(_written(app)) == 2)
    files = sorted(results.glob("run-tree-*.csv"))
    assert len(files) == 2
    for exported in files:  # every cycle, the CLI's file
        assert exported.read_bytes() == cli_file.read_bytes()


def _status(app) -> str:
    return str(app.query_one("#run-status", Static).render())


def _written(app) -> list[str]:
    """The exports that have ended (a notification each), or failed."""
    return [n for n in notifications(app) if n.startswith(("Wrote ", "Export failed"))]


def create_tiny_app():
    from spectui.app import create_app

    return create_app("tiny", replay_autoplay=False)


class PanelHost(App[None]):
    """The Exact panel alone in the app's side column, with the app's styles."""

    CSS_PATH = str(Path(spectui.__file__).parent / "app.tcss")

    def compose(self):
        with Vertical(id="side"):
            yield ExactPanel(id="exact")


@pytest.mark.parametrize("batch", [1, 16])
async def test_the_exact_panel_shows_a_trees_cycle_under_a_roofline(capsys, batch):
    args = ["--shape", "tree", "--cost", "roofline", "--batch-size", str(batch)]
    cli = cli_run(capsys, *args)["cost"]
    config = SpecConfig(shape="tree", cost_model="roofline", batch_size=batch)
    app = PanelHost()
    async with app.run_test(size=(40, 16)) as pilot:
        panel = app.query_one(ExactPanel)
        panel.show_figures(config, exact_figures(config))
        await pilot.pause()
        text = region_text(app, panel)
    # 6,570.8 and 7,205.2 us at batch 1 (the chain of K = 5: 4,570.5 and 6,045.3).
    assert panel_value(text, " draft us") == fmt(cli["draft_us"])
    assert panel_value(text, " verify us") == fmt(cli["verify_us"])
    assert panel_value(text, "  bound") == cli["verify_bound"]
    assert panel_value(text, "step us") == fmt(cli["decode_step_us"])
    assert panel_value(text, "nodes/depth") == f"{cli['tree_nodes']}/{cli['tree_depth']}"


async def test_a_long_accepted_path_is_cut_to_the_tables_width():
    from engine.simulate.simulator import simulate

    config = SpecConfig(
        shape="tree", tree="chain:40", rank_probs="0.99", n_sequences=2, tokens_per_seq=200
    )
    records = simulate(config, records=True).cycles
    assert records is not None and records["accepted"].max() >= 20  # a path of 20+ nodes

    class Host(App[None]):
        def compose(self):
            yield CycleTable(autoplay=False)

    async with Host().run_test(size=(100, 10)) as pilot:
        table = pilot.app.query_one(CycleTable)
        table.start(records, config)
        table.run_to_end()
        await pilot.pause()
        for index in range(table.row_count):
            cells = [cell.strip() for cell in table.get_row_at(index)]
            depth = int(cells[2])
            full = ">".join(str(node) for node in range(1, depth + 1)) or "-"
            path = cells[6]
            assert path == full if len(full) <= MAX_PATH else path == full[: MAX_PATH - 1] + "…"
