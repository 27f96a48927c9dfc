"""Open what the user names as input: a path, '-' for stdin, gzip text, or a perf.data file.

One opener for every command, and one translation of what can go wrong while reading into a
one-line `InputMissing` (exit 4): a missing or unreadable file, a truncated or corrupt `.gz`
(`EOFError`, `BadGzipFile`, `zlib.error`), an I/O error. perf.data is run through `perf script`
(with the caller's extra options), whose own failures are `PerfFailed`/`NotPermitted`.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from typing import IO, BinaryIO

from .diagnostics import InputMissing

GZIP_MAGIC = b"\x1f\x8b"
PERF_DATA_MAGIC = (b"PERFILE2", b"2ELIFREP")  # little- and big-endian perf.data headers
STDIN = "-"
F_SETPIPE_SZ = 1031  # fcntl.h (Linux)
PIPE_SIZE = 1 << 20  # perf script keeps writing while a block is folded (the default 64 KiB would stall it)


def label(path: str) -> str:
    return "<stdin>" if path == STDIN else path


def _open_raw(path: str) -> BinaryIO:
    if path == STDIN:
        if sys.stdin is None:  # started with stdin closed (`<&-`): Python sets sys.stdin to None
            raise InputMissing("<stdin>: stdin is closed, nothing to read (name a file, or pipe the input in)")
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


def _widen_pipe(stream: IO[bytes]) -> None:
    try:
        import fcntl

        fcntl.fcntl(stream.fileno(), F_SETPIPE_SZ, PIPE_SIZE)
    except (AttributeError, ImportError, OSError, ValueError):
        pass  # a smaller pipe only costs overlap


@contextmanager
def open_stream(path: str, with_pid: bool = False, script_args: Sequence[str] = ()) -> Iterator[IO[bytes]]:
    """A binary stream of `perf script` (or folded) text from any supported input.

    perf.data is scripted with `--no-inline`, `-F +pid` when `with_pid`, and `script_args`; its text
    is read as perf writes it. Read errors inside the `with` block become one `InputMissing`."""
    where = label(path)
    with ExitStack() as stack:
        raw = _open_raw(path)
        if path != STDIN:
            stack.callback(raw.close)
        try:
            kind = _kind(_peek(raw, 8))
        except OSError as err:
            raise InputMissing(f"{where}: read failed: {err.strerror or err}") from None
        try:
            if kind == "perf.data":
                if path == STDIN:
                    raise InputMissing("<stdin>: perf.data on stdin is not supported; pass the file's path")
                from .perf import script_command, stream_script  # subprocess: only for perf.data

                stream = stack.enter_context(stream_script(script_command(path, with_pid, script_args), path))
                _widen_pipe(stream)
                yield stream
            elif kind == "gzip":
                import gzip
                import zlib

                try:
                    yield stack.enter_context(gzip.GzipFile(fileobj=raw, mode="rb"))  # type: ignore[arg-type]
                except (EOFError, gzip.BadGzipFile, zlib.error) as err:
                    raise InputMissing(f"{where}: truncated or corrupt gzip data: {err}") from None
            else:
                if path == STDIN:
                    _widen_pipe(raw)
                yield raw
        except OSError as err:
            raise InputMissing(f"{where}: read failed: {err.strerror or err}") from None


class TooDeep(ValueError):
    """JSON nested deeper than the reader allows."""


def parse_json(data: bytes, max_depth: int) -> object:
    """json.loads of a file we did not just write, with its nesting bounded first: the parser
    recurses once per level (100,000 nested lists raise RecursionError). ValueError if not JSON,
    TooDeep if nested deeper than `max_depth`."""
    import json

    if data.count(b"[") + data.count(b"{") > max_depth:  # cheap: only then can it be too deep
        if _json_depth(data) > max_depth:
            raise TooDeep(f"nested deeper than {max_depth} levels")
    return json.loads(data.decode("utf-8", "surrogateescape"))


def _json_depth(data: bytes) -> int:
    """The deepest nesting of [ and { outside strings, in C-speed passes (a 1 MiB file: ~50 ms)."""
    import re
    from itertools import accumulate

    # A string runs to its closing quote, or to the end when unterminated: each match consumes what
    # it tried (a lone backslash at the end too), so no position is scanned twice.
    strings = re.compile(rb'"(?:[^"\\]++|\\.?)*+(?:"|\Z)', re.DOTALL)
    brackets = strings.sub(b"", data).translate(None, _NOT_BRACKETS)
    return max(accumulate(map(_DEPTH_STEP.__getitem__, brackets)), default=0)


_NOT_BRACKETS = bytes(set(range(256)) - set(b"[]{}"))
_DEPTH_STEP = {0x5B: 1, 0x7B: 1, 0x5D: -1, 0x7D: -1}


@contextmanager
def gzip_errors(path: str) -> Iterator[None]:
    """A truncated or corrupt .gz found while reading `path` -> one line (exit 4), not a traceback.
    `open_stream` translates these itself; this is for a stream read outside its `with` block.

        with open_stream(path) as lines, gzip_errors(path):
            read_folded(lines, label(path), diagnostics)
    """
    import gzip
    import zlib

    try:
        yield
    except (EOFError, gzip.BadGzipFile, zlib.error) as err:
        raise InputMissing(f"{label(path)}: truncated or corrupt gzip data: {err}") from None
