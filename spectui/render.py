"""Rich renderings for the command line: run summary, sweep progress, analysis tables."""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Collection, Iterable
from typing import Any

import pandas as pd
from rich import box
from rich.console import Console, Group
from rich.panel import Panel
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text

from engine.analysis.formatting import PENDING_MARK, cell_text, speedup_text
from engine.analysis.report import Section, analysis_sections, original_findings
from engine.core.runs import RunResult
from engine.presets import Preset, PresetError
from spectui.colours import heat_style


def console(stderr: bool = False) -> Console:
    return Console(stderr=stderr, no_color=bool(os.environ.get("NO_COLOR")) or None)


def _num(value: float, digits: int = 3) -> str:
    return "n/a" if value is None or math.isnan(value) else f"{value:.{digits}f}"


def _us(value: float) -> str:
    """Microseconds: three decimals below 100 us, one with thousands separators above."""
    return f"{value:.3f} us" if abs(value) < 100 else f"{value:,.1f} us"


def _speedup(value: float) -> str:
    return speedup_text(value, 3, unit="")


def run_summary(result: RunResult, assumed: bool = False) -> Panel:
    """One run: its configuration and every metric, Monte Carlo beside exact; ``assumed``:
    nothing gave the acceptance (spectui.cli.flags.choose_acceptance), the title says so."""
    from engine.analysis.formatting import acceptance_text, cost_setting_text, policy_text
    from engine.core.config import part_fields
    from engine.core.kernel import cycle_costs
    from engine.core.parts import COST, POLICY, PROPOSER, SHAPE
    from engine.simulate.exact import tokens_per_cycle_at_length

    c, m = result.config, result.metrics
    stepwise, tree_shape = POLICY.of(c).stepwise, SHAPE.of(c).tree
    proposer = PROPOSER.of(c)
    table = Table(show_header=True, box=None, pad_edge=False)
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_column("", style="dim")
    rows = [
        (
            "speedup (Monte Carlo)",
            f"{_speedup(m['speedup'])} ± {_num(m['speedup_ci95'])}",
            "95 % CI",
        ),
        ("speedup (exact)", _speedup(m["speedup_exact"]), f"at {c.tokens_per_seq} tokens/seq"),
        (
            "speedup (limit)",
            _speedup(m["speedup_limit"]),
            "as sequences grow long"
            if not COST.of(c).context_dependent
            else f"steady state at context {c.prompt_len}",
        ),
        (
            "tokens per cycle",
            _num(m["tokens_per_cycle"]),
            # The exact value of this run's own tail rule and length (the long-run, full-K
            # tokens_per_cycle_exact differs under "clamp").
            f"exact {_num(tokens_per_cycle_at_length(c))} at this length",
        ),
        ("acceptance observed", _num(m["acceptance_observed"]), "accepted / drafted"),
        ("waste", _num(m["waste"]), "drafts not kept / drafted"),
        ("draft time fraction", _num(m["draft_time_fraction"]), ""),
        ("compute overhead", _num(m["compute_overhead"]), "extra work per emitted token"),
        ("break-even cost ratio", _num(m["breakeven_cost_ratio"]), "exact, this K, linear cost"),
        ("cycles", f"{int(m['cycles']):,}", ""),
        ("speculative time", f"{m['spec_time_us'] / 1e3:,.1f} ms", ""),
        ("baseline time", f"{m['baseline_time_us'] / 1e3:,.1f} ms", ""),
    ]
    costs = cycle_costs(c)
    at = f"K={c.k}, context {c.prompt_len}"
    if stepwise:  # the policy chooses each cycle's k: a full cycle of K
        at = f"a cycle of K={c.k}, context {c.prompt_len}"
    draft_us, verify_us, width = costs.limit_draft_us, costs.limit_verify_us, c.k + 1
    bound = costs.bound
    if tree_shape:  # the tree's own cycle, at the prompt's context
        from engine.simulate.tree_scenario import tree_cycle

        tree = tree_cycle(c)
        draft_us, verify_us, width, bound = (
            tree.draft_us,
            tree.verify_us,
            tree.nodes + 1,
            tree.bound,
        )
        at = f"{tree.nodes} nodes, depth {tree.depth}, context {c.prompt_len}"
    draft_row = ("draft time / cycle", _us(draft_us), at)
    if proposer.model_free:  # no draft pass: a CPU look-up every step, hit or not
        draft_row = ("look-up / step", _us(proposer.lookup_us(c)), "CPU, every step, hit or not")
    rows += [
        draft_row,
        ("verify time / cycle", _us(verify_us), f"{width} tokens/seq"),
        ("decode step", _us(costs.limit_step_us), "the baseline's, same context"),
    ]
    if "draft_cost_us" not in part_fields("cost.model", c.cost_model):
        # The break-even ratio is draft_cost_us / verify_cost_us: a model that reads them.
        rows = [r for r in rows if r[0] != "break-even cost ratio"]
    if bound != "-":
        rows.append(("verify pass", f"{bound}-bound", f"batch {c.batch_size}"))
    for row in rows:
        table.add_row(*row)
    policy = f"policy {policy_text(c)}" if stepwise else f"K={c.k}"
    drafting = f"{acceptance_text(c)}{' assumed' if assumed else ''}, {policy}"
    if tree_shape:
        drafting = f"tree {c.tree} (rank probabilities {c.rank_probs})"
    cost_text = cost_setting_text(c)
    if proposer.model_free:  # the cost prices the verify passes; no draft model drafts
        drafting = f"{drafting}, {proposer.label(c)}"
        cost_text = f"{cost_text}; its draft unused (no draft pass)"
    title = (
        f"{drafting}, {cost_text}, {c.n_sequences} x "
        f"{c.tokens_per_seq} tokens, seed {c.seed}, tail {c.tail}"
    )
    lines = [Text(title, style="bold")]
    lines += [Text(f"warning: {w}", style="yellow") for w in costs.warnings]
    return Panel(Group(*lines, table), title="spectui run", title_align="left")


