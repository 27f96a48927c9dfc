"""In the profiled process: which Linux TID is which MXNet profiler thread, read from memory.

MXNet 1.9's profiler names a thread by `std::hash<std::thread::id>`: libstdc++'s
`_Hash_bytes(&pthread_t, 8, 0xc70f6907)` (`thread_hash`). A thread's `pthread_t` is the address of
glibc's `struct pthread`, which on x86-64 begins with the TCB header {tcb, dtv, self}: a pointer to
itself, and the same pointer two words later; the kernel TID sits at a fixed offset inside it.
So the profiler tid -> TID map is a fact of the process, found by:
    1. calibration: the TID's offset inside `struct pthread`, where `get_native_id()` sits past
       `get_ident()` on the calling thread and on a short-lived thread started for it (one offset
       both agree on, else no map);
    2. Python threads: known directly (threading.enumerate: ident, native_id);
    3. the others (the engine's workers, OpenMP's, the profiler's dump thread): glibc puts a thread's
       `struct pthread` at the top of its stack mapping, so the top SCAN_BYTES of every anonymous
       rw mapping of /proc/self/maps are searched for a word pointing at itself with the same word
       two words later, whose TID is a live task of /proc/self/task.
Memory is read through /proc/self/mem (an unmapped page is an OSError, never a segfault). A thread
that exited before the last scan cannot be found: `ThreadWatch` rescans whenever a new task appears.
A rescan first probes where threads are found (`probe`): each known struct pthread again (glibc gives a
new thread an ended one's cached stack, so its pthread_t) and, in every anonymous mapping, the distances
from its end at which a struct pthread was seen (glibc puts it at the same place in every stack it
allocates). Only when a live task is still unmapped does it search the mappings' tops (3): ~10 ms of
CPU with MXNet loaded (a bytes search that meets every pointer into the same 64 KiB), against ~1 ms for
the probe. Either way a probed word is checked exactly as a searched one, so the map is the same. The
watcher thread starts before the first scan, so even that one knows where glibc puts a struct pthread (the
MLP: 4 scans, none searched, 9 ms of CPU in all, calibration included, where 4 searches took 88 ms).
Standard library only: this runs inside the user's program, before and beside mxnet.

The sidecar gets `ThreadWatch.facts()`:
    {"map": {"14697135246327494939": [15022], ...}, "python": [15001], "scans": 3, "searches": 1,
     "cpu_seconds": 0.012, "problem": null, "watch": 15003}
"map" is keyed by the profiler tid as its trace prints it (decimal), each with its Linux TIDs (two
or more when glibc gave a later thread the memory of one that ended: the same pthread_t, so the
same profiler tid, at different times); "python" lists the TIDs of Python threads; "problem" says
in one line why there is no map (then "map" is empty); "searches" counts the scans that had to search
memory (the others were answered by the probe); "watch" is the TID of the watcher itself
(its stacks are drawn as the tool's instrumentation, instruments.py).
"""

from __future__ import annotations

import bisect
import os
import re
import struct
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

SEED = 0xC70F6907  # libstdc++'s std::_Hash_impl seed: std::hash of a thread id hashes its 8 bytes with it
MUL = 0xC6A4A7935BD1E995
MASK = (1 << 64) - 1
SCAN_BYTES = 64 * 1024  # struct pthread sits in the last few KiB of a thread's mapping (static TLS below)
STRUCT_BYTES = 4096  # glibc 2.36's struct pthread is ~2.3 KiB: the TID is searched for in this much
# /proc/self/maps: "7f3c2a1fe000-7f3c2a9fe000 rw-p 00000000 00:00 0" (anonymous: no path)
MAPPING = re.compile(rb"^([0-9a-f]+)-([0-9a-f]+) rw.p [0-9a-f]+ 00:00 0\s*$")


def hash_bytes(data: bytes, seed: int = SEED) -> int:
    """libstdc++'s `std::_Hash_bytes` for 64-bit size_t (libsupc++/hash_bytes.cc), in Python."""

    def shift_mix(v: int) -> int:
        return v ^ (v >> 47)

    aligned = len(data) & ~7
    value = (seed ^ (len(data) * MUL)) & MASK
    for (word,) in struct.iter_unpack("<Q", data[:aligned]):
        value ^= (shift_mix((word * MUL) & MASK) * MUL) & MASK
        value = (value * MUL) & MASK
    if len(data) & 7:
        value ^= int.from_bytes(data[aligned:], "little")
        value = (value * MUL) & MASK
    return shift_mix((shift_mix(value) * MUL) & MASK)


def thread_hash(pthread: int) -> int:
    """The profiler's tid of the thread whose `pthread_t` is `pthread` (std::hash<std::thread::id>)."""
    return hash_bytes(struct.pack("<Q", pthread))


class ScanError(Exception):
    """No map can be read from this process (one line for the sidecar)."""


class Memory:
    """This process's memory through /proc/self/mem: an unmapped address is an OSError, not a crash."""

    def __init__(self) -> None:
        self.fd = os.open("/proc/self/mem", os.O_RDONLY)

    def read(self, address: int, size: int) -> bytes:
        return os.pread(self.fd, size, address)

    def close(self) -> None:
        os.close(self.fd)


