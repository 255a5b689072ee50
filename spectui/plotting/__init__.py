"""The six plots of a sweep: PNG files (matplotlib, optional) and terminal drawings (plotext).

The data behind each plot comes from :mod:`engine.analysis.plot_data`; this package only draws it.
``images`` needs matplotlib (the ``images`` extra) and is imported only when PNGs are asked
for; ``terminal`` needs plotext (a core dependency).
"""

from __future__ import annotations

from pathlib import Path


def plot_command(csv_path: Path, out_dir: Path | None, terminal: bool) -> list[Path]:
    """``spectui plot FILE [--out DIR] [--terminal]``: the six plots of a sweep CSV.

    Reads ``csv_path`` with :func:`engine.analysis.analysis.read_sweep_csv` (raises
    :class:`engine.analysis.analysis.SweepDataError` naming the file and the problem). When
    ``out_dir``
    is given, writes ``01_speedup_vs_k_fixed.png`` ... ``06_optimal_k_heatmap.png`` into it
    (created if needed) and returns their paths, in order; raises
    :class:`spectui.plotting.images.MatplotlibMissingError` (a ``spectui.errors.UsageError``) when
    matplotlib is not installed. When ``terminal`` is true, prints the six plots to stdout.
    Returns ``[]`` when no ``out_dir`` is given.
    """
    from engine.analysis.analysis import read_sweep_csv

    frame = read_sweep_csv(Path(csv_path))
    written: list[Path] = []
    if out_dir is not None:
        from .images import write_pngs

        written = write_pngs(frame, Path(out_dir))
    if terminal:
        from .terminal import print_all

        print_all(frame)
    return written
