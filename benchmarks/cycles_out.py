"""Time `spectui run --cycles-out FILE` against the run alone (not part of the test run).

    .venv/bin/python benchmarks/cycles_out.py [--sequences N] [--rounds N]

Default configuration (K = 5, T = 128; 100,000 sequences are about 3.5 M cycles), timed two
ways, each the best of ``rounds``:

- as whole CLI processes (``python -m spectui run``, imports included): the run alone, with
  a CSV file, with a Parquet file;
- in this process (imports done): ``simulate`` alone, and streaming its records through
  :func:`engine.simulate.cycles_file.cycles_writer` to CSV and to Parquet.

Each file is written anew (the last round's is removed first, untimed).

Each file's ratio to the run alone is the figure issue #11 asks about (target: within 3x).
Parquet figures are None without pyarrow. :func:`measure` returns every figure in a dict.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.core.config import SpecConfig
from engine.simulate.cycles_file import cycles_writer, parquet_available
from engine.simulate.simulator import simulate


def _best(func: Callable[[], object], rounds: int, out: Path | None = None) -> float:
    """The shortest of ``rounds`` wall-clock times of ``func()``, seconds. ``out`` is
    removed before each (untimed): a file written anew, not over the last round's."""
    times = []
    for _ in range(rounds):
        if out is not None:
            out.unlink(missing_ok=True)
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return min(times)


def _cli(sequences: int, out: Path | None) -> None:
    args = [sys.executable, "-m", "spectui", "run", "--n-sequences", str(sequences)]
    if out is not None:
        args += ["--cycles-out", str(out)]
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, env={**os.environ, "NO_COLOR": "1"})


def _streamed(config: SpecConfig, out: Path) -> None:
    with cycles_writer(out, config) as write:
        simulate(config, on_cycles=write)


def measure(sequences: int = 100_000, rounds: int = 3) -> dict[str, float | int | None]:
    """Seconds (best of ``rounds``), ratios to the run alone, file sizes and the peak traced
    memory of streaming the CSV file, for a default run of ``sequences`` sequences."""
    config = SpecConfig(n_sequences=sequences)
    parquet = parquet_available()
    figures: dict[str, float | int | None] = {"sequences": sequences}
    simulate(SpecConfig(n_sequences=100))  # warm up: imports, cost tables
    with tempfile.TemporaryDirectory() as tmp:
        csv, pq = Path(tmp) / "cycles.csv", Path(tmp) / "cycles.parquet"
        figures["cycles"] = int(simulate(config).metrics["cycles"])

        figures["cli_run_s"] = _best(lambda: _cli(sequences, None), rounds)
        figures["cli_csv_s"] = _best(lambda: _cli(sequences, csv), rounds, csv)
        figures["cli_parquet_s"] = (
            _best(lambda: _cli(sequences, pq), rounds, pq) if parquet else None
        )

        figures["run_s"] = _best(lambda: simulate(config), rounds)
        figures["csv_s"] = _best(lambda: _streamed(config, csv), rounds, csv)
        figures["parquet_s"] = _best(lambda: _streamed(config, pq), rounds, pq) if parquet else None

        for kind in ("csv", "parquet"):
            for prefix in ("cli_", ""):
                seconds, alone = figures[f"{prefix}{kind}_s"], figures[f"{prefix}run_s"]
                ratio = None if seconds is None or alone is None else seconds / alone
                figures[f"{prefix}{kind}_ratio"] = ratio
        figures["csv_bytes"] = csv.stat().st_size
        figures["parquet_bytes"] = pq.stat().st_size if parquet else None

        tracemalloc.start()
        _streamed(config, csv)
        figures["csv_peak_mib"] = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sequences", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3, help="timings per figure (best kept)")
    args = parser.parse_args()
    figures = measure(args.sequences, args.rounds)
    print(
        f"{figures['sequences']:,} sequences, {figures['cycles']:,} cycles, best of {args.rounds}"
    )
    rows = [
        ("CLI process: run alone", "cli_run_s", None),
        ("CLI process: run + --cycles-out X.csv", "cli_csv_s", "cli_csv_ratio"),
        ("CLI process: run + --cycles-out X.parquet", "cli_parquet_s", "cli_parquet_ratio"),
        ("in process: simulate alone", "run_s", None),
        ("in process: simulate + CSV file", "csv_s", "csv_ratio"),
        ("in process: simulate + Parquet file", "parquet_s", "parquet_ratio"),
    ]
    for label, seconds, ratio in rows:
        value = figures[seconds]
        if value is None:
            print(f"{label:<44} (no pyarrow: pip install 'spectui[parquet]')")
            continue
        times = f" {figures[ratio]:5.1f}x the run alone" if ratio else ""
        print(f"{label:<44} {value:6.2f} s{times}")
    sizes = f"CSV {figures['csv_bytes'] / 2**20:.0f} MiB"
    if figures["parquet_bytes"] is not None:
        sizes += f", Parquet {figures['parquet_bytes'] / 2**20:.1f} MiB"
    print(f"{'files':<44} {sizes}")
    print(f"{'streaming to CSV, peak traced memory':<44} {figures['csv_peak_mib']:6.1f} MiB")


if __name__ == "__main__":
    main()
