"""Per-function names for code perf cannot name: `[unknown]` in a readable DSO -> `libmxnet.so+0x62333d0`.

Stripped libraries (libmxnet.so keeps no `.symtab`; oneDNN's functions are hidden) still describe
every function in `.eh_frame`, and `.eh_frame_hdr` holds a sorted binary-search table of them.
pyelftools reads the program headers (PT_GNU_EH_FRAME finds the table, as the runtime unwinder
does); the table is parsed directly from the mapped file (0.03 s for libmxnet's 133,042 FDEs,
against ~30 s for pyelftools' full CFI parse), and each lookup decodes only the FDE it lands on.

perf script prints the address of a frame in a DSO as a file offset (`map_ip`), e.g.
    \t    20f1 [unknown] (/tmp/dexp/libx.so)                 <- .text at file 0x2000, vaddr 0x40000
    \t         758ef98 [unknown] (/opt/mxnet/libmxnet.so)    <- offset == vaddr in this one
so offsets are turned into virtual addresses through the PT_LOAD program headers first.

A name is only as true as the file it came from: given the build-ids the recording stored
(flamegraph.naming.buildid), a DSO whose file here has another build-id (or none), or for which none
was recorded, names nothing: its frames stay `[dso]`.
"""

from __future__ import annotations

import bisect
import mmap
import os
import struct
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import BinaryIO

from .buildid import RecordedBuildIds, same_build_id
from .dwarf import read_sleb128, read_uleb128

# Pointer encodings (LSB 10.6.1.1): the low nibble is the format, the high one how it applies.
PE_OMIT = 0xFF
PE_FORMATS = {0x00: None, 0x02: "H", 0x03: "I", 0x04: "Q", 0x0A: "h", 0x0B: "i", 0x0C: "q"}  # None: absptr
PE_PCREL, PE_DATAREL = 0x10, 0x30
TABLE_DATAREL_SDATA4 = 0x3B  # the only table encoding linkers emit


class NoIndex(Exception):
    """The file has no usable `.eh_frame_hdr` table (not ELF, no section, unexpected encoding)."""


@dataclass(frozen=True)
class Segment:
    offset: int
    vaddr: int
    size: int


