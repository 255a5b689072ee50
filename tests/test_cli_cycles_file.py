"""`spectui run --cycles-out FILE`: the per-cycle file, as CSV (the text pandas' to_csv
writes) or as Parquet (a ``.parquet`` name), written whole or not at all."""

from __future__ import annotations

import json
import sys

import numpy as np
import pandas as pd
import pytest

import engine.simulate.cycles_file as cycles_file
import engine.simulate.simulator
from engine.core.config import FIELD_SPECS, SpecConfig
from engine.core.kernel import baseline_time_us
from engine.core.runs import RECORD_DTYPES
from engine.cost.models import build_cost
from engine.simulate.cycles_file import CYCLES_COLUMNS, csv_blocks, csv_header, cycles_writer
from engine.simulate.reference import simulate_reference
from engine.simulate.simulator import simulate
from spectui.cli import main


def expected_frame(records: pd.DataFrame, config: SpecConfig) -> pd.DataFrame:
    """The records with the file's two derived columns, one record at a time."""
    out = records.copy()
    out["pattern"] = [
        "-" if k == 0 else "A" * n + ("R" + "." * (k - n - 1) if n < k else "")
        for k, n in zip(out["k"], out["accepted"], strict=True)
    ]
    out["running_speedup"] = baseline_by_hand(config, out["cum_tokens"].to_numpy()) / out[
        "cum_time_us"
    ].to_numpy(np.float64)
    return out


def baseline_by_hand(config: SpecConfig, tokens: np.ndarray) -> np.ndarray:
    """The baseline's time for the first ``tokens`` tokens, from the cost model's one-token
    steps: token t (0-based) is decoded at context prompt_len + t. Equal steps give tokens x
    step (the original's tokens x verify_cost_us), as one product."""
    cost = build_cost(config)
    context = config.prompt_len + np.arange(config.tokens_per_seq)
    steps = np.array([float(cost.verify_us(1, config.batch_size, int(c))) for c in context])
    if (steps == steps[0]).all():
        return tokens * steps[0]
    return np.concatenate(([0.0], np.cumsum(steps)))[tokens]


def test_the_running_baseline_under_a_roofline_grows_with_the_context():
    # Under a roofline each step reads a longer KV cache than the one before: the first
    # tokens are the cheapest, and the running baseline adds steps in decoding order.
    config = CONFIGS["roofline"]
    tokens = np.arange(config.tokens_per_seq + 1)
    baseline = baseline_time_us(config, tokens)
    assert baseline == pytest.approx(baseline_by_hand(config, tokens), rel=1e-12)
    assert (np.diff(np.diff(baseline)) > 0).all()
    assert baseline[1] == build_cost(config).verify_us(1, config.batch_size, config.prompt_len)


def expected_csv(records: pd.DataFrame, config: SpecConfig) -> bytes:
    """What the file held when pandas wrote it (``DataFrame.to_csv``)."""
    return expected_frame(records, config).to_csv(index=False).encode()


@pytest.fixture
def run(capsys, monkeypatch):
    """`spectui run ARGS` in this process: (status, stderr)."""
    monkeypatch.setenv("NO_COLOR", "1")

    def invoke(*args: str) -> tuple[int, str]:
        status = main(["run", *args])
        return status, capsys.readouterr().err

    return invoke


