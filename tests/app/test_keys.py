"""Keyboard-only use over SSH: a field's help on F1, copy (F4), pin and compare (F9)."""

from __future__ import annotations

import shlex
from pathlib import Path

from textual.app import App

from engine.core.config import SpecConfig
from engine.presets import load_preset
from spectui.app import create_app
from spectui.screens.help import HelpScreen
from spectui.widgets.cycle_table import CycleTable
from spectui.widgets.param_form import MARK_FOCUS
from spectui.widgets.run_view import RunView
from tests.app.helpers import APP_CSS, notifications, set_field, settle, until
from tests.app.hosts_form import FormHost, caught_up
from tests.app.screen import region_text, screen_lines, screen_text

# (field key, its label, words of its help, its unit or None, its allowed values), as a
# person reads them in the tooltip today.
FIELDS = (
    ("cost.eta_kv", "η kv", "bandwidth efficiency reading the KV cache", None, "[1e-6, 1]"),
    ("cost.t0_us", "t0 us", "fixed overhead of every pass", "us", "[0, 1e6]"),
    ("cost.bytes_per_kv", "kv bytes", "bytes per KV-cache element", "bytes", "(0, 8]"),
    ("cost.verify_token_us", "verify/tk", "verify cost per drafted token", "us", "[0, 1e9]"),
    ("cost.draft_fixed_us", "draft fix", "fixed cost of a cycle that drafts", "us", "[0, 1e9]"),
    ("shape.rank_probs", "rank p", "the rank-c child is accepted", None, "numbers in [0, 1]"),
    ("shape.tree", "tree", "eagle[:total,depth,top_k]", None, "sequoia:budget,depth"),
    ("draft_cost_us", "draft/tk", "per draft token", "us", "[0, 1e9]"),
)


def _help_text(app) -> str:
    return " ".join(line.strip() for line in screen_lines(app))


def _assert_shows_the_fields_help(text: str, key, label, words, unit, allowed) -> None:
    """The help screen's text (``_help_text``) starts with the field's section."""
    assert f"Field {label}: {key}" in text, text
    assert words in text, text
    assert f"allowed: a number in {allowed}" in text or allowed in text, text
    if unit is not None:
        assert f"unit: {unit}" in text, text
    else:
        assert "unit:" not in text.split("Keys")[0], text


class _HelpHost(App[None]):
    """Just the help screen, styled as in the app (its frame's width wraps the text)."""

    CSS_PATH = APP_CSS


async def test_the_help_screen_of_each_field_shows_its_help_unit_and_range(monkeypatch):
    """What F1 on a focused field shows (the screen the app pushes for it, below), for each
    field. The page after the field's section is the app's help, checked below: here a
    short one, since its Markdown is most of the work of showing the screen."""
    import spectui.screens.help as help_module

    monkeypatch.setattr(help_module, "HELP_TEXT", "## Keys\n\nPress `escape` to close.\n")
    app = _HelpHost()
    async with app.run_test(size=(80, 24)) as pilot:
        for key, label, words, unit, allowed in FIELDS:
            app.push_screen(HelpScreen(key))
            await until(pilot, lambda: "Press escape to close" in _help_text(app))
            _assert_shows_the_fields_help(_help_text(app), key, label, words, unit, allowed)
            app.pop_screen()  # (escape, which closes it, is pressed in the app below)
            await until(pilot, lambda: not isinstance(app.screen, HelpScreen))


