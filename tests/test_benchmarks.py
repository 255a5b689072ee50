"""Smoke tests of benchmarks/bench_engine.py: its pieces at tiny sizes, no timing asserted.

The lean per-token loop must simulate the same model as the engine (else "fast / lean"
compares different work); the subprocess machinery must time the engine it names.
"""

from __future__ import annotations

import importlib.util
import math
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from engine.core.config import SpecConfig
from engine.core.kernel import cycle_costs
from engine.presets import load_preset
from engine.simulate.exact import expected_sequence_time_us
from engine.simulate.simulator import simulate
from tests.engine.stats import Z_STRICT

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    """benchmarks/bench_engine.py, loaded by path (benchmarks/ is not a package)."""
    spec = importlib.util.spec_from_file_location(
        "bench_engine", REPO / "benchmarks/bench_engine.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_engine"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(("k", "tokens"), [(1, 7), (3, 16), (5, 256)])
def test_lean_loop_all_accepted(bench: ModuleType, k: int, tokens: int) -> None:
    """p = 1: every cycle accepts all K drafts and emits K + 1; the last keeps what is left."""
    lean = bench.lean_loop(k, 1.0, 3, tokens, cycle_us=10.0)
    per_sequence = math.ceil(tokens / (k + 1))
    assert lean["cycles"] == 3 * per_sequence
    assert lean["accepted"] == 3 * per_sequence * k
    last = tokens - (per_sequence - 1) * (k + 1)  # tokens the last cycle may keep
    assert lean["accepted_kept"] == 3 * ((per_sequence - 1) * k + min(k, last))
    assert lean["time_mean_us"] == per_sequence * 10.0
    assert lean["time_var_us2"] == 0.0


def test_lean_loop_none_accepted(bench: ModuleType) -> None:
    """p = 0: one token per cycle, the verifier's."""
    lean = bench.lean_loop(4, 0.0, 5, 9, cycle_us=1.0)
    assert (lean["cycles"], lean["accepted"], lean["accepted_kept"]) == (45, 0, 0)


def test_lean_loop_matches_the_model(bench: ModuleType) -> None:
    """The lean loop's mean sequence time and acceptance agree with the exact values."""
    config = SpecConfig(k=5, acceptance_rate=0.8, n_sequences=2_000, tokens_per_seq=64)
    cycle_us = float(cycle_costs(config).cycle_us[64])
    lean = bench.lean_loop(5, 0.8, 2_000, 64, cycle_us=cycle_us, seed=3)
    expected = expected_sequence_time_us(config)
    z = (lean["time_mean_us"] - expected) / math.sqrt(lean["time_var_us2"] / 2_000)
    assert abs(z) < Z_STRICT
    # Accepted drafts per cycle: sum over positions of p^j, j = 1..K.
    per_cycle = sum(0.8**j for j in range(1, 6))
    assert lean["accepted"] / lean["cycles"] == pytest.approx(per_cycle, rel=0.02)


@pytest.fixture
def quick_uniform(bench: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    """The tasks' uniform-rate figure from one chunk, once (not 16 chunks, best of 7): the
    same code, a few milliseconds instead of a third of a second."""
    uniform_rate = bench.uniform_rate
    monkeypatch.setattr(bench, "uniform_rate", lambda: uniform_rate(repeats=1, chunks=1))


@pytest.mark.usefixtures("quick_uniform")
def test_one_config_task_counts_the_engines_cycles(bench: ModuleType) -> None:
    figures = bench.task_one_config(k=3, p=0.7, sequences=40, tokens=32, repeats=2)
    config = SpecConfig(k=3, acceptance_rate=0.7, n_sequences=40, tokens_per_seq=32)
    assert figures["cycles"] == simulate(config).metrics["cycles"]
    assert len(figures["times"]) == 2
    assert figures["uniform_per_s"] > 0


def test_best_of_stops_after_a_long_call(
    bench: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bench, "LONG_RUN_S", -1.0)  # every call counts as long
    times, result = bench._best_of(5, lambda: "done")
    assert (len(times), result) == (1, "done")


@pytest.mark.usefixtures("quick_uniform")
def test_sweep_task_counts_shared_draws_once(bench: ModuleType) -> None:
    figures = bench.task_sweep(sequences=2, workers=1, repeats=1)
    assert figures["configurations"] == 576
    # Configurations that differ only in draft cost (4 values) share their draws.
    assert figures["cycles_drawn"] * 4 <= figures["cycles"]


def test_engines_run_times_the_engine_it_names(bench: ModuleType, tmp_path: Path) -> None:
    engines = bench.Engines({"after": REPO}, tmp_path)
    # A task with arguments, but a cheap one (one_config also times numpy's uniform rate).
    figures = engines.run("after", "memory_run", sequences=20, mode="plain")
    assert Path(figures["engine"]).resolve().is_relative_to(REPO / "engine")
    assert figures["max_rss_mib"] > 0
    assert figures["cycles"] == simulate(SpecConfig(n_sequences=20)).metrics["cycles"]


def test_engines_run_refuses_another_engine(bench: ModuleType, tmp_path: Path) -> None:
    """A root without an engine: the subprocess finds the installed one, and the run says so."""
    empty = tmp_path / "empty"
    empty.mkdir()
    engines = bench.Engines({"before": empty}, tmp_path)
    with pytest.raises(RuntimeError, match="timed the wrong engine"):
        engines.run("before", "imports")


def test_table_lists_before_after_and_ratio(bench: ModuleType) -> None:
    report = bench.Report()
    report.add(bench.Row("a figure", "s", 2.0, 0.5))
    report.add(bench.Row("after only", "M/s", None, 3.0))
    lines = report.table().splitlines()
    assert lines[1].split()[-3:] == ["0.5", "0.25x", "s"]
    assert "-" in lines[2].split()


def test_app_records_kept_is_the_apps(bench: ModuleType) -> None:
    from spectui.widgets.run_view import RECORDS_KEPT

    assert bench.APP_RECORDS_KEPT == RECORDS_KEPT


def test_loops_and_memory_tasks_run(bench: ModuleType) -> None:
    loops = bench.task_loops(k=3, p=0.8, sequences=10, tokens=16, repeats=2)
    for name in ("fast", "lean", "reference"):
        assert loops[f"{name}_cycles"] > 0 and len(loops[f"{name}_times"]) >= 1
    for mode in bench.MEMORY_MODES:
        assert bench.task_memory_run(sequences=50, mode=mode)["cycles"] > 0
    traced = bench.task_traced(sequences=50)
    assert set(traced["traced_mib"]) == set(bench.MEMORY_MODES)
    assert traced["frame_bytes_per_cycle"] > 0


def test_cycles_out_figures_from_a_module_or_none(bench: ModuleType, tmp_path: Path) -> None:
    assert bench.cycles_out_figures(tmp_path / "absent.py", 10) is None
    module = tmp_path / "cycles_out.py"
    module.write_text("def measure(sequences=100_000):\n    return {'sequences': sequences}\n")
    assert bench.cycles_out_figures(module, 10) == {"sequences": 10}


# benchmarks/bench_sweep_scale.py: its quick mode, and the pieces that make its figures.


@pytest.fixture(scope="module")
def scale() -> ModuleType:
    """benchmarks/bench_sweep_scale.py, loaded by path."""
    spec = importlib.util.spec_from_file_location(
        "bench_sweep_scale", REPO / "benchmarks/bench_sweep_scale.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_sweep_scale"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.mark.timeout(300)  # eight `spectui sweep` processes, two on a LocalCluster
def test_sweep_scale_quick_prints_its_tables(
    scale: ModuleType,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    """--quick without a base engine: three sections, the new engine's rows, and every set
    of runs (processes and a Dask LocalCluster) wrote byte-identical CSV files; each run was
    timed in every phase, on this tree's engine."""
    runs: list[Any] = []  # every run the tables were made of
    sweep = scale.Engine.sweep

    def recorded(engine: Any, *args: Any, **kwargs: Any) -> Any:
        runs.append(sweep(engine, *args, **kwargs))
        return runs[-1]

    monkeypatch.setattr(scale.Engine, "sweep", recorded)
    assert scale.main(["--quick", "--keep", str(tmp_path / "runs")]) == 0
    out = capsys.readouterr().out
    assert "base columns left out" in out
    titles = ("1a. seed-576 at 4 sequences", "2. regime study")
    for title in (*titles, "3. Memory"):
        assert title in out
    dask = ("new --scheduler local:1", "new --scheduler local:1 (Dask's malloc trim)")
    for label, tables in (("new --workers 2", 2), ("new --workers 1", 2), *((d, 1) for d in dask)):
        row = re.compile(rf"^{re.escape(label)} +\d", re.MULTILINE)
        assert len(row.findall(out)) == tables  # a row in each speed table (Dask: the first)
    checks = [line for line in out.splitlines() if line.startswith("CSV byte-identical")]
    assert len(checks) == 2 and all(": identical (" in line for line in checks)
    assert all(label in checks[0] for label in dask)  # the Dask runs' files were compared
    assert "DIFFERENT" not in out
    memory = out[out.index("3. Memory") :].splitlines()
    sizes = [line.split()[0] for line in memory[2:5]]
    assert sizes == ["100", "300", "new:"]  # then the growth line
    # The runs the tables were made of: the named engine, timed in every phase.
    assert len(runs) == 8
    for run in runs:
        assert run.finished and run.max_rss_mib > 0
        phases = (run.setup_s, run.start_s, run.rows_s, run.finish_s)
        assert all(phase is not None and phase >= 0 for phase in phases)
    # The memory section's first run: `--exact-only --workers 1` on a grid of 100.
    assert runs[-2].csv.read_text().count("\n") == 101  # a header and a row a configuration


def test_sweep_scale_refuses_another_engine(scale: ModuleType, tmp_path: Path) -> None:
    """A root without an engine: the run imports the installed one, and the benchmark says so."""
    empty = tmp_path / "empty"
    empty.mkdir()
    # The launcher names the engine it imported before spectui starts: the check needs no
    # sweep (a preset that is not there ends the run before spectui's sweep imports).
    engine = scale.Engine("base", empty, tmp_path / "runs", 120.0)
    with pytest.raises(RuntimeError, match="timed the wrong engine"):
        engine.sweep("base", tmp_path / "absent.toml", "grid.csv", "--exact-only")


# A run that times the named engine: test_sweep_scale_quick_prints_its_tables.


def test_sweep_scale_phases_from_the_cli_lines(scale: ModuleType) -> None:
    run = scale.Run("r", wall_s=2.0, max_rss_mib=1.0, cpu_s=1.0, csv=Path("x.csv"), finished=True)
    lines = [
        (0.1, scale.ENGINE_LINE + "/somewhere/engine/__init__.py"),
        (0.5, "sweep grid → x.csv: 10 configurations"),
        (0.6, "0/10"),
        (1.0, "4/10"),
        (1.5, "10/10"),
        (1.6, "10 configurations in 1.2 s written to x.csv"),
    ]
    scale._phases(run, lines)
    figures = (run.setup_s, run.start_s, run.rows_s, run.finish_s)
    assert figures == pytest.approx((0.4, 0.1, 1.0, 0.1))


def test_sweep_scale_identical_says_different(scale: ModuleType, tmp_path: Path) -> None:
    files = {}
    for name, text in (("a", "h\n1\n"), ("b", "h\n1\n"), ("c", "h\n2\n")):
        files[name] = tmp_path / f"{name}.csv"
        files[name].write_text(text)
    runs = [scale.Run(n, 1.0, 1.0, 1.0, path, True) for n, path in files.items()]
    assert scale.identical(runs[:2]).startswith("identical (a, b; 4 bytes, 1 rows)")
    assert scale.identical(runs).startswith("DIFFERENT: c differ")


def test_sweep_scale_generated_grids(scale: ModuleType, tmp_path: Path) -> None:
    for configurations in (100, 600, 3_000):
        grid = scale.memory_grid(tmp_path / f"{configurations}.toml", configurations, 16)
        assert scale.sweep_work(grid) == (configurations, configurations * 16)
    seed = scale.seed_copy(tmp_path / "seed.toml", 30)
    assert scale.sweep_work(seed) == (576, 576 * 30 * 128)
    part = scale.regime_copy(tmp_path / "regime.toml", scale.QUICK.regime_grid)
    assert scale.sweep_work(part)[0] == 3 * 3 * 16
    # None: the whole study (46,080 configurations, counted without making each one)
    whole = scale.regime_copy(tmp_path / "unused.toml", None)
    assert load_preset(str(whole)).size() == 46_080


def test_the_load_benchmarks_lean_loop_is_the_same_simulation() -> None:
    """benchmarks/bench_load.py's plain-Python loop, the baseline of the serving simulator's
    speed, simulates what the simulator does: the same steps, ending at the same time to the
    last bit, at a light and a heavy load; and its plain-Python draws are the simulator's."""
    spec = importlib.util.spec_from_file_location("bench_load", REPO / "benchmarks/bench_load.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    from engine.cost.models import build_cost
    from engine.serve.server import Server
    from engine.serve.sim import simulate_load

    module._check_draws()
    config = module.scenario()
    cost = build_cost(config)
    for rate in (10.0, 60.0):
        requests = module.trace(300, rate=rate)[1]
        outcome = simulate_load(config, cost, requests, "fixed", Server(), seed=1)
        end, steps = module.lean_loop(config, cost, requests)
        assert (end, steps) == (outcome.end_s, outcome.summary.steps)
