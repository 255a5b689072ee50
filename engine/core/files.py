"""Writing results safely: atomic replacement (from :mod:`engine.core.writes`, re-exported
here), appended summaries, sweeps written as they run; and (from :mod:`engine.core.inputs`,
re-exported here) reading what a user names: regular files only, never waited on, read to a
stated size (:func:`open_input`, :func:`read_input`, :func:`input_lines` for a log of any
size).

The engine writes a file only when a caller asks it to, through these functions.
"""

from __future__ import annotations

import contextlib
import csv
import errno
import io
import os
from array import array
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from engine.core.config import ConfigError, ascii_int
from engine.core.inputs import (  # the reading half, re-exported
    LOG_LINE_MAX_BYTES,
    PRESET_MAX_BYTES,
    SWEEP_CSV_MAX_BYTES,
    TABLE_MAX_BYTES,
    TOML_MAX_DEPTH,
    input_lines,
    open_input,
    read_input,
    read_input_text,
    shown_cell,
    shown_value,
    size_text,
    toml_document,
)
from engine.core.writes import (  # the atomic half, re-exported
    _naming,
    atomic_open,
    atomic_write_csv,
    atomic_write_text,
    csv_cell,
    csv_line,
    writable_target,
)

__all__ = [
    "LOG_LINE_MAX_BYTES",
    "PRESET_MAX_BYTES",
    "SWEEP_CSV_MAX_BYTES",
    "TABLE_MAX_BYTES",
    "TOML_MAX_DEPTH",
    "SweepWriter",
    "append_csv_row",
    "atomic_open",
    "atomic_write_csv",
    "atomic_write_text",
    "check_appendable",
    "csv_cell",
    "csv_line",
    "input_lines",
    "open_input",
    "read_input",
    "read_input_text",
    "shown_cell",
    "shown_value",
    "size_text",
    "sweep_lock",
    "toml_document",
    "writable_target",
]

if TYPE_CHECKING:
    from engine.core.config import SpecConfig


def append_csv_row(
    path: Path, row: Mapping[str, Any], optional: Collection[str] = (), field: str = "file"
) -> None:
    """Append one row; write the header only when this call creates the file.

    A file that exists keeps its columns: the row is written under its header, in its
    order. A column of ``optional`` that the file lacks (one added since the file was
    begun) is left out; any other difference is a :class:`engine.core.config.ConfigError` on
    ``field`` that names it, and nothing is written (a row under the wrong header would
    shift every value); so is a file whose last line is incomplete (see
    :func:`check_appendable`).

    The row is appended whole or not at all: it goes in one ``os.write`` (under an
    exclusive ``flock``, so that two runs appending at once do not mix their rows); if the
    disk takes only part of it, or none, the file is truncated back to its size before
    (a file this call created is removed) and the OSError names ``path``."""
    path = writable_target(path)
    names = list(row)
    check_appendable(path, names, optional, field)  # refuse before creating anything
    try:
        fd, created = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL, 0o666), True
    except FileExistsError:
        fd, created = os.open(path, os.O_WRONLY | os.O_APPEND), False
    try:
        _lock(fd)
        size = os.fstat(fd).st_size
        # Again under the lock: another run may have begun the file meanwhile.
        header = check_appendable(path, names, optional, field) if size else None
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=header or names, extrasaction="ignore")
        if header is None:
            writer.writeheader()
        writer.writerow(dict(row))
        data = buffer.getvalue().encode("utf-8")
        with _naming(path):
            try:
                written = os.write(fd, data)
                if written != len(data):  # a full disk (or quota) took only part of it
                    raise OSError(
                        errno.ENOSPC,
                        f"{os.strerror(errno.ENOSPC)} (only {written} of {len(data)} bytes "
                        "written; nothing was appended)",
                    )
            except OSError:
                os.ftruncate(fd, size)
                if created:
                    path.unlink(missing_ok=True)
                raise
    finally:
        os.close(fd)


