"""The Calibrate screen (F8): paste or open a log, see the windows, the fit and the K to use,
send the fitted model to the form.

What is about the screen alone runs it in a small host app (tests/app/hosts_screens.py) on
the scenario the app's form has for the preset; what is about the app (F8, the palette, the
form that gets the model, an invalid form) boots the whole app.

Most tests stand a small fake in for the calibration engine (``engine.calibrate.logs`` and
``.fit``, as the screen imports them), so they test the screen and not the fit; the last
ones run the real engine on a real log (tests/fixtures/logs/). Timers are driven: a test
pastes, sees the analysis pending, and runs it with ``analyse_now`` (no sleeps).
"""

from __future__ import annotations

import math
import re
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from textual import events
from textual.widgets import TextArea

from engine.calibrate.fit import model_rates
from engine.core.config import FIELD_SPECS, SpecConfig
from engine.presets import load_preset
from spectui.app import create_app
from spectui.screens import calibrate as calibrate_screen
from spectui.screens.calibrate import PASTED, CalibrateScreen
from spectui.widgets.exact_panel import ExactPanel
from spectui.widgets.param_form import IDS, LABELS
from tests.app.app_waits import booted
from tests.app.helpers import notifications, set_field, settle, until
from tests.app.hosts_screens import CalibrateHost, shown_screen
from tests.app.screen import region_text, screen_text

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "logs"
# vLLM v1, one window (vllm-project/vllm issue 19254): M 2.16, 150 accepted, 387 drafted.
V1_LOG = FIXTURES / "vllm_v1_mean_length.log"

# The form's scenario in the app on the preset the tests open (what the screen is given).
TINY = load_preset("tiny").config

PASTE = "INFO some line\nSpecDecoding metrics: ...\nSpecDecoding metrics: ...\n"


@pytest.fixture(autouse=True)
def _timers_driven(monkeypatch: pytest.MonkeyPatch) -> None:
    """The debounce never fires by itself here, however loaded the machine: the tests run
    the pending analysis with ``analyse_now``."""
    monkeypatch.setattr(calibrate_screen, "DEBOUNCE_S", 3600.0)


# --- a fake calibration engine ----------------------------------------------------------------
@dataclass(frozen=True)
class FakeWindow:
    source: str
    line: int
    drafts: float | None
    k: int | None
    mean_length: float | None
    problems: tuple[str, ...] = ()


@dataclass
class FakeParse:
    windows: list[FakeWindow]
    rejected: list[FakeWindow]
    skipped: int
    lines: int

    @property
    def used(self) -> int:
        return len(self.windows)

    @property
    def rejected_count(self) -> int:
        return len(self.rejected)


@dataclass(frozen=True)
class FakeRate:
    position: int
    rate: float
    low: float
    high: float


@dataclass(frozen=True)
class FakeModel:
    name: str
    values: dict[str, object]
    parameters: int
    criterion: float
    rms_error: float


@dataclass
class FakeCalibration:
    positions: list[FakeRate]
    models: list[FakeModel]
    chosen: FakeModel
    notes: list[str] = field(default_factory=list)
    drafts: float = 120.0

    def config(self, base: SpecConfig) -> SpecConfig:
        return base.replace(**self.chosen.values)


@dataclass
class FakeRecommendation:
    k: int = 4
    speedup: float = 1.83
    low: float = 1.78
    high: float = 1.88
    band: tuple[int, ...] = (3, 4, 5)
    log_k: int | None = 3
    log_speedup: float | None = 1.70
    change: float | None = 1.83 / 1.70 - 1


class FakeLogError(ValueError):
    pass


DECAY = FakeModel(
    "position_decay",
    {"draft_model": "position_decay", "decay_base": 0.85, "decay_factor": 0.9},
    2,
    812.5,
    0.012,
)
FIXED = FakeModel("fixed", {"draft_model": "fixed", "acceptance_rate": 0.7}, 1, 830.0, 0.05)
PARSED = FakeParse(
    windows=[FakeWindow("vllm-v1", 2, 120.0, 3, 2.16)],
    rejected=[FakeWindow("vllm-v1", 3, 90.0, 3, 2.5, ("M 2.50 != 1 + sum r_i 2.31",))],
    skipped=1,
    lines=3,
)