@dataclass
class EhFrameIndex:
    """Function starts of one ELF file, from its `.eh_frame_hdr` search table."""

    path: str
    starts: Sequence[int]  # initial locations (vaddr), sorted
    fdes: Sequence[int]  # vaddr of each FDE
    eh_frame: bytes | mmap.mmap  # the bytes holding the FDEs (the file, mapped)
    eh_frame_addr: int  # the vaddr of eh_frame[0]
    segments: list[Segment]
    little: bool = True
    pointer_size: int = 8
    build_id: str | None = None  # hex, from the PT_NOTE segments of the same open file
    _cie_encoding: dict[int, int] = field(default_factory=dict)  # CIE vaddr -> FDE pointer encoding

    @classmethod
    def load(cls, path: str) -> EhFrameIndex:
        from elftools.common.exceptions import ELFError  # imported on first use: 20 ms at start-up

        try:
            with open(path, "rb") as f:
                return cls._parse(path, f)
        except (OSError, ELFError, struct.error, ValueError, IndexError) as err:
            raise NoIndex(f"{path}: {err}") from None

    @classmethod
    def _parse(cls, path: str, f: BinaryIO) -> EhFrameIndex:
        """The table through PT_GNU_EH_FRAME, as the runtime unwinder finds it: program headers only
        (pyelftools' section lookup would build every section, .gnu.hash included: 6x slower)."""
        from elftools.elf.elffile import ELFFile
        from elftools.elf.segments import NoteSegment

        elf = ELFFile(f)
        segments, hdr, build_id = [], None, None
        for segment in elf.iter_segments():
            if segment["p_type"] == "PT_LOAD":
                segments.append(Segment(segment["p_offset"], segment["p_vaddr"], segment["p_filesz"]))
            elif segment["p_type"] == "PT_GNU_EH_FRAME":
                hdr = segment
            elif isinstance(segment, NoteSegment) and build_id is None:
                build_id = next((n["n_desc"] for n in segment.iter_notes() if n["n_type"] == "NT_GNU_BUILD_ID"), None)
        if hdr is None:
            raise NoIndex(f"{path}: no .eh_frame_hdr")
        mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        order = "<" if elf.little_endian else ">"
        pos, base = hdr["p_offset"], hdr["p_vaddr"]
        version, ptr_enc, count_enc, table_enc = mapped[pos : pos + 4]
        if version != 1 or table_enc != TABLE_DATAREL_SDATA4 or count_enc == PE_OMIT:
            raise NoIndex(f"{path}: .eh_frame_hdr without a search table (encodings {mapped[pos : pos + 4].hex()})")
        pos += 4 + _encoded_size(ptr_enc, elf.elfclass // 8)  # skip eh_frame_ptr
        count_format = PE_FORMATS.get(count_enc & 0x0F) or ("Q" if elf.elfclass == 64 else "I")
        (count,) = struct.unpack_from(order + count_format, mapped, pos)
        pos += struct.calcsize(count_format)
        table = array("i", mapped[pos : pos + 8 * count])  # (initial location, FDE) pairs, sdata4
        if not elf.little_endian:
            table.byteswap()
        return cls(
            path,
            array("q", (base + v for v in table[0::2])),
            array("q", (base + v for v in table[1::2])),
            mapped,
            hdr["p_vaddr"] - hdr["p_offset"],  # the FDEs sit in the same PT_LOAD as the table
            segments,
            elf.little_endian,
            elf.elfclass // 8,
            build_id,
        )

    def vaddr_of_offset(self, offset: int) -> int | None:
        """A file offset (what perf prints for DSO frames) -> the ELF virtual address."""
        for seg in self.segments:
            if seg.offset <= offset < seg.offset + seg.size:
                return offset - seg.offset + seg.vaddr
        return None

    def function_at(self, vaddr: int) -> tuple[int, int] | None:
        """(start, size) of the FDE covering `vaddr`, or None."""
        i = bisect.bisect_right(self.starts, vaddr) - 1
        if i < 0:
            return None
        start, size = self.fde_range(self.fdes[i])
        return (start, size) if start <= vaddr < start + size else None

    def fde_range(self, fde_addr: int) -> tuple[int, int]:
        """Decode pc_begin and pc_range of the FDE at `fde_addr` (its CIE gives the encoding)."""
        order = "<" if self.little else ">"
        pos = fde_addr - self.eh_frame_addr
        (length,) = struct.unpack_from(order + "I", self.eh_frame, pos)
        pos += 4
        if length == 0xFFFFFFFF:
            pos += 8  # 64-bit DWARF: the length follows
        (cie_pointer,) = struct.unpack_from(order + "I", self.eh_frame, pos)
        cie_addr = self.eh_frame_addr + pos - cie_pointer
        pos += 4
        encoding = self._fde_encoding(cie_addr)
        begin, pos = self._read_pointer(encoding, pos)
        size, _ = self._read_pointer(encoding & 0x0F, pos)  # pc_range: the format only, no base
        return begin, size

    def _read_pointer(self, encoding: int, pos: int) -> tuple[int, int]:
        fmt = encoding & 0x0F
        if fmt == 0x01:
            value, end = read_uleb128(self.eh_frame, pos)
        elif fmt == 0x09:
            value, end = read_sleb128(self.eh_frame, pos)
        else:
            code = PE_FORMATS.get(fmt, "?") or ("Q" if self.pointer_size == 8 else "I")
            if code == "?":
                raise NoIndex(f"{self.path}: pointer encoding {encoding:#x} not supported")
            (value,) = struct.unpack_from(("<" if self.little else ">") + code, self.eh_frame, pos)
            end = pos + struct.calcsize(code)
        application = encoding & 0x70
        if application == PE_PCREL:
            value += self.eh_frame_addr + pos
        elif application not in (0, PE_DATAREL):
            raise NoIndex(f"{self.path}: pointer application {application:#x} not supported")
        return value & ((1 << (8 * self.pointer_size)) - 1), end

    def _fde_encoding(self, cie_addr: int) -> int:
        encoding = self._cie_encoding.get(cie_addr)
        if encoding is None:
            encoding = self._cie_encoding[cie_addr] = self._parse_cie(cie_addr - self.eh_frame_addr)
        return encoding

    def _parse_cie(self, pos: int) -> int:
        """The FDE pointer encoding from a CIE's augmentation ('zR' -> its R byte; absptr if absent)."""
        data = self.eh_frame
        (length,) = struct.unpack_from(("<" if self.little else ">") + "I", data, pos)
        pos += 12 if length == 0xFFFFFFFF else 4
        pos += 4  # CIE id
        version = data[pos]
        end = bytes(data[pos + 1 : pos + 256]).index(b"\x00") + pos + 1
        augmentation = data[pos + 1 : end].decode("ascii", "replace")
        pos = end + 1
        if "eh" in augmentation:
            pos += self.pointer_size
        _, pos = read_uleb128(data, pos)  # code alignment
        _, pos = read_sleb128(data, pos)  # data alignment
        pos = pos + 1 if version == 1 else read_uleb128(data, pos)[1]  # return address register
        if not augmentation.startswith("z"):
            return 0
        _, pos = read_uleb128(data, pos)  # augmentation data length
        for letter in augmentation[1:]:
            if letter == "R":
                return data[pos]
            if letter == "L":
                pos += 1
            elif letter == "P":
                personality = data[pos]
                pos = self._read_pointer(personality & 0x0F, pos + 1)[1]
        return 0

    def all_functions(self) -> list[tuple[int, int]]:
        """(start, size) of every FDE in the table (for checks against a full parse)."""
        return [self.fde_range(fde) for fde in self.fdes]


def _encoded_size(encoding: int, pointer_size: int) -> int:
    fmt = encoding & 0x0F
    if fmt == 0x00:
        return pointer_size
    code = PE_FORMATS.get(fmt)
    if not code:
        raise NoIndex(f"eh_frame_ptr encoding {encoding:#x} not supported")
    return struct.calcsize(code)


# Why a DSO's file here was not trusted to name the recording's frames.
NOT_RECORDED = "no build-id recorded"
DIFFERENT = "build-id differs from the recorded one"
NO_LOCAL_ID = "the file here has no build-id"


class FunctionNamer:
    """`[unknown]` frame in a readable DSO -> `<dso basename>+0x<function start>`; None otherwise.

    With `recorded` (the recording's build-ids) only DSOs whose file here has the recorded build-id
    are read; the others are `refused` with a reason and their frames counted. Without it (perf
    script text) every readable DSO is used and the names are unverified: the caller says so.
    Indexes are loaded on first use and cached per DSO path (a failure too, with its reason).
    Picklable: a copy sent to a worker process keeps `recorded` and starts with an empty cache.
    """

    def __init__(self, recorded: RecordedBuildIds | None = None) -> None:
        self.recorded = recorded
        self._indexes: dict[bytes, EhFrameIndex | None] = {}
        self.unreadable: dict[str, str] = {}  # DSO path -> why it could not be indexed
        self.refused: dict[str, str] = {}  # DSO path -> why its file here is not the recorded one
        self.refused_frames = 0  # distinct [unknown] frame lines left as [dso] for that
        self.named = 0  # distinct frame lines named
        self.unnamed = 0  # distinct [unknown] lines in indexed DSOs that no FDE covers

    @property
    def verified(self) -> bool:
        return self.recorded is not None

    def __getstate__(self) -> dict[str, object]:
        return {"recorded": self.recorded}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__init__(state.get("recorded"))  # type: ignore[misc,arg-type]

    def index(self, dso: bytes) -> EhFrameIndex | None:
        if dso in self._indexes:
            return self._indexes[dso]
        index = None
        path = os.fsdecode(dso)
        recorded_ids = self.recorded.by_path.get(dso) if self.recorded is not None else None
        if not dso.startswith(b"/") or dso.startswith(b"//"):
            pass  # [kernel.kallsyms], [vdso], //anon, [unknown]: nothing to read
        elif not os.path.isfile(path):
            self.unreadable[path] = "not found on this machine"
        elif self.recorded is not None and not recorded_ids:
            self.refused[path] = NOT_RECORDED
        else:
            try:
                index = EhFrameIndex.load(path)
            except NoIndex as err:
                self.unreadable[path] = str(err).removeprefix(f"{path}: ")
            if index is not None and recorded_ids:
                reason = _mismatch(index.build_id, recorded_ids)
                if reason is not None:
                    self.refused[path] = reason
                    index = None
        self._indexes[dso] = index
        return index

    def __call__(self, pc: bytes, dso: bytes) -> bytes | None:
        index = self.index(dso)
        if index is None:
            if self.refused and os.fsdecode(dso) in self.refused:
                self.refused_frames += 1
            return None
        try:
            vaddr = index.vaddr_of_offset(int(pc, 16))
            found = index.function_at(vaddr) if vaddr is not None else None
        except (ValueError, struct.error, NoIndex, IndexError):
            found = None
        if found is None:
            self.unnamed += 1
            return None
        self.named += 1
        return dso.rsplit(b"/", 1)[-1] + b"+" + hex(found[0]).encode()


def _mismatch(local: str | None, recorded: frozenset[str]) -> str | None:
    """Why the file here is not the recorded one (None: it is). Every recording folded must agree."""
    if local is None:
        return NO_LOCAL_ID
    return None if all(same_build_id(local, other) for other in recorded) else DIFFERENT
