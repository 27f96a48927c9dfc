"""The in-process thread map (flamegraph/frameworks/mxnet/pthreads.py), on real threads of this process: libstdc++'s
hash of a thread id, the TID's place in glibc's struct pthread, the memory scan that finds threads
nobody told Python about, and the watch that keeps threads which end before the exit."""

from __future__ import annotations

import ctypes
import os
import shutil
import struct
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from flamegraph.frameworks.mxnet.pthreads import (
    SEED,
    Memory,
    ScanError,
    ThreadWatch,
    calibrate,
    hash_bytes,
    live_tasks,
    scan_memory,
    thread_hash,
)

LIBC = ctypes.CDLL(None)
LIBSTDCXX = ctypes.CDLL("libstdc++.so.6")
HASH_BYTES = LIBSTDCXX._ZSt11_Hash_bytesPKvmm  # std::_Hash_bytes(const void*, size_t, size_t)
HASH_BYTES.restype = ctypes.c_size_t
HASH_BYTES.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t]

STD_THREAD_IDS = r"""
#include <cstdio>
#include <functional>
#include <mutex>
#include <pthread.h>
#include <thread>
#include <vector>
static std::mutex lock;
static void report() {
    std::lock_guard<std::mutex> hold(lock);
    std::printf("%lu %zu\n", (unsigned long)pthread_self(), std::hash<std::thread::id>{}(std::this_thread::get_id()));
}
int main() {
    report();
    std::vector<std::thread> threads;
    for (int i = 0; i < 3; i++) threads.emplace_back(report);
    for (auto& t : threads) t.join();
}
"""


def libstdcxx_hash(data: bytes) -> int:
    buffer = ctypes.create_string_buffer(data, max(len(data), 1))
    return int(HASH_BYTES(buffer, len(data), SEED))


def wait_for(condition: object, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


@contextmanager
def c_thread(attr: object = None) -> Iterator[tuple[int, int]]:
    """A thread Python knows nothing of (pthread_create running libc's pause, with `attr` if given):
    (pthread_t, its TID)."""
    before = live_tasks()
    handle = ctypes.c_ulong()
    assert LIBC.pthread_create(ctypes.byref(handle), attr, ctypes.cast(LIBC.pause, ctypes.c_void_p), None) == 0
    try:
        wait_for(lambda: live_tasks() - before)
        (tid,) = live_tasks() - before
        yield handle.value, tid
    finally:
        LIBC.pthread_cancel(handle)  # pause() is a cancellation point
        LIBC.pthread_join(handle, None)


@contextmanager
def python_threads(count: int) -> Iterator[list[threading.Thread]]:
    release = threading.Event()
    threads = [threading.Thread(target=release.wait, name=f"waiter-{i}") for i in range(count)]
    for thread in threads:
        thread.start()
    try:
        yield threads
    finally:
        release.set()
        for thread in threads:
            thread.join()


def test_hash_bytes_is_libstdcxx_hash_bytes() -> None:
    for size in range(0, 40):
        data = os.urandom(size)
        assert hash_bytes(data) == libstdcxx_hash(data), size
    ident = threading.get_ident()
    assert thread_hash(ident) == libstdcxx_hash(struct.pack("<Q", ident))


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ to build the C++ program")
def test_thread_hash_is_std_hash_of_std_thread_id(tmp_path: Path) -> None:
    source = tmp_path / "ids.cpp"
    source.write_text(STD_THREAD_IDS)
    subprocess.run(["g++", "-O1", "-pthread", "-o", str(tmp_path / "ids"), str(source)], check=True, timeout=120)
    lines = subprocess.run([str(tmp_path / "ids")], capture_output=True, text=True, check=True).stdout.split("\n")
    pairs = [tuple(map(int, line.split())) for line in lines if line]
    assert len(pairs) == 4
    for pthread, hashed in pairs:
        assert thread_hash(pthread) == hashed


def test_calibration_finds_the_tid_in_struct_pthread() -> None:
    memory = Memory()
    try:
        offset = calibrate(memory)
        with python_threads(3) as threads:
            for thread in threads:
                assert thread.ident is not None
                (tid,) = struct.unpack("<i", memory.read(thread.ident + offset, 4))
                assert tid == thread.native_id
    finally:
        memory.close()


def test_memory_scan_finds_every_thread_python_started_and_one_it_did_not() -> None:
    memory = Memory()
    try:
        offset = calibrate(memory)
        with python_threads(6) as threads, c_thread() as (pthread, tid):
            found = scan_memory(memory, offset)
            for thread in threads:
                assert found.get(thread.ident or 0) == thread.native_id, thread.name
            assert found[pthread] == tid
            assert set(found.values()) <= live_tasks()  # only live threads, and each once
            assert len(set(found.values())) == len(found)
    finally:
        memory.close()


def test_an_unmapped_address_is_an_error_not_a_crash() -> None:
    memory = Memory()
    try:
        with pytest.raises(OSError):
            memory.read(8, 8)
    finally:
        memory.close()


def test_a_word_that_is_no_struct_pthread_stops_calibration() -> None:
    from flamegraph.frameworks.mxnet import pthreads

    buffer = ctypes.create_string_buffer(pthreads.STRUCT_BYTES)
    memory = Memory()
    try:
        with pytest.raises(ScanError, match="no glibc TCB"):
            pthreads._tid_offsets(memory, ctypes.addressof(buffer), threading.get_native_id())
    finally:
        memory.close()


def test_the_watch_keeps_a_thread_that_ended_before_the_exit() -> None:
    watch = ThreadWatch(0.05)
    watch.start()
    try:
        with c_thread() as (pthread, tid):
            wait_for(lambda: tid in watch.pthreads.get(pthread, set()))
        assert tid not in live_tasks()
    finally:
        watch.stop()
    facts = watch.facts()
    assert facts["problem"] is None and facts["map"][str(thread_hash(pthread))] == [tid]
    main = threading.main_thread()
    assert main.ident is not None and facts["map"][str(thread_hash(main.ident))] == [main.native_id]
    assert main.native_id in facts["python"] and tid not in facts["python"]
    assert facts["scans"] >= 2 and facts["cpu_seconds"] > 0


def test_a_forked_child_does_not_read_its_parents_memory_as_its_own() -> None:
    watch = ThreadWatch(60.0)
    watch.start()
    scans = watch.scans
    child = os.fork()
    if child == 0:
        watch.rescan()  # the /proc/self/mem opened at start is the parent's
        os._exit(0 if watch.scans == scans else 1)
    _, status = os.waitpid(child, 0)
    watch.stop()
    assert os.waitstatus_to_exitcode(status) == 0
    assert watch.scans == scans + 1  # the parent's last scan still runs


PROT_NONE, PROT_RW = 0, 3
MAP_PRIVATE_ANONYMOUS = 0x02 | 0x20
PAGE = os.sysconf("SC_PAGE_SIZE")


@contextmanager
def thread_on_own_stack(above: int) -> Iterator[tuple[int, int]]:
    """A C thread on a stack the caller allocated (pthread_attr_setstack), `above` bytes below the end of its
    anonymous mapping (a PROT_NONE page above keeps the kernel from merging it with a neighbour): glibc puts its
    struct pthread at the stack's top, so at a distance from the mapping's end no glibc-allocated stack has."""
    mmap, mprotect, munmap = LIBC.mmap, LIBC.mprotect, LIBC.munmap
    mmap.restype, mmap.argtypes = ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                                                    ctypes.c_int, ctypes.c_long]  # fmt: skip
    mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    stack = 256 * 1024
    size = stack + above + PAGE
    base = mmap(None, size, PROT_RW, MAP_PRIVATE_ANONYMOUS, -1, 0)
    assert base not in (None, ctypes.c_void_p(-1).value)
    assert mprotect(base + size - PAGE, PAGE, PROT_NONE) == 0
    attr = ctypes.create_string_buffer(64)  # pthread_attr_t: 56 bytes on x86-64
    assert LIBC.pthread_attr_init(attr) == 0
    assert LIBC.pthread_attr_setstack(attr, ctypes.c_void_p(base), ctypes.c_size_t(stack)) == 0
    try:
        with c_thread(attr) as thread:
            yield thread
    finally:
        LIBC.pthread_attr_destroy(attr)
        munmap(base, size)


