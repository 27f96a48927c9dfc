"""A streamed chunk's `perf script` without perf's demangling, its frames demangled after: the same text.

perf 6.1 demangles every symbol of every file it loads, once per run: for a chunk of the MXNet MLP
(libmxnet's 55k C++ symbols) that is ~0.3 s of the ~0.75 s each chunk's `perf script` costs, paid
again for every chunk (bench/chunk_script_cost.py). With `--no-demangle` perf prints the mangled
names; the few hundred a chunk shows are demangled by one `c++filt -p -i` (binutils' libiberty, as
perf's cplus_demangle without options: no parameters, std::string abbreviated). The text is then
byte for byte what perf prints demangling itself, except where perf picks among aliases (symbols at one
address, `symbols__fixup_duplicate`): it compares the names, demangled or not, so the pick can differ
(libmxnet: 11 of 17,031 alias groups). A chunk showing a name from an alias group whose names do not
all demangle alike in its file (or a debug file perf may read instead), or a name perf demangles
other than through libiberty (OCaml, Java), or a mangled name left outside a frame line, is scripted
again as before.

    names = ChunkNames.find()                 # None without c++filt: chunks are scripted as before
    text = names.script(path, script_args)    # the chunk's text, or None: script it as before
"""

from __future__ import annotations

import os
import re
import shutil
import struct
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from ..io import children
from ..io.perf import script_command, stream_script
from .spool import read_chunk

NO_DEMANGLE = "--no-demangle"
# A callchain line: address, name, (file); of the names, those libiberty demangles (C++, Rust) are rewritten.
FRAME = re.compile(rb"^(\s+[0-9a-f]+ )(\S+) \(([^()]*)\)$")
MANGLED = re.compile(rb"(?:^|[\s(])(?:_Z|_R|_GLOBAL_)")
OTHER_DEMANGLERS = re.compile(rb"^\s+[0-9a-f]+ (?:caml[A-Z]|\S*\)\S* \()")  # perf's OCaml and Java demanglers
PLT = b"@plt"
KERNEL = b"[kernel.kallsyms]"
SYMBOL = struct.Struct("<IBBHQQ")  # Elf64_Sym: name, info, other, shndx, value, size
FUNC, IFUNC = 2, 10


