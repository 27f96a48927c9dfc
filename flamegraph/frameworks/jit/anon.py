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
import struct
from collections.abc import Iterator, Mapping, Sequence

from ...io.perf_edit import HEADER, Record, edit_records

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
    """Compressed records (`perf record -z`) are left as they are: inject then drops what it drops."""

    def rename(data: mmap.mmap, records: Iterator[Record]) -> int:
        renamed = 0
        filename = HEADER.size + MMAP2.size
        for at, kind, _misc, size in records:
            if kind != PERF_RECORD_MMAP2 or size < filename + len(old):
                continue
            pid, _tid, start, length, _pgoff, prot, _flags = MMAP2.unpack_from(data, at + HEADER.size)
            if not prot & PROT_EXEC or data[at + filename : at + filename + len(old)] != old:
                continue
            if loads is None or not any(s < start + length and start < e for s, e in loads.get(pid, ())):
                data[at + filename : at + filename + len(new)] = new
                renamed += 1
        return renamed

    return edit_records(path, rename)
