"""The CFA tracker behind `cfi.analyse`: how one x86-64 instruction (capstone's Intel text) moves the
canonical frame address, the saved registers and the rbp alias, and the DWARF rows that say so.

Instructions and what they do to the rule (CFA = rsp+8 at entry):
    push r15                         -> rsp+16, r15 saved at CFA-16
    mov rbp, rsp ; and rsp, 0xff..00 -> CFA = rbp+56 (the alias remembered at `mov rbp, rsp`)
    mov qword ptr [rsp + 0x78], rbp  -> CFA = *(rsp+0x78)+56
Anything it cannot follow raises `Unknown`: the kernel then gets no CFI at all.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field

from ...naming.dwarf import (
    DW_CFA_ADVANCE_LOC,
    DW_CFA_ADVANCE_LOC1,
    DW_CFA_ADVANCE_LOC2,
    DW_CFA_ADVANCE_LOC4,
    DW_CFA_DEF_CFA,
    DW_CFA_DEF_CFA_EXPRESSION,
    DW_CFA_DEF_CFA_OFFSET,
    DW_CFA_OFFSET,
    DW_CFA_RESTORE,
    DW_OP_BREG7,
    DW_OP_DEREF,
    DW_OP_PLUS_UCONST,
    REGNUM,
    sleb128,
    uleb128,
)

ANALYSER_VERSION = 2  # bump when the analysis changes: cached results are keyed by it
RSP_NAMES = frozenset({"rsp", "esp", "sp", "spl"})
RBP_NAMES = frozenset({"rbp", "ebp", "bp", "bpl"})
CALLEE_SAVED = ("rbx", "rbp", "r12", "r13", "r14", "r15")
# Names whose write modifies a callee-saved register (sub-registers included), for the fast check.
CALLEE_PREFIXES = ("rbx", "ebx", "bx", "bl", "bh", "r12", "r13", "r14", "r15")
CALLEE_OF = {
    **{n: "rbx" for n in ("rbx", "ebx", "bx", "bl", "bh")},
    **{f"r{i}{s}": f"r{i}" for i in range(12, 16) for s in ("", "d", "w", "b")},
}
# Mnemonics that never write their first operand.
READ_ONLY = frozenset(
    "cmp test bt push call jmp nop prefetcht0 prefetcht1 prefetcht2 prefetchnta prefetchw clflush clflushopt "
    "ptest vptest".split()
)
# Mnemonics that change rsp (or may) without naming it, or write two operands.
SPECIAL = frozenset(
    "push pop pushfq popfq pushf popf call ret leave enter iretq iret syscall sysret xchg xadd cmpxchg mulx "
    "loop loope loopne int int3 ud2 hlt cpuid".split()
)
SIZES = {"byte": 1, "word": 2, "dword": 4, "qword": 8, "tbyte": 10, "xmmword": 16, "ymmword": 32,
         "zmmword": 64}  # fmt: skip
STACK_SLOT = re.compile(r"^(?:(\w+) ptr )?\[rsp(?: ([+-]) (0x[0-9a-f]+|\d+))?\]")
UNKNOWN_WRITE_SIZE = 4096  # a memory destination without a size keyword (fxsave, xsave...)


@dataclass(frozen=True)
class Cfa:
    """The CFA rule: rsp+offset, rbp+offset, or *(rsp+slot)+offset."""

    kind: str  # "rsp", "rbp" or "expr"
    offset: int
    slot: int = 0


class Unknown(Exception):
    """A shape the tracker cannot follow: the kernel gets no CFI."""


def parse_imm(text: str) -> int | None:
    try:
        value = int(text, 0)
    except ValueError:
        return None
    return value - (1 << 64) if value >= 1 << 63 else value


def stack_slot(operand: str) -> tuple[int, int] | None:
    """'qword ptr [rsp + 0x78]' -> (0x78, 8); None if not a plain [rsp+disp] memory operand."""
    match = STACK_SLOT.match(operand)
    if match is None or match.end() != len(operand.split(" {")[0]):
        return None
    size = SIZES.get(match.group(1) or "", UNKNOWN_WRITE_SIZE)
    disp = int(match.group(3), 0) if match.group(3) else 0
    return (-disp if match.group(2) == "-" else disp), size


def is_memory(operand: str) -> bool:
    return operand.startswith("[") or " ptr [" in operand


@dataclass
class Tracker:
    """The linear sweep's state; `step` consumes one instruction."""

    code_size: int
    cfa: Cfa = Cfa("rsp", 8)
    alias: int | None = None  # rbp == CFA - alias (set by `mov rbp, rsp`)
    saved: dict[str, int] = field(default_factory=dict)  # register -> CFA offset of its save slot
    program: bytearray = field(default_factory=bytearray)
    last_loc: int = 0
    changes: list[tuple[int, tuple[object, ...]]] = field(default_factory=list)  # (loc, state) per change
    branches: list[tuple[int, int, tuple[object, ...]]] = field(default_factory=list)  # (at, target, state)

    def state(self) -> tuple[object, ...]:
        return self.cfa, self.alias, tuple(sorted(self.saved.items()))

    # -- emitting -------------------------------------------------------------------------
    def advance(self, loc: int) -> None:
        delta = loc - self.last_loc
        if delta < 0x40:
            self.program.append(DW_CFA_ADVANCE_LOC | delta)
        elif delta < 0x100:
            self.program += bytes([DW_CFA_ADVANCE_LOC1, delta])
        elif delta < 0x10000:
            self.program += bytes([DW_CFA_ADVANCE_LOC2]) + struct.pack("<H", delta)
        else:
            self.program += bytes([DW_CFA_ADVANCE_LOC4]) + struct.pack("<I", delta)
        self.last_loc = loc

    def set_state(self, loc: int, cfa: Cfa, alias: int | None, saved: dict[str, int]) -> None:
        """Move to a new state after the instruction ending at `loc`, emitting the rows that changed."""
        rows = bytearray()
        if cfa != self.cfa:
            rows += encode_cfa(cfa, self.cfa)
        for reg in sorted(set(self.saved) | set(saved), key=REGNUM.__getitem__):
            if reg not in saved:
                rows.append(DW_CFA_RESTORE | REGNUM[reg])
            elif self.saved.get(reg) != saved[reg]:
                if saved[reg] % 8:
                    raise Unknown(f"{reg} saved at a CFA offset not a multiple of 8 ({saved[reg]})")
                rows += bytes([DW_CFA_OFFSET | REGNUM[reg]]) + uleb128(saved[reg] // 8)
        if rows:
            self.advance(loc)
            self.program += rows
        old = self.state()
        self.cfa, self.alias, self.saved = cfa, alias, saved
        if self.state() != old:
            self.changes.append((loc, self.state()))


def encode_cfa(new: Cfa, old: Cfa) -> bytes:
    if new.kind == "expr":
        block = bytes([DW_OP_BREG7]) + sleb128(new.slot) + bytes([DW_OP_DEREF, DW_OP_PLUS_UCONST])
        block += uleb128(new.offset)
        return bytes([DW_CFA_DEF_CFA_EXPRESSION]) + uleb128(len(block)) + block
    if new.offset < 0:
        raise Unknown(f"negative CFA offset {new.offset}")
    if new.kind == old.kind:
        return bytes([DW_CFA_DEF_CFA_OFFSET]) + uleb128(new.offset)
    return bytes([DW_CFA_DEF_CFA]) + uleb128(REGNUM[new.kind]) + uleb128(new.offset)


CANONICAL = {
    **{n: "rsp" for n in RSP_NAMES},
    **{n: "rbp" for n in RBP_NAMES},
    **CALLEE_OF,
}


def written(mnemonic: str, operands: list[str]) -> set[str]:
    """rsp, rbp and callee-saved registers an instruction writes explicitly (canonical names)."""
    if mnemonic == "cpuid":
        return {"rbx"}  # and eax, ecx, edx
    if not operands or mnemonic in READ_ONLY:
        return set()
    names = operands[:2] if mnemonic in ("xchg", "xadd", "mulx") else operands[:1]
    return {CANONICAL[n] for n in names if n in CANONICAL}


def step(t: Tracker, end: int, mnemonic: str, ops: str) -> None:
    """Follow one instruction (not a branch, not `ret`) ending at `end`."""
    operands = ops.split(", ") if ops else []
    if mnemonic in ("enter", "iretq", "iret", "sysret", "syscall", "int", "int3", "ud2", "hlt"):
        raise Unknown(f"{mnemonic} at {end:#x}")
    regs = written(mnemonic, operands)
    if t.cfa.kind == "rsp":
        cfa, alias, saved = step_rsp(t, mnemonic, operands, regs)
    elif t.cfa.kind == "rbp":
        cfa, alias, saved = step_rbp(t, mnemonic, operands, regs)
    else:
        cfa, alias, saved = step_expr(t, mnemonic, operands, regs)
    if mnemonic != "pop" and mnemonic != "leave":
        for reg in regs - {"rsp"}:
            if reg not in saved:
                raise Unknown(f"callee-saved {reg} modified without being saved, at {end:#x}")
    if (cfa, alias, saved) != (t.cfa, t.alias, t.saved):
        t.set_state(end, cfa, alias, saved)


def step_rsp(t: Tracker, mnemonic: str, operands: list[str], regs: set[str]) -> tuple[Cfa, int | None, dict]:
    """CFA = rsp + offset: pushes, pops, rsp arithmetic, `mov rbp, rsp`, realignment."""
    offset, alias, saved = t.cfa.offset, t.alias, dict(t.saved)
    first = operands[0] if operands else ""
    reg = CANONICAL.get(first)
    if mnemonic in ("push", "pushfq", "pushf"):
        offset += 8
        if mnemonic == "push" and first in CALLEE_SAVED and first not in saved:
            saved[first] = offset
        return Cfa("rsp", offset), alias, saved
    if mnemonic in ("pop", "popfq", "popf"):
        if offset - 8 < 8:
            raise Unknown("pop below the return address")
        if reg == "rsp":
            raise Unknown("pop rsp")
        if reg is not None:
            if saved.get(reg) == offset:
                del saved[reg]
            elif reg not in saved:
                raise Unknown(f"pop into unsaved callee-saved {reg}")
            if reg == "rbp":
                alias = None
        return Cfa("rsp", offset - 8), alias, saved
    if mnemonic == "leave":
        return leave(alias, saved)
    if mnemonic == "mov" and operands == ["rbp", "rsp"]:
        return Cfa("rsp", offset), offset, saved
    if mnemonic == "mov" and operands == ["rsp", "rbp"] and alias is not None:
        return Cfa("rsp", alias), alias, saved
    if "rbp" in regs:
        alias = None
    if "rsp" not in regs:
        return Cfa("rsp", offset), alias, saved
    delta = rsp_delta(mnemonic, operands)
    if delta is not None:
        return Cfa("rsp", offset + delta), alias, saved
    if alias is None:
        raise Unknown(f"untracked rsp write: {mnemonic} {', '.join(operands)}")
    return Cfa("rbp", alias), alias, saved  # realigned or switched stack: rbp still marks the frame


def rsp_delta(mnemonic: str, operands: list[str]) -> int | None:
    """How much `sub rsp, imm` / `add rsp, imm` / `lea rsp, [rsp +- d]` grow the frame, else None."""
    if len(operands) != 2 or operands[0] != "rsp":
        return None
    if mnemonic in ("sub", "add"):
        imm = parse_imm(operands[1])
        if imm is None:
            return None
        return imm if mnemonic == "sub" else -imm
    if mnemonic == "lea":
        slot = stack_slot(operands[1])
        return -slot[0] if slot is not None else None
    return None


def leave(alias: int | None, saved: dict[str, int]) -> tuple[Cfa, int | None, dict]:
    """`leave` = mov rsp, rbp; pop rbp."""
    if alias is None:
        raise Unknown("leave without a known frame pointer")
    if saved.get("rbp") == alias:
        del saved["rbp"]
    return Cfa("rsp", alias - 8), None, saved


def step_rbp(t: Tracker, mnemonic: str, operands: list[str], regs: set[str]) -> tuple[Cfa, int | None, dict]:
    """CFA = rbp + offset (stack realigned): wait for rbp to be saved into the new frame."""
    offset, saved = t.cfa.offset, dict(t.saved)
    if mnemonic == "mov" and len(operands) == 2 and operands[1] == "rbp":
        slot = stack_slot(operands[0])
        if slot is not None and slot[1] == 8:
            # From here on the frame is found through the slot; rbp becomes a general register.
            return Cfa("expr", offset, slot[0]), None, saved
    if mnemonic == "mov" and operands == ["rsp", "rbp"]:
        return Cfa("rsp", offset), offset, saved
    if mnemonic == "leave":
        return leave(offset, saved)
    if "rbp" in regs:
        raise Unknown("rbp clobbered before being saved")
    if mnemonic == "pop" and operands and CANONICAL.get(operands[0]) not in (None, *saved):
        raise Unknown(f"pop into unsaved callee-saved {operands[0]}")
    return t.cfa, t.alias, saved


def step_expr(t: Tracker, mnemonic: str, operands: list[str], regs: set[str]) -> tuple[Cfa, int | None, dict]:
    """CFA = *(rsp + slot) + offset: rsp must not move until the epilogue reloads it from the slot."""
    cfa, alias, saved = t.cfa, t.alias, t.saved
    if mnemonic == "mov" and len(operands) == 2 and operands[0] == "rsp":
        if stack_slot(operands[1]) == (cfa.slot, 8):
            return Cfa("rsp", cfa.offset), alias, dict(saved)
    if "rsp" in regs or mnemonic in ("push", "pop", "pushfq", "popfq", "pushf", "popf", "leave"):
        raise Unknown(f"rsp moved while the frame is found through [rsp+{cfa.slot:#x}]")
    if "rbp" in regs:
        alias = None
    if operands and mnemonic not in READ_ONLY:
        targets = operands[:2] if mnemonic in ("xchg", "xadd") else operands[:1]
        for operand in targets:
            if is_memory(operand) and "rsp" in operand:
                check_slot_write(cfa, mnemonic, operands, operand)
    return cfa, alias, saved


def check_slot_write(cfa: Cfa, mnemonic: str, operands: list[str], operand: str) -> None:
    slot = stack_slot(operand)
    if slot is None:
        raise Unknown(f"store through rsp that cannot be bounded: {mnemonic} {', '.join(operands)}")
    start, size = slot
    if start < cfa.slot + 8 and cfa.slot < start + size:
        raise Unknown(f"frame slot [rsp+{cfa.slot:#x}] overwritten: {mnemonic} {', '.join(operands)}")
