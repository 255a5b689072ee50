"""The help screen: the model in a few sentences, and every key."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Markdown

# On the help's frame, in sight before any scrolling (the page is longer than a screen).
CLOSE_HINT = "Help · escape, q or F1 closes it · ↑ ↓ scroll"

HELP_TEXT = """\
# spectui: speculative decoding, cycle by cycle

A **draft** model proposes *K* tokens (each costs `draft_cost_us`); the **target** model
verifies them in one pass (`verify_cost_us`). Position *i* is accepted with probability
*p_i* (from the draft model); the first rejection ends the check. Every cycle emits the
accepted drafts plus one token from the verifier. **Speedup** is the time of plain
decoding (one verify pass per token) over the speculative time, for the same tokens.
Exact figures come from a dynamic program; Monte Carlo runs sample every accept test.
The **cost model** prices a cycle: `linear` (the costs above, plus `verify_token_us` per
draft checked), `roofline` / `roofline_max` (from a GPU's and the models' specs, by batch
size and context length) or `table` (measured latencies). The **Regime** view maps the
optimal K over batch size and context length, and marks where no K pays. The **Arena**
view runs K policies (fixed, Hugging Face's heuristic, goodput, thresholds, the oracle...)
on the form's scenario with the same random numbers: a leaderboard, best first, and the
per-cycle trace of the highlighted policy: the k it drafted, what was accepted, and for
the markov model the cycles spent in the easy regime. The **Tree** view draws the
scenario's draft tree, each node labelled with its rank and path probability (`r1 0.72`),
marks (`✓`) the accepted path of a sampled cycle, and maps the best tree size (Sequoia
budget) and the chain's best K by batch size.

## Keys

| key | where | does |
| --- | --- | --- |
| `F1` `?` | anywhere | this help; `F1` in a form field: that field's help first |
| `ctrl+p` | anywhere | command palette: every action, every preset |
| `1` … `8` | outside a field | the view whose tab shows the key (`2Speed`: Speedup vs K) |
| `F2` | anywhere | focus the parameter form |
| `F3` | anywhere | focus the current view |
| `ctrl+b` | anywhere | hide / show the form panel (more room at 80x24) |
| `F5` `ctrl+r` | anywhere | run the Monte Carlo for the form |
| `F6` | anywhere | start the chosen sweep |
| `F7` | anywhere | run the arena: the preset's `[[arena]]` policies, else the default set |
| `F8` | anywhere | calibrate: paste or open a serving log; the windows, the fit, the K to use |
| `ctrl+g` | anywhere | the acceptance catalog: filter by method, target, draft, dataset \
(`c` clears); a setup's fitted M by K, its errors and sources; `f` sends the fit to the form |
| `F4` | anywhere | copy what is current (below) to the clipboard |
| `F9` | anywhere | pin the form's result to compare with as the form changes; again: unpin |
| `1` `2` `3` | Calibrate, outside a text field (`tab`) | windows, fit, recommendation |
| `f` `ctrl+f` | Calibrate | send the model to the form (`ctrl+f` in a text field) |
| `ctrl+o` | anywhere | load a preset (picker) |
| `ctrl+s` | anywhere | save the form as a preset (enter saves, escape cancels) |
| `tab` / `shift+tab` | anywhere | next / previous field or widget |
| `r` `e` `+` `-` `p` `x` | Run view | run, run to end, faster, slower, pause, export CSV |
| `c` `f` | Speedup view | cycle comparison overlay, back to the form's curve |
| `s` `m` `enter` | Sweep view | start, next model's heatmap, the cell's curve |
| `escape` | while a task runs | stop a run, else a sweep, else the arena; finished results stay |
| `n` `p` `m` `d` | Plots view | next / previous plot, heatmap model, plot 1: more panels |
| `↑` `↓` `[` `]` `l` | Arena view | the policy traced; earlier / later cycles; the columns |
| `s` `↑` `↓` | Tree view | sample another cycle (its accepted path marked `✓`); move in the tree |
| `escape` `q` `F1` | this help | close it |
| `ctrl+q` | anywhere | quit |

In the form, `▶` marks the field that has the focus and `✗` a field whose value is not
allowed (its reason is just below it); a run or a save waits until no field is
marked `✗`. A failed background task (a run, a curve, a sweep) says why in a notification.

In a form field, `F1` shows the field's help, unit and allowed values (what its tooltip
says), above this page. The form's `draft/tk` is the cost of one draft pass, per draft
token; the Exact panel's `draft us` is a whole cycle's drafting.

## Copy and pin

`F4` copies to the terminal's clipboard (OSC 52, which works over SSH; not in macOS
Terminal) and a notification says what it copied. What is current, first match:

* on the Calibrate screen: the recommended K's engine flags, one line per engine;
* right after a file is written (a Run export `x`, a saved preset, a finished sweep),
  before the form changes or a run starts: that file's path, once;
* in a focused table (the Run view's cycles, the Arena's board, a heatmap, Calibrate's
  windows): the highlighted row, its cells tab-separated;
* else: the form as a `spectui run ...` command (each argument quoted for the shell), which
  runs the same configuration.

The palette (`ctrl+p`) also has *Copy command line* and *Copy file path* (the newest file).

`F9` pins the form's result: its exact Speedup curve, K* and, if the Run view shows a run
of it, the run's cards. Change the form: the Speedup view draws the pinned curve (`o`)
behind the form's and names it in the legend; under the Run view's cards, the difference
in speedup (Monte Carlo when both have a run, else exact), K* then and now, and the fields
changed. `F9` again unpins.

In the heatmap each cell shows K* and its speedup; `≈` marks a tie (the best two K are
within sampling noise), `✗` a cell where even K* is slower than the baseline, `…` a cell
whose K values are not all finished yet.

Press `escape`, `q` or `F1` to close.
"""


class HelpScreen(ModalScreen[None]):
    """A modal page of help text."""

    BINDINGS = [
        Binding("escape,q,f1,question_mark", "dismiss", "Close", show=True),
    ]

    def __init__(self, field: str | None = None) -> None:
        """``field``: the key of the form field focused when help was asked for; its help,
        unit and allowed values come first."""
        super().__init__()
        self.field = field

    def compose(self) -> ComposeResult:
        text = HELP_TEXT
        if self.field is not None:
            from spectui.widgets.param_form import field_help

            text = f"{field_help(self.field)}\n\n{HELP_TEXT}"
        with VerticalScroll(id="help-body") as body:
            body.border_title = CLOSE_HINT
            yield Markdown(text)

    def action_dismiss(self, result: None = None) -> None:  # type: ignore[override]
        self.dismiss(None)
