"""Locating JIT kernels: dump files matched against synthetic memory images, and against this process's
own anonymous executable memory."""

from __future__ import annotations

import mmap
import os
from pathlib import Path

from flamegraph.frameworks.jit import jitmap
from flamegraph.frameworks.jit.jitmap import PAGE, Dump, Kernel, match_kernels

BASE = 0x7F00_0000_0000


def code(tag: int, size: int) -> bytes:
    """Deterministic, distinct 'machine code' of `size` bytes."""
    return bytes((tag * 31 + i * 7 + (i >> 8)) & 0xFF for i in range(size))


def image(*placed: tuple[int, bytes], size: int = 16 * PAGE) -> bytearray:
    buf = bytearray(b"\xcc" * size)  # int3 filler
    for offset, data in placed:
        buf[offset : offset + len(data)] = data
    return buf


def test_parse_maps_keeps_anonymous_executable_regions() -> None:
    lines = [
        "7fec2e042000-7fec2e091000 rwxp 00000000 00:00 0 \n",
        "7fad34e56000-7fad34e96000 rwxp 00000000 00:00 0          [anon:xbyak]\n",
        "55d0c1a4b000-55d0c1a6c000 r-xp 00000000 00:00 0          [heap]\n",
        "7f3e9a628000-7f3e9a7bd000 r-xp 00026000 08:01 1835   /usr/lib/x86_64-linux-gnu/libc.so.6\n",
        "7ffd6f1c4000-7ffd6f1e5000 rw-p 00000000 00:00 0          [stack]\n",
        "7fec2e091000-7fec2e092000 rw-p 00000000 00:00 0 \n",
    ]
    assert jitmap.parse_maps(lines) == [
        (0x7FEC2E042000, 0x7FEC2E091000),
        (0x7FAD34E56000, 0x7FAD34E96000),
        (0x55D0C1A4B000, 0x55D0C1A6C000),
    ]


def test_dump_names() -> None:
    assert jitmap.parse_dump_name("dnnl_dump_cpu_jit_uni_kernel.27.bin") == ("jit_uni_kernel", 27)
    assert jitmap.parse_dump_name("dnnl_dump_cpu_inner_product_utils::jit_pp_kernel_t.0.bin") == (
        "inner_product_utils::jit_pp_kernel_t",
        0,
    )
    assert jitmap.parse_dump_name("dnnl_dump_jit_sse41_kernel.3.bin") == ("jit_sse41_kernel", 3)  # older oneDNN
    assert jitmap.parse_dump_name("dnnl_dump_cpu_x.bin") is None


def test_identical_dumps_claim_distinct_occurrences() -> None:
    relu = code(1, 0x400)
    memory = {BASE: bytes(image((0, relu), (4 * PAGE, relu), (9 * PAGE, relu)))}
    dumps = [Dump(9, "jit_uni_kernel", relu, created=900), Dump(27, "jit_uni_kernel", relu, created=2700)]
    kernels, missing = match_kernels(dumps, memory)
    assert [k.address for k in kernels] == [BASE, BASE + 4 * PAGE]
    assert {k.index for k in kernels} == {9, 27} and not missing
    # Which identical kernel is where cannot be known: both get the earliest creation time.
    assert {k.created for k in kernels} == {900}


def test_more_identical_dumps_than_copies_leaves_the_rest_missing() -> None:
    relu = code(1, 0x400)
    memory = {BASE: bytes(image((PAGE, relu)))}
    kernels, missing = match_kernels([Dump(1, "k", relu), Dump(2, "k", relu)], memory)
    assert len(kernels) == 1 and [d.index for d in missing] == [2]


def test_kernels_sharing_a_region_and_a_small_one_inside_a_large_one() -> None:
    gemm = code(2, 3 * PAGE + 0x123)
    small = gemm[0x200:0x300]  # its bytes also occur inside the gemm kernel
    copy = code(3, 0x800)
    memory = {BASE: bytes(image((0, gemm), (4 * PAGE, copy), (6 * PAGE, small)))}
    dumps = [Dump(0, "gemm", gemm), Dump(1, "copy", copy), Dump(2, "small", small)]
    kernels, missing = match_kernels(dumps, memory)
    assert not missing
    assert {k.name: k.address - BASE for k in kernels} == {"gemm": 0, "copy": 4 * PAGE, "small": 6 * PAGE}


