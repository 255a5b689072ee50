"""Several snapshots from one app session, each compared with its own baseline file.

pytest-textual-snapshot's ``snap_compare`` boots an app for every snapshot. Here one app
(booted as ``snap_compare`` boots it: ``App.run`` headless, at the terminal's size) is driven
through a script; at each step :func:`screenshot` takes the screen exactly as
``snap_compare`` would at the end of its ``run_before``, and :class:`Baselines` compares it
with the file ``snap_compare`` uses (same directory, same name, same normalisation, via
syrupy: ``--snapshot-update`` rewrites the files, unused ones are reported as usual).
A mismatch is reported after every snapshot of the test has been compared: which ones,
the first rows of the screen that differ, and the plugin's HTML report (snapshot_report.html).
"""

from __future__ import annotations

import difflib
import html
import inspect
import pickle
import re
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from pytest_textual_snapshot import (
    PseudoApp,
    PseudoConsole,
    SVGImageExtension,
    node_to_report_path,
)
from rich.console import Console

from tests.app.helpers import settle, until

Step = Callable[[Any], Awaitable[None]]


class NamedSVG(SVGImageExtension):
    """pytest-textual-snapshot's SVG files, named by the index given to the assertion (the
    name ``snap_compare`` gives them: ``test_name[params]``), not by this test's name."""

    @classmethod
    def get_snapshot_name(cls, *, test_location: Any, index: Any = 0) -> str:
        return str(index)


async def screenshot(pilot) -> str:
    """The screen as ``snap_compare`` takes it once its ``run_before`` has returned
    (textual._doc.take_svg_screenshot, no keys pressed)."""
    await pilot.pause()
    await pilot.press()
    await pilot.wait_for_scheduled_animations()
    await pilot.pause()
    await pilot.pause()
    await pilot.wait_for_scheduled_animations()
    return str(pilot.app.export_screenshot(title=pilot.app.title, simplify=True))


async def quiet(pilot) -> None:
    """No toasts (they name tmp paths) and no blinking cursor in the snapshot."""
    from textual.widgets import Input

    await settle(pilot, pilot.app)
    pilot.app.clear_notifications()
    for field in pilot.app.query(Input):
        field.cursor_blink = False
    await pilot.pause()


async def plots_drawn(pilot) -> None:
    """Until the Plots view has drawn its current plot for its canvas's size now (ticks
    are spaced for the size; a resize redraws after a refresh), with no redraw pending."""
    view = pilot.app._plots_view()
    canvas = view.query_one("#plots-canvas")
    await until(
        pilot,
        lambda: (
            view.frame is not None
            and canvas.size.area > 0
            and view.drawn_size == canvas.size
            and view._timer is None
            and not view._stale
        ),
    )
    await settle(pilot, pilot.app)


def run_session(app, size: tuple[int, int], script: Step) -> None:
    """Run ``app`` headless at ``size`` (as ``snap_compare`` does) and drive it with
    ``script(pilot)``; the app exits when the script returns (or raises)."""

    async def auto_pilot(pilot) -> None:
        try:
            await script(pilot)
        finally:
            pilot.app.exit()

    app.run(headless=True, size=size, auto_pilot=auto_pilot)
    if app._exception is not None:  # pragma: no cover - the app crashed: say how
        raise app._exception


_ROW = re.compile(r'<text [^>]*\by="([\d.]+)"[^>]*>([^<]*)</text>')


def _rows(svg: str) -> list[str]:
    """The screen's text, row by row, as read back from an SVG (for failure messages)."""
    rows: dict[float, list[str]] = {}
    for y, text in _ROW.findall(svg):
        rows.setdefault(float(y), []).append(html.unescape(text).replace("\xa0", " "))
    return ["".join(parts).rstrip() for _, parts in sorted(rows.items())]


def _difference(expected: str | None, svg: str) -> str:
    """Where ``svg`` differs from the baseline: the screen rows whose text differs, else
    (same text, other colours or styles) the first SVG line that differs."""
    if expected is None:
        return "(no baseline file)"
    old, new = _rows(expected), _rows(svg)
    diff = list(difflib.unified_diff(old, new, "baseline", "now", n=0, lineterm=""))
    if diff:
        return "\n".join(diff[:40])
    for line, (was, now) in enumerate(
        zip(expected.splitlines(), svg.splitlines(), strict=False), 1
    ):
        if was != now:
            return f"same text, other styles; SVG line {line}:\n- {was[:200]}\n+ {now[:200]}"
    return "same text; the SVGs differ in length"


class Baselines:
    """The snapshots of one test: :meth:`check` each, then :meth:`verify` once."""

    def __init__(self, snapshot, request: pytest.FixtureRequest) -> None:
        self.snapshot = snapshot.use_extension(NamedSVG)
        self.request = request
        self.checked: list[str] = []
        self.failed: list[str] = []

    def check(self, name: str, svg: str) -> bool:
        """Compare ``svg`` with the baseline ``name`` (queued for writing under
        ``--snapshot-update``); remember a mismatch for :meth:`verify`."""
        self.checked.append(name)
        matched = bool(self.snapshot(name=name) == svg)
        expected = self.snapshot.executions[self.snapshot.num_executions - 1].recalled_data
        self._report(name, matched, expected, svg)
        if not matched:
            self.failed.append(f"{name}:\n{_difference(expected, svg)}")
        return matched

    def verify(self) -> None:
        """Fail, naming every snapshot that differs from its baseline."""
        if self.failed:
            pytest.fail(
                f"{len(self.failed)} snapshot(s) differ from their baseline "
                "(see snapshot_report.html; update with --snapshot-update):\n\n"
                + "\n\n".join(self.failed),
                pytrace=False,
            )

    def _report(self, name: str, matched: bool, expected: Any, svg: str) -> None:
        """Leave what the plugin's HTML report needs, as ``snap_compare`` does."""
        node = self.request.node
        console = Console(legacy_windows=False, force_terminal=True)
        full_path, line_number, _ = node.reportinfo()
        data = (
            matched,
            str(expected),
            svg,
            PseudoApp(PseudoConsole(console.legacy_windows, console.size)),
            full_path,
            line_number,
            name,
            inspect.getdoc(node.function) or "",
            "",
            expected is not None,
        )
        path = node_to_report_path(node)
        path.with_name(f"{path.name}_{name}").write_bytes(pickle.dumps(data))