def _lock(fd: int) -> None:
    """An exclusive advisory lock on ``fd`` (waits for the holder; none off POSIX)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        return
    fcntl.flock(fd, fcntl.LOCK_EX)


def check_appendable(
    path: Path, names: Sequence[str], optional: Collection[str] = (), field: str = "file"
) -> list[str] | None:
    """The header of ``path`` if rows of columns ``names`` can be appended to it (None:
    no file yet, or an empty one); :class:`engine.core.config.ConfigError` on ``field`` if not
    (see :func:`append_csv_row`): other columns, or a last line without its line ending
    (a write cut short: a row appended to it would be glued onto it). A caller checks
    before a long run, not after it."""
    header = _header_of(path)
    if header is None:
        return None
    incomplete = _incomplete_line(path)
    if incomplete is not None:
        raise ConfigError(
            field,
            f"{path} line {incomplete} is incomplete (no line ending: a write cut short); "
            "remove that line, or use a new file",
        )
    missing = [name for name in header if name not in names]
    extra = [name for name in names if name not in header and name not in optional]
    if len(missing) == len(header):  # no column of ours: not repeated (it may be a secret)
        raise ConfigError(
            field,
            f"{path}: line 1 is not a header of these columns (a CSV of spectui's); use a new file",
        )
    if missing or extra:
        detail = "; ".join(
            f"{what}: {', '.join(found)}"
            for what, found in (("not in this run", missing), ("not in the file", extra))
            if found
        )
        raise ConfigError(
            field, f"{path} has other columns than this run ({detail}); use a new file"
        )
    return header


def _incomplete_line(path: Path) -> int | None:
    """The number of the last line of a non-empty ``path`` if it lacks its line ending."""
    with path.open("rb") as handle:
        handle.seek(-1, os.SEEK_END)
        if handle.read(1) == b"\n":
            return None
        handle.seek(0)
        return 1 + sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 20), b""))


def _header_of(path: Path) -> list[str] | None:
    """The column names of an existing, non-empty CSV file, else None."""
    if not path.exists() or path.stat().st_size == 0:
        return None
    with open_input(path) as handle:  # a header's worth at most, whatever the file holds
        first = handle.readline(LOG_LINE_MAX_BYTES).decode("utf-8", "replace")
    return next(csv.reader([first]), None)


@contextmanager
def sweep_lock(out: Path, field: str = "--out") -> Iterator[Path]:
    """Hold the lock of the sweep that writes ``out`` for the block: ``<out>.lock``, with
    an exclusive ``flock`` and this process's pid in it (removed at the end; one left by a
    process that died holds no lock, and is taken over). Two sweeps never write one
    ``out`` (nor its partial file): while one holds the lock, another gets a
    :class:`engine.core.config.ConfigError` on ``field`` naming the holder's pid."""
    out = writable_target(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    path = out.with_name(out.name + ".lock")
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX: no lock
        yield path
        return
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            os.close(fd)
            who = f"pid {holder}" if holder.isdigit() else f"its lock: {path}"
            raise ConfigError(
                field,
                f"{out} is being written by another sweep ({who}); wait for it to end, "
                "or use another --out",
            ) from None
        except BaseException:
            os.close(fd)
            raise
        try:
            same = os.path.samestat(os.fstat(fd), os.stat(path))
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)  # its holder removed it as we took it: take the new one
    try:
        with _naming(path):
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode("ascii"))
        yield path
    finally:
        path.unlink(missing_ok=True)  # while locked: whoever opened it sees it is gone
        os.close(fd)


