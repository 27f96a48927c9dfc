"""The anonymous executable mappings `perf inject --jit` would drop, kept through it.

Once perf inject has read a process's jitdump it drops every later `//anon` mapping of that process
(tools/perf/util/jitdump.c, jit_process: "Strip //anon* mmaps if we processed a jitdump for this pid"),
so that anonymous memory never hides the code loads injected into it. A Python 3.12+ command always has
a jitdump (its trampolines), so every other JIT code of the process lost its mapping with them: oneDNN's
kernels (`--mxnet` without `--jit`) came out as `[unknown] ([unknown])`, not JIT code to anyone, where
without the jitdump perf names them `[unknown] (/tmp/perf-PID.map)`.

A mapping that holds no code load hides nothing, so it is kept: before inject its MMAP2 record is renamed
`//ANON` (as long as `//anon`: a byte changed in place; d_path never begins with `//`, so no file has that
name) and inject passes it through as it is; after inject it is renamed back in inject's output (and in
the input, if inject failed). A mapping that overlaps a code load of its process is left to inject.
"""

from __future__ import annotations

import mmap
import os
import struct
from collections.abc import Iterator, Mapping, Sequence

from ...record.exec_forks import FILE_HEADER, HEADER

PERF_RECORD_MMAP2 = 10
PROT_EXEC = 4
ANON = b"//anon\0"  # perf's name for anonymous memory (its kernel side), NUL-terminated in the record
KEPT = b"//ANON\0"
# MMAP2 after its header: pid, tid, addr, len, pgoff, (maj, min, ino, ino_generation | build id), prot, flags
MMAP2 = struct.Struct("<IIQQQ24xII")

Ranges = Mapping[int, Sequence[tuple[int, int]]]  # pid -> [start, end) of each code load


def keep(path: str, loads: Ranges) -> int:
    """Rename, in place, the executable `//anon` mappings that overlap no code load of their process;
    returns how many."""
    return _rename(path, ANON, KEPT, loads)


def restore(path: str) -> int:
    """Rename the mappings `keep` renamed back to `//anon`, in place; returns how many."""
    return _rename(path, KEPT, ANON, None)


def _rename(path: str, old: bytes, new: bytes, loads: Ranges | None) -> int:
    """A file that is not a seekable little-endian perf.data (pipe mode, another byte order, cut short)
    is left as it is; so are compressed records (`perf record -z`): inject then drops what it drops."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return 0
    try:
        size = os.fstat(fd).st_size
        if size < FILE_HEADER.size:
            return 0
        with mmap.mmap(fd, size) as data:
            renamed = 0
            for at in _executable_maps(data, old):
                pid, start, length = _mapping(data, at)
                if loads is None or not any(s < start + length and start < e for s, e in loads.get(pid, ())):
                    data[at + HEADER.size + MMAP2.size : at + HEADER.size + MMAP2.size + len(new)] = new
                    renamed += 1
            return renamed
    except (OSError, ValueError, struct.error):
        return 0
    finally:
        os.close(fd)


def _executable_maps(data: mmap.mmap, name: bytes) -> Iterator[int]:
    """Offsets of the MMAP2 records of executable mappings named `name` in the data section."""
    magic, header_size, _attr_size, _ao, _as, start, length = FILE_HEADER.unpack_from(data, 0)
    if magic != b"PERFILE2" or header_size != 104 or start + length > len(data):
        return
    at, end = start, start + length
    filename = HEADER.size + MMAP2.size
    while at + HEADER.size <= end:
        kind, _misc, record = HEADER.unpack_from(data, at)
        if record < HEADER.size or at + record > end:
            return
        if kind == PERF_RECORD_MMAP2 and record >= filename + len(name):
            prot = MMAP2.unpack_from(data, at + HEADER.size)[5]
            if prot & PROT_EXEC and data[at + filename : at + filename + len(name)] == name:
                yield at
        at += record


def _mapping(data: mmap.mmap, at: int) -> tuple[int, int, int]:
    pid, _tid, start, length, *_rest = MMAP2.unpack_from(data, at + HEADER.size)
    return pid, start, length