def fake_engine(monkeypatch: pytest.MonkeyPatch, **overrides: object) -> dict[str, list]:
    """Stand fake ``engine.calibrate.logs`` and ``.fit`` modules in; return the calls."""
    calls: dict[str, list] = {"parse": [], "recommend": []}

    def parse_log(text: str, name: str = "<input>") -> FakeParse:
        calls["parse"].append((text, name))
        return PARSED

    def parse_log_file(path: str) -> FakeParse:
        calls["parse"].append((None, path))
        return PARSED

    def calibrate(windows: list, k: int | None = None) -> FakeCalibration:
        rates = [FakeRate(1, 0.85, 0.80, 0.89), FakeRate(2, 0.77, 0.70, 0.83)]
        return FakeCalibration(rates, [FIXED, DECAY], DECAY, ["chose position_decay by BIC"])

    def recommend(cal: FakeCalibration, scenario: SpecConfig) -> FakeRecommendation:
        calls["recommend"].append(scenario)
        return FakeRecommendation()

    def emit(rec: FakeRecommendation, cal: FakeCalibration) -> dict[str, str]:
        return {
            "vllm": f"num_speculative_tokens {rec.k}",
            "tensorrt-llm": f"max_draft_len: {rec.k}",
        }

    logs = types.ModuleType("engine.calibrate.logs")
    logs.LogError = FakeLogError  # type: ignore[attr-defined]
    logs.parse_log = parse_log  # type: ignore[attr-defined]
    logs.parse_log_file = parse_log_file  # type: ignore[attr-defined]
    fit = types.ModuleType("engine.calibrate.fit")
    fit.CRITERION = "BIC = -2 ln L + k ln N"  # type: ignore[attr-defined]
    fit.calibrate = calibrate  # type: ignore[attr-defined]
    fit.recommend = recommend  # type: ignore[attr-defined]
    fit.emit = emit  # type: ignore[attr-defined]
    fit.model_rates = model_rates  # type: ignore[attr-defined]  # the real one
    for name, value in overrides.items():
        setattr(logs if name.startswith("parse") else fit, name, value)
    monkeypatch.setitem(sys.modules, "engine.calibrate.logs", logs)
    monkeypatch.setitem(sys.modules, "engine.calibrate.fit", fit)
    return calls


async def open_screen(pilot, app) -> CalibrateScreen:
    """In the app: F8 opens the screen (once the form's values are in)."""
    await booted(pilot, app)
    await pilot.press("f8")
    await until(pilot, lambda: isinstance(app.screen, CalibrateScreen))
    await pilot.pause()
    return app.screen


async def analysed(pilot, screen: CalibrateScreen) -> None:
    """Wait until the screen's analysis has ended (fitted and recommended, or stopped by an
    error), and its result is drawn."""
    await until(pilot, lambda: screen.analysis is not None and screen.analysis.done)
    await pilot.pause()


async def paste(pilot, screen: CalibrateScreen, text: str) -> None:
    """Paste ``text`` into the text area, as a terminal's bracketed paste does (the app
    forwards it to the focused widget)."""
    screen.query_one("#cal-text", TextArea).focus()
    await pilot.pause()
    pilot.app.post_message(events.Paste(text))
    await pilot.pause()


