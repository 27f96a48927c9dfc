"""Real stripped DSOs of the venv for the symbol tests, and pyelftools' full CFI parse of them (the oracle)."""

from __future__ import annotations

from pathlib import Path

import elftools
import numpy
from elftools.elf.elffile import ELFFile

# Small stripped DSOs of the venv: numpy's bundled libquadmath (no .symtab, text at offset == vaddr)
# and hypothesis' Rust extension (linked by lld: text at file offset != vaddr).
NUMPY_LIBS = Path(numpy.__file__).parent.parent / "numpy.libs"
QUADMATH = next(iter(sorted(NUMPY_LIBS.glob("libquadmath*.so*"))), None)
HYPOTHESIS_NATIVE = next(iter(sorted(Path(elftools.__file__).parent.parent.glob("hypothesis/_native*.so"))), None)
DSOS = [p for p in (QUADMATH, HYPOTHESIS_NATIVE) if p is not None]


def full_parse(path: Path) -> list[tuple[int, int]]:
    with open(path, "rb") as f:
        entries = ELFFile(f).get_dwarf_info().EH_CFI_entries()
        return sorted(
            (e.header["initial_location"], e.header["address_range"]) for e in entries if "FDE" in type(e).__name__
        )
