"""Inside each Python process a recorded command starts: its jitdump marker and trampoline bytes in the
recording's JIT directory, so that its Python functions get unwind info as the command's own do.

Loaded by file (no package import: this runs in every child interpreter, ~2 ms) by the sitecustomize
of `pysite` in a process started afresh (spawn, the resource tracker, subprocess), and from the launcher's
at-fork hook in a forked one (`forked`). Standard library only. The directory is the recorder's, made
ours alone before the command started; it is checked again (a real directory of this user that no one
else may write in) and files are created in it exclusively, through its descriptor, never following a
link. Nothing here may disturb the program: a failure leaves the process's stacks cut (the recorder
says which) and returns.
"""

from __future__ import annotations

import ctypes
import mmap
import os
import stat
import struct
import sys
import time

# perf's jitdump header (tools/perf/util/jitdump.h; frameworks/jit/jitdump.py writes the records after it):
# magic, version 1, size 40, elf_mach 62 (x86-64), pad, pid, timestamp, flags.
HEADER = struct.Struct("<IIIIIIQQ")
MAGIC, VERSION, EM_X86_64 = 0x4A695444, 1, 62
CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
FILE_MODE = 0o644  # as flamegraph.io.private writes the command's own
DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def start(directory: str) -> bool:
    """This interpreter's marker and trampoline bytes, and the at-fork hook for its forked children.
    False (nothing done) where perf support is off or the directory is not ours alone."""
    active = getattr(sys, "is_stack_trampoline_active", None)
    if active is None or not active():
        return False  # (before 3.12, or perf support turned off for this process: nothing names its functions)
    code = trampoline_code()
    if not code or not save(directory, os.getpid(), code):
        return False
    os.register_at_fork(after_in_child=lambda: save(directory, os.getpid(), code))
    return True


def trampoline_code() -> bytes:
    """The bytes every perf trampoline of this interpreter copies (Python/asm_trampoline.S), b"" if none."""
    try:
        start = ctypes.addressof(ctypes.c_char.in_dll(ctypes.pythonapi, "_Py_trampoline_func_start"))
        end = ctypes.addressof(ctypes.c_char.in_dll(ctypes.pythonapi, "_Py_trampoline_func_end"))
    except (ValueError, AttributeError):
        return b""
    return ctypes.string_at(start, end - start) if 0 < end - start <= 256 else b""


def save(directory: str, pid: int, code: bytes) -> bool:
    """DIR/py-PID.trampoline and the marker DIR/jit-PID.dump, mapped executable (the MMAP2 record
    perf inject looks for). False if either cannot be made."""
    try:
        dir_fd = os.open(directory, DIRECTORY)
    except OSError:
        return False
    try:
        info = os.fstat(dir_fd)
        if info.st_uid != os.geteuid() or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return False  # not ours alone: nothing is written there
        _write(dir_fd, f"py-{pid}.trampoline", code)
        now = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        header = HEADER.pack(MAGIC, VERSION, HEADER.size, EM_X86_64, 0, pid, now, 0)
        marker = _write(dir_fd, f"jit-{pid}.dump", header, keep_open=True)
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.mmap.restype = ctypes.c_void_p
            libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                                  ctypes.c_long]  # fmt: skip
            address = libc.mmap(None, mmap.PAGESIZE, mmap.PROT_READ | mmap.PROT_EXEC, mmap.MAP_PRIVATE, marker, 0)
        finally:
            os.close(marker)  # the mapping keeps the file referenced for the life of the process
        return address not in (None, ctypes.c_void_p(-1).value)
    except OSError:
        return False
    finally:
        os.close(dir_fd)


def _write(dir_fd: int, name: str, data: bytes, keep_open: bool = False) -> int:
    """A new file `name` in the directory (an entry of that name, an earlier process's with the same pid, is
    removed first: the directory is ours), holding `data`; its descriptor (reopened for reading) if asked."""
    try:
        os.unlink(name, dir_fd=dir_fd)
    except FileNotFoundError:
        pass
    fd = os.open(name, CREATE, FILE_MODE, dir_fd=dir_fd)
    try:
        os.fchmod(fd, FILE_MODE)  # (what the umask took off: perf inject reads them, as the command's own)
        os.write(fd, data)
    finally:
        os.close(fd)
    return os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd) if keep_open else -1
