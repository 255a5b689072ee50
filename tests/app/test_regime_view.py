"""The Regime view (key 6): the map of the form's configuration at 80x24, no-pay cells
marked, recomputed when the form changes, failures reported, readable without colour.

The view runs alone in a small host app; key 6 in the whole app (the map of the form at
80x24, the form driving it) is tested with the other number keys in
tests/app/test_view_tabs.py."""

from __future__ import annotations

from engine.analysis.formatting import LOSE_MARK
from engine.analysis.regime import regime_map
from engine.core.config import SpecConfig
from engine.presets import load_preset
from spectui.widgets.regime_view import RegimeView
from tests.app.helpers import notifications, settle, until
from tests.app.hosts_views import ViewHost
from tests.app.screen import region_text, screen_text

# Weak drafts on an H100: at batch 256-512 and 1k-2k context no K pays (engine.analysis.regime
# tests).
WEAK = SpecConfig(cost_model="roofline", acceptance_rate=0.4)


def _mapped(app) -> bool:
    """The Regime view shows the map of the form's configuration."""
    found = app.query("#regime-view")
    if not found:
        return False
    view = found.first()
    return view.shown is not None and not view.dirty and "K*=" in _text_of(app, "#regime-status")


def _host(config: SpecConfig | None = None) -> ViewHost:
    """The Regime view alone, beside the form, on the form's ``config`` (as key 6), by
    default the default preset's."""
    view = RegimeView(id="regime-view")
    view.config = config if config is not None else load_preset("default").config
    return ViewHost(view, "regime", "6 Regime")


async def _open_hosted(pilot, app) -> None:
    await settle(pilot, app)
    app.query_one("#regime-map").focus()
    await pilot.pause()


def _form(app, config) -> None:
    """The form changed to ``config`` (what the app tells the view on ConfigChanged)."""
    app.query_one("#regime-view").set_config(config)


def _map_rows(app) -> list[str]:
    """The map's rows on screen: the header, then one per batch size (no scrollbar)."""
    lines = region_text(app, app.query_one("#regime-map")).splitlines()
    return [line for line in lines if line.split() and line.split()[0][0].isalnum()]


def _text_of(app, selector: str) -> str:
    """A widget's text on screen, its wrapped lines joined."""
    return " ".join(region_text(app, app.query_one(selector)).split())


async def test_no_pay_cells_are_marked_and_the_map_follows_the_form():
    app = _host()
    async with app.run_test(size=(80, 24)) as pilot:
        await _open_hosted(pilot, app)
        assert LOSE_MARK not in region_text(app, app.query_one("#regime-map"))
        _form(app, WEAK)
        await settle(pilot, app, rounds=4)
        text = screen_text(app)
        assert "linear cost" not in text
        off = "no K pays in 3 of 80 cells; off from batch 256 at context 1k; off from batch 512"
        assert _text_of(app, "#regime-off") == off + " at context 2k"
        rows = _map_rows(app)
        assert rows[-1].split()[:3] == ["512", f"1{LOSE_MARK}", "0.93"]
        assert f"1{LOSE_MARK}" in rows[-2].split()[1]  # batch 256 at 1k
        assert all(LOSE_MARK not in row for row in rows[1:-2])


