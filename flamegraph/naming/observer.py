"""The fold-time frame hook: sees each distinct (address, symbol, DSO) once while folding.

It may name an `[unknown]` frame by function (`--group-unknown`, through a `FunctionNamer`), and it
notes which folded names are JIT and kernel code, which the folded text alone cannot always tell:
the attribution report (flamegraph.analysis.report) reads that after the fold. Frame lines it is given:
    7fec101b4bd8 [unknown] (/tmp/perf-100.map)                 <- JIT code, left to its perf map
    1a2b [unknown] (/usr/lib/x86_64-linux-gnu/libquadmath.so.0)    <- libquadmath.so.0+0x1a20, its function
    ffffffff8103d0ca native_irq_return_iret ([kernel.kallsyms])
"""

from __future__ import annotations

from ..folding import tidy
from ..io.folded import decode
from .symbols import FunctionNamer


def in_jit_memory(dso: bytes) -> bool:
    """Code perf found in JIT memory: a perf map, an injected jitted-*.so, or anonymous memory."""
    return tidy.is_jit_dso(dso, False) or dso == b"//anon" or dso.startswith(b"[anon") or dso == b"[unknown]"


class FrameObserver:
    """The folder's frame hook: sees each distinct (address, symbol, DSO) once, may rename `[unknown]`.

    Renaming is done by `namer` (grouping by function, `--group-unknown`; JIT and kernel code never
    go to it); what it observes lets the report tell JIT, kernel and grouped frames
    apart in the folded names.
    """

    def __init__(self, namer: FunctionNamer | None = None) -> None:
        self.namer = namer
        self.jit: set[str] = set()  # folded names of named JIT functions
        self.kernel: set[str] = set()
        self.grouped: set[str] = set()  # names made by the namer

    def __call__(self, pc: bytes, symbol: bytes, dso: bytes) -> bytes | None:
        if symbol == b"[unknown]":
            if self.namer is None or in_jit_memory(dso) or tidy.is_kernel_dso(dso):
                return None  # JIT code has its own names; the kernel's build-id is not filed under its path
            name = self.namer(pc, dso)
            if name is not None:
                self.grouped.add(decode(tidy.tidy_name(name, False, False)))
            return name
        if symbol.startswith(tidy.PYTHON_PREFIX):
            return None  # a Python function (its perf trampoline), not JIT code
        folded = decode(tidy.tidy_name(symbol, False, False))
        if in_jit_memory(dso):
            self.jit.add(folded)
        elif tidy.is_kernel_dso(dso):
            self.kernel.add(folded)
        return None