class SweepWriter:
    """Streams sweep rows to ``<out>.partial`` as they finish; ``finish`` writes ``out``.

    ``columns`` are the sweep's (:func:`engine.sweep.sweep.sweep_columns`: ``config_id``, the
    configuration's fields, then the metrics); a row's other keys are not written. Each row
    is written as the final file holds it (:func:`csv_line`), so the final file is the
    partial file's lines sorted by ``config_id``: the same bytes however the rows came
    (in any order, from any number of workers, over several runs of a resumed sweep).

    If the process dies, the ``.partial`` file still holds every row finished so far.
    ``SweepWriter(..., resume=configs)`` continues such a file (or, with none, ``out``
    itself: a sweep stopped early writes its rows there): its rows are checked against
    ``configs`` (a row of another sweep is a :class:`engine.core.config.ConfigError` on
    ``--resume``, nothing is changed; ``expect(config)``: more columns a row must hold, such
    as its ``sampler``), a last line cut short by a crash is dropped, and
    :attr:`done` holds the ``config_id`` of each row kept. ``finish`` replaces ``out``
    atomically with the rows sorted by configuration, then removes the partial file. No row
    is held in memory: the writer keeps each row's offset in the file.
    """

    def __init__(
        self,
        out: Path,
        columns: Sequence[str],
        resume: Sequence[SpecConfig] | None = None,
        expect: Callable[[SpecConfig], Mapping[str, Any]] | None = None,
    ) -> None:
        self.out = writable_target(out)
        # A FIFO or a device there is refused, not waited on (nor written to).
        self.partial = writable_target(self.out.with_name(self.out.name + ".partial"))
        self.columns = list(columns)
        self.out.parent.mkdir(parents=True, exist_ok=True)
        # Each row's offset in the partial file by config_id (-1: none yet): 8 bytes a row.
        self._offsets = array("q")
        self._failed = False  # a write failed (a full disk)
        header = csv_line(self.columns)
        kept = 0
        self.resumed_from: Path | None = None  # the file a resumed sweep's rows came from
        if resume is not None:
            source = self.partial if self.partial.exists() else self.out
            if source.exists():
                self.resumed_from = source
                kept = self._read(source, header, resume, expect)
                if source == self.out:
                    with (
                        _naming(self.partial),
                        self.out.open("rb") as old,
                        self.partial.open("wb") as new,
                    ):
                        new.write(old.read(kept))
        if kept:
            self._handle: IO[bytes] | None = self.partial.open("r+b")
            self._handle.seek(kept)
            self._handle.truncate()
        else:
            self._handle = self.partial.open("wb")
            try:
                with _naming(self.partial):  # a full disk
                    self._handle.write(header.encode("utf-8"))
                    self._handle.flush()
            except OSError:
                self._failed = True
                self.close()
                raise

    @property
    def done(self) -> set[int]:
        """The ``config_id`` of every row in the file so far."""
        return {index for index, offset in enumerate(self._offsets) if offset >= 0}

    def _note(self, index: int, offset: int) -> None:
        """Row ``index`` starts at ``offset`` (the first row of a configuration counts)."""
        if index >= len(self._offsets):
            self._offsets.extend([-1] * (index + 1 - len(self._offsets)))
        if self._offsets[index] < 0:
            self._offsets[index] = offset

    def _read(
        self,
        path: Path,
        header: str,
        configs: Sequence[SpecConfig],
        expect: Callable[[SpecConfig], Mapping[str, Any]] | None,
    ) -> int:
        """Index the rows of an earlier run of this sweep; return the length of the file's
        sound part (the header and every whole row). A row's configuration columns must be
        its configuration's, and the columns ``expect(config)`` names must hold those values
        (the ``sampler``: rows of another engine, or exact-only ones, are not mixed in)."""
        fields = [c for c in self.columns[1:] if c in _config_keys()]
        positions = [self.columns.index(c) for c in fields]
        with open_input(path) as handle:  # a FIFO put there is refused, not waited on
            first = handle.readline()
            if not first.endswith(b"\n"):
                return 0  # not even a header: start again
            if first.endswith(b"\r\n") and first[:-2] + b"\n" == header.encode("utf-8"):
                raise ConfigError(
                    "--resume",
                    f"{path} has Windows line endings (CRLF): spectui did not write it as it "
                    "is; use a new --out",
                )
            if first.decode("utf-8", "replace") != header:
                raise ConfigError(
                    "--resume",
                    f"{path} has other columns than this sweep; use a new --out, or drop "
                    "--resume to start again",
                )
            offset = handle.tell()
            for number, raw in enumerate(iter(handle.readline, b""), start=2):
                if not raw.endswith(b"\n"):
                    break  # cut short by a crash: run its configuration again
                try:
                    cells = next(csv.reader([raw.decode("utf-8")]))
                    index = ascii_int(cells[0])
                    config = configs[index] if index >= 0 else None
                except (
                    ValueError,
                    IndexError,
                    StopIteration,
                ):  # not UTF-8 (a ValueError), not a row
                    config = None
                # Only rows as spectui writes them (their bytes go to the final file).
                if config is None or not (
                    len(cells) == len(self.columns)
                    and cells[0] == str(index)
                    and csv_line(cells).encode("utf-8") == raw
                ):
                    raise ConfigError(
                        "--resume", f"{path} line {number} is not a row of this sweep"
                    )
                record = config.values()
                checks = list(zip(fields, positions, strict=True))
                if expect is not None:
                    extra = expect(config)
                    record = {**record, **extra}
                    checks += [(name, self.columns.index(name)) for name in extra]
                for name, position in checks:
                    if cells[position] != csv_cell(record[name]):
                        raise ConfigError(
                            "--resume",
                            f"{path} line {number} is another sweep's (config {index}: "
                            f"{name} {cells[position]} where this sweep has "
                            f"{csv_cell(record[name])}); use a new --out",
                        )
                self._note(index, offset)
                offset += len(raw)
        return offset

    def write(self, row: Mapping[str, Any]) -> None:
        assert self._handle is not None, "SweepWriter already finished"
        self._note(int(row["config_id"]), self._handle.tell())
        try:
            with _naming(self.partial):  # a full disk (--resume drops a row cut short)
                self._handle.write(csv_line([row.get(c) for c in self.columns]).encode())
                self._handle.flush()
        except OSError:
            self._failed = True
            raise

    def close(self) -> None:
        if self._handle is not None:
            handle, self._handle = self._handle, None
            if self._failed:  # its buffer holds the row that failed: it would fail again
                with contextlib.suppress(OSError):
                    handle.close()
            else:
                handle.close()

    def finish(self) -> Path:
        """Write the sweep's rows so far (all of them, or those a stopped sweep finished)
        to ``out`` atomically, sorted by ``config_id``; remove the partial file."""
        self.close()
        with self.partial.open("rb") as source, atomic_open(self.out, "wb") as target:
            target.write(source.readline())
            for offset in self._offsets:
                if offset >= 0:
                    source.seek(offset)
                    target.write(source.readline())
        self.partial.unlink(missing_ok=True)
        return self.out


def _config_keys() -> Collection[str]:
    """The keys of the fields (the table follows the parts registered so far)."""
    from engine.core.config import FIELD_SPECS

    return FIELD_SPECS.keys()
