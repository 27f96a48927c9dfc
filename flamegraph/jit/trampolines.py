"""CPython's perf trampolines (3.12+, `-X perf`) made unwindable: jitdump code loads with CFI.

With perf support on, CPython enters every Python function through a copy of a tiny trampoline
(Python/asm_trampoline.S: `sub rsp, 8; call rcx; add rsp, 8; ret`, 11 bytes on x86-64) and names
each copy in /tmp/perf-<pid>.map:
    7f4422776000 b py::_find_and_load:<frozen importlib._bootstrap>
    7f442277600b b py::main:/home/u/train.py
perf's DWARF unwinder has no CFI for that anonymous memory and stops at the first copy. The copies
lie back to back (3.12: 11 bytes apart; 3.13: 16, padded); perf inject maps a load's unwind tables
right after its code, so one load per copy would overlap the next copies and perf would read another
load's tables. So each run of evenly spaced copies is one code load (one FDE per copy, found by the
table's binary search) and `symtab.rewrite_symbols` gives the jitted .so perf inject writes back one
symbol per copy. The padding between copies is never executed; the load holds int3 there.

The hook (hook.py --python-dir) saves the interpreter's trampoline bytes as DIR/py-<pid>.trampoline;
nothing here is guessed: a map entry whose size is not the trampoline's is not a trampoline.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from .jitdump import CodeLoad
from .unwind import build_unwind_table

PREFIX = "py::"
MAX_STRIDE = 64  # copies further apart are not one run (CPython pads them to 16 bytes at most)
PADDING = b"\xcc"  # int3
RUN_NAME = "py::[perf trampolines]"  # the load's own name, replaced by rewrite_symbols
MAX_MAP_BYTES = 256 << 20  # a perf map is a line per function: bound what a planted one can cost


@dataclass(frozen=True)
class Trampoline:
    address: int
    name: str  # py::FUNCTION:FILE as CPython writes it


@dataclass(frozen=True)
class Run:
    """Evenly spaced trampolines, one code load."""

    trampolines: tuple[Trampoline, ...]
    size: int  # of one trampoline
    stride: int  # from one to the next (>= size)

    def functions(self) -> list[tuple[int, int, str]]:
        """(offset from the first, size, name) of each trampoline: the jitted .so's symbols."""
        return [(i * self.stride, self.size, t.name) for i, t in enumerate(self.trampolines)]


def iter_perf_map(lines: Iterable[str], size: int) -> Iterator[Trampoline]:
    """The trampolines of a perf map: `ADDRESS SIZE py::NAME` lines whose size is the trampoline's."""
    for line in lines:
        parts = line.rstrip("\n").split(" ", 2)
        if len(parts) != 3 or not parts[2].startswith(PREFIX):
            continue
        try:
            address, length = int(parts[0], 16), int(parts[1], 16)
        except ValueError:
            continue
        if length == size:
            yield Trampoline(address, parts[2])


def read_perf_map(path: str, size: int) -> list[Trampoline]:
    """The trampolines `path` names, one per address (the last name written wins), by address."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return []
    with os.fdopen(fd, "rb") as f:
        text = f.read(MAX_MAP_BYTES).decode("utf-8", "surrogateescape")
    found = {t.address: t for t in iter_perf_map(text.splitlines(), size)}
    return [found[address] for address in sorted(found)]


def runs(trampolines: Iterable[Trampoline], size: int) -> list[Run]:
    """Evenly spaced trampolines grouped (`trampolines` by address): a run goes on while the gap to
    the next is the run's first gap (between `size` and MAX_STRIDE)."""
    grouped: list[Run] = []
    group: list[Trampoline] = []
    stride = 0
    for t in trampolines:
        gap = t.address - group[-1].address if group else 0
        if group and (gap == stride or (len(group) == 1 and size <= gap <= MAX_STRIDE)):
            stride = gap
            group.append(t)
            continue
        if group:
            grouped.append(Run(tuple(group), size, stride or size))
        group, stride = [t], 0
    if group:
        grouped.append(Run(tuple(group), size, stride or size))
    return grouped


def code_loads(grouped: Iterable[Run], code: bytes, program: bytes) -> list[CodeLoad]:
    """One load per run: the trampoline's bytes at each copy, an FDE running `program` for each."""
    loads = []
    for run in grouped:
        n, size, stride = len(run.trampolines), len(code), run.stride
        unwind = build_unwind_table((n - 1) * stride + size, [(i * stride, size, program) for i in range(n)])
        text = (code + PADDING * (stride - size)) * (n - 1) + code
        loads.append(CodeLoad(run.trampolines[0].address, RUN_NAME, text, unwind))
    return loads