class ChunkNames:
    """The files' alias groups that would name differently, by file (see the module's doc)."""

    def __init__(self, cxxfilt: str) -> None:
        self._cxxfilt = cxxfilt
        self._files: dict[tuple[bytes, frozenset[str]], list[dict[bytes, frozenset[bytes]]]] = {}
        self._verdicts: dict[tuple[bytes, bytes], bool] = {}  # (file, name): in an alias group named otherwise
        self.rescripted = 0  # chunks scripted again with perf's demangling

    @classmethod
    def find(cls) -> ChunkNames | None:
        cxxfilt = shutil.which("c++filt")
        return cls(cxxfilt) if cxxfilt else None

    def script(self, path: str, script_args: Sequence[str]) -> bytes | None:
        """The chunk's `perf script` text as perf would print it demangling; None when that is not sure."""
        with stream_script(script_command(path, extra=[*script_args, NO_DEMANGLE]), path) as stream:
            text = stream.read()
        build_ids = read_chunk(Path(path))[1]
        try:
            rewritten = self.rewrite(text, build_ids)
        except OSError:  # c++filt failed: perf demangles, as before
            rewritten = None
        if rewritten is None:
            self.rescripted += 1
        return rewritten

    def rewrite(self, text: bytes, build_ids: dict[bytes, frozenset[str]]) -> bytes | None:
        lines = text.split(b"\n")
        frames: list[tuple[int, re.Match[bytes]]] = []
        shown: set[tuple[bytes, bytes]] = set()  # (file, name) of every user-space frame
        for i, line in enumerate(lines):
            if OTHER_DEMANGLERS.match(line):
                return None
            match = FRAME.match(line)
            if match is None or match.group(3) == KERNEL:  # the kernel's names are never demangled
                if MANGLED.search(line):
                    return None
                continue
            shown.add((match.group(3), match.group(2).removesuffix(PLT)))
            if MANGLED.match(match.group(2)):
                frames.append((i, match))
        if self._any_ambiguous(shown, build_ids):
            return None  # perf may name one of these addresses by another alias when demangling
        if not frames:
            return text
        stems = sorted({match.group(2).removesuffix(PLT) for _, match in frames})
        plain = dict(zip(stems, self._demangle(stems), strict=True))
        for i, match in frames:
            name = match.group(2)
            stem = name.removesuffix(PLT)
            lines[i] = match.group(1) + plain[stem] + name[len(stem) :] + b" (" + match.group(3) + b")"
        return b"\n".join(lines)

    def _demangle(self, names: Sequence[bytes]) -> list[bytes]:
        out = children.run([self._cxxfilt, "-p", "-i"], input=b"\n".join(names) + b"\n", capture_output=True)
        plain = out.stdout.split(b"\n")[: len(names)]
        if out.returncode != 0 or len(plain) != len(names):
            raise OSError(f"c++filt failed ({out.returncode})")
        return plain

    def _any_ambiguous(self, shown: set[tuple[bytes, bytes]], build_ids: dict[bytes, frozenset[str]]) -> bool:
        """Whether a shown name is in an alias group (of a file perf may read its file's symbols from) whose
        names demangling tells apart; the groups are read once per file, demangled once when first shown."""
        unknown: dict[tuple[bytes, bytes], list[frozenset[bytes]]] = {}
        for dso, name in shown:
            if (dso, name) in self._verdicts:
                if self._verdicts[(dso, name)]:
                    return True
                continue
            groups = [g for by_name in self._groups(dso, build_ids.get(dso, frozenset())) if (g := by_name.get(name))]
            if groups:
                unknown[(dso, name)] = groups
            else:
                self._verdicts[(dso, name)] = False
        if not unknown:
            return False
        members = sorted({n for groups in unknown.values() for group in groups for n in group})
        plain = dict(zip(members, self._demangle(members), strict=True))
        found = False
        for key, groups in unknown.items():
            # Names demangling leaves alone compare alike either way: only a group with a name demangling
            # changes, and names that demangle apart, may be named otherwise (perf's rules left unmodelled).
            self._verdicts[key] = any(
                len({plain[n] for n in group}) > 1 and any(plain[n] != n for n in group) for group in groups
            )
            found = found or self._verdicts[key]
        return found

    def _groups(self, dso: bytes, build_ids: frozenset[str]) -> list[dict[bytes, frozenset[bytes]]]:
        """Per candidate file: each name of an alias group with a mangled name -> its group."""
        key = (dso, build_ids)
        if key not in self._files:
            files = []
            for path in symbol_files(os.fsdecode(dso), build_ids):
                by_name: dict[bytes, frozenset[bytes]] = {}
                for names in alias_groups(path).values():
                    if any(MANGLED.match(n) for n in names):
                        group = frozenset(names)
                        by_name.update(dict.fromkeys(group, group))
                files.append(by_name)
            self._files[key] = files
        return self._files[key]


def symbol_files(dso: str, build_ids: frozenset[str]) -> list[Path]:
    """The files perf 6.1 may take `dso`'s symbols from: itself, the build-id caches, debug files."""
    home = Path(os.environ.get("HOME", "/root"))
    candidates = [Path(dso), Path("/usr/lib/debug" + dso), Path(dso + ".debug")]
    for build_id in build_ids:
        head, tail = build_id[:2], build_id[2:]
        cache = home / ".debug" / ".build-id" / head / tail
        candidates += [cache / "elf", cache / "debug", Path(f"/usr/lib/debug/.build-id/{head}/{tail}.debug")]
    return [path for path in candidates if path.is_file()]


def alias_groups(path: Path) -> dict[int, set[bytes]]:
    """Function symbols sharing a start address in a file's .symtab and .dynsym: {start: names}."""
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile

    starts: dict[int, set[tuple[int, int]]] = defaultdict(set)  # start -> (string table, offset): names later
    tables: list[bytes] = []
    try:
        with open(path, "rb") as f:
            elf = ELFFile(f)
            if elf.elfclass != 64 or not elf.little_endian:
                return {}
            for section_name in (".symtab", ".dynsym"):
                section = elf.get_section_by_name(section_name)
                if section is None or section["sh_type"] == "SHT_NOBITS":
                    continue
                tables.append(elf.get_section(section["sh_link"]).data())
                table = len(tables) - 1
                for name, info, _, shndx, value, _ in SYMBOL.iter_unpack(section.data()):
                    if info & 0xF in (FUNC, IFUNC) and shndx and name:
                        starts[value].add((table, name))
        groups = {
            start: {tables[t][o : tables[t].index(b"\0", o)] for t, o in names}
            for start, names in starts.items()
            if len(names) > 1
        }
    except (OSError, ELFError, ValueError, struct.error):
        return {}
    return {start: names for start, names in groups.items() if len(names) > 1}
