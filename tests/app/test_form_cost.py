"""The form generated from the field table: the cost model's own fields, the workload, and the
Exact panel's draft and verify times per cycle (issue #10).

The form and the Exact panel run in :class:`tests.app.hosts_form.FormHost` (the side panel
at its place in the app); the test where F5 is refused boots the whole app.
"""

from __future__ import annotations

from textual.widgets import Input, Select

from engine.core.config import FIELD_SPECS, SpecConfig, known_spec_ids, reads
from engine.core.kernel import cycle_costs
from spectui.app import create_app
from spectui.widgets.common import fmt
from spectui.widgets.exact_panel import ExactPanel
from spectui.widgets.param_form import FORM_FIELDS, IDS, LABELS
from tests.app.helpers import notifications, type_into, until
from tests.app.hosts_form import FormHost, caught_up
from tests.app.screen import screen_lines, screen_text


def region_lines(app, widget) -> list[str]:
    """The screen rows a widget covers, cut to its columns."""
    region = widget.region
    lines = screen_lines(app)[region.y : region.y + region.height]
    return [line[region.x : region.x + region.width] for line in lines]


async def form_rows(pilot, app) -> list[str]:
    """Every row of the form as a person sees it, scrolling from top to bottom."""
    form = app.form
    seen: list[str] = []
    form.scroll_home(animate=False)
    await pilot.pause()
    while True:
        for line in region_lines(app, form)[1:-1]:  # inside the border
            if line not in seen:
                seen.append(line)
        if form.scroll_y >= form.max_scroll_y:
            return seen
        form.scroll_to(y=form.scroll_y + form.scrollable_content_region.height, animate=False)
        await pilot.pause()


def labelled(rows: list[str], label: str) -> bool:
    """Whether a form row shows ``label`` (after its marker glyph, before its value)."""
    return any(row[2:].startswith(label + " ") for row in rows)


def shown(app, key: str) -> bool:
    """Whether a field's row is shown (a row is built the first time its field shows, among
    the form's children: looked up there, not by a query of the whole DOM)."""
    row_id = f"row-{IDS.get(key, key)}"
    found = [row for row in app.form.children if row.id == row_id]
    return bool(found) and bool(found[0].display)


async def choose(pilot, app, key: str, value: str) -> None:
    """Choose ``value`` in a select; return once the form's values have reached the app
    (in a FormHost: and the Exact panel), and the screen is drawn."""
    app.query_one(f"#{IDS[key]}", Select).value = value
    if isinstance(app, FormHost):
        await caught_up(pilot, app)
        return
    await until(pilot, lambda: app.config == app.form.current_config()[0])
    await pilot.pause()