async def test_f1_on_a_focused_field_shows_its_help_unit_and_range(monkeypatch):
    """In the app: each field F1 describes is marked as focused (F1 shows the focused
    field's help, as above); F1 in a field shows that field's help above the help page; F1
    outside the form, the page alone (? too, outside a text field; Escape closes it). With
    the linear cost, then the roofline's fields. The help page is its first section here,
    the model in a few sentences (what 80x24 shows of it under a field's section): the
    whole page's Markdown, its table of keys, is most of the work of showing the screen,
    and the "help" snapshot (test_snapshots.py) shows the whole page in the app."""
    import spectui.screens.help as help_module

    whole = help_module.HELP_TEXT
    monkeypatch.setattr(help_module, "HELP_TEXT", whole[: whole.index("## Keys")])
    app = create_app("tiny")
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.form.ready)
        for cost in ("linear", "roofline"):
            base = load_preset("tiny").config.replace(**{"cost.model": cost, "shape.name": "tree"})
            app.form.load_config(base)
            await until(pilot, lambda base=base: app.config == base)
            shown = [f for f in FIELDS if f[0] in app.form.visible_fields()]
            assert len(shown) == 5
            if cost == "roofline":  # the tree's fields were looked at with the linear cost
                shown = [f for f in shown if not f[0].startswith("shape.")]
            for key, label, *_ in shown:
                app.form.focus_field(key)
                marked = f"{MARK_FOCUS}{label} "
                await until(pilot, lambda marked=marked: marked in screen_text(app))
                assert app.form.focused_field == key
            # F1 on the last of them: its help, then the app's help page.
            key, label, words, unit, allowed = shown[-1]
            await pilot.press("f1")
            await until(pilot, lambda: "Field " in _help_text(app))
            assert isinstance(app.screen, HelpScreen)
            text = _help_text(app)
            _assert_shows_the_fields_help(text, key, label, words, unit, allowed)
            assert "speculative decoding, cycle by cycle" in text, text
            assert text.index(f"Field {label}") < text.index("speculative decoding"), text
            await pilot.press("escape")
            await until(pilot, lambda: not isinstance(app.screen, HelpScreen))
        # Outside the form, F1 is the general help: no field's section first.
        app.query_one("#cycle-table").focus()
        await pilot.press("f1")
        await until(pilot, lambda: "speculative decoding, cycle by cycle" in screen_text(app))
        assert "Field " not in screen_text(app)
        # Escape closes it; outside a text field, ? opens it too.
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, HelpScreen))
        app.query_one("#cycle-table").focus()
        await pilot.press("question_mark")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen))


async def test_form_labels_stay_whole_at_80x24_and_draft_cost_says_per_token():
    """The form's draft cost is per token, the Exact panel's draft time per cycle: the
    labels differ, and every label of the linear form is whole on an 80x24 screen."""
    app = FormHost("tiny")  # the side panel at its place in the app
    async with app.run_test(size=(80, 24)) as pilot:
        await caught_up(pilot, app)
        app.form.focus_field("k")
        await until(pilot, lambda: f"{MARK_FOCUS}K " in screen_text(app))
        lines = screen_lines(app)
        side = [line[:26] for line in lines]
        assert any(" draft/tk " in line for line in side), "\n".join(side)
        assert not any("draft us" in line for line in side[:12]), "\n".join(side)
        for label in ("accept", "verify us", "sequences", "tok/seq", "seed"):
            assert any(f" {label} " in line for line in side), (label, "\n".join(side))


# --- copy (F4) ---------------------------------------------------------------------------------
def _config_of(line: str):
    """What the CLI makes of a copied command line (as a shell splits it)."""
    from spectui.cli.flags import config_from_args
    from spectui.cli.parser import build_parser

    argv = shlex.split(line)
    assert argv[:2] == ["spectui", "run"], argv
    return config_from_args(build_parser().parse_args(argv[1:]))


HOSTILE = {  # a shell's specials, a value starting with "-", spaces, quotes
    "acceptance_rate": 0.1 + 0.2,  # 0.30000000000000004: the float's full digits
    "k": 7,
    "seed": 9_223_372_036_854_775_807,
    "draft_model": "per_position",
    "acceptance.rates": "0.9,0.8,0.7",
    "cost.table": "-my latencies $HOME `x` 'q'\".csv",  # not read: linear cost
    "policy.name": "schedule",
    "policy.schedule": "1:5,32:3,128:0",
    "shape.tree": "sequoia:16,4",  # not read: a chain
    "shape.rank_probs": "0.5,0.2",
}


def test_command_line_round_trips_through_the_cli():
    from spectui.copying import command_line

    config = load_preset("tiny").config.replace(**HOSTILE)
    assert _config_of(command_line(config)) == config
    assert command_line(SpecConfig()) == "spectui run"  # the defaults need no flag