# --- tests ----------------------------------------------------------------------------------
async def test_f8_and_the_palette_open_the_screen_and_f_sends_the_fit_to_the_form(monkeypatch):
    """In the app: F8 opens the screen, escape closes it, the palette opens it too, on the
    form's scenario; what f sends is what the form then shows (each key's part on the screen:
    the host tests below, f and ctrl+f). Then on an invalid form: a fit, but no
    recommendation, and ctrl+f says the form is invalid."""
    calls = fake_engine(monkeypatch)
    app = create_app("tiny")  # fixed, K = 3
    async with app.run_test(size=(80, 24)) as pilot:
        await open_screen(pilot, app)
        assert "paste log lines" in screen_text(app)
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, CalibrateScreen)
        assert app.config is not None and app.config.draft_model == "fixed"
        # The command palette has Calibrate too.
        commands = {c.title: c for c in app.get_system_commands(app.screen)}
        commands["Calibrate"].callback()
        await pilot.pause()
        assert isinstance(app.screen, CalibrateScreen)
        screen = app.screen
        scenario = app.config
        await paste(pilot, screen, PASTE)
        screen.analyse_now()
        await analysed(pilot, screen)
        assert calls["recommend"] == [scenario]  # K is recommended for the form's scenario
        screen.query_one("#cal-windows").focus()
        await pilot.press("f")
        await until(pilot, lambda: not isinstance(app.screen, CalibrateScreen))
        await until(pilot, lambda: app.config is not None and app.config.k == 4)
        assert app.form.model == "position_decay"
        assert app.query_one("#decay_base").value == "0.85"
        assert app.config is not None
        assert (app.config.draft_model, app.config.decay_factor) == ("position_decay", 0.9)
        assert app.config.k == 4  # the recommended K (the fake's)
        assert (app.config.policy, app.config.shape) == ("fixed", "chain")
        # An invalid form gets a fit but no recommendation.
        await set_field(pilot, app, "k", "0")
        await until(pilot, lambda: app.config is None)
        assert app.config is None
        calls["recommend"].clear()
        screen = await open_screen(pilot, app)
        await paste(pilot, screen, PASTE)
        screen.analyse_now()
        await analysed(pilot, screen)
        assert calls["recommend"] == []
        status = "pasted text: 1 used, 1 rejected · position_decay · form invalid"
        assert status in [line.strip() for line in screen_text(app).splitlines()]
        screen.action_pane("cal-tab-recommend")
        await pilot.pause()
        assert "\n form invalid: no K recommended" in screen_text(app)
        await pilot.press("ctrl+f")
        await pilot.pause()
        assert isinstance(app.screen, CalibrateScreen)
        assert any("The form is invalid" in n for n in notifications(app))


def _assert_sent_the_fit(app: CalibrateHost) -> None:
    """The screen has closed with the fitted model and the recommended K (the fake's)."""
    assert not isinstance(app.screen, CalibrateScreen)
    [sent] = app.sent
    assert sent is not None
    assert (sent.draft_model, sent.decay_base, sent.decay_factor) == (
        "position_decay",
        0.85,
        0.9,
    )
    assert sent.k == 4  # the recommended K (the fake's)
    assert (sent.policy, sent.shape) == ("fixed", "chain")


async def test_pasted_text_is_analysed_after_the_pause_its_windows_listed_and_f_sends_it(
    monkeypatch,
):
    """Pasted text is analysed after the pause; its windows are listed, a rejected one with
    its reason; f (out of the text area) sends the fitted model and closes."""
    calls = fake_engine(monkeypatch)
    app = CalibrateHost(TINY)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await shown_screen(pilot, app)
        await paste(pilot, screen, PASTE)
        # Debounced: nothing parsed until the timer fires (driven here, not waited for).
        assert screen.pending and calls["parse"] == []
        screen.analyse_now()
        await analysed(pilot, screen)
        assert not screen.pending
        assert calls["parse"] == [(PASTE, PASTED)]
        text = screen_text(app)
        used = next(line for line in text.splitlines() if line.lstrip().startswith("2 "))
        assert used.split()[:6] == ["2", "vllm-v1", "120", "3", "2.16", "used"]
        assert "1 used, 1 rejected" in text and "1 of 3 lines skipped" in text
        # The form's scenario (the screen's, from the app: see the test of f) is what K is
        # recommended for.
        assert calls["recommend"] == [TINY]
        assert "position_decay" in text and "K = 4" in text
        # A rejected window shows why.
        row = next(line for line in screen_text(app).splitlines() if line.lstrip().startswith("3 "))
        assert "rejected: M 2.50" in row
        # Its whole reason, under the table, when the row is highlighted.
        table = screen.query_one("#cal-windows")
        table.focus()
        table.move_cursor(row=1)
        await pilot.pause()
        assert "line 3: rejected: M 2.50 != 1 + sum r_i 2.31" in screen_text(app)
        # f sends the fitted model and closes.
        await pilot.press("f")
        await until(pilot, lambda: app.sent)
        _assert_sent_the_fit(app)