def test_csv_text_of_hand_made_records():
    # Floats as Python's repr (shortest round trip, exponent form), NaN as an empty field,
    # a cycle without drafts as "-", integers as plain digits.
    rows = [
        (0, 0, 5, 2, 3, 300.0, 3, 300.0),
        (0, 1, 5, 5, 6, 0.1 + 0.2, 9, 1e16),
        (1, 0, 0, 0, 1, float("nan"), 1, float("nan")),
        (12345, 7, 3, 0, 1, -0.0, 1, 123.456),
    ]
    records = pd.DataFrame(rows, columns=list(RECORD_DTYPES)).astype(RECORD_DTYPES)
    text = csv_header() + b"".join(csv_blocks(records, SpecConfig()))
    assert text.decode() == (
        "sequence,cycle,k,accepted,kept,cycle_time_us,cum_tokens,cum_time_us,pattern,"
        "running_speedup\n"
        "0,0,5,2,3,300.0,3,300.0,AAR..,2.0\n"
        "0,1,5,5,6,0.30000000000000004,9,1e+16,AAAAA,1.8e-13\n"
        "1,0,0,0,1,,1,,-,\n"
        "12345,7,3,0,1,-0.0,1,123.456,R..,1.6200103680663556\n"
    )
    assert text == expected_csv(records, SpecConfig())


CONFIGS = {
    "default": SpecConfig(n_sequences=300),
    # Clamp tail: short last cycles, some with no drafts at all (pattern "-").
    "clamp": SpecConfig(n_sequences=300, tail="clamp"),
    # Roofline costs: cycle times vary with the context, nearly every float is distinct.
    "roofline": SpecConfig(n_sequences=200, cost_model="roofline", tail="clamp", k=9),
    "odd-costs": SpecConfig(
        n_sequences=200, draft_cost_us=0.1, verify_cost_us=0.7, verify_token_us=0.3
    ),
    "long-k": SpecConfig(n_sequences=50, draft_model="position_decay", k=40, tokens_per_seq=300),
    "tiny": SpecConfig(n_sequences=400, k=1, tokens_per_seq=3, tail="clamp"),
}


@pytest.mark.parametrize("name", list(CONFIGS))
def test_cli_csv_is_the_text_pandas_writes(run, tmp_path, name):
    config = CONFIGS[name]
    records = simulate(config, records=True).cycles
    assert records is not None
    if name == "clamp":
        assert (records["k"] == 0).any()
    if name == "roofline":
        assert records["cycle_time_us"].nunique() > 10
    out = tmp_path / "cycles.csv"
    status, err = run(*_flags(config), "--cycles-out", str(out))
    assert status == 0, err
    assert out.read_bytes() == expected_csv(records, config)


def _flags(config: SpecConfig) -> list[str]:
    """The flags that give ``config`` (only its fields that differ from the defaults)."""
    default = SpecConfig()
    flags = []
    for spec in FIELD_SPECS.values():
        value = getattr(config, spec.attr)
        if value != getattr(default, spec.attr):
            flags += [spec.cli_flag, str(value)]
    return flags


def test_reference_engine_writes_the_same_text_as_pandas(run, tmp_path):
    config = SpecConfig(n_sequences=100, tail="clamp")
    out = tmp_path / "cycles.csv"
    status, err = run(*_flags(config), "--engine", "reference", "--cycles-out", str(out))
    assert status == 0, err
    records = simulate_reference(config, records=True).cycles
    assert out.read_bytes() == expected_csv(records, config)


def test_reference_engine_without_a_file_is_still_the_reference_engine(run, capsys):
    config = SpecConfig(n_sequences=30)
    status = main(["run", "--n-sequences", "30", "--engine", "reference", "--json"])
    assert status == 0
    metrics = json.loads(capsys.readouterr().out)["metrics"]
    assert metrics["speedup"] == simulate_reference(config).metrics["speedup"]
    assert metrics["speedup"] != simulate(config).metrics["speedup"]


@pytest.mark.parametrize(
    ("piece_rows", "block_bytes", "fused_bytes"),
    [(11, 1, 1), (1 << 20, 100, 1 << 30), (1000, 1 << 20, 200)],
)
def test_pieces_blocks_and_joined_columns_change_nothing(
    monkeypatch, piece_rows, block_bytes, fused_bytes
):
    # Tables per piece of records, lines assembled in blocks (a piece's last one short),
    # columns joined or not.
    monkeypatch.setattr(cycles_file, "CSV_PIECE_ROWS", piece_rows)
    monkeypatch.setattr(cycles_file, "CSV_BLOCK_BYTES", block_bytes)
    monkeypatch.setattr(cycles_file, "FUSED_TABLE_BYTES", fused_bytes)
    config = CONFIGS["clamp"]
    records = simulate(config, records=True).cycles
    assert len(records) % piece_rows != 0
    text = csv_header() + b"".join(csv_blocks(records, config))
    assert text == expected_csv(records, config)


