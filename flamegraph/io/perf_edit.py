"""perf.data's records, edited in place: the one walk of the data section behind the fixes we make to perf's
own file before a perf tool reads it (record/exec_forks.py, frameworks/jit/anon.py).

Only a seekable little-endian perf.data is touched; anything else (pipe mode, another byte order, a file cut
short) is left as it is, and so is the rest of a file whose records stop making sense. Never a link.

    edited = edit_records(path, fix)   # fix(data, records) -> how many records it changed; 0 when untouched
"""

from __future__ import annotations

import mmap
import os
import struct
from collections.abc import Callable, Iterator

HEADER = struct.Struct("<IHH")  # perf_event_header: type, misc, size
FILE_HEADER = struct.Struct("<8sQQQQQQ")  # magic, size, attr_size, attrs (offset, size), data (offset, size)
Record = tuple[int, int, int, int]  # (offset, type, misc, size) of a record in the data section


def edit_records(path: str, fix: Callable[[mmap.mmap, Iterator[Record]], int]) -> int:
    """`fix` run over the file mapped writable and its records in file order; what it returns (0 for a file
    that is not one to edit, or on any error reading it)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return 0
    try:
        size = os.fstat(fd).st_size
        if size < FILE_HEADER.size:
            return 0
        with mmap.mmap(fd, size) as data:
            magic, header_size, _attr_size, _ao, _as, start, length = FILE_HEADER.unpack_from(data, 0)
            if magic != b"PERFILE2" or header_size != 104 or start + length > size:
                return 0
            return fix(data, _records(data, start, start + length))
    except (OSError, ValueError, struct.error):
        return 0
    finally:
        os.close(fd)


def _records(data: mmap.mmap, at: int, end: int) -> Iterator[Record]:
    while at + HEADER.size <= end:
        kind, misc, size = HEADER.unpack_from(data, at)
        if size < HEADER.size or at + size > end:
            return
        yield at, kind, misc, size
        at += size
