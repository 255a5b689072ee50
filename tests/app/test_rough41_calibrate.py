"""Issue #41, the app's rough edges: on the Calibrate screen the digits its tabs show are
typed into a text field that has the focus (the hint says where they show the panes), a
digit typed into the paste box does not wipe a log file's fit, and the log K is an ASCII
integer in [1, 1024] (one line in the status when it is not).

The real engine on a real log (tests/fixtures/logs/), in the screen's small host app; the
debounce timer never fires by itself: the tests run the pending analysis with
``analyse_now``.
"""

from __future__ import annotations

import pytest
from textual.widgets import DataTable, Input, TabbedContent, TextArea

from spectui.screens import calibrate as calibrate_screen
from tests.app.helpers import until
from tests.app.hosts_screens import CalibrateHost, shown_screen
from tests.app.screen import screen_text
from tests.app.test_calibrate_screen import TINY, V1_LOG, analysed

WINDOW_ROW = ["3", "vllm-v1", "129", "3", "2.16", "used"]  # the log's window (by hand there)


@pytest.fixture(autouse=True)
def _timers_driven(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(calibrate_screen, "DEBOUNCE_S", 3600.0)


def _window_row(app) -> list[str]:
    row = next(line for line in screen_text(app).splitlines() if "vllm-v1" in line)
    return row.split()[:6]


def _status(app) -> str:
    return " ".join(str(app.screen.query_one("#cal-status").content).split())


async def test_a_digit_in_the_paste_box_is_typed_and_the_log_k_is_an_ascii_integer():
    """A digit meant for a pane, typed into the paste box, is text and does not wipe the
    log file's fit; outside the text fields the digits show the panes; the log K takes
    ASCII digits and says its range."""
    app = CalibrateHost(TINY)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await shown_screen(pilot, app)
        assert "1 2 3 show the panes from outside the text fields (tab leaves them)" in _status(app)
        screen.load_file(str(V1_LOG))
        await analysed(pilot, screen)
        loaded = screen.analysis
        assert _window_row(app) == WINDOW_ROW
        tabs = screen.query_one("#cal-tabs", TabbedContent)
        box = screen.query_one("#cal-text", TextArea)
        assert screen.focused is box  # where the screen puts the focus
        await pilot.press("2")  # meant for the Fit pane: a digit in the paste box
        assert box.text == "2"
        assert tabs.active == "cal-tab-windows"
        screen.analyse_now()  # the debounce's end
        await until(pilot, lambda: "still showing" in _status(app))
        assert _status(app) == (
            "✗ pasted text: nothing usable in 1 lines: no speculative decoding metrics "
            "(vLLM, SGLang, llama.cpp) · still showing vllm_v1_mean_length.log"
        )
        assert screen.analysis is loaded
        assert _window_row(app) == WINDOW_ROW  # the file's window, still listed
        # Outside the text fields, the digits show the panes.
        screen.query_one("#cal-windows", DataTable).focus()
        await pilot.press("2")
        assert tabs.active == "cal-tab-fit"
        await pilot.press("3")
        assert tabs.active == "cal-tab-recommend"
        assert "Recommended K = " in screen_text(app)
        # The log K: ASCII digits only, and its range said in the status line.
        log_k = screen.query_one("#cal-k", Input)
        log_k.focus()
        await pilot.press("١", "５", "_")  # other scripts' and fullwidth digits, underscore
        assert log_k.value == ""
        await pilot.press("2", "0", "0", "0", "enter")  # the file again, with this K
        await pilot.pause()
        assert _status(app) == "✗ log K: '2000' is not allowed; expected an integer in [1, 1024]"
        assert log_k.has_class("-invalid")
        assert screen.analysis is loaded  # nothing else started
        log_k.value = "3"
        await pilot.press("enter")
        await until(pilot, lambda: screen.analysis is not loaded and screen.analysis.done)
        assert not log_k.has_class("-invalid")
        assert screen.analysis.source == str(V1_LOG)  # the file shown, not the "2" typed
        assert screen.analysis.calibration is not None