def test_csv_sink_takes_chunks_in_order_and_an_empty_one(tmp_path):
    config = CONFIGS["default"]
    records = simulate(config, records=True).cycles
    out = tmp_path / "c.csv"
    with cycles_writer(out, config) as write:
        write(records.iloc[:1000])
        write(records.iloc[:0])
        write(records.iloc[1000:])
    assert out.read_bytes() == expected_csv(records, config)


def test_parquet_round_trip_one_row_group_per_chunk(run, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    config = CONFIGS["clamp"]
    records = simulate(config, records=True).cycles
    out = tmp_path / "cycles.parquet"
    status, err = run(*_flags(config), "--cycles-out", str(out))
    assert status == 0, err
    table = pq.read_table(out)
    assert table.column_names == list(CYCLES_COLUMNS)
    assert [str(t) for t in table.schema.types] == [
        "int32", "int32", "int32", "int32", "int32", "double", "int32", "double", "string",
        "double",
    ]  # fmt: skip
    back = table.to_pandas()
    expected = expected_frame(records, config)
    for column in CYCLES_COLUMNS:
        assert back[column].tolist() == expected[column].tolist(), column
    assert np.array_equal(back["running_speedup"], expected["running_speedup"])

    split = tmp_path / "split.parquet"
    with cycles_writer(split, config) as write:
        for part in np.array_split(np.arange(len(records)), 3):
            write(records.iloc[part])
    assert pq.ParquetFile(split).metadata.num_row_groups == 3
    assert pq.read_table(split).equals(table)


def test_parquet_without_pyarrow_is_one_line_before_the_run(run, tmp_path, monkeypatch):
    for module in ("pyarrow", "pyarrow.parquet"):
        monkeypatch.setitem(sys.modules, module, None)  # import fails: not installed

    def no_run(*args, **kwargs):
        raise AssertionError("the run started")

    monkeypatch.setattr(engine.simulate.simulator, "simulate", no_run)
    out = tmp_path / "cycles.parquet"
    status, err = run("--n-sequences", "5", "--cycles-out", str(out))
    assert status == 2
    assert err == (
        "spectui run: error: --cycles-out: writing Parquet needs pyarrow: "
        "pip install 'spectui[parquet]'\n"
    )
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", ["cycles.csv", "cycles.parquet"])
@pytest.mark.parametrize("existing", [False, True])
def test_interrupted_run_leaves_no_partial_file(run, tmp_path, monkeypatch, name, existing):
    if name.endswith(".parquet"):
        pytest.importorskip("pyarrow")
    out = tmp_path / name
    if existing:
        out.write_bytes(b"earlier file\n")
    real = engine.simulate.simulator.simulate
    written = []

    def interrupted(config, *, on_cycles=None, **kwargs):
        def sink(chunk: pd.DataFrame) -> None:
            on_cycles(chunk)  # the chunk reaches the temporary file, then Ctrl-C
            written.append(len(chunk))
            raise KeyboardInterrupt

        return real(config, on_cycles=sink, **kwargs)

    monkeypatch.setattr(engine.simulate.simulator, "simulate", interrupted)
    status, err = run("--n-sequences", "20", "--cycles-out", str(out))
    assert status == 130 and err.strip().endswith("interrupted")
    assert written  # the run was stopped mid-way, with records written
    assert [p.name for p in tmp_path.iterdir()] == ([name] if existing else [])
    if existing:
        assert out.read_bytes() == b"earlier file\n"
