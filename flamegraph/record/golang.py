"""Whether the program to record is a Go binary, which `record` then records with `--call-graph fp`.

The Go toolchain writes no `.eh_frame` (only `.debug_frame`, which perf's DWARF unwinder does not use
for it): with `--call-graph dwarf` every Go stack stops at its first frame (`gop;main.work`). Go keeps
frame pointers (amd64 and arm64, since Go 1.7), and `--call-graph fp` gives the whole goroutine stack
(`gop;runtime.goexit.abi0;main.main.func2;main.work`). A Go binary is told by its sections, which the Go
linker always writes and `strip`/`-ldflags=-s` keep: `.go.buildinfo` (Go 1.13+) or `.note.go.buildid`.

    go_binary("/home/u/gop") -> True;  go_binary("/usr/bin/python3") -> False
    go_program(("./gop", "-n", "3"), None, env, cwd) -> "/home/u/gop"   # or --pid's /proc/PID/exe
"""

from __future__ import annotations

import os
import struct
from collections.abc import Mapping, Sequence
from typing import BinaryIO

from ..io.diagnostics import CommandNotFound
from .command import resolve_program
from .spec import RecordSpec

GO_SECTIONS = frozenset({b".go.buildinfo", b".note.go.buildid"})
MAX_SECTIONS = 4096  # a Go binary has ~25; anything larger is not worth reading for this
MAX_NAMES = 1 << 20  # bytes of section names read at most
FP_NOTE = (
    "flamegraph: {name} is a Go binary: recorded with --call-graph fp (Go keeps frame pointers; its code has no "
    ".eh_frame for perf's DWARF unwinder)"
)


def go_binary(path: str) -> bool:
    """The ELF file at `path` has a Go section; False for anything else or anything unreadable."""
    try:
        with open(path, "rb") as f:
            return not GO_SECTIONS.isdisjoint(_section_names(f.read(64), f))
    except (OSError, struct.error, ValueError):
        return False


def _section_names(header: bytes, f: BinaryIO) -> set[bytes]:
    """The section names of an ELF file (`header`: its first 64 bytes; `f`: the open file)."""
    if header[:4] != b"\x7fELF" or header[4] not in (1, 2) or header[5] not in (1, 2):
        return set()
    wide, order = header[4] == 2, "<" if header[5] == 1 else ">"
    if wide:
        (shoff,) = struct.unpack_from(order + "Q", header, 0x28)
        entsize, count, names_at = struct.unpack_from(order + "3H", header, 0x3A)
    else:
        (shoff,) = struct.unpack_from(order + "I", header, 0x20)
        entsize, count, names_at = struct.unpack_from(order + "3H", header, 0x2E)
    if not shoff or not 0 < count <= MAX_SECTIONS or names_at >= count or entsize < (64 if wide else 40):
        return set()
    f.seek(shoff)
    table = f.read(entsize * count)
    layout = order + ("I20xQQ" if wide else "I12xII")  # sh_name ... sh_offset, sh_size

    def entry(i: int) -> tuple[int, int, int]:
        name, offset, size = struct.unpack_from(layout, table, i * entsize)
        return name, offset, size

    _, offset, size = entry(names_at)
    f.seek(offset)
    names = f.read(min(size, MAX_NAMES))
    found = set()
    for i in range(count):
        start = entry(i)[0]
        end = names.find(b"\0", start)
        if 0 <= start < len(names) and end > start:
            found.add(names[start:end])
    return found


def recorded_go(spec: RecordSpec) -> bool:
    """The recording's program is a Go binary (the attribution report's advice depends on it)."""
    return go_program(spec.command, spec.pid, spec.env, spec.cwd) is not None


def go_program(command: Sequence[str] | None, pid: int | None, env: Mapping[str, str] | None = None,
               cwd: str | None = None) -> str | None:  # fmt: skip
    """The program's path when it is a Go binary: the command as the user's shell finds it, or --pid's
    executable; None otherwise (a wrapper such as `sh -c ./gop` is not looked into)."""
    if pid is not None:
        path = f"/proc/{pid}/exe"
    elif command:
        try:
            path = resolve_program(command[0], {**os.environ, **(env or {})}, cwd)
        except CommandNotFound:
            return None
    else:
        return None
    return path if go_binary(path) else None