class RateColumn(ProgressColumn):
    """Configurations per second."""

    def render(self, task: Any) -> Text:
        return Text(f"{task.speed:.0f}/s" if task.speed else "–/s", style="cyan")


class SweepProgressBar:
    """A rich progress bar (count, rate, ETA) on a terminal; plain lines otherwise."""

    def __init__(self, total: int, description: str) -> None:
        self.total, self.description = total, description
        self.tty = sys.stderr.isatty()
        self._progress: Progress | None = None
        self._last_line = 0.0

    def __enter__(self) -> SweepProgressBar:
        if self.tty:
            self._progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TaskProgressColumn(),
                RateColumn(),
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                console=console(stderr=True),
            )
            self._progress.start()
            self._task = self._progress.add_task(self.description, total=self.total)
        else:
            print(f"sweep {self.description}: {self.total} configurations", file=sys.stderr)
        return self

    def advance(self, done: int) -> None:
        if self._progress is not None:
            self._progress.update(self._task, completed=done)
            return
        now = time.monotonic()
        if done == self.total or now - self._last_line >= 2.0:
            self._last_line = now
            print(f"{done}/{self.total}", file=sys.stderr, flush=True)

    def __exit__(self, *exc: Any) -> None:
        if self._progress is not None:
            self._progress.stop()


def plain_table(names: Iterable[str], left: Collection[str] = ()) -> Table:
    """The commands' tables: no frame, a bold header over a rule, one column per name
    (plain text, never markup: ``E[n+1]``), numbers to the right and the ``left`` ones
    (words) to the left."""
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, header_style="bold", pad_edge=False)
    for name in names:
        table.add_column(Text(name), justify="left" if name in left else "right")
    return table


def frame_table(frame: pd.DataFrame, index: bool = False) -> Table:
    table = Table(show_header=True, header_style="bold")
    data = frame.reset_index() if index else frame
    for name in data.columns:
        table.add_column(str(name), justify="right")
    speedups = ["speedup" in str(name) for name in data.columns]
    for row in data.itertuples(index=False):
        table.add_row(
            *(
                (_num(v) if not is_speedup or math.isnan(v) else _speedup(v))
                if isinstance(v, float)
                else str(v)
                for v, is_speedup in zip(row, speedups, strict=True)
            )
        )
    return table


def heatmap_table(grid: pd.DataFrame, no_color: bool = False) -> Table:
    """An optimal-K grid (engine.analysis.plot_data.optimal_k_heatmap) as a rich table: each cell's
    text from engine.analysis.formatting.cell_text on the speedup scale of spectui.colours."""
    table = Table(show_header=True, header_style="bold")
    table.add_column(", ".join(grid.attrs.get("row_parameters", [])), justify="right")
    costs = grid.attrs.get("costs", [])
    for label in grid.attrs.get("column_labels") or [f"{c:g} us" for c in costs]:
        table.add_column(label, justify="center")
    found = {(int(r["row"]), int(r["column"])): r for _, r in grid.iterrows()}
    for i, label in enumerate(grid.attrs.get("row_labels", [])):
        cells: list[Any] = []
        for j in range(len(costs)):
            cell = found.get((i, j))
            if cell is None:
                cells.append(PENDING_MARK)
            else:
                style = heat_style(float(cell["speedup_opt"]), no_color)
                cells.append(Text(f" {cell_text(cell)} ", style=style))
        table.add_row(label, *cells)
    return table


def _section(section: Section) -> Panel:
    parts: list[Any] = [Text(line) for line in section.lines]
    if section.verdict:
        style = {"confirmed": "green", "contradicted": "bold red"}.get(section.verdict, "yellow")
        parts.insert(0, Text(section.verdict, style=style))
    if section.table is not None and len(section.table):
        if section.grid is not None:
            parts.append(heatmap_table(section.grid, no_color=bool(os.environ.get("NO_COLOR"))))
        else:
            parts.append(frame_table(section.table))
    return Panel(Group(*parts), title=section.title, title_align="left")


def analysis_renderables(frame: pd.DataFrame) -> list[Panel]:
    panels = [_section(s) for s in analysis_sections(frame)]
    panels.append(Panel("checked against this sweep", title="The original's findings"))
    panels += [_section(s) for s in original_findings(frame)]
    return panels


def presets_table(presets: list[Preset | PresetError]) -> Table:
    table = Table(show_header=True, header_style="bold")
    for name in ("name", "runs", "description"):
        table.add_column(name)
    for preset in presets:
        if isinstance(preset, PresetError):
            name = preset.path.stem if preset.path is not None else "?"
            table.add_row(name, "unreadable", Text(f"error: {preset}", style="red"))
        else:
            runs = f"sweep of {preset.size()}" if preset.is_sweep else "1 run"
            table.add_row(preset.name, runs, preset.description)
    return table