async def test_an_unusable_log_is_one_line_in_the_status_and_the_app_keeps_running(monkeypatch):
    def nothing(text: str, name: str = "<input>") -> FakeParse:
        raise FakeLogError(f"{name}: nothing usable in 3 lines: no speculative decoding metrics")

    def unreadable(path: str) -> FakeParse:
        raise FakeLogError(f"{path}: No such file or directory")

    fake_engine(monkeypatch, parse_log=nothing, parse_log_file=unreadable)
    app = CalibrateHost(TINY)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await shown_screen(pilot, app)
        await paste(pilot, screen, "hello\nworld\n")
        screen.analyse_now()
        await analysed(pilot, screen)
        assert "✗ pasted text: nothing usable in 3 lines" in screen_text(app)
        # A path typed in, enter: its error in the same line.
        await pilot.click("#cal-path")
        for char in "nope.log":
            await pilot.press(char)
        await pilot.press("enter")
        await settle(pilot, app)
        assert "✗ nope.log: No such file or directory" in screen_text(app)
        assert isinstance(app.screen, CalibrateScreen) and app.is_running
        assert not notifications(app)


async def test_an_unexpected_failure_is_reported_and_the_screen_stays(monkeypatch):
    def broken(cal: object, scenario: SpecConfig) -> None:
        raise RuntimeError("boom")

    fake_engine(monkeypatch, recommend=broken)
    app = CalibrateHost(TINY)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await shown_screen(pilot, app)
        await paste(pilot, screen, PASTE)
        screen.analyse_now()
        await settle(pilot, app)
        assert "✗ calibration failed: RuntimeError: boom" in screen_text(app)
        assert any("boom" in n for n in notifications(app))
        assert isinstance(app.screen, CalibrateScreen)


async def test_the_log_k_typed_in_goes_to_the_fit(monkeypatch):
    seen: list[int | None] = []

    def calibrate(windows: list, k: int | None = None) -> FakeCalibration:
        seen.append(k)
        return FakeCalibration([], [FIXED], FIXED, ["no per-position rates: fixed only"])

    fake_engine(monkeypatch, calibrate=calibrate)
    app = CalibrateHost(TINY)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await shown_screen(pilot, app)
        await paste(pilot, screen, PASTE)
        screen.analyse_now()
        await analysed(pilot, screen)
        await pilot.click("#cal-k")
        await pilot.press("5", "enter")  # enter with no path: the pasted text again
        await settle(pilot, app)
        assert seen == [None, 5]
        screen.query_one("#cal-windows").focus()  # out of the fields: 1 2 3 show the panes
        await pilot.press("2")
        await pilot.pause()
        text = screen_text(app)
        assert "* fixed: the only model these windows allow" in text
        assert "No per-position rates in this log: nothing to plot." in text


async def test_f_before_any_fit_says_so_and_stays_and_ctrl_f_sends_from_the_text(monkeypatch):
    """f before any fit says so and the screen stays; once fitted, in the text area (where f
    is a letter) ctrl+f sends the fitted model and closes."""
    fake_engine(monkeypatch)
    app = CalibrateHost(TINY)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await shown_screen(pilot, app)
        screen.query_one("#cal-windows").focus()
        await pilot.press("f")
        await pilot.pause()
        assert isinstance(app.screen, CalibrateScreen)
        assert any("Nothing fitted yet" in n for n in notifications(app))
        await paste(pilot, screen, PASTE)
        screen.analyse_now()
        await analysed(pilot, screen)
        screen.query_one("#cal-text").focus()  # in the text area, f is a letter: ctrl+f there
        await pilot.press("ctrl+f")
        await until(pilot, lambda: app.sent)
        _assert_sent_the_fit(app)


