import csv
import io

import pandas as pd
import pytest

from engine.core.files import (
    SweepWriter,
    append_csv_row,
    atomic_open,
    atomic_write_text,
    input_lines,
)


def test_atomic_write_keeps_old_file_on_failure(tmp_path):
    path = tmp_path / "out.txt"
    path.write_text("old")
    with pytest.raises(RuntimeError), atomic_open(path) as handle:
        handle.write("half")
        raise RuntimeError("boom")
    assert path.read_text() == "old"
    assert list(tmp_path.iterdir()) == [path]
    atomic_write_text(path, "new")
    assert path.read_text() == "new"


def test_append_writes_header_once(tmp_path):
    path = tmp_path / "s.csv"
    append_csv_row(path, {"a": 1, "b": 2})
    append_csv_row(path, {"a": 3, "b": 4})
    rows = list(csv.reader(path.open()))
    assert rows == [["a", "b"], ["1", "2"], ["3", "4"]]


def test_sweep_writer_streams_then_finishes(tmp_path):
    out = tmp_path / "deep" / "sweep.csv"
    writer = SweepWriter(out, ["config_id", "x"])
    writer.write({"config_id": 1, "x": 0.5})
    writer.write({"config_id": 0, "x": 0.25})
    # Rows are on disk before the sweep ends.
    assert pd.read_csv(writer.partial)["config_id"].tolist() == [1, 0]
    assert not out.exists()
    writer.finish()
    assert out.read_text() == "config_id,x\n0,0.25\n1,0.5\n"
    assert not writer.partial.exists()


def test_atomic_write_follows_symlinks_and_refuses_non_files(tmp_path):
    import os

    real = tmp_path / "real.csv"
    real.write_text("old")
    link = tmp_path / "link.csv"
    link.symlink_to(real)
    atomic_write_text(link, "new")
    assert link.is_symlink() and real.read_text() == "new"
    fifo = tmp_path / "fifo.csv"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="not a regular file"):
        atomic_write_text(fifo, "x")
    with pytest.raises(IsADirectoryError):
        atomic_write_text(tmp_path, "x")
    with pytest.raises(IsADirectoryError):
        SweepWriter(tmp_path, ["a"])
    with pytest.raises(FileNotFoundError) as info:
        atomic_write_text(tmp_path / "missing" / "x.csv", "x")
    assert info.value.filename == str(tmp_path / "missing" / "x.csv")


def test_input_lines_splits_as_splitlines_across_blocks():
    """Lines cut across read blocks (max_line 16: blocks of 16 bytes), multi-byte characters
    split between blocks, every separator str.splitlines knows, and a bad byte."""
    data = "ab\r\ncé\rdé\x85f\u2028g\n\nhij\n".encode() + b"\xff\xfek\nlast"
    assert (
        list(input_lines(io.BytesIO(data), max_line=16))
        == data.decode("utf-8", "replace").splitlines()
    )
    assert list(input_lines(io.BytesIO(b"0123456789\nab\n"), max_line=4)) == ["0123", "ab"]


def test_a_csv_cell_is_written_as_pandas_to_csv_writes_it():
    """Floats by their shortest repr (every digit kept), NaN and None empty, the rest by str:
    a streamed sweep's rows read back equal to the frame the engine computed."""
    import math

    import numpy as np
    import pandas as pd

    from engine.core.files import csv_cell, csv_line

    values = [0.1 + 0.2, np.float64(1 / 3), 1e-300, math.nan, None, 7, "fixed", True]
    assert [csv_cell(v) for v in values] == [
        "0.30000000000000004",
        "0.3333333333333333",
        "1e-300",
        "",
        "",
        "7",
        "fixed",
        "True",
    ]
    frame = pd.DataFrame([values[:4] + values[5:]])
    written = frame.to_csv(index=False, header=False, lineterminator="\n")
    assert csv_line(values[:4] + values[5:]) == written
