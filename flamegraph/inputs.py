"""Open what the user names as input: a path, '-' for stdin, gzip text, or a perf.data file."""

from __future__ import annotations

import gzip
import sys
import zlib
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import IO, BinaryIO

from .diagnostics import InputMissing
from .perf import PERF_DATA_MAGIC, script_command, stream_script

GZIP_MAGIC = b"\x1f\x8b"
STDIN = "-"


def label(path: str) -> str:
    return "<stdin>" if path == STDIN else path


def _open_raw(path: str) -> BinaryIO:
    if path == STDIN:
        return sys.stdin.buffer
    try:
        return open(path, "rb")
    except FileNotFoundError:
        raise InputMissing(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputMissing(f"{path}: is a directory, expected a file") from None
    except PermissionError:
        raise InputMissing(f"{path}: permission denied") from None
    except OSError as err:
        raise InputMissing(f"{path}: cannot open: {err.strerror}") from None


def _peek(stream: BinaryIO, size: int) -> bytes:
    peek = getattr(stream, "peek", None)
    if peek is not None:
        return peek(size)[:size]
    return b""


def kind_of(path: str) -> str:
    """'perf.data', 'gzip' or 'text', from the first bytes (not the file name)."""
    stream = _open_raw(path)
    try:
        return _kind(_peek(stream, 8))
    finally:
        if path != STDIN:
            stream.close()


def _kind(head: bytes) -> str:
    if head[:8] in PERF_DATA_MAGIC:
        return "perf.data"
    if head[:2] == GZIP_MAGIC:
        return "gzip"
    return "text"


@contextmanager
def open_stream(path: str, with_pid: bool = False) -> Iterator[IO[bytes]]:
    """A binary stream of `perf script` (or folded) text from any supported input."""
    with ExitStack() as stack:
        raw = _open_raw(path)
        if path != STDIN:
            stack.callback(raw.close)
        kind = _kind(_peek(raw, 8))
        if kind == "perf.data":
            if path == STDIN:
                raise InputMissing("<stdin>: perf.data on stdin is not supported; pass the file's path")
            yield stack.enter_context(stream_script(script_command(path, with_pid), path))
        elif kind == "gzip":
            yield stack.enter_context(gzip.open(raw, "rb"))  # type: ignore[arg-type,misc]
        else:
            yield raw


@contextmanager
def gzip_errors(path: str) -> Iterator[None]:
    """A truncated or corrupt .gz found while reading `path` -> one line (exit 4), not a traceback.

        with open_stream(path) as lines, gzip_errors(path):
            read_folded(lines, label(path), diagnostics)
    """
    try:
        yield
    except (EOFError, gzip.BadGzipFile, zlib.error) as err:
        raise InputMissing(f"{label(path)}: truncated or corrupt gzip data: {err}") from None