def test_a_new_thread_on_a_stack_glibc_allocated_is_probed_not_searched() -> None:
    watch = ThreadWatch(60.0)  # rescanned by hand
    watch.start()
    try:
        searches = watch.searches
        for _ in range(2):  # the second one on the first one's cached stack (then the same pthread_t)
            with c_thread() as (pthread, tid):
                watch.rescan()
                assert tid in watch.pthreads.get(pthread, set())
        assert watch.searches == searches  # found where glibc puts a struct pthread: no memory searched
        assert watch.facts()["searches"] == searches
    finally:
        watch.stop()


def test_a_thread_the_probe_misses_is_searched_for_and_kept() -> None:
    watch = ThreadWatch(60.0)
    watch.start()
    try:
        searches = watch.searches
        with thread_on_own_stack(above=5 * PAGE) as (pthread, tid):
            memory = Memory()
            try:
                assert scan_memory(memory, calibrate(memory)).get(pthread) == tid  # a search finds it
            finally:
                memory.close()
            watch.rescan()
            assert watch.searches == searches + 1
            assert tid in watch.pthreads.get(pthread, set())  # not lost to the probe
        with c_thread() as (other, other_tid):
            watch.rescan()  # that thread has ended: nothing live is left unmapped, the probe answers
            assert other_tid in watch.pthreads.get(other, set())
        assert watch.searches == searches + 1
    finally:
        watch.stop()
    assert watch.facts()["map"][str(thread_hash(pthread))] == [tid]


def test_the_watch_maps_what_a_search_maps() -> None:
    watch = ThreadWatch(0.05)
    watch.start()
    memory = Memory()
    try:
        offset = calibrate(memory)
        with python_threads(4), c_thread(), c_thread(), thread_on_own_stack(above=2 * PAGE):
            searched = scan_memory(memory, offset)
            watch.rescan()
            for pthread, tid in searched.items():
                assert tid in watch.pthreads.get(pthread, set()), tid
    finally:
        memory.close()
        watch.stop()
