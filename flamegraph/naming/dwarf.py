"""DWARF numbers and LEB128 codecs: the ELF/DWARF helpers shared by symbol lookup (reading .eh_frame)
and the JIT code (writing CFI and unwind tables for the kernels it names)."""

from __future__ import annotations

import mmap

# Call-frame instructions (DWARF 5, section 6.4.2).
DW_CFA_ADVANCE_LOC = 0x40  # | delta (< 64)
DW_CFA_OFFSET = 0x80  # | register, then ULEB128 factored offset
DW_CFA_RESTORE = 0xC0  # | register
DW_CFA_NOP = 0x00
DW_CFA_ADVANCE_LOC1 = 0x02
DW_CFA_ADVANCE_LOC2 = 0x03
DW_CFA_ADVANCE_LOC4 = 0x04
DW_CFA_DEF_CFA = 0x0C
DW_CFA_DEF_CFA_OFFSET = 0x0E
DW_CFA_DEF_CFA_EXPRESSION = 0x0F

# Expression operators used in CFA expressions.
DW_OP_DEREF = 0x06
DW_OP_PLUS_UCONST = 0x23
DW_OP_BREG7 = 0x77  # rsp + SLEB128
DW_OP_CONSTU = 0x10  # ULEB128
DW_OP_MOD = 0x1D
DW_OP_PLUS = 0x22
DW_OP_SHL = 0x24
DW_OP_LT = 0x2D
DW_OP_LIT0 = 0x30  # + n (n < 32)
DW_OP_BREG0 = 0x70  # + register, then SLEB128

# Pointer encodings (.eh_frame / .eh_frame_hdr, LSB 10.6).
DW_EH_PE_ABSPTR = 0x00
DW_EH_PE_UDATA4 = 0x03
DW_EH_PE_SDATA4 = 0x0B
DW_EH_PE_PCREL = 0x10
DW_EH_PE_DATAREL = 0x30
DW_EH_PE_OMIT = 0xFF

# x86-64 DWARF register numbers (System V ABI, figure 3.36).
REGNUM = {
    "rax": 0, "rdx": 1, "rcx": 2, "rbx": 3, "rsi": 4, "rdi": 5, "rbp": 6, "rsp": 7,
    **{f"r{i}": i for i in range(8, 16)},
    "rip": 16,
}  # fmt: skip
RETURN_ADDRESS = REGNUM["rip"]


def uleb128(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def sleb128(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        done = (value == 0 and not byte & 0x40) or (value == -1 and byte & 0x40)
        out.append(byte if done else byte | 0x80)
        if done:
            return bytes(out)


def read_uleb128(data: bytes | mmap.mmap, pos: int) -> tuple[int, int]:
    """(value, position after it)."""
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def read_sleb128(data: bytes | mmap.mmap, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            if byte & 0x40:
                value -= 1 << shift
            return value, pos