async def test_f4_copies_the_highlighted_cycle_row_and_a_written_file_once(
    isolated_dirs, monkeypatch
):
    """F4 copies the focused table's highlighted row, but a file written since (a cycles
    CSV, a preset, a sweep CSV) once: its path. The sweep runs in a thread of the app (no
    worker processes to start: where it runs is tests/app/test_workers.py's)."""
    from spectui.screens.presets import SavePreset

    monkeypatch.setenv("SPECTUI_SWEEP_WORKERS", "0")
    presets, results = isolated_dirs
    app = create_app("tiny", replay_autoplay=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.form.ready)
        await pilot.press("f5")
        view = app.query_one(RunView)
        await until(pilot, lambda: view.result is not None)
        table = app.query_one(CycleTable)
        table.run_to_end()
        await pilot.press("home", "down", "down")
        await pilot.pause()
        await pilot.press("f4")
        await pilot.pause()
        # The copied cells are the highlighted row's, as on the screen.
        cells = app.clipboard.split("\t")
        assert len(cells) == 8 and cells[0] and cells[1], cells
        on_screen = [
            line for line in screen_lines(app) if " ".join(cells[:5]) in " ".join(line.split())
        ]
        assert on_screen, (cells, screen_text(app))
        assert "Copied the highlighted row (tab-separated)" in notifications(app)[-1]
        # After an export: the file's path, once; then the row again.
        await pilot.press("x")
        await until(pilot, lambda: any(m.startswith("Wrote ") for m in notifications(app)))
        await until(pilot, lambda: app._written is not None)  # its FileWritten has come
        wrote = next(m for m in notifications(app) if m.startswith("Wrote "))
        await pilot.press("f4")
        await pilot.pause()
        assert wrote.endswith(f" to {app.clipboard}")
        assert Path(app.clipboard).is_file()
        assert "Copied the cycles CSV's path" in notifications(app)[-1]
        await pilot.press("f4")
        await pilot.pause()
        assert app.clipboard.split("\t") == cells
        # The palette copies the path whenever asked.
        app.action_copy_path()
        assert wrote.endswith(f" to {app.clipboard}")
        # A preset just saved: its path.
        await pilot.press("ctrl+s")
        await until(pilot, lambda: isinstance(app.screen, SavePreset))
        await pilot.press("enter")  # saves as fixed-k3
        # (app._written: the app has the FileWritten message of the file)
        await until(pilot, lambda: app._written is not None and app._written[1] == "preset")
        await pilot.press("f4")
        await pilot.pause()
        assert app.clipboard == str(presets / "fixed-k3.toml")
        assert "Copied the preset's path" in notifications(app)[-1]
        # A sweep just finished: its CSV's path.
        await pilot.press("f6")  # the tiny sweep: 24 configurations
        await until(pilot, lambda: app._written is not None and app._written[1] == "sweep CSV")
        app.form.focus_field("k")  # not a table: the path, not a heatmap row
        await pilot.press("f4")
        await pilot.pause()
        (written,) = results.glob("sweep-tiny-*.csv")
        assert app.clipboard == str(written)
        assert "Copied the sweep CSV's path" in notifications(app)[-1]


# F4 on the Calibrate screen (its engine flags): test_calibrate_screen.py's
# test_f_sends_the_whole_recommendation_rounded_and_the_toast_names_it, on the same screen.


# --- pin and compare (F9) ----------------------------------------------------------------------
def _k_star(config) -> int:
    """K* by brute force over every K the Speedup view could show."""
    from engine.simulate.exact import speedup_curve

    speedups = speedup_curve(config, range(1, 65))["speedup_exact"].tolist()
    return speedups.index(max(speedups)) + 1


