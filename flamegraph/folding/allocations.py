"""Weighing allocation records by their bytes: the `perf script` text of `record --memory`'s probes in,
the same records out with the bytes as each record's period, for the one perf-script collapser.

Reads (`-F comm,pid,tid,time,event,trace,ip,sym,dso`; records without a stack are one line):
    a 25549/25549 11218.674079:   flamegraph_mem_9:malloc: (7f98836e8930) size=3000
    \t           98930 malloc (/usr/lib/x86_64-linux-gnu/libc.so.6)
                   b 30422/30422 11516.842191: flamegraph_mem_9:malloc__return: (7fd0ae79d930 <- 55600a8d91ab)
        ret=0x55600c4bc2a0  55600a8d91ab main (/tmp/b)                                   <- (one line)
                   b 30422/30422 11516.842196: flamegraph_mem_9:free: (7fd0ae79def0) ptr=0x55600c4bc2a0
        7fd0ae79def0 cfree (/usr/lib/x86_64-linux-gnu/libc.so.6)                         <- (one line)
Writes (the leaf named after the function the program called; `memory:alloc` or `memory:live`):
    a 25549/25549 11218.674079: 3000 memory:alloc:
    \t           98930 malloc (/usr/lib/x86_64-linux-gnu/libc.so.6)

What one request weighs: malloc `size`, calloc `nmemb*size`, realloc, posix_memalign and
aligned_alloc `size`, mmap `len` when anonymous (MAP_ANONYMOUS) and called from outside the C library
(malloc's own arenas and big chunks are counted as the malloc that asked). glibc serves some calls by
calling malloc itself (aligned_alloc or posix_memalign of alignment <= 16, realloc(NULL, n), realloc
of an mmapped chunk): that inner malloc is the outer call's, and is not counted twice. Without return
probes (alloc) it is the next malloc of the thread asking for the same size; with them (live), any
allocation that starts while another of the thread's is still running.

Sampled (`--memory-sample SIZE`), the records are the marker of the sampling allocator preloaded into
the program (record/sampler.c): `alloc_sampled ptr size weight api mean` with the stack from the marker, and
in live `free_sampled ptr` when a sampled address is freed. The interposer sees the program's calls only
(glibc's inner calls do not go through it): each sample counts its `weight` (its unbiased estimate of
bytes), the leaf is named after the function called (`api`), and the interposer's own frames are
dropped, as the C library's are. `sampler_loaded` says a process had it preloaded.

`live` pairs: an allocation's return gives its address, `free` and `munmap` end it, `realloc` moves
it; what is still allocated when the input ends is written, in the order it was allocated.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from ..record.sampler import APIS

MAP_ANONYMOUS = 0x20
MALLOC_ALIGNMENT = 16  # glibc x86-64: a smaller alignment is served by malloc itself
MAP_FAILED = 2**64 - 1
DELEGATES = frozenset({b"realloc", b"posix_memalign", b"aligned_alloc"})  # glibc may serve them with malloc
# our probes' arguments (the sampler's markers: weight, api, mean)
FIELDS = frozenset({b"size", b"nmemb", b"ptr", b"len", b"flags", b"addr", b"ret", b"align", b"weight", b"api",
                    b"mean"})  # fmt: skip
SAMPLED, FREED, LOADED = b"alloc_sampled", b"free_sampled", b"sampler_loaded"  # the sampler's markers
FIELD = re.compile(rb"(\w+)=(\S+)")
FRAME = re.compile(rb"^(\s*[0-9a-fA-F]+ )(.*?)( \([^()]*\))$")
RETURN = b"__return"


@dataclass
class Call:
    """One probe hit: who (tid), which function, its arguments, the header before the event, the stack."""

    head: bytes  # "comm pid/tid time:"
    tid: bytes
    api: bytes  # malloc, calloc... (the probe's event name without its group)
    returned: bool  # a return probe (api__return)
    fields: dict[bytes, int]
    frames: list[bytes]
    seq: int = 0
    size: int = 0  # the bytes it asked for (0: counted elsewhere, or nothing)
    nested: bool = False  # the allocator's own inner call: its outer call counts the bytes
    outer: Call | None = None  # for a nested call: the call it serves


@dataclass
class MemoryTotals:
    """What the weighing saw, for the capture facts: calls per function, bytes, what was left out and why."""

    calls: Counter[str] = field(default_factory=Counter)
    bytes: int = 0  # requested by the counted calls
    nested: int = 0  # the allocator's own inner calls (counted as the outer call)
    processes: int = 0  # sampled: processes that had the sampling allocator preloaded (its marker, or a sample)
    means: Counter[int] = field(default_factory=Counter)  # sampled: samples per mean interval they were drawn at
    not_anonymous: int = 0  # mmaps of files: not allocations
    internal: int = 0  # anonymous mmaps of the C library itself (malloc's arenas, thread stacks)
    freed: int = 0  # live: allocations freed before the end
    unpaired: int = 0  # live: allocations whose address never came back (posix_memalign, still running at the end)
    live: int = 0  # live: allocations still held at the end
    live_bytes: int = 0


def parse_call(header: bytes, frames: list[bytes], marker: bytes, run: bytes = b"") -> Call | None:
    """The call in a record whose header holds `marker` (b' GROUP:'); None for any other record."""
    at = header.find(marker)
    if at < 0:
        return None
    rest = header[at + len(marker) :]
    event, colon, trace = rest.partition(b":")
    if not colon:
        return None
    head_words = header[:at].rsplit(None, 2)  # comm (may hold blanks), pid/tid, time:
    if len(head_words) < 3 or not head_words[2].endswith(b":"):
        return None
    values = {}
    for name, text in FIELD.findall(trace):
        if name not in FIELDS or name in values:  # a one-line record's frame follows: `operator= (...)`
            continue
        try:
            values[name] = int(text, 0)
        except ValueError:
            return None
    returned = event.endswith(RETURN)
    api = event[: -len(RETURN)] if returned else event
    api = api[: -len(run)] if run and api.endswith(run) else api
    tid = head_words[1].rpartition(b"/")[2]
    return Call(header[:at].strip(), tid, api, returned, values, frames)


def requested(call: Call) -> int:
    """The bytes an allocation call asks for (0: not an allocation: a free, a file mapping)."""
    get = call.fields.get
    if call.api == b"calloc":
        return get(b"nmemb", 0) * get(b"size", 0)
    if call.api == b"mmap":
        return get(b"len", 0) if get(b"flags", 0) & MAP_ANONYMOUS else 0
    return get(b"size", 0)


class AllocationWeigher:
    """perf script lines of the probes in, weighted records out (`iter_weighted`); totals in `totals`."""

    def __init__(
        self, group: str, mode: str = "alloc", library: str = "", sampler: str = "", wrappers: Mapping[str, str] = {}
    ) -> None:
        self.sampler = b"(" + sampler.encode() + b")" if sampler else b""  # its frames end so
        # api -> leaf frame of an allocator above the C library (MXNet's storage): the C library's calls
        # under that frame are its own, counted once (as it)
        self.leaves = {api.encode(): frame.encode() for api, frame in wrappers.items()}
        self.inside = tuple(b" " + frame.encode() + b" (" for frame in wrappers.values())
        self.marker = b" " + group.encode() + b":"
        self.run = b"_" + group.rpartition("_")[2].encode()  # events are named API_PID (record/memory.py)
        self.live = mode == "live"
        self.event = b"memory:" + mode.encode()
        self.library = library.encode()
        self.totals = MemoryTotals()
        self._sampled: set[bytes] = set()  # pids seen with the sampler loaded
        self._seq = 0
        self._last: dict[bytes, Call] = {}  # alloc: the thread's last counted call (its inner malloc follows)
        self._running: dict[bytes, list[Call]] = {}  # live: the thread's calls whose return is still to come
        self._held: dict[int, Call] = {}  # live: address -> the call that allocated it

    def iter_weighted(self, lines: Iterable[bytes]) -> Iterator[bytes]:
        """The records of counted allocations, weighted, as lines without line ends; live: at the end."""
        for header, frames in iter_records(lines):
            call = parse_call(header, frames, self.marker, self.run)
            if call is None:
                continue
            self._seq += 1
            call.seq = self._seq
            counted = self._live(call) if self.live else self._alloc(call)
            if counted is not None:
                yield from self._record(counted)
        if self.live:
            held = sorted({id(c): c for c in self._held.values()}.values(), key=lambda c: c.seq)
            self.totals.live = len(held)
            for call in held:
                self.totals.live_bytes += call.size
                yield from self._record(call)

    def _record(self, call: Call) -> Iterator[bytes]:
        yield call.head + b" " + str(call.size).encode() + b" " + self.event + b":"
        for index, frame in enumerate(call.frames):
            yield FRAME.sub(rb"\1" + self.leaves.get(call.api, call.api) + rb"\3", frame) if index == 0 else frame
        yield b""

    def _weigh(self, call: Call) -> bool:
        """Whether the call is an allocation we count (sets its size); counts it in the totals."""
        self.totals.calls[call.api.decode()] += 1
        size = requested(call)
        if call.api == b"mmap":
            if not call.fields.get(b"flags", 0) & MAP_ANONYMOUS:
                self.totals.not_anonymous += 1
                return False
            if self._from_library(call):
                self.totals.internal += 1
                return False
        if call.api == b"realloc" and call.fields.get(b"ptr") and not size:
            return False  # realloc(p, 0) frees p
        call.size = size
        self.totals.bytes += size
        return True

    def _from_library(self, call: Call) -> bool:
        """The caller (the frame under the probed function) is in the C library itself."""
        return len(call.frames) > 1 and bool(self.library) and call.frames[1].endswith(b"(" + self.library + b")")

    def _alloc(self, call: Call) -> Call | None:
        if self.sampler and call.api in (SAMPLED, LOADED):
            if self._marked(call) is None or self._wrapped(call):
                return None
            self.totals.calls[call.api.decode()] += 1
            self.totals.bytes += call.size
            return call
        last = self._last.pop(call.tid, None)
        if call.returned or call.api in (b"free", b"munmap"):
            return None
        if self._wrapped(call):
            return None
        if call.api == b"malloc" and last is not None and last.api in DELEGATES and last.size == requested(call):
            self.totals.nested += 1
            self.totals.calls[call.api.decode()] += 1
            return None
        if not self._weigh(call):
            return None
        self._last[call.tid] = call
        return call

    def _marked(self, call: Call) -> Call | None:
        """A sampled allocation as the function the program called, weighed, its stack from the program's
        caller (the interposer's frames dropped); None for the sampler's other markers."""
        self._count_process(call)
        if call.api == LOADED:
            return None
        index = call.fields.get(b"api", -1)
        if not 0 <= index < len(APIS) or not call.fields.get(b"ptr"):
            return None
        call.api = APIS[index].encode()
        call.size = call.fields.get(b"weight", 0)
        if b"mean" in call.fields:
            self.totals.means[call.fields[b"mean"]] += 1
        call.frames = call.frames[:1] + [f for f in call.frames[1:] if not f.endswith(self.sampler)]
        return call

    def _count_process(self, call: Call) -> None:
        """A process with the sampler loaded: its marker says so, or (when the recording began after the
        process had started, as --mxnet's gate does) its first sample."""
        pid = call.head.rsplit(None, 2)[-2].partition(b"/")[0]
        if pid not in self._sampled:
            self._sampled.add(pid)
            self.totals.processes += 1

    def _wrapped(self, call: Call) -> bool:
        """A call of the C library made by an allocator probed above it (counted as that one)."""
        if not self.inside or call.api in self.leaves or not any(w in f for f in call.frames[1:] for w in self.inside):
            return False
        self.totals.nested += 1
        self.totals.calls[call.api.decode()] += 1
        return True

    def _live(self, call: Call) -> Call | None:
        if self.sampler and call.api in (SAMPLED, FREED, LOADED):
            if call.api == FREED:
                self.totals.freed += self._held.pop(call.fields.get(b"ptr", 0), None) is not None
            elif self._marked(call) is not None and not self._wrapped(call):
                self.totals.calls[call.api.decode()] += 1
                self.totals.bytes += call.size
                self._held[call.fields[b"ptr"]] = call
            return None
        running = self._running.setdefault(call.tid, [])
        memalign = self._last.pop(call.tid, None)  # a posix_memalign just before: its malloc may follow
        if call.returned:
            self._returned(call, running)
        elif call.api == b"free":
            self.totals.freed += self._held.pop(call.fields.get(b"ptr", 0), None) is not None
        elif call.api == b"munmap":
            self._unmap(call.fields.get(b"addr", 0), call.fields.get(b"len", 0))
        else:
            serves = call.api == b"malloc" and memalign is not None and memalign.size == requested(call)
            outer = running[-1] if running else memalign if serves else None
            if outer is not None:
                call.nested, call.outer = True, outer
                self.totals.nested += 1
                self.totals.calls[call.api.decode()] += 1
            elif not self._weigh(call):
                call.size = 0
            if call.api == b"posix_memalign":  # no return probe: its address comes from the malloc it calls
                self._last[call.tid] = call
                self.totals.unpaired += call.size > 0
                return None
            running.append(call)
        return None

    def _returned(self, ret: Call, running: list[Call]) -> None:
        for index in range(len(running) - 1, -1, -1):
            if running[index].api == ret.api:
                call = running.pop(index)
                break
        else:
            return  # its call began before the recording
        address = ret.fields.get(b"ret", 0)
        if address in (0, MAP_FAILED):
            return
        if call.nested:
            outer = call.outer
            if outer is not None and outer.api == b"posix_memalign" and outer.size:
                self._held[address] = outer  # the address posix_memalign hands back
                self.totals.unpaired -= 1
            return
        if call.api == b"realloc" and call.fields.get(b"ptr"):
            self._held.pop(call.fields[b"ptr"], None)
        if call.size:
            self._held[address] = call

    def _unmap(self, address: int, length: int) -> None:
        call = self._held.get(address)
        if call is None or call.api != b"mmap":
            return
        del self._held[address]
        if length < call.size:  # the head unmapped: the rest stays
            call.size -= length
            self._held[address + length] = call
        else:
            self.totals.freed += 1


def iter_records(lines: Iterable[bytes]) -> Iterator[tuple[bytes, list[bytes]]]:
    """(header, frame lines) of each record: a header and the frame lines (a tab first) after it. perf pads
    the comm of a record without a stack to 16 columns: that header starts with blanks."""
    header: bytes | None = None
    frames: list[bytes] = []
    for line in lines:
        if line[:1] == b"\t":
            if header is not None:
                frames.append(line)
            continue
        if header is not None:
            yield header, frames
        header, frames = (line, []) if line.strip() else (None, [])
    if header is not None:
        yield header, frames
