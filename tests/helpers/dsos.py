"""Real stripped DSOs of the venv for the symbol tests, and pyelftools' full CFI parse of them (the oracle)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import elftools
import pytest
from elftools.elf.elffile import ELFFile

# Small stripped DSOs of the venv: numpy's bundled libquadmath (no .symtab, text at offset == vaddr)
# and hypothesis' Rust extension (linked by lld: text at file offset != vaddr). numpy is the collect
# extra's: found without importing it, and absent from a `dev`-only venv.
NUMPY = importlib.util.find_spec("numpy")
NUMPY_LIBS = Path(NUMPY.origin).parent.parent / "numpy.libs" if NUMPY and NUMPY.origin else None
QUADMATH = next(iter(sorted(NUMPY_LIBS.glob("libquadmath*.so*"))), None) if NUMPY_LIBS else None
HYPOTHESIS_NATIVE = next(iter(sorted(Path(elftools.__file__).parent.parent.glob("hypothesis/_native*.so"))), None)
DSOS = [p for p in (QUADMATH, HYPOTHESIS_NATIVE) if p is not None]


def need_quadmath() -> Path:
    """numpy's libquadmath; skip without numpy (pip install -e '.[collect]'), fail if numpy lacks it."""
    if NUMPY is None:
        pytest.skip("needs numpy's bundled libquadmath: pip install -e '.[collect]'")
    assert QUADMATH is not None, f"no libquadmath in {NUMPY_LIBS}"
    return QUADMATH


def full_parse(path: Path) -> list[tuple[int, int]]:
    with open(path, "rb") as f:
        entries = ELFFile(f).get_dwarf_info().EH_CFI_entries()
        return sorted(
            (e.header["initial_location"], e.header["address_range"]) for e in entries if "FDE" in type(e).__name__
        )