async def test_roofline_fields_and_the_exact_panels_times_of_every_cost_model_and_workload():
    """Choosing roofline shows its fields and hides the linear costs: its hardware and
    models chosen from the known ids; then every cost model's fields. The Exact panel's
    times per cycle under the linear and the roofline costs (memory, then compute bound as
    the batch grows); batch size and prompt reach the configuration and the panel."""
    app = FormHost("tiny")
    async with app.run_test(size=(80, 24)) as pilot:
        await caught_up(pilot, app)
        config = app.config
        assert config is not None
        await _exact_panel_shows_cycle_costs(app, config)  # linear: K drafts, one verify
        assert cycle_costs(config).limit_draft_us == config.k * config.draft_cost_us
        rows = await form_rows(pilot, app)
        for label in ("draft/tk", "verify us", "verify/tk", "prompt", "batch", "cost "):
            assert labelled(rows, label.strip()), rows
        assert not labelled(rows, "gpu") and not labelled(rows, "η weights")
        await choose(pilot, app, "cost.model", "roofline")
        rows = await form_rows(pilot, app)
        for label in ("gpu", "target", "draft", "t0 us", "kv bytes", "η weights", "η kv"):
            assert labelled(rows, label), rows
        assert labelled(rows, "η flops")
        for gone in ("draft/tk", "verify us", "verify/tk", "table"):
            assert not labelled(rows, gone), rows
        # The workload shows whatever the cost model; the choices are whole on screen.
        assert labelled(rows, "prompt") and labelled(rows, "batch")
        assert any("roofline" in row for row in rows)
        assert any("llama-3.1-8b" in row for row in rows)
        assert app.config is not None and app.config.cost_model == "roofline"
        # The Exact panel under the roofline: memory, then compute bound as the batch grows.
        assert cycle_costs(app.config).bound == "memory"
        await _exact_panel_shows_cycle_costs(app, app.config)
        await type_into(pilot, app, "batch_size", "512")
        await caught_up(pilot, app)
        assert app.config is not None and cycle_costs(app.config).bound == "compute"
        await _exact_panel_shows_cycle_costs(app, app.config)
        # The workload: batch size and prompt length.
        await type_into(pilot, app, "batch_size", "64")
        await type_into(pilot, app, "prompt_len", "8192")
        await caught_up(pilot, app)
        assert app.config is not None
        assert (app.config.batch_size, app.config.prompt_len) == (64, 8192)
        await _exact_panel_shows_cycle_costs(app, app.config)
        await type_into(pilot, app, "batch_size", "0")
        await caught_up(pilot, app)
        assert app.config is None and "[1, 4096]" in screen_text(app)
        await type_into(pilot, app, "batch_size", "64")  # valid again
        await caught_up(pilot, app)
        # Hardware and models are chosen from the known ids; each field's tooltip says what
        # it is and what it allows.
        gpu = app.query_one("#gpu", Select)
        assert [str(option[1]) for option in gpu._options] == list(known_spec_ids("hardware"))
        await choose(pilot, app, "cost.gpu", "a100-80gb")
        await choose(pilot, app, "cost.target", "vicuna-13b")
        assert app.config is not None
        assert (app.config.gpu, app.config.target) == ("a100-80gb", "vicuna-13b")
        tooltip = str(app.query_one("#eta_w", Input).tooltip)
        assert FIELD_SPECS["cost.eta_w"].help in tooltip and "[1e-6, 1]" in tooltip
        tooltip = str(app.query_one("#t0_us", Input).tooltip)
        assert "(us)" in tooltip and "[0, 1e6]" in tooltip
        # roofline_max reads its own efficiencies, not roofline's.
        await choose(pilot, app, "cost.model", "roofline_max")
        rows = await form_rows(pilot, app)
        assert labelled(rows, "η bw") and not labelled(rows, "η weights")
        assert any("roofline_max" in row for row in rows)
        # Every cost model shows exactly the fields it reads: visibility comes from
        # engine.core.config.reads, so a new field or cost model needs no form edit.
        for name in FIELD_SPECS["cost.model"].choices:
            await choose(pilot, app, "cost.model", name)
            config = SpecConfig(cost_model=name, cost_table="t.csv")
            for key in FORM_FIELDS:
                assert shown(app, key) == reads(config, key), (name, key)
        # Fields with more than one choice, and every other field, have a row.
        assert set(FORM_FIELDS) == {
            k for k, s in FIELD_SPECS.items() if s.kind != "choice" or len(s.choices) > 1
        }


async def test_an_invalid_efficiency_is_marked_and_blocks_the_run():
    """In the app: F5 is refused, naming the field by its label."""
    app = create_app("tiny")
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.form.ready)
        await choose(pilot, app, "cost.model", "roofline")
        await type_into(pilot, app, "eta_w", "0")
        app.form.scroll_to_widget(app.query_one("#eta_w"), animate=False)
        await until(pilot, lambda: "▌✗ invalid: η weights" in screen_text(app))
        text = screen_text(app)
        assert f"✗{LABELS['cost.eta_w']}" in text, text
        assert "▌✗ 0 is not allowed" in text and "[1e-6, 1]" in text
        assert "▌✗ invalid: η weights" in text  # the status line stays in sight
        assert app.config is None and app.form.errors.keys() == {"cost.eta_w"}
        await pilot.press("f5")
        refused = f"Cannot run: fix {LABELS['cost.eta_w']} first"
        await until(pilot, lambda: any(refused in m for m in notifications(app)))
        # Another cost model does not read it: the form is valid again.
        await choose(pilot, app, "cost.model", "roofline_max")
        assert app.config is not None and app.config.cost_model == "roofline_max"
        assert "✗η weights" not in screen_text(app)


