"""The spool of a streamed recording: perf writes rotating chunks, at most `cap` bytes of them on disk.

perf 6.1 `record --switch-output` renames its output to OUTPUT.<timestamp> and starts a new one when it
reaches `chunk` bytes (size mode), or with --every on each SIGUSR2 (signal mode); every chunk is a whole
perf.data (its own header, build-ids and the mmaps of the processes at the switch), so `perf script`
unwinds its stacks alone (measured: 100 % of a busy thread's stacks rooted in every chunk, as in one
file); perf's buffers are cut to the cap (`buffers`). A watcher thread switches (signal mode) when the open chunk
reaches `chunk` bytes or an interval ends, queues finished chunks in order, and measures the spool's peak;
when the finished chunks waiting to be folded would take the spool past its cap, the newest waiting ones
are dropped, their samples counted (`dropped`); the first drop is said at once, the others counted for
the run's summary (a behind folder drops one every few hundred ms: a line each buried the output).

    spool = Spool(directory, cap=256 << 20, every=60.0, note=status.note)
    spool.started(perf_pid)                 # from record(): the watcher starts
    chunk = spool.next_chunk()              # the folder's loop: a Chunk, or None once perf is done
    spool.done(chunk)                       # folded: deleted
    read_chunk_counts(path) -> ChunkCounts  # samples and lost ones in one perf.data, from its records
"""

from __future__ import annotations

import dataclasses
import os
import signal
import struct
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

DATA_NAME = "perf.data"
MIN_CAP = 16_000_000  # below this a chunk is a few samples of 64 KB stacks: perf would switch all the time
CHUNKS_PER_CAP = 6  # the one being folded, about three waiting and the open one with room to grow fit under the cap
OPEN_SLACK = 2  # chunks of room kept for the open chunk: its switch may come a chunk's time late
# perf ignores SIGUSR2 until its record loop runs, which on a loaded machine can be seconds after it
# created the file: a switch with no chunk after this long is asked again (one sent meanwhile only
# switches once more: a smaller chunk).
RESEND_SECONDS = 2.0
DROPS_SAID = 3  # chunks dropped said one by one as they go (a small cap on a busy machine drops dozens)
MIN_RING = 512 << 10  # perf's own default per CPU (516 KiB when not root): smaller rings lose samples
POLL_SECONDS = 0.05  # perf writes ~33 MB/s at dwarf,65528 -F 499: ~1.7 MB past the chunk size per poll
HEADER = struct.Struct("<8sQQ16xQQ")  # perf_file_header: magic, size, attr_size, attrs, data {offset, size}
EVENT_HEADER = struct.Struct("<IHH")  # perf_event_header: type, misc, size
RECORD_LOST, RECORD_SAMPLE, RECORD_MMAP2, RECORD_LOST_SAMPLES = 2, 9, 10, 13  # linux/perf_event.h
MISC_MMAP_BUILD_ID = 1 << 14  # an MMAP2 record with a build-id in place of the device and inode
MMAP2_FILENAME = 72  # header, pid, tid, start, len, pgoff, {build_id_size, 3 reserved, build_id[20]}, prot, flags


@dataclass(frozen=True)
class ChunkCounts:
    """What one chunk holds: samples, samples perf lost (LOST/LOST_SAMPLES records), LOST records."""

    samples: int = 0
    lost: int = 0
    lost_records: int = 0

    def __add__(self, other: ChunkCounts) -> ChunkCounts:
        return ChunkCounts(
            self.samples + other.samples, self.lost + other.lost, self.lost_records + other.lost_records
        )


def read_chunk_counts(path: Path) -> ChunkCounts:
    """Samples and lost samples in a finished perf.data (see `read_chunk`)."""
    return read_chunk(path)[0]


