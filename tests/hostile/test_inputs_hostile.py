"""Hostile inputs (issue 23): each test reproduces a failure found by the probe battery on
main 6c79882 and asserts what the user sees instead. Grouped by item of the issue."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

LOGS = Path(__file__).parent.parent / "fixtures" / "logs"
HOSTILE = "x'; touch PWNED; echo '"

# ------------------------------------------------------------- 3. emitted commands


def _emitted(out: str, engine: str) -> str:
    (line,) = [line for line in out.splitlines() if line.startswith(f"  {engine}: ")]
    return line.removeprefix(f"  {engine}: ")


def test_calibrate_refuses_an_unknown_method_in_one_line(cli, tmp_path):
    status, out, err = cli("calibrate", str(LOGS / "vllm_v1_mean_length.log"), "--method", HOSTILE)
    assert status == 2 and out == ""
    assert len(err.strip().splitlines()) == 1
    assert "--method" in err and "eagle3" in err
    assert not (tmp_path / "PWNED").exists()


@pytest.mark.parametrize("method", ["eagle3", "ngram", "mtp"])
def test_calibrate_emits_lines_a_shell_splits_into_the_intended_arguments(cli, method):
    import json

    log = str(LOGS / "vllm_v1_mean_length.log")
    # K up to 4, not 16 (a quarter of the work): the lines are what is tested, not the K.
    status, out, err = cli("calibrate", log, "--method", method, "--calibrate-k-max", "4")
    assert status == 0, err
    (k,) = {
        line.split("recommended K = ")[1].split(":")[0]
        for line in out.splitlines()
        if "recommended K = " in line
    }
    flag, config = shlex.split(_emitted(out, "vllm"))
    assert flag == "--speculative-config"
    assert json.loads(config) == {"method": method, "num_speculative_tokens": int(k)}
    assert shlex.split(_emitted(out, "llama.cpp")) == [
        "--draft-max",
        k,
        "--draft-min",
        "0",
        "--draft-p-min",
        "0",
    ]
    sglang = shlex.split(_emitted(out, "sglang"))
    assert sglang[-6:] == [
        "--speculative-num-steps",
        k,
        "--speculative-eagle-topk",
        "1",
        "--speculative-num-draft-tokens",
        str(int(k) + 1),
    ]


def test_emit_refuses_a_method_a_shell_would_run():
    from engine.calibrate.fit import calibrate, emit, recommend
    from engine.calibrate.logs import parse_log_file
    from engine.core.config import SpecConfig

    cal = calibrate(parse_log_file(LOGS / "vllm_v1_mean_length.log").windows)
    rec = recommend(cal, SpecConfig(), k_max=4, draws=0)
    with pytest.raises(ValueError, match="method: expected one of"):
        emit(rec, cal, HOSTILE)


# ------------------------------------------------- 11. non-finite metrics from accepted input


@pytest.mark.parametrize(
    "args",
    [
        ("--cost", "roofline", "--eta-w", "1e-308"),
        ("--cost", "roofline", "--eta-f", "1e-310"),
        ("--cost", "roofline_max", "--max-eta-f", "1e-310"),
        ("--cost", "roofline_max", "--max-eta-bw", "1e-310"),
        ("--cost", "roofline", "--eta-kv", "1e-320", "--prompt-len", "1000"),
    ],
)
def test_a_vanishing_efficiency_is_refused_in_one_line(cli, args):
    status, out, err = cli("run", *args)
    assert (status, out) == (2, "")
    assert err.strip().splitlines() == [
        f"spectui run: error: argument {args[2]}: {args[3]} is not allowed; expected a number "
        "in [1e-6, 1]"
    ]


def test_a_cost_table_with_absurd_times_is_refused_in_one_line(cli, tmp_path):
    table = tmp_path / "t.csv"
    table.write_text("batch_size,tokens,verify_us,draft_us\n1,1,1e300,1e300\n1,64,1e300,1e300\n")
    status, out, err = cli("run", "--cost", "table", "--cost-table", str(table))
    assert (status, out) == (2, "")
    assert len(err.strip().splitlines()) == 1
    assert "verify_us at batch_size 1, tokens 1 must be a number in [0.001, 1e9]" in err


def _cost_values(model: str):
    """Values for every field ``model`` reads, each anywhere in its field's range and often
    at an end of it (where overflow lives), with the workload fields that scale a pass."""
    import math

    from hypothesis import strategies as st

    from engine.core.config import FIELD_SPECS, known_spec_ids

    fields = {}
    for key, spec in FIELD_SPECS.items():
        reads = spec.part is not None and spec.part[0] == "cost.model" and model in spec.part[1]
        if key in ("workload.batch_size", "workload.prompt_len"):
            reads = True
        if not reads or spec.kind == "path":
            continue
        if spec.kind == "spec":
            fields[key] = st.sampled_from(known_spec_ids(spec.choices[0]))
        elif spec.kind == "choice":
            fields[key] = st.sampled_from(spec.choices)
        elif spec.kind == "int":
            fields[key] = st.sampled_from([int(spec.low), int(spec.high)]) | st.integers(
                int(spec.low), int(spec.high)
            )
        else:
            low, high = float(spec.low), float(spec.high)
            # The least accepted value: low itself, or the next float above an open low.
            ends = [math.nextafter(low, math.inf) if spec.low_open else low, high]
            inner = st.floats(low, high, exclude_min=spec.low_open)
            fields[key] = st.sampled_from(ends) | inner
    return st.fixed_dictionaries(fields).map(_placeable)


def _placeable(values: dict) -> dict:
    """Values whose models can be placed (engine.cost.placement refuses the others on
    construction): as drawn when they can, else on B200s (a link, fp8 and fp4 peaks) with
    Llama-3.1-8B (Qwen3-30B-A3B, 128 experts, when experts spread) and the 1B draft, each
    GPU count the largest power of two at most the drawn one and 32 (64 experts): every
    such count splits their heads and experts."""
    from engine.core.config import ConfigError, SpecConfig

    if values.get("cost.ep", 1) > 1:
        values = {**values, "cost.target": "qwen3-30b-a3b"}
    try:
        SpecConfig().replace(**{"cost.model": "roofline", **values})
        return values
    except ConfigError:
        pass

    def power(key: str, top: int) -> int:
        return min(top, 1 << (values[key].bit_length() - 1))

    ep = power("cost.ep", 64)
    return {
        **values,
        "cost.gpu": "b200",
        "cost.target": "qwen3-30b-a3b" if ep > 1 else "llama-3.1-8b",
        "cost.draft": "llama-3.2-1b",
        "cost.tp": power("cost.tp", 32),
        "cost.draft_tp": power("cost.draft_tp", 32),
        "cost.ep": ep,
    }


def _table_text():
    """A cost table whose times are anywhere in (and often at the ends of) its range."""
    from hypothesis import strategies as st

    verify = st.sampled_from([1e-3, 1e9]) | st.floats(1e-3, 1e9)
    draft = st.sampled_from([0.0, 1e9]) | st.floats(0.0, 1e9)
    return st.tuples(verify, verify, draft, draft).map(
        lambda t: (
            f"batch_size,tokens,verify_us,draft_us\n1,1,{t[0]!r},{t[2]!r}\n1,64,{t[1]!r},{t[3]!r}\n"
        )
    )


@pytest.mark.parametrize("model", ["linear", "roofline", "roofline_max", "table"])
def test_every_accepted_cost_configuration_has_finite_metrics(model, tmp_path):
    """Exact and Monte Carlo metrics (a short run) stay finite over every cost model's
    fields, at the ends of their ranges too, with K and the workload at theirs."""
    import math
    import warnings

    from hypothesis import assume, given, settings
    from hypothesis import strategies as st

    from engine.core.config import K_MAX, ConfigError, SpecConfig
    from engine.simulate.simulator import simulate

    table = tmp_path / "table.csv"

    @settings(max_examples=12, derandomize=True, deadline=None)
    @given(
        values=_cost_values(model),
        k=st.sampled_from([1, K_MAX]),
        text=_table_text() if model == "table" else st.just(""),
    )
    def check(values, k, text):
        changes = {"cost.model": model, "k": k, "tokens_per_seq": 64, "n_sequences": 2}
        if model == "table":
            table.write_text(text)
            changes["cost.table"] = str(table)
        try:
            config = SpecConfig().replace(**changes, **values)
        except ConfigError:  # refused on construction (several GPUs without a link): fine
            assume(False)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # an overflow's RuntimeWarning fails the test
            metrics = simulate(config).metrics
        bad = {n: v for n, v in metrics.items() if isinstance(v, float) and not math.isfinite(v)}
        assert not bad, (values, k)

    check()


# ------------------------------------------------------------ 12. analyze and plot, odd CSVs

RESULTS = Path(__file__).parent.parent.parent / "results" / "sweep_summary.csv"


def _sweep_rows(n: int) -> list[list[str]]:
    import csv

    with RESULTS.open(newline="") as handle:
        rows = list(csv.reader(handle))
    return rows[: n + 1]


def _write(path: Path, rows: list[list[str]]) -> Path:
    import csv

    with path.open("w", newline="") as handle:
        csv.writer(handle).writerows(rows)
    return path


@pytest.mark.parametrize("command", [("analyze",), ("plot", "--terminal")])
def test_an_infinite_speedup_is_refused_in_one_line(cli, tmp_path, command):
    rows = _sweep_rows(40)
    rows[3][rows[0].index("speedup")] = "inf"
    path = _write(tmp_path / "inf.csv", rows)
    status, out, err = cli(*command, str(path))
    assert (status, out) == (2, "")
    assert err.strip().splitlines() == [
        f"spectui {command[0]}: error: {path}: row 4: speedup: inf is not finite (a sweep "
        "writes finite metrics)"
    ]


@pytest.mark.parametrize("command", [("analyze",), ("plot", "--terminal")])
def test_rows_shorter_than_the_header_are_refused_in_one_line(cli, tmp_path, command):
    rows = _sweep_rows(40)
    path = _write(tmp_path / "short.csv", [rows[0], *(row[:20] for row in rows[1:])])
    status, out, err = cli(*command, str(path))
    assert (status, out) == (2, "")
    assert err.strip().splitlines() == [
        f"spectui {command[0]}: error: {path}: row 2: 20 cells where the header has "
        f"{len(rows[0])}: not a complete sweep result"
    ]


def test_a_one_row_sweep_is_analysed_without_nan(cli, tmp_path):
    path = _write(tmp_path / "one.csv", _sweep_rows(1))
    status, out, err = cli("analyze", str(path))
    assert status == 0, err
    assert "nan" not in out
    assert "highest acceptance among losing fixed-model configurations: none loses" in " ".join(
        out.replace("│", " ").split()
    )
    # The original's break-even table: this sweep has no value at cost ratio 0.1.
    (line,) = [line for line in out.splitlines() if "│      0.100 │    2.100 │" in line]
    assert "n/a" in line


def test_the_heat_scale_colours_an_infinite_speedup_as_the_best():
    import math

    from spectui.colours import HEAT_SCALE, speedup_background

    assert speedup_background(math.inf) == HEAT_SCALE[-1][1]


# ------------------------------------------------------------------ 13. a huge paste in the form


def _form_host():
    from textual.app import App

    from engine.core.config import SpecConfig
    from spectui.widgets.param_form import ParamForm

    class Host(App[None]):
        def __init__(self) -> None:
            super().__init__()
            self.toasts: list[str] = []

        def compose(self):
            yield ParamForm(SpecConfig())

        def notify(self, message, **kwargs):  # type: ignore[override]
            self.toasts.append(str(message))

    return Host()


@pytest.mark.parametrize(("field", "text"), [("k", "9"), ("acceptance_rate", "0.5,")])
def test_a_100_kb_paste_into_a_form_field_is_refused_whole(field, text):
    """Pasted into the focused input (a small host app; this file has no async plugin)."""
    import asyncio

    from textual import events
    from textual.widgets import Input

    from engine.core.config import FIELD_SPECS, SpecConfig
    from spectui.widgets.param_form import LABELS, ParamForm

    key = next(k for k, s in FIELD_SPECS.items() if s.attr == field)
    app = _form_host()

    async def paste() -> None:
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            box = app.query_one(f"#{field}", Input)
            before = box.value
            box.focus()
            await pilot.pause()
            app.post_message(events.Paste(text * (100_000 // len(text))))
            await pilot.pause()
            assert box.value == before  # nothing of it was taken, so nothing was read
            assert app.query_one(ParamForm).current_config() == (SpecConfig(), {})

    asyncio.run(paste())
    limit = FIELD_SPECS[key].text_max
    assert app.toasts == [f"{LABELS[key]}: at most {limit:,} characters: the text was not taken"]


def test_an_over_long_value_is_refused_before_it_is_read(cli):
    status, out, err = cli("run", "--k", "9" * 100_000)
    assert (status, out) == (2, "")
    assert err.strip().splitlines() == [
        "spectui run: error: argument --k: too long (100,000 characters); at most 64"
    ]


def test_an_error_repeats_at_most_sixty_characters_of_a_wrong_value(cli):
    status, _, err = cli("run", "--draft-model", "per_position", "--rates", "2," * 1000)
    assert status == 2
    assert len(err.strip().splitlines()) == 1 and len(err) < 200
    assert "'2,2,2,2" in err and "… is not allowed; expected 1 to 1024 numbers" in err


# ------------------------------------------------- 14. calibrate: a bad count rejects its window

V1_LINE = (LOGS / "vllm_v1_mean_length.log").read_text().splitlines()[-1]


@pytest.mark.parametrize("count", ["-387", "1e308", "3.5"])
def test_a_window_with_a_bad_drafted_count_is_listed_and_never_used(cli, tmp_path, count):
    """Two copies of the fixture's window (129 drafts each); one says ``Drafted: COUNT``.
    Only the other is used: 129 drafts, not 258 with a count derived from the rate."""
    assert "Drafted: 387 tokens" in V1_LINE
    log = tmp_path / "two.log"
    log.write_text(f"{V1_LINE}\n{V1_LINE.replace('Drafted: 387', f'Drafted: {count}')}\n")
    status, out, err = cli("calibrate", str(log), "--calibrate-k-max", "4")  # the windows count
    assert status == 0, err
    assert "Calibration: 1 window (vllm-v1), 129 drafts, K = 3; 1 rejected" in out
    assert f"rejected line 2: drafted {count} is not a token count" in out


# ------------------------------------------------------------ 9. long work: progress, Ctrl-C


class _Bars:
    """Stands in for spectui.render.SweepProgressBar: keeps what each bar was told."""

    def __init__(self) -> None:
        self.shown: list[tuple[str, int, list[int], bool]] = []

    def __call__(self, total: int, description: str):  # type: ignore[no-untyped-def]
        bars = self

        class Bar:
            def __enter__(self):  # type: ignore[no-untyped-def]
                bars.shown.append((description, total, [], False))
                return self

            def advance(self, done: int) -> None:
                bars.shown[-1][2].append(done)

            def __exit__(self, *exc) -> None:  # type: ignore[no-untyped-def]
                name, total_, done, _ = bars.shown[-1]
                bars.shown[-1] = (name, total_, done, True)

        return Bar()


def _on_a_terminal(monkeypatch) -> _Bars:

    bars = _Bars()
    monkeypatch.setattr("spectui.render.SweepProgressBar", bars)
    monkeypatch.setattr("spectui.cli.progress.RUN_PROGRESS_AFTER_S", 0.0)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    return bars


def test_tree_shows_the_progress_of_both_parts_on_a_terminal(cli, monkeypatch):
    from engine.simulate.tree_scenario import budget_by_batch_programs, compare_shapes_programs

    bars = _on_a_terminal(monkeypatch)
    # 40 trees a group
    monkeypatch.setattr("engine.simulate.tree_scenario.PROGRAM_FLOATS", 129 * 40)
    status, _, err = cli("tree", "--cost", "linear")
    assert status == 0, err
    assert [(name, total, done[-1], closed) for name, total, done, closed in bars.shown] == [
        ("tree: shapes", compare_shapes_programs(), compare_shapes_programs(), True),
        ("tree: budgets by batch", budget_by_batch_programs(), budget_by_batch_programs(), True),
    ]
    for _, _, done, _ in bars.shown:
        assert done == sorted(done) and len(done) > 1


def test_ctrl_c_stops_tree_in_one_line_and_closes_its_bar(cli, monkeypatch):
    bars = _on_a_terminal(monkeypatch)
    monkeypatch.setattr("engine.simulate.tree_scenario.PROGRAM_FLOATS", 129 * 2)  # 2 trees a group
    advance = []

    def interrupt_at_the_fifth(done: int, _total: int) -> None:
        advance.append(done)
        if len(advance) == 5:
            raise KeyboardInterrupt

    import engine.simulate.tree_scenario as ts

    compare = ts.compare_shapes

    def compare_interrupted(*args, on_progress=None, **kwargs):  # type: ignore[no-untyped-def]
        def both(done: int, total: int) -> None:
            on_progress(done, total)
            interrupt_at_the_fifth(done, total)

        return compare(*args, on_progress=both, **kwargs)

    monkeypatch.setattr(ts, "compare_shapes", compare_interrupted)
    status, out, err = cli("tree", "--cost", "linear")
    assert (status, out, err) == (130, "", "interrupted\n")
    ((name, _, done, closed),) = bars.shown
    assert name == "tree: shapes" and closed and done[-1] == 10  # the fifth group


def test_a_regime_map_too_large_for_memory_is_refused_before_any_work(cli, monkeypatch):
    import engine.analysis.regime as regime

    def never(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("no cell is priced before the size is checked")

    monkeypatch.setattr(regime, "cycle_costs", never)
    batches = ",".join(str(b) for b in range(1, 4097))
    contexts = ",".join(str(100 * c) for c in range(199))
    status, out, err = cli(
        "regime", "--batch-sizes", batches, "--contexts", contexts, "--k-max", "1024"
    )
    assert (status, out) == (2, "")
    assert err.strip().splitlines() == [
        "spectui regime: error: map: 815,104 cells x 1,154 values (tokens_per_seq + K max + "
        "2) = 940,630,016; a map holds at most 4,194,304 (1 GB): give fewer batch sizes, "
        "contexts or K, or a shorter tokens_per_seq"
    ]


def test_regime_shows_its_progress_on_a_terminal(cli, monkeypatch):
    bars = _on_a_terminal(monkeypatch)
    status, _, err = cli("regime", "--batch-sizes", "1,8", "--contexts", "1k", "--ks", "1,2,3")
    assert status == 0, err
    ((name, total, done, closed),) = bars.shown
    assert (name, total, done, closed) == ("regime: steps", 4, [1, 2, 3, 4], True)


def test_a_grid_axis_of_too_many_values_is_refused_before_it_is_read():
    from engine.core.config import ConfigError, SpecConfig
    from engine.sweep.grid import SweepSpec

    with pytest.raises(ConfigError) as caught:
        SweepSpec(SpecConfig(), ({"acceptance_rate": [0.5] * 100_001},))
    assert str(caught.value) == (
        "acceptance_rate: a grid axis of 100,001 values; at most 100,000 (a larger sweep is a "
        "product of axes)"
    )


def test_sweep_shows_its_planning_on_a_terminal(cli, monkeypatch, tmp_path):
    bars = _on_a_terminal(monkeypatch)
    monkeypatch.setattr("engine.sweep.sweep.PLAN_PROGRESS_EVERY", 5)
    out = tmp_path / "tiny.csv"
    status, _, err = cli("sweep", "--preset", "tiny", "--exact-only", "--out", str(out))
    assert status == 0, err
    name, total, done, closed = bars.shown[0]  # then the sweep's own bar
    assert (name, total, done, closed) == ("tiny: planning", 24, [5, 10, 15, 20, 24], True)


def _chain_1024(tokens: int):  # type: ignore[no-untyped-def]
    from engine.core.config import SpecConfig

    return SpecConfig().replace(
        **{
            "shape.name": "tree",
            "shape.tree": "chain:1024",
            "tokens_per_seq": tokens,
            "n_sequences": 1,
        }
    )


def test_a_deep_trees_draft_time_holds_one_pass_per_width_not_per_level():
    """chain:1024 priced at 4,000 contexts: a list of 1,024 passes was 33 MB (8 GB at the
    10^6 contexts of a 10^6-token run)."""
    import tracemalloc

    import numpy as np

    from engine.core.kernel import cycle_times
    from engine.cost.models import build_cost
    from engine.simulate.tree_scenario import tree_of

    config = _chain_1024(4_000)
    cost, tree, context = build_cost(config), tree_of(config), np.arange(4_001.0)
    tracemalloc.start()
    try:
        draft, _, _ = cycle_times(cost, tree.depth, 1, context, tree=tree)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert draft.shape == context.shape
    assert peak < 2**20  # a pass of 4,001 floats is 32 KB


def test_a_tree_run_builds_its_cycle_sampler_once(monkeypatch):
    """Its tables were built again at every step (5 ms a step for 1,024 nodes: >60 s for
    a 10^6-token run of one sequence)."""
    import engine.shapes.trees as trees
    from engine.simulate.simulator import simulate

    built = []
    make = trees.cycle_sampler
    monkeypatch.setattr(trees, "cycle_sampler", lambda *a: built.append(a) or make(*a))
    result = simulate(_chain_1024(2_000))
    assert result.metrics["cycles"] > 100 and len(built) == 1


def test_a_run_of_one_long_sequence_counts_its_tokens_on_a_terminal(cli, monkeypatch):
    bars = _on_a_terminal(monkeypatch)
    args = ("--shape", "tree", "--tree", "chain:64", "--n-sequences", "1")
    status, _, err = cli("run", *args, "--tokens-per-seq", "500")
    assert status == 0, err
    ((name, total, done, closed),) = bars.shown
    assert (name, total, closed) == ("run: tokens", 500, True)
    assert done == sorted(done) and len(done) > 10 and done[-1] == 500


def test_a_spec_file_whose_passes_overflow_is_refused_in_one_line(cli, tmp_path):
    """A user's hardware.toml with 1e-300 FLOP/s and bytes/s: inf us and RuntimeWarnings."""
    spec_dir = tmp_path / "xdg-config" / "spectui"
    spec_dir.mkdir(parents=True)
    (spec_dir / "hardware.toml").write_text(
        '[slow]\nname = "absurd"\nflops_bf16 = 1e-300\nmem_bw_bytes_s = 1e-300\n'
        'mem_bytes = 80e9\nsource = "test"\nnotes = "test"\n'
    )
    status, out, err = cli("run", "--cost", "roofline", "--gpu", "slow")
    assert (status, out) == (2, "")
    assert err.strip().splitlines() == [
        "spectui run: error: cost.target: llama-3.1-8b on slow: a pass at batch 4,096 and "
        "context 11,000,000 would take inf us; a roofline pass must stay under 1e30 us (check "
        "the spec files' numbers)"
    ]


def test_tree_programs_run_together_give_each_trees_own_bits(monkeypatch):
    """`spectui tree` runs its ~100 programs per batch size as columns of one (5x faster:
    257 s at 10^5 tokens before): each equals the tree's own program, to the bit, in groups
    of any size."""
    from engine.core.config import SpecConfig
    from engine.shapes.trees import chain, kary, sequoia_tree
    from engine.simulate.tree_scenario import tree_exact, tree_speedups

    config = SpecConfig().replace(**{"shape.name": "tree", "tokens_per_seq": 300})
    trees = [chain(1), chain(7), kary(2, 3), sequoia_tree([0.8], 24, 5), kary(3, 1)]
    own = [tree_exact(config, tree)["speedup_exact"] for tree in trees]
    assert tree_speedups(config, trees) == own
    monkeypatch.setattr("engine.simulate.tree_scenario.PROGRAM_FLOATS", 301 * 2)  # groups of two
    done: list[int] = []
    assert tree_speedups(config, trees, done.append) == own
    assert done == [2, 4, 5]
