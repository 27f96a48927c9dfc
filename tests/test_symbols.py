"""The .eh_frame_hdr function index: checked against pyelftools' full CFI parse on real DSOs from the
venv, perf's file offsets turned into addresses, and [unknown] frames grouped by function in a fold."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
from helpers.dsos import DSOS, HYPOTHESIS_NATIVE, QUADMATH, full_parse, need_quadmath

from flamegraph.folding.perf import FoldOptions, PerfCollapser
from flamegraph.io.diagnostics import Diagnostics
from flamegraph.naming.observer import FrameObserver
from flamegraph.naming.symbols import EhFrameIndex, FunctionNamer, NoIndex, Segment


def test_the_test_dsos_exist() -> None:
    assert HYPOTHESIS_NATIVE is not None, DSOS
    need_quadmath()


@pytest.mark.parametrize("path", DSOS, ids=lambda p: p.name)
def test_index_equals_pyelftools_full_parse(path: Path) -> None:
    index = EhFrameIndex.load(str(path))
    expected = full_parse(path)
    assert len(expected) > 100
    assert sorted(index.all_functions()) == expected
    assert list(index.starts) == sorted(index.starts)


@pytest.mark.parametrize("path", DSOS, ids=lambda p: p.name)
def test_every_address_inside_a_function_finds_its_start(path: Path) -> None:
    index = EhFrameIndex.load(str(path))
    functions = full_parse(path)
    covered = {start for start, _ in functions}
    for start, size in functions[::7]:
        for vaddr in (start, start + size // 2, start + size - 1):
            assert index.function_at(vaddr) == (start, size)
        if start + size not in covered:
            assert index.function_at(start + size) is None  # a gap after it: no function there


def test_file_offsets_become_addresses_through_the_load_segments() -> None:
    assert HYPOTHESIS_NATIVE is not None
    index = EhFrameIndex.load(str(HYPOTHESIS_NATIVE))
    text = max(index.segments, key=lambda s: s.size)
    assert text.offset != text.vaddr  # what makes this DSO the interesting case
    start, _ = next((s, z) for s, z in full_parse(HYPOTHESIS_NATIVE) if text.vaddr <= s < text.vaddr + text.size)
    offset = start - text.vaddr + text.offset + 3  # what perf prints for an address 3 bytes into it
    namer = FunctionNamer()
    name = namer(b"%x" % offset, str(HYPOTHESIS_NATIVE).encode())
    assert name == HYPOTHESIS_NATIVE.name.encode() + b"+" + hex(start).encode()
    synthetic = EhFrameIndex("x", [], [], b"", 0, [Segment(0, 0, 0x1000), Segment(0x1000, 0x3000, 0x500)])
    assert synthetic.vaddr_of_offset(0x10) == 0x10
    assert synthetic.vaddr_of_offset(0x1234) == 0x3234
    assert synthetic.vaddr_of_offset(0x2000) is None


def test_namer_failures_are_remembered_with_a_reason(tmp_path: Path) -> None:
    namer = FunctionNamer()
    text_file = tmp_path / "libfake.so"
    text_file.write_text("not an ELF file\n")
    assert namer(b"10", str(text_file).encode()) is None
    assert namer(b"10", b"/nonexistent/libgone.so") is None
    assert namer(b"10", b"[kernel.kallsyms]") is None and namer(b"10", b"//anon") is None
    assert set(namer.unreadable) == {str(text_file), "/nonexistent/libgone.so"}
    assert namer.unreadable["/nonexistent/libgone.so"] == "not found on this machine"
    with pytest.raises(NoIndex):
        EhFrameIndex.load(str(text_file))


def test_namer_pickles_without_its_cache() -> None:
    need_quadmath()
    namer = FunctionNamer()
    namer.index(str(QUADMATH).encode())
    clone = pickle.loads(pickle.dumps(namer))
    assert clone._indexes == {} and namer._indexes


def test_fold_groups_unknown_frames_by_function() -> None:
    """Three addresses in two functions of a stripped DSO fold to two per-function names."""
    need_quadmath()
    (a, _), (b, _) = full_parse(QUADMATH)[10:12]
    lib = str(QUADMATH).encode()
    text = b"".join(
        b"python 100 1.000001: 1 cpu-clock:\n\t%x [unknown] (%s)\n\t4011 main (/usr/bin/python3)\n\n" % (addr, lib)
        for addr in (a, a + 1, b + 2)
    )
    base = QUADMATH.name
    observer = FrameObserver(FunctionNamer())
    grouped = fold(text, FoldOptions(frame_hook=observer))
    assert grouped == {f"python;main;{base}+{a:#x}": 2, f"python;main;{base}+{b:#x}": 1}
    assert observer.grouped == {f"{base}+{a:#x}", f"{base}+{b:#x}"}
    assert fold(text, FoldOptions()) == {f"python;main;[{base}]": 3}
    assert fold(text, FoldOptions(compat=True, frame_hook=observer)) == {f"python;main;[{base}]": 3}


def fold(text: bytes, options: FoldOptions) -> dict[str, float]:
    collapser = PerfCollapser(options, Diagnostics())
    collapser.feed(text.splitlines(keepends=True), "test")
    return collapser.profile().counts
