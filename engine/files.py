"""Writing results safely: atomic replacement, appended summaries, sweeps written as they run.

The engine writes a file only when a caller asks it to, through these functions.
"""

from __future__ import annotations

import csv
import errno
import os
import tempfile
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from .config import ConfigError

if TYPE_CHECKING:  # pandas is imported by the callers that pass frames; keep this module light
    import pandas as pd


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


# New files get the usual permissions (mkstemp alone would make them private).
_NEW_FILE_MODE = 0o666 & ~_umask()


def writable_target(path: Path) -> Path:
    """The regular file that writing ``path`` should replace: a symlink is followed; a
    directory, device or FIFO is refused (OSError naming ``path``)."""
    path = Path(path)
    if not path.name:
        raise IsADirectoryError(errno.EISDIR, "not a file name", str(path))
    if path.is_symlink():
        path = path.resolve()
    if path.is_dir():
        raise IsADirectoryError(errno.EISDIR, "is a directory", str(path))
    if path.exists() and not path.is_file():
        raise OSError(errno.EINVAL, "not a regular file", str(path))
    return path


@contextmanager
def atomic_open(path: Path, mode: str = "w") -> Iterator[IO[Any]]:
    """Open a temporary file beside ``path``; on success it replaces ``path`` atomically.

    ``mode`` is "w" (text, UTF-8) or "wb". On an exception the temporary file is removed
    and ``path`` is left untouched.
    """
    path = writable_target(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as err:  # name the file the user asked for, not our temporary one
        raise type(err)(err.errno, err.strerror, str(path)) from None
    try:
        os.chmod(tmp, path.stat().st_mode & 0o777 if path.exists() else _NEW_FILE_MODE)
        binary = "b" in mode
        encoding, newline = (None, None) if binary else ("utf-8", "")
        with os.fdopen(fd, mode, encoding=encoding, newline=newline) as handle:
            yield handle
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    with atomic_open(path) as handle:
        handle.write(text)


def atomic_write_csv(path: Path, frame: pd.DataFrame) -> None:
    with atomic_open(path) as handle:
        frame.to_csv(handle, index=False)


def append_csv_row(
    path: Path, row: Mapping[str, Any], optional: Collection[str] = (), field: str = "file"
) -> None:
    """Append one row; write the header only when this call creates the file.

    A file that exists keeps its columns: the row is written under its header, in its
    order. A column of ``optional`` that the file lacks (one added since the file was
    begun) is left out; any other difference is a :class:`engine.config.ConfigError` on
    ``field`` that names it, and nothing is written (a row under the wrong header would
    shift every value)."""
    path = writable_target(path)
    header = check_appendable(path, list(row), optional, field)
    with path.open("a", encoding="utf-8", newline="") as handle:
        names = list(row) if header is None else header
        writer = csv.DictWriter(handle, fieldnames=names, extrasaction="ignore")
        if header is None:
            writer.writeheader()
        writer.writerow(dict(row))


def check_appendable(
    path: Path, names: Sequence[str], optional: Collection[str] = (), field: str = "file"
) -> list[str] | None:
    """The header of ``path`` if rows of columns ``names`` can be appended to it (None:
    no file yet, or an empty one); :class:`engine.config.ConfigError` on ``field`` if not
    (see :func:`append_csv_row`). A caller checks before a long run, not after it."""
    header = _header_of(path)
    if header is None:
        return None
    missing = [name for name in header if name not in names]
    extra = [name for name in names if name not in header and name not in optional]
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


def _header_of(path: Path) -> list[str] | None:
    """The column names of an existing, non-empty CSV file, else None."""
    if not path.exists() or path.stat().st_size == 0:
        return None
    with path.open(encoding="utf-8", newline="") as handle:
        return next(csv.reader(handle), None)


class SweepWriter:
    """Streams sweep rows to ``<out>.partial`` as they finish; ``finish`` writes ``out``.

    ``columns`` are the sweep's (:func:`engine.sweep.sweep_columns`: the original's, then
    any newer field the sweep sets, then the metrics); a row's other keys are not written.

    If the process dies, the ``.partial`` file still holds every row finished so far.
    ``finish`` replaces ``out`` atomically with the rows sorted by configuration, then
    removes the partial file.
    """

    def __init__(self, out: Path, columns: Sequence[str]) -> None:
        self.out = writable_target(out)
        self.partial = self.out.with_name(self.out.name + ".partial")
        self.columns = list(columns)
        self.out.parent.mkdir(parents=True, exist_ok=True)
        self._handle: IO[str] | None = self.partial.open("w", encoding="utf-8", newline="")
        self._writer = csv.DictWriter(self._handle, fieldnames=self.columns)
        self._writer.writeheader()
        self._handle.flush()

    def write(self, row: Mapping[str, Any]) -> None:
        assert self._handle is not None, "SweepWriter already finished"
        self._writer.writerow({c: row.get(c) for c in self.columns})
        self._handle.flush()

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None

    def finish(self, frame: pd.DataFrame) -> Path:
        """Write the final (possibly partial) sweep to ``out`` atomically."""
        self.close()
        atomic_write_csv(self.out, frame)
        self.partial.unlink(missing_ok=True)
        return self.out