# --- the real engine on a real log ---------------------------------------------------------
async def test_a_real_vllm_log_file_is_parsed_fitted_and_recommended():
    """The log's path typed where the log goes: the text area has the focus when the screen
    opens, and a person who types a log's path there (and waits) gets the file, not "nothing
    usable in 1 line".

    And issue 22, item 6: at 80 columns the vLLM setting was cut (``"num_speculativ``) with
    no way to see the rest. Each setting is read back from the screen, row after row of the
    Recommend pane, and must be all there (wrapped lines joined; spaces aside)."""
    app = CalibrateHost(TINY)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await shown_screen(pilot, app)
        screen.query_one("#cal-text").text = str(V1_LOG)
        screen.analyse_now()
        await analysed(pilot, screen)
        text = screen_text(app)
        assert "nothing usable" not in text
        assert "✗" not in text, text
        # The window, by hand from the fixture: M 2.16 = 1 + 0.543 + 0.357 + 0.264;
        # 150 / (2.16 - 1) = 129.3 drafts, so K = 387 / 129.3 = 3 and drafts = 387 / 3 = 129.
        row = next(line for line in text.splitlines() if "vllm-v1" in line)
        assert row.split()[:6] == ["3", "vllm-v1", "129", "3", "2.16", "used"]
        found = screen.analysis
        assert found is not None and found.done
        cal, rec = found.calibration, found.recommendation
        assert [p.position for p in cal.positions] == [1, 2, 3]
        assert math.isclose(cal.positions[0].rate, 0.543, abs_tol=1e-3)
        assert rec.k in rec.band and rec.low <= rec.speedup <= rec.high
        screen.query_one("#cal-windows").focus()  # out of the fields: 1 2 3 show the panes
        await pilot.press("2")
        await pilot.pause()
        text = screen_text(app)
        assert f"*{cal.chosen.name}" in text and "observed, 95 % interval" in text
        await pilot.press("3")
        await pilot.pause()
        text = screen_text(app)
        assert f"Recommended K = {rec.k}" in text and "At the log's K = 3" in text
        assert f"--draft-max {rec.k} " in text and f"max_draft_len: {rec.k}" in text
        assert found.adaptive.startswith("none emitted")  # i.i.d. acceptance: fixed K wins
        # Every character of each engine's setting is on screen (issue 22, item 6).
        emitted = found.emitted
        assert max(len(text) for text in emitted.values()) > 80  # the case of the issue
        rows = region_text(app, screen.query_one("#cal-settings")).splitlines()
        starts = [i for i, row in enumerate(rows) if row.split() and row.split()[0] in emitted]
        assert [rows[i].split()[0] for i in starts] == list(emitted)
        column = rows[starts[0]].index(emitted[rows[starts[0]].split()[0]][:8])
        for first, end in zip(starts, [*starts[1:], len(rows)], strict=True):
            name = rows[first].split()[0]
            shown = "".join(row[column:] for row in rows[first:end])
            assert "".join(shown.split()) == "".join(emitted[name].split()), (name, rows)


async def test_a_real_sglang_log_asks_for_its_k_and_fits_the_fixed_model_with_it():
    # SGLang logs "accept len: 3.13" per decode batch: no K, no per-position rates.
    app = CalibrateHost(TINY)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await shown_screen(pilot, app)
        screen.load_file(str(FIXTURES / "sglang_decode.log"))
        await analysed(pilot, screen)
        assert "✗ sglang_decode.log: no K in the log: type it in 'log K'" in screen_text(app)
        assert screen.query_one("#cal-k").has_class("-wanted")
        await pilot.click("#cal-k")
        await pilot.press("3", "enter")  # the last input (the file) again, with K = 3
        await settle(pilot, app, rounds=5)
        assert not screen.query_one("#cal-k").has_class("-wanted")
        cal = screen.analysis.calibration
        # 1 + p + p^2 + p^3 = 3.13 at K = 3.
        p = cal.chosen.values["acceptance_rate"]
        assert [m.name for m in cal.models] == ["fixed"]
        assert math.isclose(1 + p + p**2 + p**3, 3.13, rel_tol=1e-6)
        screen.query_one("#cal-windows").focus()
        await pilot.press("2")
        await pilot.pause()
        assert "* fixed: the only model these windows allow" in screen_text(app)
        await pilot.press("3")
        await pilot.pause()
        assert "(no interval: no draft count in the log)" in screen_text(app)


