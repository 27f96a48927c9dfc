"""`.eh_frame` + `.eh_frame_hdr` bytes for one JIT kernel, as perf's jitdump unwinding record wants them.

perf inject --jit builds `jitted-<pid>-<n>.so` with `.text` first, `.eh_frame` at ALIGN_8(code size)
after it and `.eh_frame_hdr` right behind (genelf.c; CPython's perf_jit_trampoline.c uses the same
layout), so every pointer below is relative and the bytes do not depend on the load address:
    CIE  "zR", code align 1, data align -8, RA column 16, FDE pointers pcrel|sdata4,
         initial rule CFA = rsp+8, rip at CFA-8
    FDE  pc_begin -> start of .text, pc_range = code size, then the generated CFA program
    hdr  version 1, eh_frame_ptr pcrel|sdata4, fde_count udata4, table datarel|sdata4, 1 row
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

from ...naming.dwarf import (
    DW_CFA_DEF_CFA,
    DW_CFA_OFFSET,
    DW_EH_PE_DATAREL,
    DW_EH_PE_PCREL,
    DW_EH_PE_SDATA4,
    DW_EH_PE_UDATA4,
    REGNUM,
    RETURN_ADDRESS,
    sleb128,
    uleb128,
)

EH_FRAME_HDR_SIZE = 20


def align(value: int, to: int) -> int:
    return (value + to - 1) & ~(to - 1)


@dataclass(frozen=True)
class UnwindInfo:
    data: bytes  # .eh_frame followed by .eh_frame_hdr
    eh_frame_hdr_size: int

    @property
    def mapped_size(self) -> int:
        return align(len(self.data), 16)


def _padded(body: bytes) -> bytes:
    """A length-prefixed CIE/FDE, padded with DW_CFA_nop so that the record is 8-byte aligned."""
    body += b"\x00" * (-(len(body) + 4) % 8)
    return struct.pack("<I", len(body)) + body


def build_cie() -> bytes:
    body = struct.pack("<I", 0)  # CIE id
    body += bytes([1]) + b"zR\x00" + uleb128(1) + sleb128(-8) + bytes([RETURN_ADDRESS])
    body += uleb128(1) + bytes([DW_EH_PE_PCREL | DW_EH_PE_SDATA4])  # augmentation data: FDE encoding
    body += bytes([DW_CFA_DEF_CFA]) + uleb128(REGNUM["rsp"]) + uleb128(8)
    body += bytes([DW_CFA_OFFSET | RETURN_ADDRESS]) + uleb128(1)
    return _padded(body)


def build_unwind(code_size: int, program: bytes) -> UnwindInfo:
    """Unwind tables for code at the start of `.text`, described by one FDE running `program`."""
    return build_unwind_table(code_size, [(0, code_size, program)])


def build_unwind_table(code_size: int, fdes: Sequence[tuple[int, int, bytes]]) -> UnwindInfo:
    """Unwind tables for `.text` of `code_size` bytes: one FDE per (start, size, program), starts
    relative to `.text`, ascending and not overlapping (the header's search table is sorted)."""
    text_end = align(code_size, 8)  # .eh_frame starts here, relative to .text
    cie = build_cie()
    records, rows = [cie], []
    at = len(cie)
    for start, size, program in fdes:
        pc_begin_field = text_end + at + 8  # length, CIE pointer, then pc_begin
        body = struct.pack("<I", at + 4)  # CIE pointer: back from this field to the CIE
        body += struct.pack("<iI", start - pc_begin_field, size) + uleb128(0) + program
        rows.append((start, at))
        records.append(_padded(body))
        at += len(records[-1])
    eh_frame = b"".join(records) + struct.pack("<I", 0)  # zero terminator
    hdr_at = text_end + len(eh_frame)
    hdr = struct.pack(
        "<BBBBiI",
        1,
        DW_EH_PE_PCREL | DW_EH_PE_SDATA4,  # eh_frame_ptr
        DW_EH_PE_UDATA4,  # fde_count
        DW_EH_PE_DATAREL | DW_EH_PE_SDATA4,  # table: (initial location, FDE), relative to .eh_frame_hdr
        text_end - (hdr_at + 4),  # eh_frame_ptr, from its own field
        len(rows),
    )
    hdr += b"".join(struct.pack("<ii", start - hdr_at, text_end + fde_at - hdr_at) for start, fde_at in rows)
    assert len(hdr) == EH_FRAME_HDR_SIZE + 8 * (len(rows) - 1)
    return UnwindInfo(eh_frame + hdr, len(hdr))
