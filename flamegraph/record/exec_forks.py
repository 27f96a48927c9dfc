"""perf.data's FORK records of the processes that then exec'd, marked so that perf does not give the new
program its parent's mappings (perf 6.1).

perf copies a parent's maps into its child at a FORK record and keeps them past the child's exec, beside
the new program's. Its DWARF unwinder (libunwind) places a library's unwind tables at the *lowest*
address any map of that file has in the thread, so when the parent's copy of a library lies below the
child's (ASLR: half the time) every stack of the child stops at its first frame: `python;
_PyEval_EvalFrameDefault` for a multiprocessing spawn worker, whose functions then go unnamed, in one run
and not the next. perf itself knows a FORK whose maps are not to be copied: one it synthesised for a
process that already ran (PERF_RECORD_MISC_FORK_EXEC in the record's misc bits). Marking the FORK of each
child that execs later the same way (a 2-byte change in place, the file's size and layout unchanged)
makes the child begin with the maps of the program it runs; the few samples between its fork and its
exec (the child still running the parent's code) lose their names.
"""

from __future__ import annotations

import mmap
import struct
from collections.abc import Iterator

from ..io.perf_edit import HEADER, Record, edit_records

PERF_RECORD_COMM, PERF_RECORD_FORK = 3, 7
PERF_RECORD_MISC_COMM_EXEC = 1 << 13  # (a COMM record's misc)
PERF_RECORD_MISC_FORK_EXEC = 1 << 13  # (a FORK record's misc: do not copy the parent's maps)


def mark_exec_forks(path: str) -> int:
    """Mark, in place, the FORK record of every process that exec'd later in `path`; returns how many."""
    return edit_records(path, _mark)


def _mark(data: mmap.mmap, records: Iterator[Record]) -> int:
    forks: dict[int, list[int]] = {}  # child pid -> offsets of its FORK records
    execs: set[int] = set()  # (a COMM may be written before the FORK: per-CPU buffers, in rounds)
    for at, kind, misc, size in records:
        if kind == PERF_RECORD_FORK and size >= HEADER.size + 16:
            pid, ppid = struct.unpack_from("<II", data, at + HEADER.size)
            if pid != ppid:  # a new process (a thread shares its parent's pid)
                forks.setdefault(pid, []).append(at)
        elif kind == PERF_RECORD_COMM and misc & PERF_RECORD_MISC_COMM_EXEC and size >= HEADER.size + 8:
            pid, tid = struct.unpack_from("<II", data, at + HEADER.size)
            if pid == tid:
                execs.add(pid)
    marked = 0
    for pid in execs & forks.keys():
        for fork in forks[pid]:
            _kind, misc, _size = HEADER.unpack_from(data, fork)
            struct.pack_into("<H", data, fork + 4, misc | PERF_RECORD_MISC_FORK_EXEC)
            marked += 1
    return marked