async def test_readable_without_colour(monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    app = _host(WEAK)
    async with app.run_test(size=(80, 24)) as pilot:
        await _open_hosted(pilot, app)
        assert app.no_color
        rows = _map_rows(app)
        assert rows[-1].split()[:3] == ["512", f"1{LOSE_MARK}", "0.93"]  # the mark carries it


async def test_a_newer_form_wins_and_an_invalid_form_says_so():
    app = _host()
    async with app.run_test(size=(80, 24)) as pilot:
        await _open_hosted(pilot, app)
        eagle = WEAK.replace(draft="eagle-llama-3.1-8b", acceptance_rate=0.8)
        _form(app, WEAK)
        _form(app, eagle)  # before the first map is done
        await settle(pilot, app, rounds=4)
        view = app.query_one("#regime-view")
        assert view.shown is not None and view.shown.config == eagle
        assert "eagle-llama-3.1-8b drafts" in screen_text(app)
        _form(app, None)
        await settle(pilot, app)
        assert "form invalid: nothing to map" in screen_text(app)


async def test_a_map_that_cannot_be_computed_is_reported(tmp_path):
    missing = tmp_path / "gone.csv"
    missing.write_text("batch_size,tokens,verify_us\n1,1,100\n")
    broken = SpecConfig(cost_model="table", cost_table=str(missing))
    missing.unlink()
    app = _host(broken)  # the form's cost table is gone when the view maps it
    async with app.run_test(size=(80, 24)) as pilot:
        await _open_hosted(pilot, app)
        assert "could not compute the map (see the notification)" in screen_text(app)
        assert any(
            n.startswith("Regime map failed: ConfigError: cost.table") for n in notifications(app)
        )


async def test_a_stale_map_is_not_shown():
    """A map that arrives after the form moved on (its worker too late to cancel) is dropped."""
    from spectui.widgets.regime_view import RegimeReady

    eagle = WEAK.replace(draft="eagle-llama-3.1-8b", acceptance_rate=0.8)
    app = _host(eagle)
    async with app.run_test(size=(80, 24)) as pilot:
        await _open_hosted(pilot, app)
        view = app.query_one("#regime-view")
        view.post_message(RegimeReady(WEAK, regime_map(WEAK), ""))  # an older form's map
        await settle(pilot, app)
        assert view.shown.config == eagle
        assert "eagle-llama-3.1-8b drafts" in _text_of(app, "#regime-scenario")
        assert LOSE_MARK not in region_text(app, app.query_one("#regime-map"))


async def test_a_form_change_stops_the_running_map(monkeypatch):
    """A long map (large T) is abandoned when the form changes, not run to its end."""
    import engine.analysis.regime
    from engine.core.runs import RunStopped

    outcomes: list[str] = []
    real = engine.analysis.regime.regime_map

    def recording(config, *args, **kwargs):
        outcomes.append(f"started T={config.tokens_per_seq}")
        try:
            result = real(config, *args, **kwargs)
        except RunStopped:
            outcomes.append(f"stopped T={config.tokens_per_seq}")
            raise
        outcomes.append(f"done T={config.tokens_per_seq}")
        return result

    monkeypatch.setattr(engine.analysis.regime, "regime_map", recording)
    app = _host()
    async with app.run_test(size=(80, 24)) as pilot:
        await _open_hosted(pilot, app)
        _form(app, WEAK.replace(tokens_per_seq=50_000))
        # Until the long map has started (a state: 50 rounds were once not enough under load).
        await until(pilot, lambda: "started T=50000" in outcomes)
        _form(app, WEAK)
        await until(
            pilot,
            lambda: (
                outcomes.count("done T=128") == 2
                and any(o.endswith("T=50000") and not o.startswith("started") for o in outcomes)
            ),
        )
        await settle(pilot, app)
        assert "stopped T=50000" in outcomes and "done T=50000" not in outcomes
        assert outcomes.count("done T=128") == 2  # the first form's map, then the last one
        assert app.query_one("#regime-view").shown.config == WEAK


async def test_at_80x24_beside_the_form_every_context_is_reached_by_keys():
    """Issue 22: the 64k and 128k columns were cut at 80 columns with no sign of them."""
    from engine.analysis.regime import CONTEXTS, context_label

    app = _host()
    async with app.run_test(size=(80, 24)) as pilot:
        await _open_hosted(pilot, app)
        assert app.focused is app.query_one("#regime-map")
        headers = [context_label(c) for c in CONTEXTS]
        shown = _map_rows(app)[0].split()
        assert shown[0] == headers[0] and headers[-1] not in shown
        hint = _text_of(app, "#regime-more")
        assert hint == f"→ {len(headers) - len(shown)} more columns (→ or End)"
        await pilot.press("end")
        await pilot.pause()
        shown = _map_rows(app)[0].split()
        assert shown == headers[-len(shown) :]  # whole columns, up to 128k
        assert _text_of(app, "#regime-more").endswith("more columns (← or Home)")
        assert "128k: K*=" in _text_of(app, "#regime-status")
        # The row labels stand alone: no cut cell's figures beside them.
        for i, line in enumerate(_map_rows(app)[1:]):
            assert line.split()[0] == str(app.query_one("#regime-map").regime.batch_sizes[i])
        await pilot.press("home")
        await pilot.pause()
        assert _map_rows(app)[0].split()[0] == headers[0]


async def test_the_title_says_the_map_is_exact_and_of_a_roofline_when_the_form_is_linear():
    """Issue 22: the Speedup view's K* is the linear form's; the map's is a roofline's."""
    app = _host()  # linear
    async with app.run_test(size=(120, 40)) as pilot:
        await _open_hosted(pilot, app)
        assert _text_of(app, "#regime-title") == (
            "Regime map, exact · roofline h100 (form is linear)"
        )
        _form(app, WEAK.replace(gpu="a100-80gb"))  # a roofline form: as is
        await settle(pilot, app, rounds=4)
        assert _text_of(app, "#regime-title") == "Regime map, exact · K 1..16, T=128, tail full"
        assert "roofline on a100-80gb" in _text_of(app, "#regime-scenario")
