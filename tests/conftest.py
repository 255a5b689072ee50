"""Shared fixtures: every test gets its own user directories, so tests never touch the real
~/.config or ~/.local, never see each other's files, and can run in parallel (pytest-xdist)
and in any order."""

from __future__ import annotations

import gc
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def _user_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache per test process: matplotlib builds its font cache there once, not per test."""
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(autouse=True)
def isolated_dirs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, _user_cache: Path
) -> tuple[Path, Path]:
    """User presets and results (the app's and the CLI's, in this process and in the
    subprocesses a test starts) go to this test's tmp_path, which is also the working
    directory; returns (presets, results)."""
    presets = tmp_path / "presets"
    results = tmp_path / "results"
    monkeypatch.setenv("SPECTUI_PRESET_DIR", str(presets))
    monkeypatch.setenv("SPECTUI_RESULTS_DIR", str(results))
    # Also for code that falls back on the XDG directories (and for the libraries we use).
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg-state"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(_user_cache))
    monkeypatch.delenv("MPLCONFIGDIR", raising=False)
    # A relative path (the CLI's default results/sweep_summary.csv) lands here too, not in
    # the repository, and not in a file another test process writes at the same time.
    monkeypatch.chdir(tmp_path)
    return presets, results


@pytest.fixture(autouse=True)
def _no_animations(monkeypatch: pytest.MonkeyPatch) -> None:
    """Apps made in tests jump to the end of every animation (a tab's underline, a scroll to
    the active tab, a progress bar's pulse): an animation ends after so much wall-clock
    time, which a test's rounds of the event loop may or may not have taken on a loaded
    machine ("8 Tree" not yet scrolled into view at 80 columns, seen in CI)."""
    from textual import constants

    monkeypatch.setattr(constants, "TEXTUAL_ANIMATIONS", "none")


_WARMING: list[subprocess.Popen[bytes]] = []


def pytest_configure(config: pytest.Config) -> None:
    """Under xdist, the controller starts compiling the serving simulator's step loop in a
    process of its own (about 5-7 s on a clean clone) as the workers start: the tests that
    run the loop after it is done load it from numba's cache instead of each compiling it
    (one that comes sooner compiles it itself; numba writes its cache files whole)."""
    # Fewer young-generation collections: the app tests allocate objects by the hundred
    # thousand, most of them short-lived (about 5 % of their CPU time, measured on three
    # app test files in one process: 25.1 and 25.8 s against 24.5 and 23.7 s).
    gc.set_threshold(100_000, 50, 1000)
    if hasattr(config, "workerinput") or not config.getoption("numprocesses", None):
        return
    code = "from engine.serve.compiled import warm; warm()"
    _WARMING.append(
        subprocess.Popen([sys.executable, "-c", code], cwd=Path(__file__).parent.parent)
    )


def pytest_unconfigure(config: pytest.Config) -> None:
    """No process outlives the run: the compiling one has long finished (or is stopped)."""
    for process in _WARMING:
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown() -> None:
    """After each test, its garbage is collected and what is left (modules, caches, module
    fixtures) is frozen: the cyclic GC's full passes then scan only what later tests make,
    not the whole process. An app test makes hundreds of thousands of objects; without
    this the GC took about a sixth of the app tests' CPU time, and more as the process grew."""
    gc.collect()
    gc.freeze()


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish() -> None:
    """Collect garbage now, then freeze what is left, so that pytest's own collections at
    exit (5 full passes, looking for unraisable exceptions) skip the hundreds of thousands
    of objects the app tests leave. Under load those passes took over 5 s in an xdist
    worker, after it had reported its results: execnet then sends the worker SIGINT
    (a KeyboardInterrupt printed at the end of `make test`). Finalizers that fail in this
    collection are still reported: pytest's hook is installed until its cleanup."""
    gc.collect()
    gc.freeze()


# Property tests draw the same examples on every run: a red test is reproducible, and
# statistical tolerances are judged on a fixed set of seeds.
from hypothesis import settings  # noqa: E402

settings.register_profile("spectui", derandomize=True, deadline=None, print_blob=True)
settings.load_profile("spectui")


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """Run ``spectui ARGS`` in this process at 80 columns without colour: a function of the
    arguments giving (exit status, stdout, stderr); argparse's exits are statuses too."""
    from spectui.cli import main

    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "80")

    def invoke(*args: str) -> tuple[int, str, str]:
        try:
            status = main(list(args))
        except SystemExit as exit_:
            status = int(exit_.code or 0)
        out = capsys.readouterr()
        return status, out.out, out.err

    return invoke


