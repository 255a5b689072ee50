"""The six plots of a sweep: PNG files (matplotlib, optional) and terminal drawings (plotext).

The data behind each plot comes from :mod:`engine.plot_data`; this package only draws it.
``images`` needs matplotlib (the ``images`` extra) and is imported only when PNGs are asked
for; ``terminal`` needs plotext (a core dependency).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

TIE_MARK = "≈"
LOSE_MARK = "✗"
PARTIAL_MARK = "?"
HEATMAP_LEGEND = (
    f"{TIE_MARK}K: other K within sampling noise of the best (tied K listed); "
    f"{LOSE_MARK} / hatched: even K* is slower than the baseline (speedup < 1)"
)
PARTIAL_LEGEND = f"{PARTIAL_MARK}: provisional, the cell does not have every K yet"


def k_star_text(cell: Any, prefix: bool = False) -> str:
    """'7', or '≈7' when another K is within sampling noise of K* (a tie).

    With ``prefix``: 'K*=7' or 'K*≈7'.
    """
    tie = bool(cell["tie"])
    k = int(cell["k_opt"])
    if prefix:
        return f"K*{TIE_MARK if tie else '='}{k}"
    return f"{TIE_MARK if tie else ''}{k}"


def speedup_text(value: float) -> str:
    """A speedup as '1.63x' (three significant digits near 1, where it matters)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:.3f}x" if abs(value - 1.0) < 0.05 else f"{value:.2f}x"


def plot_command(csv_path: Path, out_dir: Path | None, terminal: bool) -> list[Path]:
    """``spectui plot FILE [--out DIR] [--terminal]``: the six plots of a sweep CSV.

    Reads ``csv_path`` with :func:`engine.analysis.read_sweep_csv` (raises
    :class:`engine.analysis.SweepDataError` naming the file and the problem). When ``out_dir``
    is given, writes ``01_speedup_vs_k_fixed.png`` ... ``06_optimal_k_heatmap.png`` into it
    (created if needed) and returns their paths, in order; raises
    :class:`spectui.plotting.images.MatplotlibMissingError` (a ``spectui.errors.UsageError``) when
    matplotlib is not installed. When ``terminal`` is true, prints the six plots to stdout.
    Returns ``[]`` when no ``out_dir`` is given.
    """
    from engine.analysis import read_sweep_csv

    frame = read_sweep_csv(Path(csv_path))
    written: list[Path] = []
    if out_dir is not None:
        from .images import write_pngs

        written = write_pngs(frame, Path(out_dir))
    if terminal:
        from .terminal import print_all

        print_all(frame)
    return written