async def test_f_sends_the_whole_recommendation_rounded_and_the_toast_names_it():
    """F4 on the screen copies the recommended K's engine flags (test_keys.py's F4, here on
    the screen that has them).

    Issue 22, item 5: ``f`` sent the model at nine decimals and kept the form's K (5), so the
    form showed 1.803x against the recommendation's 1.842x. Now the recommended K, the model
    at a few significant digits, a fixed K policy and a chain go to the form, its cost model
    stays, the Exact panel shows the recommendation's speedup, and the toast says all that."""
    app = create_app("default")  # K = 5, linear costs
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_screen(pilot, app)
        before = app.config
        assert before is not None
        screen.load_file(str(V1_LOG))
        await analysed(pilot, screen)
        screen.query_one("#cal-windows").focus()
        await pilot.press("3")
        await pilot.pause()
        head = re.search(r"Recommended K = (\d+): speedup (\S+)x", screen_text(app))
        assert head is not None, screen_text(app)
        k, speedup = int(head[1]), head[2]
        assert k != before.k  # else the test could not tell K was sent
        cal = screen.analysis.calibration
        # F4 here copies the recommendation's engine flags, one line each; the screen stays.
        await pilot.press("f4")
        await pilot.pause()
        lines = app.clipboard.splitlines()
        assert len(lines) == 4, lines
        assert "--speculative-config" in lines[0]
        assert f'"num_speculative_tokens": {k}' in lines[0]
        assert any(f"--draft-max {k} " in line for line in lines)
        assert f"Copied the engine flags for K = {k}" in notifications(app)[-1]
        assert isinstance(app.screen, CalibrateScreen)  # the screen stays
        await pilot.press("f")
        await until(pilot, lambda: app.config is not None and app.config.k == k)
        assert not isinstance(app.screen, CalibrateScreen)
        after = app.config
        assert after is not None
        assert app.query_one("#k").value == str(k) and after.k == k
        assert (after.policy, after.shape) == ("fixed", "chain")
        # The cost model the recommendation used (the form's), and everything else, kept.
        sent = {*cal.chosen.values, "k", "policy.name", "shape.name"}
        kept = [key for key in FIELD_SPECS if key not in sent]
        assert "cost.model" in kept and "draft_cost_us" in kept
        assert {key: after.get(key) for key in kept} == {key: before.get(key) for key in kept}
        # Each fitted value as the form shows it: a few significant digits, close to the fit.
        fitted = {key: v for key, v in cal.chosen.values.items() if key != "draft_model"}
        assert fitted and after.draft_model == cal.chosen.name
        for key, value in fitted.items():
            shown = app.query_one(f"#{IDS[key]}").value
            assert len(shown.replace(".", "").lstrip("0")) <= 6, (key, shown)  # was nine decimals
            assert math.isclose(float(shown), value, rel_tol=1e-3), (key, shown, value)
        panel = app.query_one(ExactPanel)
        wanted = rf"speedup +{re.escape(speedup)}\b"  # the recommendation's, once computed
        await until(pilot, lambda: re.search(wanted, region_text(app, panel)) is not None)
        exact = region_text(app, panel)
        assert re.search(wanted, exact), exact
        toast = notifications(app)[-1]
        assert f"K {k}" in toast and "policy fixed" in toast and "shape chain" in toast
        assert f"model {cal.chosen.name}" in toast and f"cost {before.cost_model}" in toast
        for key in fitted:
            assert f"{LABELS[key]} {app.query_one(f'#{IDS[key]}').value}" in toast, toast