def _tid_offsets(memory: Memory, pthread: int, tid: int) -> set[int]:
    """Offsets inside the `struct pthread` at `pthread` that hold `tid` (a 4-byte pid_t)."""
    data = memory.read(pthread, STRUCT_BYTES)
    head = struct.unpack_from("<3Q", data)
    if head[0] != pthread or head[2] != pthread:
        raise ScanError(f"no glibc TCB at pthread_self() {pthread:#x} (not x86-64 glibc?): profiler threads not mapped")
    needle = struct.pack("<i", tid)
    return {i for i in range(24, len(data) - 3, 4) if data[i : i + 4] == needle}


def calibrate(memory: Memory) -> int:
    """The offset of the kernel TID inside `struct pthread`, agreed on by this thread and a fresh one."""
    seen: dict[str, tuple[int, int]] = {}
    started, release = threading.Event(), threading.Event()

    def other() -> None:
        seen["other"] = (threading.get_ident(), threading.get_native_id())
        started.set()
        release.wait(5.0)

    helper = threading.Thread(target=other, name="flamegraph-calibrate", daemon=True)
    helper.start()
    try:
        if not started.wait(5.0):
            raise ScanError("the calibration thread did not start: profiler threads not mapped")
        offsets = _tid_offsets(memory, threading.get_ident(), threading.get_native_id())
        offsets &= _tid_offsets(memory, *seen["other"])
    finally:
        release.set()
        helper.join(5.0)
    if len(offsets) != 1:
        raise ScanError(
            f"the TID's place in struct pthread is not unique ({len(offsets)} candidates): profiler threads not mapped"
        )
    return offsets.pop()


def anonymous_mappings(maps: bytes) -> Iterator[tuple[int, int]]:
    """(start, end) of the anonymous rw mappings listed in /proc/self/maps."""
    for line in maps.splitlines():
        found = MAPPING.match(line)
        if found is not None:
            yield int(found.group(1), 16), int(found.group(2), 16)


def self_pointers(data: bytes, base: int) -> Iterator[int]:
    """Addresses of 8-aligned words in `data` (read at `base`) that hold their own address, with the
    same word two words later: the TCB header of a struct pthread. A bytes search on each possible
    upper six bytes of such a word keeps this fast (a window of 64 KiB spans at most two)."""
    end = base + len(data)
    for upper in range(base >> 16, ((end - 1) >> 16) + 1):
        prefix = struct.pack("<Q", upper << 16)[2:]
        position = data.find(prefix, 2)
        while position >= 0:
            offset = position - 2
            if (base + offset) % 8 == 0 and offset + 24 <= len(data):
                word, _, again = struct.unpack_from("<3Q", data, offset)
                if word == base + offset == again:
                    yield word
            position = data.find(prefix, position + 1)


def live_tasks() -> set[int]:
    return {int(name) for name in os.listdir("/proc/self/task") if name.isdigit()}


def python_threads() -> dict[int, int]:
    """pthread_t -> TID of the live Python threads (their ident is pthread_self())."""
    return {t.ident: t.native_id for t in threading.enumerate() if t.ident is not None and t.native_id is not None}


def read_mappings() -> list[tuple[int, int]]:
    with open("/proc/self/maps", "rb") as f:
        return list(anonymous_mappings(f.read()))


def scan_memory(
    memory: Memory, tid_offset: int, mappings: list[tuple[int, int]] | None = None, alive: set[int] | None = None
) -> dict[int, int]:
    """pthread_t -> TID of every live thread whose struct pthread tops an anonymous rw mapping (searched)."""
    found: dict[int, int] = {}
    alive = live_tasks() if alive is None else alive
    for start, end in read_mappings() if mappings is None else mappings:
        low = max(start, end - SCAN_BYTES)
        try:
            data = memory.read(low, end - low)
        except OSError:
            continue  # unmapped since /proc/self/maps was read
        for pthread in self_pointers(data, low):
            try:
                (tid,) = struct.unpack("<i", memory.read(pthread + tid_offset, 4))
            except (OSError, struct.error):
                continue
            if tid in alive:  # an exited thread's cached stack holds TID 0
                found[pthread] = tid
    return found


def probe(memory: Memory, tid_offset: int, candidates: set[int], alive: set[int]) -> dict[int, int]:
    """pthread_t -> TID of the candidate addresses that hold a struct pthread of a live thread: the same
    checks as the search (the TCB header pointing at itself twice, the TID a live task), one read each."""
    found: dict[int, int] = {}
    size = max(24, tid_offset + 4)
    for pthread in candidates:
        try:
            data = memory.read(pthread, size)
        except OSError:
            continue
        if len(data) < size:
            continue
        word, _, again = struct.unpack_from("<3Q", data)
        (tid,) = struct.unpack_from("<i", data, tid_offset)
        if word == pthread == again and tid in alive:
            found[pthread] = tid
    return found