def _idle(pump) -> bool:  # type: ignore[no-untyped-def]
    """Whether a message pump (the app, a screen, a widget) is waiting for its next
    message with none queued: its task is suspended in its queue's ``get``, nothing is held
    aside and no callback waits for the end of the current message. (A pump in the middle
    of a handler, or of its idle handlers, or not started, is not idle.)"""
    queue = pump.__dict__.get("_message_queue")
    task = getattr(pump, "_task", None)
    if queue is None or task is None or queue.values or pump._next_callbacks:
        return False
    waiter = task._fut_waiter
    return (
        pump._pending_message is None
        and waiter is not None
        and waiter in queue.ready_event._waiters
    )


@pytest.fixture(autouse=True, scope="session")
def _pause_waits_only_on_busy_widgets() -> Iterator[None]:
    """``Pilot.pause`` waits until the screen's widgets have handled what was queued for
    them: Textual posts a callback to every one and waits for all (on the main screen ~150
    callbacks, each followed by an idle event: about half the app tests' CPU went to
    pauses). Here only the busy ones are asked. A widget with nothing queued and nothing in
    hand has handled everything queued for it already (the event loop runs one task at a
    time: while this runs, such a widget is waiting for its next message). The rest of the
    wait is Textual's own (textual.pilot.Pilot._wait_for_screen, Textual 8)."""
    import asyncio

    from textual.pilot import Pilot, WaitForScreenTimeout

    original = Pilot._wait_for_screen

    async def wait_for_screen(self: Pilot, timeout: float = 30.0) -> bool:
        try:
            screen = self.app.screen
        except Exception:
            return False
        busy = [p for p in (self.app, *screen.walk_children(with_self=True)) if not _idle(p)]
        count = 0
        done = asyncio.Event()

        def decrement_counter() -> None:
            nonlocal count
            count -= 1
            if count == 0:
                done.set()

        for pump in busy:
            if pump.call_later(decrement_counter):
                count += 1
        if count:
            wait_for = [
                asyncio.create_task(done.wait()),
                asyncio.create_task(self.app._exception_event.wait()),
            ]
            _, pending = await asyncio.wait(
                wait_for, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
            )
            for task in pending:
                task.cancel()
            if len(wait_for) == len(pending):
                raise WaitForScreenTimeout(
                    "Timed out while waiting for widgets to process pending messages."
                )
            if count > 0:
                return False
        return True

    Pilot._wait_for_screen = wait_for_screen  # type: ignore[method-assign]
    yield
    Pilot._wait_for_screen = original  # type: ignore[method-assign]


@pytest.fixture(autouse=True, scope="session")
def _headless_screens_render_when_read() -> Iterator[None]:
    """A headless app (Textual's ``run_test``) renders each update of its screen and then
    throws it away: there is no terminal. About a quarter of the app tests' CPU went there.
    Here the update is not rendered; what a test reads is rendered then, in full, from the
    same widgets (``tests.app.screen`` reads ``render_strips``, snapshots and the colour
    test a full ``render_update``, as the terminal would be written on the first frame).
    Layout, styles, messages and timers run as they do in a terminal; only the discarded
    partial renders are skipped (textual.screen.Screen._compositor_refresh, Textual 8)."""
    from textual.screen import Screen

    original = Screen._compositor_refresh

    def refresh(self: Screen) -> None:
        app = self.app
        if app.is_headless and not app.is_inline and self is app.screen:
            self._compositor._dirty_regions.clear()
            self._dirty_widgets.clear()
            app._update_mouse_over(self)
            return
        original(self)

    Screen._compositor_refresh = refresh  # type: ignore[method-assign]
    yield
    Screen._compositor_refresh = original  # type: ignore[method-assign]


@pytest.fixture(autouse=True, scope="session")
def _css_parsed_once_per_process() -> Iterator[None]:
    """Each app parses its stylesheet (its own CSS and every widget's default CSS) when it
    starts, and again in a fresh stylesheet at each reparse: ~5 % of the app tests' CPU,
    for the same text every time. Here the parsed rules of one text (under the same
    variables, from the same place) are kept for the test process; Textual keeps them per
    stylesheet the same way (textual.css.stylesheet.Stylesheet._parse_rules, Textual 8), and
    a rule set is not changed once parsed."""
    from textual.css.stylesheet import Stylesheet

    original = Stylesheet._parse_rules
    parsed: dict[tuple[object, ...], list[object]] = {}

    def parse_rules(  # type: ignore[no-untyped-def]
        self: Stylesheet, css: str, read_from, is_default_rules=False, tie_breaker=0, scope=""
    ):
        key = (
            css,
            read_from,
            is_default_rules,
            tie_breaker,
            scope,
            tuple(sorted(self._variables.items())),
        )
        rules = parsed.get(key)
        if rules is None:
            rules = parsed[key] = original(
                self, css, read_from, is_default_rules, tie_breaker, scope
            )
        return rules

    Stylesheet._parse_rules = parse_rules  # type: ignore[method-assign]
    yield
    Stylesheet._parse_rules = original  # type: ignore[method-assign]