async def test_f9_pins_and_compares_f4_copies_the_form_and_the_palette_has_both():
    """F9 pins the result, and the Run and Speedup views compare with it; F9 again unpins.
    Then F4 copies the form as a command, which the CLI reads back; on an invalid form, copy
    and pin say which field, and the app goes on. The palette has copy and pin."""
    from engine.simulate.exact import exact_metrics

    then = load_preset("tiny").config  # fixed 0.8, K = 3
    now = then.replace(acceptance_rate=0.6)
    assert _k_star(then) != _k_star(now)  # (5 and 3)
    app = create_app("tiny", replay_autoplay=False)
    async with app.run_test(size=(120, 40)) as pilot:

        def compare() -> str:  # what the Run view shows, in one line
            return " ".join(region_text(app, app.query_one(RunView)).split())

        def legend() -> str:
            return " ".join(str(app.query_one("#speedup-legend").render()).split())

        await until(pilot, lambda: app.form.ready and app.config == then)
        await pilot.press("f5")
        run = app.query_one(RunView)
        await until(pilot, lambda: run.result is not None)
        mc_then = run.result.metrics["speedup"]
        await pilot.press("f9")
        speedup_then = exact_metrics(then)["speedup_exact"]
        pinned = f"pinned: speedup {speedup_then:.3f}x · K* 5 · change the form"
        await until(pilot, lambda: pinned in screen_text(app))
        assert f"K*={_k_star(then)}" in notifications(app)[-1]
        assert pinned in screen_text(app)
        await set_field(pilot, app, "acceptance_rate", "0.6")
        # Under the cards: Δ speedup (exact: no run of the new form yet), K* then and now.
        old = exact_metrics(then)["speedup_exact"]
        new = exact_metrics(now)["speedup_exact"]
        delta = f"Δ speedup {new - old:+.3f}x ({old:.3f}x → {new:.3f}x, exact)"
        await until(pilot, lambda: delta in compare())
        text = compare()
        assert delta in text, text
        assert f"K* then {_k_star(then)}, now {_k_star(now)}" in text, text
        assert "changed: accept 0.8→0.6" in text, text
        # Both runs: the Monte Carlo speedups are compared.
        await pilot.press("f5")
        await until(pilot, lambda: run.result is not None and run.result.config == now)
        mc_new = run.result.metrics["speedup"]
        change = f"Δ speedup {mc_new - mc_then:+.3f}x ({mc_then:.3f}x → {mc_new:.3f}x, Monte Carlo)"
        await until(pilot, lambda: change in compare())
        assert change in compare(), compare()
        # The Speedup view: the pinned curve behind the form's, named in the legend.
        await pilot.press("f3", "2")
        entry = f"pinned K=3 (K*={_k_star(then)})"
        await until(pilot, lambda: entry in " ".join(screen_text(app).split()))
        assert entry in legend(), legend()
        assert entry in " ".join(screen_text(app).split())
        assert "exact fixed" in legend(), legend()
        # F9 again unpins: no comparison left.
        await pilot.press("f9")
        await until(pilot, lambda: app.pinned is None and "pinned K=" not in screen_text(app))
        assert "pinned K=" not in screen_text(app)
        assert "pinned K=" not in legend()
        await pilot.press("1")
        await until(pilot, lambda: "cycle " in screen_text(app))  # the Run view's status
        assert "vs pinned" not in screen_text(app) and "Δ speedup" not in screen_text(app)

        # --- copy (F4) and pin on an invalid form, then the form as a command ---
        await set_field(pilot, app, "acceptance_rate", "1.5")
        await until(pilot, lambda: app.config is None)
        before = len(notifications(app))
        await pilot.press("f4")
        await pilot.press("f9")
        await until(pilot, lambda: "Cannot pin: fix accept first." in notifications(app))
        await settle(pilot, app)  # a pin computed anyway would have failed, and said so, by now
        said = notifications(app)[before:]
        assert said == [
            "Cannot copy the command: fix accept first.",
            "Cannot pin: fix accept first.",
        ], said
        assert app.clipboard == "" and app.pinned is None
        await set_field(pilot, app, "acceptance_rate", "0.5")
        await until(pilot, lambda: app.config is not None)
        await pilot.press("f9")
        await until(pilot, lambda: app.pinned is not None)
        assert app.pinned.config.acceptance_rate == 0.5
        # A valid form: its command line, shell specials and all.
        loaded = load_preset("tiny").config.replace(**HOSTILE)
        app.form.load_config(loaded)
        await until(pilot, lambda: app.config == loaded)
        app.form.focus_field("k")
        await set_field(pilot, app, "k", "9")  # the form's value, not the loaded one
        await until(pilot, lambda: app.config == loaded.replace(k=9))
        await pilot.press("f4")
        await until(pilot, lambda: app.clipboard.startswith("spectui run"))
        form_config, errors = app.form.current_config()
        assert errors == {} and form_config.k == 9
        assert _config_of(app.clipboard) == form_config
        assert any(
            m.startswith("Copied the form as a command: spectui run") for m in notifications(app)
        )
        # The palette has copy and pin.
        titles = [c.title for c in app.get_system_commands(app.screen)]
        for title in ("Copy", "Copy command line", "Copy file path", "Pin / unpin"):
            assert title in titles


async def test_a_data_table_row_is_copied_with_its_label_tab_separated():
    """Arena's board, the heatmaps, Calibrate's windows: DataTables, some with row labels."""
    from textual.app import App
    from textual.widgets import DataTable

    from spectui.copying import table_row

    class Host(App[None]):
        def compose(self):
            yield DataTable(id="labelled")
            yield DataTable(id="plain", cursor_type="row")

    async with Host().run_test(size=(60, 20)) as pilot:
        labelled, plain = pilot.app.query(DataTable)
        assert table_row(labelled) is None  # no rows: nothing to copy
        labelled.add_columns("1k", "2k")
        labelled.add_row("4 1.96", "4 1.95", label="1")
        labelled.add_row("3 1.73", "3 1.70", label="16")
        plain.add_columns("policy", "speedup")
        plain.add_row("fixed k=4", "2.31x")
        plain.add_row("oracle", "2.40x")
        labelled.focus()
        await pilot.press("down", "right")
        assert table_row(labelled) == "16\t3 1.73\t3 1.70"
        plain.focus()
        await pilot.press("down")
        assert table_row(plain) == "oracle\t2.40x"
        assert table_row(pilot.app.screen) is None  # not a table
