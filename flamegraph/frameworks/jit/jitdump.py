"""perf's jitdump format: the marker file a process maps at start, and the records written for each kernel.

`perf inject --jit` finds `jit-<pid>.dump` through the marker's PERF_RECORD_MMAP2 (a PROT_EXEC
mapping of the file, made inside the process), then turns every JIT_CODE_LOAD record into a
`jitted-<pid>-<n>.so` with the code and, when a JIT_CODE_UNWINDING_INFO record comes right before
it, an `.eh_frame` that perf's DWARF unwinder can step through.

Layouts (little-endian; tools/perf/util/jitdump.h):
    header  magic 0x4A695444, version 1, size 40, elf_mach 62, pad, pid, timestamp, flags
    id 0    JIT_CODE_LOAD: id, total_size, timestamp, pid, tid, vma, code_addr, code_size,
            code_index, name NUL-terminated, code bytes
    id 4    JIT_CODE_UNWINDING_INFO: id, total_size (8-aligned), timestamp, unwinding_size,
            eh_frame_hdr_size, mapped_size, then .eh_frame + .eh_frame_hdr
The header's timestamp is the marker's CLOCK_MONOTONIC time; records are stamped just after it.
Only the standard library is imported at module level: the marker is made inside the workload.
"""

from __future__ import annotations

import ctypes
import mmap
import os
import struct
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from ...io.private import create_file
from .unwind import UnwindInfo

MAGIC = 0x4A695444
VERSION = 1
HEADER = struct.Struct("<IIIIIIQQ")
EM_X86_64 = 62
RECORD = struct.Struct("<IIQ")  # id, total_size, timestamp
CODE_LOAD = struct.Struct("<IIQQQQ")  # pid, tid, vma, code_addr, code_size, code_index
UNWINDING = struct.Struct("<QQQ")  # unwinding_size, eh_frame_hdr_size, mapped_size
JIT_CODE_LOAD = 0
JIT_CODE_UNWINDING_INFO = 4


def dump_path(directory: str, pid: int) -> str:
    return os.path.join(directory, f"jit-{pid}.dump")


def trampoline_path(directory: str, pid: int) -> str:
    """Where the hook saves the bytes of the process's Python perf trampoline (trampolines.py)."""
    return os.path.join(directory, f"py-{pid}.trampoline")


def monotonic_ns() -> int:
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)


@dataclass
class Marker:
    path: str
    address: int  # where the marker page is mapped (kept for the life of the process)


def create_marker(directory: str, pid: int | None = None) -> Marker:
    """Write the jitdump header and map its first page PROT_READ|PROT_EXEC (the MMAP2 perf looks for).

    ctypes' mmap is used because Python's mmap module refuses a length past the file's end.
    """
    pid = pid or os.getpid()
    path = dump_path(directory, pid)
    with os.fdopen(create_file(directory, os.path.basename(path)), "wb") as f:  # `directory` is ours alone
        f.write(HEADER.pack(MAGIC, VERSION, HEADER.size, EM_X86_64, 0, pid, monotonic_ns(), 0))
    fd = os.open(path, os.O_RDONLY)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                              ctypes.c_long]  # fmt: skip
        address = libc.mmap(None, mmap.PAGESIZE, mmap.PROT_READ | mmap.PROT_EXEC, mmap.MAP_PRIVATE, fd, 0)
    finally:
        os.close(fd)  # the mapping keeps the file referenced
    if address in (None, ctypes.c_void_p(-1).value):
        raise OSError(ctypes.get_errno(), f"mmap of {path} failed")
    return Marker(path, address)


@dataclass(frozen=True)
class Header:
    pid: int
    timestamp: int
    elf_mach: int


def read_header(path: str) -> Header:
    with open(path, "rb") as f:
        raw = f.read(HEADER.size)
    if len(raw) < HEADER.size:
        raise ValueError(f"{path}: too short for a jitdump header")
    magic, version, size, mach, _pad, pid, timestamp, _flags = HEADER.unpack(raw)
    if magic != MAGIC or version != VERSION or size != HEADER.size:
        raise ValueError(f"{path}: not a version-1 jitdump file")
    return Header(pid, timestamp, mach)


@dataclass(frozen=True)
class CodeLoad:
    """What one JIT_CODE_LOAD record says (plus the unwind data that precedes it, if any)."""

    address: int
    name: str
    code: bytes
    unwind: UnwindInfo | None = None
    created: int = 0  # CLOCK_MONOTONIC ns when the kernel became executable (0: unknown)


def mapped_size(load: CodeLoad) -> int:
    """How much of the process's memory perf inject maps to the load's jitted file: the code, 8-aligned,
    then its unwind tables (perf's jit_repipe_code_load)."""
    return (len(load.code) + 7) // 8 * 8 + load.unwind.mapped_size if load.unwind is not None else len(load.code)


def code_load_record(load: CodeLoad, index: int, timestamp: int, pid: int, tid: int) -> bytes:
    name = load.name.encode("utf-8", "surrogateescape") + b"\x00"
    body = CODE_LOAD.pack(pid, tid, load.address, load.address, len(load.code), index) + name + load.code
    return RECORD.pack(JIT_CODE_LOAD, RECORD.size + len(body), timestamp) + body


def unwinding_record(unwind: UnwindInfo, timestamp: int) -> bytes:
    body = UNWINDING.pack(len(unwind.data), unwind.eh_frame_hdr_size, unwind.mapped_size) + unwind.data
    size = RECORD.size + len(body)
    padding = -size % 8
    return RECORD.pack(JIT_CODE_UNWINDING_INFO, size + padding, timestamp) + body + b"\x00" * padding


def write_records(path: str, loads: Sequence[CodeLoad]) -> None:
    """Replace the records of `path` (its header stays) with one code load per kernel.

    perf inject maps each kernel from its record's time on and drops the process's anonymous
    mappings. A load is stamped when the kernel was created (its dump file's time), at the
    earliest marker time + 1 + i ns: stamped earlier, a file mapped at that address in between
    (ld.so.cache during a dlopen, unmapped since) would win over the kernel in perf's view.
    """
    header = read_header(path)
    with os.fdopen(os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC), "r+b") as f:
        f.truncate(HEADER.size)  # idempotent: a second run rewrites, never duplicates
        f.seek(HEADER.size)
        for i, load in enumerate(loads):
            timestamp = max(header.timestamp + 1 + i, load.created)
            if load.unwind is not None:
                f.write(unwinding_record(load.unwind, timestamp))
            f.write(code_load_record(load, i, timestamp, header.pid, header.pid))


def iter_records(path: str) -> Iterator[tuple[int, int, bytes]]:
    """(id, timestamp, body) of every record, for checks and tests."""
    with open(path, "rb") as f:
        data = f.read()
    pos = HEADER.size
    while pos + RECORD.size <= len(data):
        kind, size, timestamp = RECORD.unpack_from(data, pos)
        if size < RECORD.size or pos + size > len(data):
            raise ValueError(f"{path}: record at {pos} runs past the end")
        yield kind, timestamp, data[pos + RECORD.size : pos + size]
        pos += size