def read_chunk(path: Path) -> tuple[ChunkCounts, dict[bytes, frozenset[str]]]:
    """Samples, lost samples and the build-ids of the mapped files (MMAP2 records, `--buildid-mmap`) in a
    finished perf.data, read from its record headers (a seek per record: ~1,000 records in a 64 MB chunk
    of DWARF stacks). An unreadable file counts nothing."""
    samples = lost = lost_records = 0
    build_ids: dict[bytes, set[str]] = {}
    try:
        with open(path, "rb") as data:
            magic, _, _, offset, size = HEADER.unpack(data.read(HEADER.size))
            if magic != b"PERFILE2":
                return ChunkCounts(), {}
            position, end = offset, offset + size
            while position + EVENT_HEADER.size <= end:
                data.seek(position)
                head = data.read(EVENT_HEADER.size + 16)
                if len(head) < EVENT_HEADER.size:
                    break
                kind, misc, length = EVENT_HEADER.unpack_from(head)
                if length < EVENT_HEADER.size:
                    break  # a torn record: what follows cannot be walked
                if kind == RECORD_SAMPLE:
                    samples += 1
                elif kind == RECORD_LOST and len(head) >= 24:  # {header; u64 id; u64 lost}
                    lost += struct.unpack_from("<Q", head, 16)[0]
                    lost_records += 1
                elif kind == RECORD_LOST_SAMPLES and len(head) >= 16:  # {header; u64 lost}
                    lost += struct.unpack_from("<Q", head, 8)[0]
                elif kind == RECORD_MMAP2 and misc & MISC_MMAP_BUILD_ID and length > MMAP2_FILENAME:
                    data.seek(position)
                    _add_build_id(data.read(length), build_ids)
                position += length
    except (OSError, struct.error):
        return ChunkCounts(), {}
    return ChunkCounts(samples, lost, lost_records), {name: frozenset(ids) for name, ids in build_ids.items()}


def _add_build_id(record: bytes, build_ids: dict[bytes, set[str]]) -> None:
    """An MMAP2 record's file (as perf script names it) and its build-id."""
    id_size = min(record[40], 20)
    name = record[MMAP2_FILENAME:].split(b"\0", 1)[0]
    if name.startswith(b"[kernel.kallsyms]"):
        name = b"[kernel.kallsyms]"  # the kernel's text map (`[kernel.kallsyms]_text`)
    if id_size and name:
        build_ids.setdefault(name, set()).add(record[44 : 44 + id_size].hex())


def parse_size(text: str) -> int:
    """'256M', '1G', '64k', '1000000' -> bytes (powers of 1000: MB as every size we print)."""
    units = {"": 1, "K": 10**3, "M": 10**6, "G": 10**9}
    body = text.strip().upper().removesuffix("B")
    unit = body[-1:] if body[-1:] in units and body[-1:] else ""
    number = body[: len(body) - len(unit)]
    try:
        value = float(number)
    except ValueError:
        raise ValueError(f"size {text!r}: expected a number with K, M or G, e.g. 256M") from None
    if not value >= 0 or value * units[unit] > 1 << 50:
        raise ValueError(f"size {text!r}: expected a number with K, M or G, e.g. 256M")
    return int(value * units[unit])


@dataclass(frozen=True)
class Chunk:
    """A finished chunk: its file, its place, and the interval it belongs to (and whether it ends it)."""

    path: Path
    number: int  # 1, 2, ... in recording order
    interval: int  # 1, 2, ... (1 without --every)
    closes: bool  # the last chunk of its interval
    ended_ns: int  # CLOCK_MONOTONIC when perf was told to switch (or when it ended): perf's clock
    dropped: bool = False  # deleted unfolded (the folding was behind): kept in the queue only to end its interval


