"""Writing a file safely: atomic replacement (:func:`atomic_open`), the target a write
replaces (:func:`writable_target`), and CSV lines as a sweep writes them (:func:`csv_line`).
:mod:`engine.core.files` re-exports these, and builds appends and sweep files on them.
"""

from __future__ import annotations

import csv
import errno
import io
import os
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:  # pandas is imported by the callers that pass frames; keep this module light
    import pandas as pd


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


# New files get the usual permissions (mkstemp alone would make them private).
_NEW_FILE_MODE = 0o666 & ~_umask()


@contextmanager
def _naming(path: Path) -> Iterator[None]:
    """An OSError of the block that names no file (a write on a full disk) names ``path``."""
    try:
        yield
    except OSError as err:
        if err.filename is not None:
            raise
        raise OSError(err.errno, err.strerror, str(path)) from None


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
        with _naming(path):  # a write that fails (a full disk) names the file
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


def csv_cell(value: Any) -> str:
    """A value as a sweep's CSV writes it, as pandas' ``to_csv`` does: a float by its
    shortest repr, NaN and None empty, anything else by ``str``."""
    if value is None:
        return ""
    if isinstance(value, float):  # numpy's float64 too
        return "" if value != value else repr(float(value))
    return str(value)


def csv_line(values: Sequence[Any]) -> str:
    """One CSV line (quoted as needed, ending in a newline) of ``values``, by :func:`csv_cell`."""
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerow([csv_cell(v) for v in values])
    return buffer.getvalue()
