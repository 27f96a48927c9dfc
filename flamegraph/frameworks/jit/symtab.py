"""One symbol per function in a `jitted-<pid>-<n>.so` that `perf inject --jit` wrote for a run of code.

perf inject writes one ELF per JIT_CODE_LOAD record with a single symbol, the load's name
(genelf.c: `.text` at 0x80, then .eh_frame, .eh_frame_hdr, .shstrtab, .symtab, .strtab and the
build-id note). CPython's perf trampolines are 11 bytes apart, too close for one load each (see
trampolines.py), so a whole run of them is one load; this gives that file back a symbol per
trampoline. The new .symtab and .strtab are appended with a new section header table; the old
ones stay as dead bytes, and everything perf checks (build-id, sections, the LOAD segment) is kept.

    rewrite_symbols(path, [(0x0, 11, "py::main:/tmp/t.py"), (0xb, 11, "py::leaf:/tmp/t.py")])
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

from ...io.private import replace_file

EHDR_SHOFF = 0x28  # e_shoff (ELF64 header)
EHDR_SHNUM = 0x3C  # e_shnum
SECTION = struct.Struct("<IIQQQQIIQQ")  # name type flags addr offset size link info addralign entsize
SYMBOL = struct.Struct("<IBBHQQ")  # name info other shndx value size
SHT_SYMTAB = 2
STT_FUNC_LOCAL = 0x02  # STB_LOCAL << 4 | STT_FUNC, as genelf writes its symbol


class NotJitted(ValueError):
    """The file is not the ELF perf inject writes."""


def rewrite_symbols(path: str, functions: Sequence[tuple[int, int, str]]) -> None:
    """Replace the symbols of `path` with one FUNC per (offset from .text, size, name)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:6] != b"\x7fELF\x02\x01":
        raise NotJitted(f"{path}: not a 64-bit little-endian ELF file")
    shoff = struct.unpack_from("<Q", data, EHDR_SHOFF)[0]
    shnum = struct.unpack_from("<H", data, EHDR_SHNUM)[0]
    if shnum == 0 or shoff + shnum * SECTION.size > len(data):
        raise NotJitted(f"{path}: section headers out of the file")
    sections = [list(SECTION.unpack_from(data, shoff + i * SECTION.size)) for i in range(shnum)]
    symtabs = [i for i, s in enumerate(sections) if s[1] == SHT_SYMTAB]
    if len(symtabs) != 1 or not 0 < sections[symtabs[0]][6] < shnum:
        raise NotJitted(f"{path}: not one .symtab with its string table")
    symtab = sections[symtabs[0]]
    text_index = SYMBOL.unpack_from(data, symtab[4] + SYMBOL.size)[3]  # genelf's one symbol lies in .text
    if not 0 < text_index < shnum:
        raise NotJitted(f"{path}: its symbol is in no section")
    text_address = sections[text_index][3]
    strings, symbols = bytearray(b"\x00"), bytearray(SYMBOL.size)  # symbol 0: the null symbol
    for offset, size, name in functions:
        symbols += SYMBOL.pack(len(strings), STT_FUNC_LOCAL, 0, text_index, text_address + offset, size)
        strings += name.encode("utf-8", "surrogateescape") + b"\x00"
    out = bytearray(data)
    out += b"\x00" * (-len(out) % 8)
    symtab[4], symtab[5], symtab[7] = len(out), len(symbols), len(functions) + 1  # info: first non-local
    out += symbols
    strtab = sections[symtab[6]]
    strtab[4], strtab[5] = len(out), len(strings)
    out += strings
    out += b"\x00" * (-len(out) % 8)
    struct.pack_into("<Q", out, EHDR_SHOFF, len(out))
    for section in sections:
        out += SECTION.pack(*section)
    replace_file(path, bytes(out))