def test_a_kernel_not_at_a_page_start_is_still_found() -> None:
    odd = code(4, 0x300)
    memory = {BASE: bytes(image((PAGE + 0x40, odd)))}
    kernels, _ = match_kernels([Dump(0, "odd", odd)], memory)
    assert [k.address for k in kernels] == [BASE + PAGE + 0x40]


def test_a_kernel_spanning_two_adjacent_regions() -> None:
    big = code(5, 2 * PAGE)
    buf = image((PAGE, big))
    regions = [(BASE, BASE + 2 * PAGE), (BASE + 2 * PAGE, BASE + 16 * PAGE)]  # e.g. split by mprotect
    merged = jitmap.merge_regions(regions)
    assert merged == [(BASE, BASE + 16 * PAGE)]
    kernels, _ = match_kernels([Dump(0, "big", big)], {BASE: bytes(buf)})
    assert kernels[0].address == BASE + PAGE


def test_missing_dump_and_perf_map_format() -> None:
    present, absent = code(6, 0x100), code(7, 0x100)
    kernels, missing = match_kernels([Dump(0, "a", present), Dump(1, "b", absent)], {BASE: bytes(image((0, present)))})
    assert [d.name for d in missing] == ["b"]
    assert jitmap.format_perf_map(kernels) == f"{BASE:x} 100 a\n"
    assert jitmap.format_perf_map([Kernel(0x20, 0x10, "z", 1), Kernel(0x10, 0x8, "inner::jit_pp_kernel_t", 0)]) == (
        "10 8 inner::jit_pp_kernel_t\n20 10 z\n"
    )


def test_scan_finds_a_kernel_in_this_process(tmp_path: Path) -> None:
    """End to end without oneDNN: an anonymous executable mapping, a dump file, /proc/self."""
    kernel = code(8, 0x340)
    region = mmap.mmap(
        -1,
        4 * PAGE,
        flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS,  # as Xbyak allocates (not /dev/zero-backed shared)
        prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC,
    )
    try:
        region[PAGE : PAGE + len(kernel)] = kernel
        address = _address_of(region) + PAGE
        (tmp_path / "dnnl_dump_cpu_jit_test_kernel.0.bin").write_bytes(kernel)
        (tmp_path / "dnnl_dump_cpu_jit_absent_kernel.1.bin").write_bytes(code(9, 0x80))
        stale = tmp_path / "dnnl_dump_cpu_jit_stale_kernel.2.bin"
        stale.write_bytes(kernel)
        os.utime(stale, (1_000_000_000, 1_000_000_000))  # older than this process: another run's
        result = jitmap.scan("self", [str(tmp_path)])
        assert [(k.address, k.size, k.name) for k in result.kernels] == [(address, 0x340, "jit_test_kernel")]
        assert [d.name for d in result.missing] == ["jit_absent_kernel"]
        assert result.regions >= 1 and result.scanned >= 4 * PAGE
        assert 0 < result.kernels[0].created <= _monotonic_ns()
        assert "1 JIT kernels located, 1 dumps not in memory" in result.summary()
    finally:
        region.close()


def _address_of(region: mmap.mmap) -> int:
    import ctypes

    return ctypes.addressof(ctypes.c_char.from_buffer(region))


def _monotonic_ns() -> int:
    import time

    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)


def test_write_perf_map_is_atomic(tmp_path: Path) -> None:
    path = tmp_path / "perf-123.map"
    jitmap.write_perf_map([Kernel(0x1000, 0x20, "k", 0)], 123, str(path))
    assert path.read_text() == "1000 20 k\n"
    assert [p.name for p in tmp_path.iterdir()] == ["perf-123.map"]