class Spool:
    """Rotating chunks of one `perf record --switch-output`, bounded on disk (see the module's doc)."""

    def __init__(
        self,
        directory: Path,
        cap: int,
        every: float | None = None,
        note: Callable[[str], None] = lambda line: None,
        until: float | None = None,
    ) -> None:
        self.directory = directory
        self.data = directory / DATA_NAME
        self.cap = cap
        self.chunk = max(cap // CHUNKS_PER_CAP, 1_000_000)
        self.every = every
        # Without intervals perf switches by itself at `chunk` bytes (checked after each read of its buffers);
        # a SIGUSR2 comes a poll and perf's reaction late: chunks of 9 MB for 2.7 MB asked at ~90 MB/s of
        # off-CPU records, 27 MB on disk under a 16 MB cap. Intervals need the signal (one mode at a time).
        self.by_size = every is None
        self.until = until  # --duration: no interval boundary at (or past) the end, which ends the last one
        self._note = note
        self._queue: deque[Chunk] = deque()
        self._ready = threading.Condition()
        self._pid: int | None = None
        self._ended = False  # perf has exited: no chunk will come after the queued ones
        self._folding: Chunk | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._seen: set[str] = set()
        self._switch_sent: int | None = None  # ns when the pending SIGUSR2 was sent
        self._boundary_due: int | None = None  # the pending switch ends an interval
        self._interval = 1
        self._number = 0
        self.started_ns = 0
        self._begun = False
        self.ended_ns = 0  # when perf was seen to have exited
        self.boundaries: list[int] = []  # ns of each interval's end
        self.peak = 0  # bytes on disk at the fullest moment seen (polled every POLL_SECONDS)
        self.dropped = ChunkCounts()  # chunks dropped unfolded (the folding was behind)
        self.dropped_chunks = 0
        self._written = 0  # bytes perf had written at the last poll (finished chunks and the open one)
        self._finished = 0  # bytes of the chunks perf finished, as first seen
        self._burst = 0  # bytes perf wrote between the last two polls: what it may write before the next

    @property
    def chunks(self) -> int:
        """Chunks perf has finished so far (folded, waiting or dropped)."""
        return self._number

    @property
    def args(self) -> tuple[str, ...]:
        """perf record's options for the spool: switch on SIGUSR2; build-ids in the MMAP2 records instead
        of perf's build-id pass at each switch, which in perf 6.1 leaves each finished chunk mapped
        (measured: 5 deleted chunks still mapped after 15 s, their disk space held, perf's RSS +8 MB/s)."""
        return (f"--switch-output={self.chunk}B" if self.by_size else "--switch-output", "--buildid-mmap")

    def buffers(self, asked: str | None) -> str | None:
        """perf's -m under the cap: perf writes what its buffers hold in one go (up to half of each CPU's
        ring, its wakeup mark), so the rings are cut to about a chunk in all (a power of two per CPU, at
        least MIN_RING): 16M rings on 2 CPUs wrote 8-16 MB chunks where 2.7 MB was asked, 20 MB on disk under
        a 16 MB cap. The default cap (256M) keeps 16M rings up to 5 CPUs."""
        if asked is None:
            return None
        ring = max(1 << (2 * self.chunk // (os.cpu_count() or 1)).bit_length() - 1, MIN_RING)
        return asked if _ring_bytes(asked) <= ring else f"{ring >> 10}K"

    @property
    def waiting(self) -> int:
        """Finished chunks waiting to be folded (not the one being folded, nor dropped ones)."""
        with self._ready:
            return sum(1 for chunk in self._queue if not chunk.dropped)

    @property
    def perf_ended(self) -> bool:
        """perf has exited (`ended`): nothing is recorded any more, only the queued chunks are left to fold."""
        with self._ready:
            return self._ended

    def bound_text(self) -> str:
        """'raw data on disk at most 9.8 MB, --max-spool 16.0 MB', and when the peak passed the cap, that it
        did and why: perf writes on until it acts on a switch, and drains its buffers (-m) in one go."""
        said = f"raw data on disk at most {self.peak / 1e6:.1f} MB, --max-spool {self.cap / 1e6:.1f} MB"
        if self.peak <= self.cap:
            return said
        return said + ": passed, perf writing on until it switched chunks (a larger --max-spool holds)"

    def started(self, pid: int) -> None:
        """perf runs as `pid`: the watcher starts."""
        self._pid = pid
        self.started_ns = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        self._thread = threading.Thread(target=self._watch, name="spool", daemon=True)
        self._thread.start()

    def ended(self) -> None:
        """perf has exited (its last chunk renamed): the last chunks are queued and the watcher stops."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.ended_ns = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        self._scan(self.ended_ns, final=True)
        with self._ready:
            self._ended = True
            self._ready.notify_all()

    def size(self) -> int:
        """Bytes of raw data on disk now."""
        total = 0
        try:
            with os.scandir(self.directory) as entries:
                for entry in entries:
                    try:
                        total += entry.stat(follow_symlinks=False).st_size
                    except OSError:
                        pass  # folded and deleted meanwhile
        except OSError:
            return 0
        return total

    def next_chunk(self, timeout: float | None = None) -> Chunk | None:
        """The oldest waiting chunk (it is being folded until `done`); None once perf has ended and every
        chunk was given out, or after `timeout` seconds without one."""
        with self._ready:
            if not self._ready.wait_for(lambda: self._queue or self._ended, timeout):
                return None
            if not self._queue:
                return None
            self._folding = self._queue.popleft()
            return self._folding

    def done(self, chunk: Chunk) -> None:
        """`chunk` is folded: deleted."""
        chunk.path.unlink(missing_ok=True)
        with self._ready:
            self._folding = None

    def _watch(self) -> None:
        while not self._stop.wait(POLL_SECONDS):
            now = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
            self._scan(now)
            written = self._finished + _size(self.data)
            self._burst, self._written = max(written - self._written, 0), written
            with self._ready:
                self._drop_over_cap()  # a late switch lets the open chunk grow: room is made at once
            self.peak = max(self.peak, self.size())
            if self._switch_sent is None:
                self._maybe_switch(now)
            elif now - self._switch_sent >= RESEND_SECONDS * 1e9 and self._pid is not None:
                self._switch_sent = now  # the chunk ends when the switch that worked was asked
                try:
                    os.kill(self._pid, signal.SIGUSR2)
                except ProcessLookupError:
                    pass

    def _maybe_switch(self, now: int) -> None:
        try:
            size = self.data.stat().st_size
        except OSError:
            return  # perf has not begun (it creates the file after installing its signal handlers)
        if not self._begun:  # the intervals count from here: perf may take seconds to begin on a loaded machine
            self._begun, self.started_ns = True, now
        due = False
        if self.every is not None:
            boundary = self._interval * self.every
            last = self.until is not None and boundary >= self.until - POLL_SECONDS * 4
            due = not last and now - self.started_ns >= boundary * 1e9
        if (due or size >= self.chunk and not self.by_size) and self._pid is not None:
            self._boundary_due = now if due else None
            self._switch_sent = now
            try:
                os.kill(self._pid, signal.SIGUSR2)
            except ProcessLookupError:
                pass

    def _scan(self, now: int, final: bool = False) -> None:
        """Queue the chunks perf finished since the last look (in name order: perf's timestamps)."""
        try:
            names = sorted(
                name for name in os.listdir(self.directory) if name.startswith(DATA_NAME + ".")
                and name not in self._seen
            )  # fmt: skip
        except OSError:
            return
        for i, name in enumerate(names):
            self._seen.add(name)
            self._finished += _size(self.directory / name)
            last = final and i == len(names) - 1
            closes = self._boundary_due is not None or (last and self.every is not None)
            ended_ns = self._switch_sent if self._switch_sent is not None and not last else now
            self._number += 1
            chunk = Chunk(self.directory / name, self._number, self._interval, closes or last, ended_ns)
            self._switch_sent = None
            if closes or last:
                self.boundaries.append(ended_ns)
                self._boundary_due = None
                self._interval += 1
            self._enqueue(chunk)

    def _enqueue(self, chunk: Chunk) -> None:
        with self._ready:
            self._queue.append(chunk)
            self._drop_over_cap()
            self._ready.notify_all()

    def _drop_over_cap(self) -> None:
        """Drop the newest waiting chunks while those waiting, the one being folded and the open one (room
        for OPEN_SLACK chunks: a switch can come late on a loaded machine; or its size and what perf wrote
        in the last poll, which it may write again before the next: ~4.5 MB at ~90 MB/s) pass the cap; one
        that ends an interval stays queued as a marker (`dropped`), its file gone."""
        while self._waiting_bytes() + max(OPEN_SLACK * self.chunk, _size(self.data) + self._burst) > self.cap:
            victims = [i for i, c in enumerate(self._queue) if not c.dropped]
            if not victims:
                return
            victim = self._queue[victims[-1]]
            if victim.closes:
                self._queue[victims[-1]] = dataclasses.replace(victim, dropped=True)
            else:
                del self._queue[victims[-1]]
            counts = read_chunk_counts(victim.path)
            victim.path.unlink(missing_ok=True)
            self.dropped = self.dropped + counts
            self.dropped_chunks += 1
            if self.dropped_chunks <= DROPS_SAID:
                last = self.dropped_chunks == DROPS_SAID
                more = "; more are only counted, their total said at the end" if last else ""
                self._note(
                    f"warning: folding is behind perf: dropped a chunk of {counts.samples:,} samples unfolded to keep "
                    f"the raw data under --max-spool {self.cap / 1e6:.0f} MB ({self.dropped.samples:,} so far){more}"
                )

    def _waiting_bytes(self) -> int:
        folding = [self._folding] if self._folding is not None else []
        return sum(_size(chunk.path) for chunk in (*folding, *self._queue))


def _ring_bytes(text: str) -> int:
    """perf's -m: a size with K, M or G (powers of 1024), or a number of 4 KiB pages."""
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    unit = units.get(text[-1:].upper())
    return int(text[:-1]) * unit if unit else int(text) * 4096


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
