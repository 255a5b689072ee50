"""How the app feels: start-up, key-to-screen latency during a sweep, sweep time vs headless.

Run: ``.venv/bin/python benchmarks/bench_app.py`` (about two minutes; ``--startup`` for the
start-up figures alone). Prints:

* start-up to first screen (fresh interpreter, imports included, to the first frame the app
  writes) of spectui and of a bare Textual app with a header and a footer, medians of several
  runs, and their ratio; and for spectui, the time until the parameter form is on screen
  (it mounts just after the first frame);
* the seed-576 sweep (576 configurations) at :data:`SWEEP_SEQUENCES` sequences per
  configuration (since issue #11 the engine runs it at 500 in a fraction of a second, too
  little to time an app against: a user preset ``bench-seed-576`` holds the grid) run
  headless with ``engine.sweep.sweep.run_sweep`` (serial, in-process), and the same sweep started
  from the app's Sweep view, which runs it in its worker processes (all cores but one: one
  process on a 2-core machine), and their ratio (target <= 1.5);
* key-to-screen latency while that sweep runs: the time from a key press until the app has
  handled it and refreshed the screen (``Pilot.press`` waits for exactly that), median and
  p95 (target: median < 100 ms);
* key-to-screen latency while the Run view replays a run (default preset, 100 rows/s, the
  table past its 2,000 kept rows): a digit typed into the form's seed field, the same
  presses with the replay paused, in the same run of the app (``--replay`` for these alone).

``--regime-study`` (issue 22; a few minutes: the 46,080 configurations of the shipped
``regime-study`` preset, Monte Carlo rows) measures, in one run: the sweep headless
(``run_sweep``, serial, in-process, planning included) and the same sweep started from the
app's Sweep view (its worker processes), and their ratio (target <= 1.3); key-to-screen
latency of ``m`` (the next draft model's heatmap) pressed every 250 ms meanwhile, median and
p95 (targets < 100 ms and < 250 ms); the time from ``s`` until the count line first shows a
figure (target < 1 s); the ETA the count line shows once 10 % of the sweep is done against
the time the sweep then really took (target: within 50 %); the redraws of the screen and the
CPU seconds of the app's process and of its worker processes.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STARTUP_RUNS = 15
SWEEP_RUNS = 5
SWEEP_SEQUENCES = 50_000  # per configuration: about a second of headless work
SWEEP_PRESET = "bench-seed-576"
KEY_INTERVAL_S = 0.25  # a key every 250 ms: a fast typist, sustained
REPLAY_PRESSES = 40  # per state (replaying, paused)

STARTUP_SCRIPT = """
import time
t0 = time.perf_counter()
import asyncio
{setup}
async def main():
    app = make()
    first, ready = [], []
    show = app._display

    def display(screen, update):
        # Every frame the app writes to the terminal passes here.
        if update is not None:
            now = time.perf_counter()
            if not first:
                first.append(now)
            if not ready and is_ready(app):
                ready.append(now)
        return show(screen, update)

    app._display = display
    async with app.run_test(size=(120, 40)) as pilot:
        while not ready:
            await pilot.pause(0.01)
    print(first[0] - t0, ready[0] - t0)
asyncio.run(main())
"""

SPECTUI_SETUP = """
from spectui.app import create_app
def make():
    return create_app()
def is_ready(app):
    # The form's last field has been laid out: every field can be edited.
    found = app.query("#tail")
    return bool(found) and found.first().region.area > 0
"""

BARE_SETUP = """
from textual.app import App
from textual.widgets import Footer, Header, Static
class Bare(App):
    def compose(self):
        yield Header()
        yield Static("hello")
        yield Footer()
def make():
    return Bare()
def is_ready(app):
    return True
