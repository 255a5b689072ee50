"""The Calibrate screen's input (:mod:`spectui.screens.calibrate`): the pasted text, a log
file's path (confined to the app's folders), the log K; each analysis runs in a thread worker
(:func:`spectui.screens.calibrate_analysis.run_analysis`), the newest one only."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from textual import work
from textual.timer import Timer
from textual.widgets import Input, TextArea

from engine.core.config import K_MAX, ascii_int
from spectui.confined import OutsideFiles, confine
from spectui.screens.calibrate_analysis import run_analysis
from spectui.screens.calibrate_panes import MARK_ERROR
from spectui.screens.calibrate_text import PASTED, source_label

if TYPE_CHECKING:
    from textual.screen import ModalScreen

    from engine.core.config import SpecConfig

    _Screen = ModalScreen[SpecConfig | None]
else:
    _Screen = object

# 1 2 3 show the panes only outside the text fields (in them, a digit is typed, as the log K
# and the log lines need): the hint says so, as the tabs' labels show the digits.
HINT = (
    "paste log lines above, or type a log file's path and press enter; "
    "1 2 3 show the panes from outside the text fields (tab leaves them)"
)
LOG_K_LABEL = "log K"


class CalibrateInput(_Screen):
    """Mixin for CalibrateScreen: reads the text, a file or the log K, and starts their
    analysis."""

    scenario: SpecConfig | None  # the form's configuration: None when it is invalid
    _timer: Timer | None  # the debounce of an edit to the text
    _generation: int  # the newest analysis started: an older one's news is dropped
    _last: tuple[str, str, str | None] | None  # what was analysed last

    if TYPE_CHECKING:

        def _status(self, text: str, error: bool = False) -> None: ...

    def analyse_now(self) -> None:
        """Analyse the pasted text now (a pending timer is dropped)."""
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        text = self.query_one("#cal-text", TextArea).text
        if not text.strip():
            self._generation += 1  # whatever is under way is stale
            self._status(HINT)
            return
        single = text.strip()
        if "\n" not in single and Path(single).expanduser().is_file():
            self.load_file(single)  # a path typed (or pasted) where the log goes
            return
        self._start(PASTED, text=text)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Enter in the path loads the file (or, empty, analyses the text); enter in the
        log K analyses the last input again with it."""
        event.stop()
        if event.input.id == "cal-k" and self._last is not None:
            source, text, path = self._last
            self._start(source, text=text, path=path)
            return
        path = self.query_one("#cal-path", Input).value.strip()
        if path:
            self.load_file(path)
        else:
            self.analyse_now()

    def load_file(self, path: str) -> None:
        """Parse and fit the log file at ``path`` (``~`` expanded)."""
        self.query_one("#cal-path", Input).value = path
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        try:
            confine(path)  # a served app opens its own folders only
        except OutsideFiles as err:
            self._status(str(err), error=True)
            return
        self._start(path, path=str(Path(path).expanduser()))

    def _log_k(self) -> int | None:
        """The log K typed in (None if empty); ValueError naming the field and its range
        if it is not an integer in [1, K_MAX] in ASCII digits."""
        field = self.query_one("#cal-k", Input)
        text = field.value.strip()
        k = None
        if text:
            try:
                k = ascii_int(text)
            except ValueError:
                k = 0
        wrong = k is not None and not 1 <= k <= K_MAX
        field.set_class(wrong, "-invalid")
        if wrong:
            raise ValueError(
                f"{LOG_K_LABEL}: {text!r} is not allowed; expected an integer in [1, {K_MAX}]"
            )
        return k

    def _start(self, source: str, *, text: str = "", path: str | None = None) -> None:
        self._last = (source, text, path)
        self._generation += 1  # whatever is under way is stale
        try:
            log_k = self._log_k()
        except ValueError as err:
            self._status(f"{MARK_ERROR} {err}", error=True)
            return
        self._status(f"{source_label(source)}: parsing…")
        self._analyse(self._generation, source, text, path, log_k, self.scenario)

    @work(thread=True, exclusive=True, group="calibrate", exit_on_error=False)
    def _analyse(
        self,
        generation: int,
        source: str,
        text: str,
        path: str | None,
        log_k: int | None,
        scenario: SpecConfig | None,
    ) -> None:
        """The analysis of one input, in a thread (:func:`run_analysis`): its news comes as
        messages; an unexpected error fails the worker (a notification)."""
        run_analysis(self.post_message, generation, source, text, path, log_k, scenario)