async def _exact_panel_shows_cycle_costs(app, config) -> None:
    costs = cycle_costs(config)
    lines = region_lines(app, app.query_one(ExactPanel))
    text = "\n".join(lines)

    def value(label: str) -> str:
        row = next(line for line in lines if line[2:].startswith(label))
        return row[2:].removeprefix(label).strip(" │")

    # Under "per cycle:" (the form's draft us is per token).
    assert lines[next(i for i, line in enumerate(lines) if " draft us" in line) - 1][2:].startswith(
        "per cycle:"
    ), text
    assert value(" draft us") == fmt(costs.limit_draft_us), text
    assert value(" verify us") == fmt(costs.limit_verify_us), text
    assert value("step us") == fmt(costs.limit_step_us), text
    assert value("cost ratio") == fmt(costs.cost_ratio), text
    if costs.bound == "-":
        assert "bound" not in text
    else:
        assert value("  bound") == costs.bound
    # The break-even cost ratio is a ratio of the linear costs: shown only under linear.
    assert ("breakeven" in text) == (config.cost_model == "linear"), text


async def test_a_cost_table_that_cannot_be_read_is_marked_and_a_loaded_configuration_shown(
    tmp_path,
):
    """A cost table that cannot be read is marked, not a crash. Then a preset or a sweep
    cell with newer fields is loaded: its parts' rows are built with its values."""
    app = FormHost("tiny")
    wanted = app.config.replace(
        **{"cost.model": "roofline", "cost.gpu": "mi300x", "cost.eta_kv": 0.9},
        batch_size=32,
    )
    async with app.run_test(size=(80, 24)) as pilot:
        await caught_up(pilot, app)
        await choose(pilot, app, "cost.model", "table")
        # No file yet: the field says one is required.
        assert app.config is None and "cost.table" in app.form.errors
        assert "a file is required" in app.form.errors["cost.table"]
        missing = tmp_path / "missing.csv"
        app.form.set_field("cost.table", str(missing))
        # The form takes the path; the Exact panel's computation cannot read the file, and
        # the field is marked (ParamForm.reject).
        await until(pilot, lambda: "missing.csv" in app.form.errors.get("cost.table", ""))
        await until(pilot, lambda: app.config is None)
        app.form.scroll_to_widget(app.query_one("#cost_table"), animate=False)
        await until(pilot, lambda: "✗table" in screen_text(app))
        text = screen_text(app)
        assert "✗table" in text and "▌✗ invalid: table" in text, text
        assert app.config is None and "missing.csv" in app.form.errors["cost.table"]
        assert "form invalid" in "\n".join(region_lines(app, app.query_one(ExactPanel)))
        # A readable table: the mark goes, and the panel shows the table's times.
        table = tmp_path / "latency.csv"
        table.write_text("batch_size,tokens,verify_us,draft_us\n1,1,100,0\n1,8,150,70\n")
        app.form.set_field("cost.table", str(table))
        await caught_up(pilot, app)
        assert app.config is not None and app.config.cost_table == str(table)
        assert "✗table" not in screen_text(app)
        await _exact_panel_shows_cycle_costs(app, app.config)
        # A loaded configuration: its cost model's rows, with its values.
        app.form.load_config(wanted)
        await caught_up(pilot, app)
        assert app.config == wanted and app.form.current_config() == (wanted, {})
        rows = await form_rows(pilot, app)
        assert any("mi300x" in row for row in rows) and any("0.9" in row for row in rows)
        assert labelled(rows, "η kv") and not labelled(rows, "verify us")
