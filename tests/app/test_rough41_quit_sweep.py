"""Issue #41, the app's rough edges: quitting during a sweep saved its rows so far as the
sweep's CSV, which then read as the whole sweep. Now they stay where an interrupted
``spectui sweep`` leaves them, in ``<csv>.partial``, and ``spectui sweep --resume --out
<csv>`` goes on with them (Escape still saves the rows so far as the CSV: test_sweep.py).

The sweep runs in the app's thread and waits at a gate after its first rows, so that the
app quits in the middle of it however fast the machine."""

from __future__ import annotations

import asyncio
import threading

import pytest

from spectui.widgets import sweep_view
from tests.app.hosts_sweep import laid_out, sweep_host
from tests.app.test_sweep import gated_sweep  # noqa: F401  (a fixture, found by name)


@pytest.fixture
def gate(gated_sweep, monkeypatch):  # noqa: F811
    """test_sweep.py's gate, closed once 5 rows are done; the sweep thread's end sets
    ``gate.ended``."""
    gated_sweep.after = 5
    gated_sweep.ended = threading.Event()
    run = sweep_view._run

    def ran(*args, **kwargs):
        try:
            run(*args, **kwargs)
        finally:
            gated_sweep.ended.set()

    monkeypatch.setattr(sweep_view, "_run", ran)
    return gated_sweep


async def test_quitting_during_a_sweep_leaves_its_rows_in_the_partial_file(
    isolated_dirs, gate, cli
):
    _, results = isolated_dirs
    app = sweep_host("tiny")
    async with app.run_test(size=(80, 24)) as pilot:
        view = await laid_out(pilot, app)
        view.action_start()
        assert await asyncio.to_thread(gate.reached.wait, 30)
        await pilot.press("ctrl+q")
    gate.release.set()  # the row in hand finishes; then the sweep sees the app has quit
    assert await asyncio.to_thread(gate.ended.wait, 30)
    assert gate.done == 6  # the five before the gate, the one in hand
    assert list(results.glob("*.csv")) == []
    (partial,) = results.glob("sweep-tiny-*.csv.partial")
    assert len(partial.read_text().splitlines()) == 1 + 6  # the header, the rows done
    out = partial.with_suffix("")  # the CSV it stands for
    status, _, err = cli("sweep", "--preset", "tiny", "--out", str(out), "--resume")
    assert status == 0, err
    assert err.splitlines()[0] == (
        f"resuming: 6 of 24 configurations in {partial}; running the other 18"
    )
    assert len(out.read_text().splitlines()) == 1 + 24 and not partial.exists()
