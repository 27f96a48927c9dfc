"""CPython's perf trampolines (3.12+, `-X perf`) made unwindable: jitdump code loads with CFI.

With perf support on, CPython enters every Python function through a copy of a tiny trampoline
(Python/asm_trampoline.S: `sub rsp, 8; call rcx; add rsp, 8; ret`, 11 bytes on x86-64) and names
each copy in /tmp/perf-<pid>.map:
    7f4422776000 b py::_find_and_load:<frozen importlib._bootstrap>
    7f442277600b b py::main:/home/u/train.py
perf's DWARF unwinder has no CFI for that anonymous memory and stops at the first copy. The copies
lie back to back (3.12: 11 bytes apart; 3.13: 16, padded) in 64 KiB arenas. perf inject maps a load's
unwind tables right after its code and perf's unwinder reads them there, through its view of the
process's maps, so three things matter (each measured to break unwinding when ignored):
- one load per copy overlaps the next copies: each *run* of evenly spaced copies is one load, and
  `symtab.rewrite_symbols` gives the jitted .so perf inject writes one symbol per copy;
- the tables must stay inside the arena (what lies after it is another mapping): one FDE for the
  whole run whose CFA is an expression of the address (the trick of glibc's PLT CFI), ~60 bytes
  instead of 32 per copy; a full arena drops the copies its tables need room for (said in the summary);
- a load stamped before its arena existed loses to whatever was mapped there before (ld.so.cache
  during a dlopen): each run is stamped when its arena was mapped (perf's own MMAP2 record).
The padding between copies is never executed; the load holds int3 there.

The hook (hook.py --python-dir) saves the interpreter's trampoline bytes as DIR/py-<pid>.trampoline;
nothing here is guessed: a map entry whose size is not the trampoline's is not a trampoline.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ...io import children
from ...naming.dwarf import (
    DW_CFA_DEF_CFA_EXPRESSION,
    DW_OP_BREG0,
    DW_OP_BREG7,
    DW_OP_CONSTU,
    DW_OP_LIT0,
    DW_OP_LT,
    DW_OP_MOD,
    DW_OP_PLUS,
    DW_OP_SHL,
    REGNUM,
    sleb128,
    uleb128,
)
from .jitdump import CodeLoad
from .unwind import UnwindInfo, align, build_unwind_table

PREFIX = "py::"
ARENA = 64 << 10  # CPython 3.12/3.13 perf_trampoline.c: mmap(4096 * 16), one copy after the other
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


def stack_rule(start: int, stride: int) -> bytes:
    """The CFA of every copy of x86-64's trampoline (`sub rsp, 8` at 0, `call rcx` at 4, `add rsp, 8` at
    10, `ret`) in one rule: CFA = rsp + 8 + 8 * (((rip - start + stride - 4) mod stride) < 6), i.e.
    rsp+16 between the sub and the add of whichever copy rip is in, rsp+8 elsewhere."""
    expression = bytes([DW_OP_BREG7]) + sleb128(8)
    expression += bytes([DW_OP_BREG0 + REGNUM["rip"]]) + sleb128(stride - 4 - start)
    expression += bytes([DW_OP_CONSTU]) + uleb128(stride) + bytes([DW_OP_MOD, DW_OP_LIT0 + 6, DW_OP_LT])
    expression += bytes([DW_OP_LIT0 + 3, DW_OP_SHL, DW_OP_PLUS])
    return bytes([DW_CFA_DEF_CFA_EXPRESSION]) + uleb128(len(expression)) + expression


@dataclass(frozen=True)
class Arena:
    """An executable anonymous mapping of the process, as perf recorded it (its MMAP2 record)."""

    start: int
    end: int
    time_ns: int  # perf's clock (CLOCK_MONOTONIC: recorded with -k CLOCK_MONOTONIC)


def arena_of(address: int, arenas: Iterable[Arena]) -> Arena | None:
    """The latest mapping that holds `address` (an address can be mapped, unmapped and mapped again)."""
    found = [a for a in arenas if a.start <= address < a.end]
    return max(found, key=lambda a: a.time_ns) if found else None


def _unwind(run: Run, n: int) -> UnwindInfo:
    length = (n - 1) * run.stride + run.size
    return build_unwind_table(length, [(0, length, stack_rule(run.trampolines[0].address, run.stride))])


def fitted(run: Run, arena: Arena | None) -> Run:
    """`run` cut so that its code and tables end inside its arena (ARENA bytes from where it starts,
    when perf's record of it is missing)."""
    end = arena.end if arena is not None else run.trampolines[0].address - run.trampolines[0].address % 4096 + ARENA
    n = len(run.trampolines)
    while n > 0:
        length = (n - 1) * run.stride + run.size
        if run.trampolines[0].address + align(length, 8) + _unwind(run, n).mapped_size <= end:
            break
        n -= 1
    return Run(run.trampolines[:n], run.size, run.stride)


def code_loads(grouped: Iterable[Run], code: bytes, arenas: Iterable[Arena] = ()) -> list[CodeLoad]:
    """One load per run (cut to fit its arena: `fitted`), stamped when its arena was mapped, with the
    trampoline's bytes at each copy and one FDE for them all (`stack_rule`). Runs must be fitted."""
    arenas = list(arenas)
    loads = []
    for run in grouped:
        n, stride = len(run.trampolines), run.stride
        if n == 0:
            continue
        text = (code + PADDING * (stride - len(code))) * (n - 1) + code
        arena = arena_of(run.trampolines[0].address, arenas)
        created = arena.time_ns + 1 if arena is not None else 0
        loads.append(CodeLoad(run.trampolines[0].address, RUN_NAME, text, _unwind(run, n), created))
    return loads


MMAP_LINE = re.compile(
    r"^\s*(\d+)\s+(\d+)\.(\d{9}): PERF_RECORD_MMAP2? \d+/\d+: \[0x([0-9a-f]+)\(0x([0-9a-f]+)\) .*\]: r-xp //anon$"
)


def iter_arenas(lines: Iterable[str], pid: int) -> Iterator[Arena]:
    """The executable anonymous mappings of `pid` in `perf script --show-mmap-events --ns -F pid,time`:
    14503 12560.905332123: PERF_RECORD_MMAP2 14503/14503: [0x7f0274cc8000(0x10000) @ 0x7f0274cc8000 00:00 0 0]:
    r-xp //anon      (one line)
    """
    for line in lines:
        match = MMAP_LINE.match(line)
        if match and int(match.group(1)) == pid:
            start, length = int(match.group(4), 16), int(match.group(5), 16)
            yield Arena(start, start + length, int(match.group(2)) * 10**9 + int(match.group(3)))


FORK_LINE = re.compile(r"^\s*\d+\s+(\d+)\.(\d{9}): PERF_RECORD_FORK\((\d+):\d+\):\((\d+):\d+\)")


@dataclass(frozen=True)
class Processes:
    """The recording's processes as perf saw them: each one's executable anonymous mappings (a forked
    child's include those it inherited) and which process forked which."""

    arenas: dict[int, list[Arena]]
    forked: dict[int, int]  # child pid -> parent pid (threads are not forks)


def read_arenas(perf: str, perf_data: str) -> dict[int, list[Arena]]:
    return read_processes(perf, perf_data).arenas


def read_processes(perf: str, perf_data: str) -> Processes:
    """Every process's executable anonymous mappings in a recording (before perf inject, which drops
    them): one `perf script` pass over the non-sample records (~1.6 s for the MLP's 333 MB).
    A forked child has no MMAP2 record of the arenas it inherited, where its interpreter goes on making
    trampolines (3.12): it gets its parent's arenas as they were at the fork, stamped at the fork (a load
    stamped before the child existed would be dropped with the thread perf replaces at its FORK record)."""
    proc = children.run(
        [perf, "script", "-i", perf_data, "--show-mmap-events", "--show-task-events", "--ns", "-F", "pid,time"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, errors="replace",
    )  # fmt: skip
    found: dict[int, list[Arena]] = {}
    forked: dict[int, int] = {}
    for line in proc.stdout.splitlines():
        if "r-xp //anon" in line and (match := MMAP_LINE.match(line)):
            found.setdefault(int(match.group(1)), []).extend(iter_arenas([line], int(match.group(1))))
        elif "PERF_RECORD_FORK" in line and (fork := FORK_LINE.match(line)):
            child, parent = int(fork.group(3)), int(fork.group(4))
            if child != parent:  # a new process, not a thread
                at = int(fork.group(1)) * 10**9 + int(fork.group(2))
                inherited = [Arena(a.start, a.end, at) for a in found.get(parent, []) if a.time_ns < at]
                found[child] = [*inherited, *found.get(child, [])]  # (records are in time order)
                forked[child] = parent
    return Processes(found, forked)
