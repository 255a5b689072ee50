"""Reading what a user names: regular files only, never waited on, read to a stated size
(:func:`open_input`, :func:`read_input`, :func:`input_lines` for a log of any size), and
how a bad value or cell is shown back in one line."""

from __future__ import annotations

import errno
import os
import stat
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from engine.core.fields import ascii_number

# --- Reading what a user names: regular files only, never blocking, never unbounded ----------

# The most spectui reads of a file it reads whole; a larger one is refused unread, in one line.
PRESET_MAX_BYTES = 1 << 20  # a preset (TOML), and the user's hardware.toml / models.toml
TABLE_MAX_BYTES = 1 << 20  # a cost table (CSV or vLLM's JSON profile), calibrate --cost-points
SWEEP_CSV_MAX_BYTES = 256 << 20  # a sweep's results, for analyze and plot
# A log is streamed, line by line, at any size; a line longer than this is cut there (no
# metrics line comes near it), so that a file without newlines is never held whole.
LOG_LINE_MAX_BYTES = 1 << 16


def size_text(size: int) -> str:
    """A byte count for a message: ``1 MiB``, ``3.5 GiB``, ``812 bytes``."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.3g} {unit}"
    return f"{size} bytes"


def _not_regular(mode: int) -> str | None:
    """What a file of ``mode`` is, when it is not a regular file (None when it is)."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a device"


def open_input(path: str | Path, limit: int | None = None, what: str = "a file") -> IO[bytes]:
    """``path`` opened for reading in binary, if it is a regular file (a symlink is followed)
    of at most ``limit`` bytes (when given).

    Anything else (a directory, a FIFO, a device such as /dev/zero, a socket) is refused
    without reading it and without blocking: the file is examined before it is opened, and
    opened with O_NONBLOCK (a FIFO swapped in meanwhile is refused too, not waited on).
    Raises OSError naming ``path``; its ``strerror`` says what the file is, or that it is
    larger than ``what`` may be."""
    name = os.fspath(path)
    kind = _not_regular(os.stat(name).st_mode)
    if kind is None:
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        try:
            info = os.fstat(fd)
            kind = _not_regular(info.st_mode)
            if kind is None:
                if limit is not None and info.st_size > limit:
                    raise _too_large(name, limit, what)
                os.set_blocking(fd, True)
                return os.fdopen(fd, "rb")
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)
    errcode = errno.EISDIR if kind == "a directory" else errno.EINVAL
    raise OSError(errcode, f"{kind}, not a regular file", name)


def _too_large(name: str, limit: int, what: str) -> OSError:
    return OSError(errno.EFBIG, f"larger than the {size_text(limit)} {what} may be", name)


def read_input(path: str | Path, limit: int, what: str) -> bytes:
    """The bytes of the regular file ``path`` (:func:`open_input`), at most ``limit`` of them:
    a larger file (or one that grows past it) is refused, unread."""
    with open_input(path, limit, what) as handle:
        # Asked for the file's size, not the limit: read(n) sets aside n bytes before it
        # reads (256 MiB for a distributions file of a few bytes).
        size = os.fstat(handle.fileno()).st_size
        data = handle.read(size + 1)
        if size < len(data) <= limit:  # it grew while read: read on, to the limit
            data += handle.read(limit + 1 - len(data))
    if len(data) > limit:
        raise _too_large(os.fspath(path), limit, what)
    return data


def read_input_text(path: str | Path, limit: int, what: str) -> str:
    """:func:`read_input`, decoded as UTF-8 (UnicodeDecodeError when it is not)."""
    return read_input(path, limit, what).decode("utf-8")


def input_lines(handle: IO[bytes], max_line: int = LOG_LINE_MAX_BYTES) -> Iterator[str]:
    """The lines of a binary stream, decoded (UTF-8, a bad byte replaced) and split as
    ``str.splitlines`` splits a text, read a block at a time: memory stays flat in the
    stream's length. A line longer than ``max_line`` bytes is cut there; the rest of it is
    dropped."""
    size = min(1 << 16, max_line)  # a line inside one block is never too long
    pending = b""  # the start of a line the next block ends
    dropping = False  # inside the rest of a line that was cut
    while block := handle.read(size):
        if dropping:
            newline = block.find(b"\n")
            if newline < 0:
                continue
            block, dropping = block[newline + 1 :], False
        data = pending + block if pending else block
        first = data.find(b"\n")
        if first > max_line:  # the line that began in an earlier block
            yield from data[:max_line].decode("utf-8", "replace").splitlines()
            data = data[first + 1 :]
        last = data.rfind(b"\n")
        pending = data[last + 1 :]
        if last >= 0:
            yield from data[: last + 1].decode("utf-8", "replace").splitlines()
        if len(pending) > max_line:
            yield from pending[:max_line].decode("utf-8", "replace").splitlines()
            pending, dropping = b"", True
    if pending:
        yield from pending.decode("utf-8", "replace").splitlines()


# Tables and arrays nested deeper than this are refused: no spectui file needs more than a
# few levels, and code that walks a document (a preset's dotted keys) may recurse.
TOML_MAX_DEPTH = 32


def toml_document(text: str) -> dict[str, Any]:
    """``tomllib.loads(text)``; a document nested more than :data:`TOML_MAX_DEPTH` levels
    (even 100,000 arrays in arrays, too deep for the parser) is a
    :class:`tomllib.TOMLDecodeError` too, never a RecursionError."""
    try:
        document = tomllib.loads(text)
    except RecursionError:
        document = None
    if document is None or _depth(document) > TOML_MAX_DEPTH:
        raise tomllib.TOMLDecodeError(
            f"arrays or tables nested more than {TOML_MAX_DEPTH} levels deep"
        )
    return document


def _depth(node: Any) -> int:
    """How deeply tables and arrays nest in ``node`` (without recursion)."""
    deepest, stack = 0, [(node, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item
        for child in children:
            if isinstance(child, dict | list):
                if depth + 1 > TOML_MAX_DEPTH:
                    return depth + 1
                stack.append((child, depth + 1))
        deepest = max(deepest, depth)
    return deepest


def shown_value(value: Any) -> str:
    """A value read from a file (TOML's, JSON's), for an error message: a number as itself,
    anything else by its type only, so that a message never repeats the text of a file
    that may not be what it should be (a secret)."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return repr(value)
    kinds = {str: "a string", list: "a list", dict: "a table"}
    return next((v for k, v in kinds.items() if isinstance(value, k)), "a value")


def shown_cell(text: str) -> str:
    """A cell of a text file (CSV), for an error message: itself if it reads as a number in
    ASCII digits (:func:`engine.core.fields.ascii_number`), else only that it does not
    (:func:`shown_value`)."""
    try:
        ascii_number(text)
    except (TypeError, ValueError, AttributeError):
        return "text that is not a number" if str(text).strip() else "an empty field"
    return text.strip() if len(text) <= 32 else "a number too long to show"