def distances(mappings: list[tuple[int, int]], pthreads: Iterable[int]) -> set[int]:
    """How far below the end of its mapping each struct pthread sits (within the searched top)."""
    ordered = sorted(mappings)
    starts = [start for start, _ in ordered]
    found: set[int] = set()
    for pthread in pthreads:
        at = bisect.bisect_right(starts, pthread) - 1
        if at >= 0 and ordered[at][0] <= pthread < ordered[at][1] and ordered[at][1] - pthread <= SCAN_BYTES:
            found.add(ordered[at][1] - pthread)
    return found


class ThreadWatch:
    """The profiler tid -> TID map of this process, kept up to date from `start()` to `stop()`: a
    daemon thread lists /proc/self/task every `period` seconds and rescans when a task it has not
    mapped appears (a thread that ends between two looks is missed; `stop()` scans a last time)."""

    def __init__(self, period: float) -> None:
        self.period = period
        # pthread_t -> TIDs, every thread ever found; glibc reuses an ended thread's memory (its
        # pthread_t, so its profiler tid) for a later thread: then one profiler thread was two TIDs.
        self.pthreads: dict[int, set[int]] = {}
        self.python: set[int] = set()  # TIDs of Python threads (their other samples are Python's)
        self.scans = 0
        self.searches = 0  # scans the probe could not answer: memory searched
        self.cpu_seconds = 0.0  # spent calibrating and scanning (CPU time of the threads that did it)
        self.problem: str | None = None
        self._tasks: set[int] = set()  # tasks alive at some scan: only a new one calls for another
        self._distances: set[int] = set()  # from a mapping's end down to the struct pthread found in it
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._memory: Memory | None = None
        self._tid_offset = 0
        self._thread: threading.Thread | None = None
        self._pid = os.getpid()
        self.tick: Callable[[], None] | None = None  # called from the watcher after each look (inprocess.py)

    def start(self) -> None:
        started = time.thread_time()
        try:
            self._memory = Memory()
            self._tid_offset = calibrate(self._memory)
        except (OSError, ScanError) as err:
            self._fail(err)
            return
        finally:
            self.cpu_seconds += time.thread_time() - started
        self._thread = threading.Thread(target=self._watch, name="flamegraph-threads", daemon=True)
        self._thread.start()
        self.rescan()  # (the watcher first: a Python thread on a stack glibc allocated shows the probe where to look)

    def rescan(self) -> None:
        with self._lock:
            if self._memory is None or os.getpid() != self._pid:
                return  # a forked child: the /proc/self/mem opened at start is its parent's memory
            started = time.thread_time()
            try:
                alive = live_tasks()
                self._tasks |= alive
                known = python_threads()
                for pthread, tid in {**self._find(alive, known), **known}.items():
                    self.pthreads.setdefault(pthread, set()).add(tid)
                self.python.update(known.values())
            except OSError as err:
                self._fail(err)
            self.scans += 1
            self.cpu_seconds += time.thread_time() - started

    def _find(self, alive: set[int], known: dict[int, int]) -> dict[int, int]:
        """pthread_t -> TID of the live threads: probed where threads were found before; searched when the
        probe leaves a live task unmapped (a thread on a stack glibc did not allocate, a race with clone)."""
        assert self._memory is not None
        mappings = read_mappings()
        self._distances |= distances(mappings, known)
        tops = {end - d for start, end in mappings for d in self._distances if end - d >= start}
        found = probe(self._memory, self._tid_offset, (set(self.pthreads) | tops) - set(known), alive)
        if alive <= set(found.values()) | set(known.values()):  # (each checked now: a TID the kernel reused is not)
            return found
        self.searches += 1
        found = scan_memory(self._memory, self._tid_offset, mappings, alive)
        self._distances |= distances(mappings, found)
        return found

    def _watch(self) -> None:
        while not self._stopping.wait(self.period):
            try:
                self.update()
                if self.tick is not None:
                    self.tick()
            except OSError:
                return

    def update(self) -> None:
        """A rescan if a task appeared since the last: then every live task is in the map (or not found)."""
        if live_tasks() - self._tasks:
            self.rescan()

    def stop(self) -> None:
        """A last scan (while the engine's workers are alive), then no more."""
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(self.period + 1.0)
        self.rescan()
        with self._lock:
            if self._memory is not None:
                self._memory.close()
                self._memory = None

    def _fail(self, err: BaseException) -> None:
        self.problem = str(err) if isinstance(err, ScanError) else f"cannot read this process's memory: {err}"
        if self._memory is not None:
            self._memory.close()
            self._memory = None

    def facts(self) -> dict[str, Any]:
        pthreads = {} if self.problem else self.pthreads
        mapped = {str(thread_hash(p)): sorted(tids) for p, tids in sorted(pthreads.items())}
        return {
            "map": mapped,
            "python": sorted(self.python),
            "scans": self.scans,
            "searches": self.searches,
            "cpu_seconds": round(self.cpu_seconds, 4),
            "problem": self.problem,
            "watch": self._thread.native_id if self._thread is not None else None,
        }
