"""DWARF call-frame information for one JIT kernel, from a linear sweep of its machine code.

The kernel is disassembled with capstone (x86-64, no detail mode: ~1 us per instruction) up
to its first `ret`, and the canonical frame address (CFA) is tracked through the prologue,
body and epilogue. Instructions it follows (capstone's Intel syntax, as it prints them):
    push rbx / pop r15 / sub rsp, 0x100 / lea rsp, [rsp + 0x10]
    mov rbp, rsp ; sub rsp, rax ; and rsp, 0xfffffffffffff000     (realigned stack: CFA = rbp+56)
    mov qword ptr [rsp + 0x78], rbp                               (CFA = *(rsp+0x78)+56)
    mov rsp, qword ptr [rsp + 0x78] ; pop r15 ... ; ret           (epilogue)

Never wrong CFI: any shape the tracker does not understand (an rsp write it cannot follow, rbp
clobbered before it is saved, a callee-saved register modified without being saved, a branch
whose target expects another frame layout, a call into the kernel, code after the `ret`...)
yields no program at all, and the kernel is then named without unwind information.
"""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from multiprocessing import get_context

from .frame import (  # noqa: F401  (CANONICAL, SPECIAL, written: re-exported for checks)
    ANALYSER_VERSION,
    CALLEE_PREFIXES,
    CANONICAL,
    SPECIAL,
    Cfa,
    Tracker,
    Unknown,
    parse_imm,
    step,
    written,
)


@dataclass(frozen=True)
class CfiResult:
    program: bytes | None  # DWARF CFA instructions after the CIE's (rsp+8), or None: no CFI
    status: str  # "ok", or why there is no CFI
    instructions: int  # instructions swept


def branch(t: Tracker, at: int, mnemonic: str, ops: str) -> None:
    """Jumps keep the state; remember them to check their targets after the sweep."""
    target = parse_imm(ops) if ops.startswith("0x") or ops.isdigit() else None
    if mnemonic == "call":
        if target is not None and 0 <= target < t.code_size:
            raise Unknown(f"call into the kernel at {at:#x}")
        return
    if target is None:
        raise Unknown(f"indirect jump at {at:#x}: {mnemonic} {ops}")
    t.branches.append((at, target, t.state()))


def state_at(t: Tracker, loc: int, initial: tuple[object, ...]) -> tuple[object, ...]:
    """The state before the instruction starting at `loc` (the sweep's view)."""
    lo, hi = 0, len(t.changes)
    while lo < hi:
        mid = (lo + hi) // 2
        if t.changes[mid][0] <= loc:
            lo = mid + 1
        else:
            hi = mid
    return t.changes[lo - 1][1] if lo else initial


def compatible(source: tuple[object, ...], target: tuple[object, ...]) -> bool:
    """Is the sweep's rule at a branch target right for the state the branch arrives with?"""
    s_cfa, s_alias, s_saved = source
    d_cfa, d_alias, d_saved = target
    if s_saved != d_saved or (d_alias is not None and s_alias != d_alias):
        return False
    if d_cfa == s_cfa:
        return True
    return isinstance(d_cfa, Cfa) and d_cfa.kind == "rbp" and s_alias == d_cfa.offset


def check_branches(t: Tracker, starts: bytearray, ret_end: int, initial: tuple[object, ...]) -> None:
    for at, target, source in t.branches:
        if not 0 <= target < ret_end:
            raise Unknown(f"branch at {at:#x} leaves the analysed code (to {target:#x})")
        if not starts[target]:
            raise Unknown(f"branch at {at:#x} into the middle of an instruction ({target:#x})")
        if not compatible(source, state_at(t, target, initial)):
            raise Unknown(f"branch at {at:#x} to {target:#x} arrives with another frame layout")


_DISASSEMBLER = None


def disassembler():  # type: ignore[no-untyped-def]
    """capstone's x86-64 decoder, built once (capstone is the optional `jit` extra)."""
    global _DISASSEMBLER
    if _DISASSEMBLER is None:
        import capstone

        _DISASSEMBLER = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
    return _DISASSEMBLER


def analyse(code: bytes) -> CfiResult:
    """Sweep `code` (loaded anywhere: it is position-independent here) and build its CFA program."""
    t = Tracker(len(code))
    initial = t.state()
    starts = bytearray(len(code))
    count = end = 0
    prefixes = CALLEE_PREFIXES
    try:
        for off, size, mnemonic, ops in disassembler().disasm_lite(code, 0):
            count += 1
            starts[off] = 1
            if mnemonic == "ret":
                if t.cfa != Cfa("rsp", 8) or t.saved:
                    raise Unknown(f"ret at {off:#x} with the frame not unwound")
                check_branches(t, starts, off + size, initial)
                return CfiResult(bytes(t.program), "ok", count)
            first = mnemonic[0]
            if first == "j" or (first == "l" and mnemonic.startswith("loop")) or mnemonic == "call":
                branch(t, off, mnemonic, ops)
            elif mnemonic in SPECIAL or "sp" in ops or "bp" in ops or ops.startswith(prefixes):
                step(t, off + size, mnemonic, ops)
            end = off + size
        raise Unknown(f"no ret: the sweep stopped at {end:#x} of {len(code):#x}")
    except Unknown as why:
        return CfiResult(None, str(why), count)


PARALLEL_BYTES = 512 << 10  # below this, starting worker processes costs more than it saves


def analyse_all(codes: list[bytes], jobs: int | None = None) -> list[CfiResult]:
    """`analyse` for many kernels, in `jobs` processes (default: one per CPU) when there is enough code."""
    jobs = jobs or os.cpu_count() or 1
    if jobs < 2 or len(codes) < 2 or sum(map(len, codes)) < PARALLEL_BYTES:
        return [analyse(code) for code in codes]
    disassembler()  # imported before the fork, so that workers start ready
    order = sorted(range(len(codes)), key=lambda i: -len(codes[i]))  # largest first: balanced workers
    results: list[CfiResult | None] = [None] * len(codes)
    with ProcessPoolExecutor(max_workers=min(jobs, len(codes)), mp_context=get_context("fork")) as pool:
        for i, result in zip(order, pool.map(analyse, [codes[i] for i in order]), strict=True):
            results[i] = result
    return [r for r in results if r is not None]