"""


def _startup_once(setup: str) -> tuple[float, float]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    out = subprocess.run(
        [sys.executable, "-c", STARTUP_SCRIPT.format(setup=setup)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env=env,
    )
    first, ready = map(float, out.stdout.strip().splitlines()[-1].split())
    return first, ready


def startup_seconds() -> tuple[float, float, float]:
    """Medians over fresh interpreters: spectui's first frame and usable form, bare's frame.

    Times run from interpreter start, so imports count. spectui and the bare app take turns,
    so that a machine that slows down slows both. A first round, not counted, leaves the
    bytecode caches as a second launch on a user's machine would find them.
    """
    firsts, readies, bares = [], [], []
    for run in range(STARTUP_RUNS + 1):
        first, ready = _startup_once(SPECTUI_SETUP)
        bare, _ = _startup_once(BARE_SETUP)
        if run:
            firsts.append(first)
            readies.append(ready)
            bares.append(bare)
    return statistics.median(firsts), statistics.median(readies), statistics.median(bares)


def headless_sweep_seconds() -> float:
    from engine.presets import load_preset
    from engine.sweep.sweep import run_sweep

    configs = load_preset(SWEEP_PRESET).sweep.configs()
    started = time.perf_counter()
    run_sweep(configs)
    return time.perf_counter() - started


async def key_to_screen(app, key: str, changed) -> float:
    """Seconds from a key event reaching the app until ``changed()`` holds and a refresh ran.

    The key goes through the driver as a terminal's would; ``Pilot.press`` is not used here
    because it also waits for the app to go idle, which a running sweep never lets it do.
    """
    from textual import events

    pressed = time.perf_counter()
    event = events.Key(key, key if len(key) == 1 else None)
    event.set_sender(app)
    app._driver.send_message(event)
    # Poll gently: a thread that wakes every millisecond would take the GIL from the sweep.
    while not changed():
        await asyncio.sleep(0.005)
    painted = asyncio.Event()
    app.screen.call_after_refresh(painted.set)
    await painted.wait()
    return time.perf_counter() - pressed


async def app_sweep(press_keys: bool = True) -> tuple[float, list[float], int]:
    """Run seed-576 from the Sweep view, pressing keys meanwhile; (seconds, latencies, rows)."""
    from spectui.app import create_app
    from spectui.widgets.heatmap import Heatmap
    from spectui.widgets.sweep_view import SweepView

    app = create_app(SWEEP_PRESET)
    latencies: list[float] = []
    async with app.run_test(size=(120, 40)) as pilot:
        for _ in range(3):
            await pilot.pause()
            await app.workers.wait_for_complete()
        # The app starts its sweep processes when the Sweep view is first shown (about a
        # second's work); a person takes longer than that to press F6. Wait for them too.
        await asyncio.to_thread(app.pool.warm)
        view = app.query_one(SweepView)
        await app.action_show_view("sweep")
        await pilot.pause()
        app.query_one(Heatmap).focus()
        await pilot.pause()
        started = time.perf_counter()
        await app.action_start_sweep()
        title = app.query_one("#heatmap-title")

        def title_text() -> str:
            return str(title.render())

        while view.finished is None:
            if not press_keys:
                await asyncio.sleep(0.02)
                continue
            before = title_text()
            # "m": the next draft model's heatmap, a full redraw of the grid.
            latencies.append(await key_to_screen(app, "m", lambda b=before: title_text() != b))
            await asyncio.sleep(KEY_INTERVAL_S)
        wall = time.perf_counter() - started  # until the final results were handled
        finished = view.finished
        assert finished is not None and not finished.cancelled
        return wall, latencies, finished.done


async def replay_typing() -> tuple[list[float], list[float]]:
    """Key-to-screen latencies of typing into the form while the Run view replays, and paused.

    The default preset's run (about 17,000 cycles) replays at 100 rows/s; the replay starts
    2,100 rows in, so the table is at its bound of kept rows and trims as it goes.
    """
    from textual.widgets import Input

    from spectui.app import create_app
    from spectui.widgets.cycle_table import CycleTable

    app = create_app("default")
    replaying: list[float] = []
    paused: list[float] = []
    async with app.run_test(size=(120, 40)) as pilot:
        for _ in range(3):
            await pilot.pause()
            await app.workers.wait_for_complete()
        app.action_run()
        while app.query_one("#run-view").result is None:  # type: ignore[attr-defined]
            await pilot.pause(0.05)
        table = app.query_one(CycleTable)
        table.advance_to(2100)
        assert table.pace == 100 and not table.paused
        field = app.query_one("#seed", Input)
        field.focus()
        await pilot.pause()
        for out, pause in ((replaying, False), (paused, True)):
            table.paused = pause
            for i in range(REPLAY_PRESSES):
                key = str(i % 10)
                before = field.value
                out.append(await key_to_screen(app, key, lambda b=before: field.value != b))
                await asyncio.sleep(KEY_INTERVAL_S)
                if len(field.value) > 6:
                    field.value = "4"
    return replaying, paused


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a live process (Linux /proc), 0 if unknown."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def regime_study_in_app() -> dict[str, float]:
    """Run regime-study from the Sweep view, pressing ``m`` every KEY_INTERVAL_S; what the
    count line showed and when, key latencies, CPU seconds, redraws."""
    import re

    from spectui.app import create_app
    from spectui.widgets.heatmap import Heatmap
    from spectui.widgets.sweep_view import SweepView

    app = create_app("regime-study")
    latencies: list[float] = []
    shown: list[tuple[float, str]] = []  # (seconds since s, count line) at each change
    frames = [0]
    async with app.run_test(size=(120, 40)) as pilot:
        for _ in range(3):
            await pilot.pause()
            await app.workers.wait_for_complete()
        await asyncio.to_thread(app.pool.warm)
        view = app.query_one(SweepView)
        await app.action_show_view("sweep")
        await pilot.pause()
        app.query_one(Heatmap).focus()
        await pilot.pause()
        count = app.query_one("#sweep-count")
        title = app.query_one("#heatmap-title")
        update = count.update
        started = time.perf_counter()

        def recorded(content="", **kwargs):  # every text the count line is given
            shown.append((time.perf_counter() - started, str(content)))
            return update(content, **kwargs)

        count.update = recorded  # type: ignore[method-assign]
        display = app._display

        def counted(screen, changes):  # every frame written to the terminal
            if changes is not None:
                frames[0] += 1
            return display(screen, changes)

        app._display = counted  # type: ignore[method-assign]
        executor = app.pool.executor()
        workers = list(getattr(executor, "_processes", {}))
        cpu_app = time.process_time()
        cpu_workers = sum(_cpu_seconds(pid) for pid in workers)
        started = time.perf_counter()
        await app.action_start_sweep()
        first = shown[0][1] if shown else ""
        pressed_at: list[float] = []  # seconds since s of each press
        while view.finished is None:
            before = str(title.render())
            pressed_at.append(time.perf_counter() - started)
            latencies.append(
                await key_to_screen(app, "m", lambda b=before: str(title.render()) != b)
            )
            await asyncio.sleep(KEY_INTERVAL_S)
        wall = time.perf_counter() - started
        cpu_app = time.process_time() - cpu_app
        cpu_workers = sum(_cpu_seconds(pid) for pid in workers) - cpu_workers
        finished = view.finished
        assert finished is not None and not finished.cancelled
    total = finished.total
    figure = next((t for t, text in shown if text != first and re.search(r"\d+/", text)), wall)
    eta_error, eta_at = float("nan"), float("nan")
    for t, text in shown:
        found = re.match(r"(\d+)/(\d+) .*ETA (\d+)s", text)
        if found and int(found[1]) >= total / 10:
            eta_at = t
            eta_error = abs(int(found[3]) - (wall - t)) / (wall - t)
            break
    slowest = max(range(len(latencies)), key=latencies.__getitem__)
    latencies_ms = sorted(1000 * x for x in latencies)
    return {
        "wall": wall,
        "rows": finished.done,
        "median": statistics.median(latencies_ms),
        "p95": latencies_ms[min(len(latencies_ms) - 1, int(0.95 * len(latencies_ms)))],
        "max": latencies_ms[-1],
        "max_at": pressed_at[slowest],  # when the slowest key was pressed, seconds since s
        "presses": len(latencies_ms),
        "first_figure": figure,
        "eta_error": eta_error,
        "eta_at": eta_at,
        "frames": frames[0],
        "cpu_app": cpu_app,
        "cpu_workers": cpu_workers,
        "workers": len(workers),
    }


def regime_study() -> None:
    """The ``--regime-study`` figures, measured in one run (see the module's notes)."""
    from engine.presets import load_preset
    from engine.sweep.sweep import run_sweep

    started = time.perf_counter()
    run_sweep(load_preset("regime-study").sweep.lazy())
    headless = time.perf_counter() - started
    got = asyncio.run(regime_study_in_app())
    load = os.getloadavg()
    print(
        f"regime-study ({got['rows']:,} configs; load average {load[0]:.2f} {load[1]:.2f} "
        f"{load[2]:.2f} on {os.cpu_count()} cores): headless {headless:.1f} s (serial), in "
        f"the app ({got['workers']} worker process(es)) {got['wall']:.1f} s with a key every "
        f"{KEY_INTERVAL_S:g} s: ratio {got['wall'] / headless:.2f} (target <= 1.3)"
    )
    print(
        f"key-to-screen latency of m during it ({got['presses']} presses): median "
        f"{got['median']:.1f} ms, p95 {got['p95']:.1f} ms, max {got['max']:.1f} ms "
        f"(pressed {got['max_at']:.1f} s after s) "
        "(targets median < 100 ms, p95 < 250 ms)"
    )
    print(
        f"first progress figure {got['first_figure']:.2f} s after s (target < 1 s); ETA "
        f"shown at 10 % done ({got['eta_at']:.1f} s in) off the real remaining time by "
        f"{100 * got['eta_error']:.0f} % (target <= 50 %)"
    )
    print(
        f"{got['frames']} redraws ({got['frames'] / got['wall']:.1f}/s); CPU: app process "
        f"{got['cpu_app']:.1f} s, worker process(es) {got['cpu_workers']:.1f} s"
    )


def _ms(values: list[float]) -> str:
    ms = sorted(1000 * x for x in values)
    p90 = ms[min(len(ms) - 1, int(0.9 * len(ms)))]
    return f"median {statistics.median(ms):.1f} ms, p90 {p90:.1f} ms, max {ms[-1]:.1f} ms"


def print_replay(replaying: list[float], paused: list[float]) -> None:
    print(
        f"key-to-screen typing into the form, Run view replaying at 100 rows/s "
        f"({len(replaying)} presses): {_ms(replaying)}; replay paused: {_ms(paused)} "
        "(target median < 100 ms)"
    )


def print_startup(spectui_first: float, spectui_ready: float, bare_first: float) -> None:
    print(
        f"start-up to first screen (median of {STARTUP_RUNS}): spectui {spectui_first:.3f} s, "
        f"bare Textual app {bare_first:.3f} s, ratio {spectui_first / bare_first:.2f}"
    )
    print(
        f"start-up until the form can be edited: spectui {spectui_ready:.3f} s, ratio "
        f"{spectui_ready / bare_first:.2f} to the bare app's first screen"
    )


def _write_sweep_preset(folder: Path) -> None:
    """seed-576's grid at SWEEP_SEQUENCES sequences per configuration, as a user preset."""
    from engine.presets import SHIPPED_DIR

    seed = (SHIPPED_DIR / "seed-576.toml").read_text()
    folder.mkdir(parents=True, exist_ok=True)
    text = seed.replace("n_sequences = 500", f"n_sequences = {SWEEP_SEQUENCES}")
    assert text != seed
    (folder / f"{SWEEP_PRESET}.toml").write_text(text)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["SPECTUI_PRESET_DIR"] = str(Path(tmp) / "presets")
        os.environ["SPECTUI_RESULTS_DIR"] = str(Path(tmp) / "results")
        _write_sweep_preset(Path(tmp) / "presets")
        if "--regime-study" in sys.argv:
            regime_study()
            return
        if "--replay" in sys.argv:
            print_replay(*asyncio.run(replay_typing()))
            return
        spectui_first, spectui_ready, bare_first = startup_seconds()
        if "--startup" in sys.argv:
            print_startup(spectui_first, spectui_ready, bare_first)
            return
        # Interleaved, so that a busy machine slows both sides alike; medians reported.
        headless_runs, app_runs, quiet_runs, latencies = [], [], [], []
        for _ in range(SWEEP_RUNS):
            headless_runs.append(headless_sweep_seconds())
            in_app, pressed, rows = asyncio.run(app_sweep())
            app_runs.append(in_app)
            latencies += pressed
            quiet_runs.append(asyncio.run(app_sweep(press_keys=False))[0])
        replaying, paused = asyncio.run(replay_typing())
    from spectui.workers import worker_count

    headless, in_app = statistics.median(headless_runs), statistics.median(app_runs)
    quiet = statistics.median(quiet_runs)
    latencies_ms = sorted(1000 * x for x in latencies)
    p95 = latencies_ms[min(len(latencies_ms) - 1, int(0.95 * len(latencies_ms)))]
    print_startup(spectui_first, spectui_ready, bare_first)
    print(
        f"seed-576 sweep ({rows} configs x {SWEEP_SEQUENCES:,} sequences, median of "
        f"{SWEEP_RUNS}): headless {headless:.2f} s "
        f"(serial), in the app ({worker_count()} worker process(es)) {in_app:.2f} s "
        f"with a key every {KEY_INTERVAL_S:g} s (ratio "
        f"{in_app / headless:.2f}), {quiet:.2f} s untouched (ratio {quiet / headless:.2f}); "
        "target <= 1.5"
    )
    print(
        f"key-to-screen latency during the sweeps ({len(latencies_ms)} presses): median "
        f"{statistics.median(latencies_ms):.1f} ms, p95 {p95:.1f} ms, max "
        f"{latencies_ms[-1]:.1f} ms (target median < 100 ms)"
    )
    print_replay(replaying, paused)


if __name__ == "__main__":
    main()
