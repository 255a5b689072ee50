"""Issue #41, the app's rough edges: quitting during a sweep saved its rows so far as the
sweep's CSV, which then read as the whole sweep. Now they stay where an interrupted
``spectui sweep`` leaves them, in ``<csv>.partial``, and ``spectui sweep --resume --out
<csv>`` goes on with them (Escape still saves the rows so far as the CSV: test_sweep.py).

The sweep runs in the app's thread and waits at a gate after its first rows, so that the
app quits in the middle of it however fast the machine."""

from __future__ import annotations

import asyncio
import threading
from types import SimpleNamespace

import pytest

from spectui.widgets import sweep_view
from tests.app.hosts_sweep import laid_out, sweep_host


@pytest.fixture
def gate(monkeypatch):
    """The sweep waits once ``gate.after`` rows are done, until ``gate.release``; the sweep
    thread's end sets ``gate.ended``."""
    import engine.sweep.sweep

    monkeypatch.setenv("SPECTUI_SWEEP_WORKERS", "0")
    gate = SimpleNamespace(after=5, done=0, reached=threading.Event(), release=threading.Event())
    gate.ended = threading.Event()
    real, run = engine.sweep.sweep.evaluate_many, sweep_view._run

    def evaluate_many(configs, *args, **kwargs):
        if gate.done >= gate.after:
            gate.reached.set()
            gate.release.wait(30)
        rows = real(configs, *args, **kwargs)
        gate.done += len(rows)
        return rows

    def ran(*args, **kwargs):
        try:
            run(*args, **kwargs)
        finally:
            gate.ended.set()

    monkeypatch.setattr(engine.sweep.sweep, "evaluate_many", evaluate_many)
    monkeypatch.setattr(sweep_view, "_run", ran)
    yield gate
    gate.release.set()


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
