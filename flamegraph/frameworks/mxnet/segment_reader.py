"""`record --mxnet` streamed: the instruments' segments read while the program runs only when the disk needs
it, each deleted once read.

The drainers write MXNet's trace and oneDNN's verbose log in numbered segments (segments.py). A thread of
ours watches the directory; for each segmented file a reader thread reads its segments in order as one
stream (`SegmentStream`: a finished segment is read to its end and deleted, the next waited for) through
the same readers as a whole file (profile.read_trace: events paired as they come; dnnl.parse_verbose), so
the result is the whole file's. **Lazily**: while the program runs, a reader reads only while the bytes not
read yet (the segments on disk) are above its file's threshold (`Pressure`: half its cap, lower when the
file grows so fast that the limits' headroom would otherwise stop the instruments first), so a run that
fits in half its caps is read only after it ends (no CPU taken from the program) and a long one as the
disk requires. The stream ends once the run has ended (`finish`) and the last segment is read. A join as the run goes
(running.py) may ask every reader to catch up now (`catch_up`): each reads all there is, its parse then at
rest, and waits until let go, so that what they hold can be read meanwhile.

    readers = SegmentReaders(directory, caps, budget)   # started before the program runs
    ...                                                 # the program runs; segments come and go
    readers.finish()                                    # after it has ended: the rest read
    trace = readers.trace(path)                         # ProfilerTrace of profile-PID.json's segments, or None

Memory is what those readers keep: the spans and the storage counters' values (SPAN_BYTES each) and the
executions (EXECUTION_BYTES), not the files. With a `budget`, once they hold more than it while the
program runs, the watch asks the hooked processes to stop their instruments (segments.STOP_REQUEST;
limit.py stops them as at a cap): operators and primitives are then named up to that moment, and what is
held stays within the budget plus what the segments then on disk hold.
"""

from __future__ import annotations

import io
import os
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from ...io.private import create_file
from .dnnl import VerboseLog, parse_verbose
from .intervals import Intervals
from .limit import Growth, headroom
from .profile import Pairing, ProfilerTrace, read_trace
from .segments import REFRESH_REQUEST, STOP_REQUEST, present_bytes, segment_name

Read = TypeVar("Read", ProfilerTrace, VerboseLog)  # what a reader gives back
POLL_S = 0.1  # the directory and a segment's end are looked at this often (a segment holds seconds of data)
FIRST = re.compile(r"^((?:profile-\d+\.json)|(?:dnnl-verbose-\d+\.log))\.0*1$")
READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
LAZY_SHARE = 0.5  # of a cap: while the program runs, segments are read only while more than this is unread
HEADROOM_TIMES = 2  # the reader begins before twice the limits' headroom is left: they stop the instruments at one
MEMORY = "FLAMEGRAPH_MXNET_MEMORY"  # BYTES: the readers' budget (default: --max-spool's SIZE, the hook's budget)
SPAN_BYTES = 30  # a span in memory (intervals.py's arrays, sealed; measured: bench/mxnet_segments.py --held)
EXECUTION_BYTES = 32  # a primitive execution in memory (likewise)
CATCH_UP_S = 30.0  # a reader that has not read all there is after this long is left to read (no join then)
REFRESH_S = 3.0  # the hooked process writes its sidecar within its watcher's second (inprocess.Session.refresh)


def memory_budget(default: int | None) -> int | None:
    """The readers' memory budget: MEMORY's bytes when set to a positive number, else `default`."""
    text = os.environ.get(MEMORY, "")
    try:
        budget = int(text) if text.isascii() else 0
    except ValueError:
        return default
    return budget if budget > 0 else default


class Pressure:
    """Whether the unread segments of one file call for reading now: more than LAZY_SHARE of its cap on disk,
    or too little left under the cap for the file's growth (twice the headroom the limits keep: limit.py)."""

    def __init__(self, directory: str, base: str, cap: int | None, began: float | None = None) -> None:
        self.directory, self.base, self.cap = directory, base, cap
        self.growth = Growth()
        self.growth.add(time.monotonic() if began is None else began, 0)  # (empty then: a first burst is growth)

    def due(self) -> bool:
        if self.cap is None:
            return True  # no cap: nothing says when, read as written
        unread = present_bytes(self.directory, self.base)
        rate = self.growth.add(time.monotonic(), unread)
        return unread > min(self.cap * LAZY_SHARE, self.cap - HEADROOM_TIMES * headroom(rate))


class SegmentStream(io.RawIOBase):
    """The segments of `base` in `directory` as one stream: each read to its end once the next exists (or the
    writer has ended: `ended`), then deleted; a read waits while the last segment is still being written, and
    while the writer runs, until `due()` says the disk needs the reading."""

    def __init__(
        self, directory: str, base: str, ended: threading.Event, due: Callable[[], bool] = lambda: True
    ) -> None:
        super().__init__()
        self.directory, self.base, self.ended, self.due = directory, base, ended, due
        self.number = 1
        self.fd: int | None = None
        self.bytes = 0  # read so far
        # A running join (running.py) asks for everything written so far (`catch_up`: asked): the stream reads
        # regardless of `due` and, once it has read all there is, answers and rests (its reader's parse at rest
        # too) until let go (released).
        self.turn = threading.Condition()
        self.asked = self.answered = self.released = 0
        self.during = 0  # of those, read before the run ended
        self.segments = 0  # read to their end and deleted

    def readable(self) -> bool:
        return True

    def _path(self, number: int) -> str:
        return os.path.join(self.directory, segment_name(self.base, number))

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        while True:
            if not self.ended.is_set() and self.asked == self.released and not self.due():
                self.ended.wait(POLL_S)
                continue
            if self.fd is None:
                try:
                    self.fd = os.open(self._path(self.number), READ)
                except FileNotFoundError:
                    if self.ended.is_set():
                        return 0
                    self._rest()
                    continue
            count = self._read(buffer)
            if count:
                return count
            ended = self.ended.is_set()  # (read before looking for the next: a writer that ended wrote no more)
            if os.path.exists(self._path(self.number + 1)) or ended:
                count = self._read(buffer)  # what came between the read and the look
                if count:
                    return count
                self._done()
                if ended and not os.path.exists(self._path(self.number)):
                    return 0
                continue
            self._rest()

    def _rest(self) -> None:
        """Nothing more written yet: wait a poll; asked to catch up, answer and wait until let go."""
        with self.turn:
            if self.asked == self.released:
                self.turn.wait(POLL_S)
                return
            self.answered = self.asked
            self.turn.notify_all()
            while self.released < self.answered:  # (even once the run has ended: the join holds what was read)
                self.turn.wait(POLL_S)

    def catch_up(self, timeout: float) -> bool:
        """From another thread: everything written so far read, and the reading paused (until `let_go`, to be
        called whatever this returns); False when the run ended first or the reading took over `timeout`."""
        deadline = time.monotonic() + timeout
        with self.turn:
            self.asked += 1
            mine = self.asked
            self.turn.notify_all()
            while self.answered < mine:
                if self.ended.is_set() or time.monotonic() > deadline:
                    return False
                self.turn.wait(POLL_S)
            return True

    def let_go(self) -> None:
        with self.turn:
            self.released = self.asked
            self.turn.notify_all()

    def _read(self, buffer: memoryview) -> int:
        assert self.fd is not None
        count = os.readv(self.fd, [buffer])
        self.bytes += count
        if not self.ended.is_set():
            self.during += count
        return count

    def _done(self) -> None:
        assert self.fd is not None
        os.close(self.fd)
        self.fd = None
        try:
            os.unlink(self._path(self.number))
        except FileNotFoundError:
            pass
        self.number += 1
        self.segments += 1

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        super().close()


class Reader:
    """One segmented file read in a thread of its own; `result` once the stream has ended; `held()`, the
    bytes its spans or executions take so far."""

    def __init__(self, directory: str, base: str, ended: threading.Event, cap: int | None) -> None:
        self.stream = SegmentStream(directory, base, ended, Pressure(directory, base, cap).due)
        self.is_trace = base.startswith("profile-")
        self.pairing, self.log = Pairing(), VerboseLog()  # what is read so far: one of them used
        self.result: ProfilerTrace | VerboseLog | None = None
        self.error: str | None = None
        self.thread = threading.Thread(target=self._run, name=f"mxnet-segments-{base}", daemon=True)

    def spans(self) -> dict[int, Intervals]:
        """The trace's spans so far by profiler thread (once its events have all been read, the trace's)."""
        if isinstance(self.result, ProfilerTrace):
            return {p: index.intervals for p, index in self.result.threads.items()}
        return self.pairing.spans

    def held(self) -> int:
        if self.is_trace:
            return self.pairing.held() * SPAN_BYTES
        return len(self.log) * EXECUTION_BYTES

    def _run(self) -> None:
        try:
            with io.BufferedReader(self.stream, 1 << 20) as stream:
                self.result = read_trace(stream, self.pairing) if self.is_trace else parse_verbose(stream, self.log)
                while stream.read(1 << 20):  # what follows the trace's events (its closing lines): read, deleted
                    pass
        except (OSError, ValueError) as err:  # the directory removed under us (a stopped run): nothing to keep
            self.error = f"cannot read its segments: {err}"


@dataclass
class CaughtUp:
    """What the paused readers hold (live: valid until `let_go`), by file name: each trace's spans so far (profiler
    tid -> intervals, as profile.Pairing pairs them) and each verbose log's executions so far."""

    spans: dict[str, dict[int, Intervals]]
    logs: dict[str, VerboseLog]


class SegmentReaders:
    """Every segmented file of the hooked processes in `directory`, each read by a `Reader` as the disk
    needs (`caps`: the (trace, log) caps; None: as written); with a `budget` of bytes for what they hold,
    the instruments are asked to stop once it is passed during the run (`requested`: (held, budget, when))."""

    def __init__(self, directory: Path, caps: tuple[int, int] | None = None, budget: int | None = None) -> None:
        self.directory = str(directory)
        self.caps, self.budget = caps, budget
        self.ended = threading.Event()
        self.readers: dict[str, Reader] = {}  # base name -> its reader
        self.requested: tuple[int, int, float] | None = None  # (bytes held, budget, time.monotonic())
        self.asked_at: float | None = None  # time.monotonic() a sidecar refresh was asked (`refreshed`)
        self._thread = threading.Thread(target=self._watch, name="mxnet-segments", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _watch(self) -> None:
        while not self.ended.wait(POLL_S):
            self._look()
            if self.budget is not None and self.requested is None and (held := self.held()) > self.budget:
                self._request(held, self.budget)

    def held(self) -> int:
        """Bytes the readers' spans and executions take so far (estimated per object: SPAN_BYTES, ...)."""
        return sum(reader.held() for reader in list(self.readers.values()))

    def _request(self, held: int, budget: int) -> None:
        """The stop asked of every hooked process (limit.py sees the file within its poll), once."""
        self.requested = (held, budget, time.monotonic())
        try:
            os.close(create_file(self.directory, STOP_REQUEST))
        except OSError:
            pass  # there already (the program made it: its own stop) or the directory gone: nothing to ask

    def _look(self) -> None:
        try:
            names = os.listdir(self.directory)
        except OSError:
            return  # not made yet (the hook makes it as perf starts), or removed
        for name in names:
            found = FIRST.match(name)
            if found is not None and found.group(1) not in self.readers:
                base = found.group(1)
                cap = None if self.caps is None else self.caps[0 if base.startswith("profile-") else 1]
                reader = self.readers[base] = Reader(self.directory, base, self.ended, cap)
                reader.thread.start()

    def finish(self) -> None:
        """The run has ended: the rest of every file read (its readers waited for)."""
        self._look()
        self.ended.set()
        if self._thread.is_alive():
            self._thread.join()
        self._look()  # (a file first seen now is read to its end at once)
        for reader in self.readers.values():
            reader.thread.join()

    def stop(self) -> None:
        """The run was abandoned: the readers end at their next look (daemon threads, never waited for)."""
        self.ended.set()

    def _reader(self, path: str) -> Reader | None:
        return self.readers.get(os.path.basename(path))

    def catch_up(self, timeout: float = CATCH_UP_S) -> CaughtUp | None:
        """While the program runs: every file's segments read as far as written, its readers paused (until
        `let_go`), what they hold so far; once the run has ended, what they read (the chunks still folding
        then are joined as they go too). None while a reader reads the rest, or could not catch up (then
        nothing is paused)."""
        if self.ended.is_set():
            return self._read(timeout)
        readers = [r for r in list(self.readers.values()) if r.error is None and r.thread.is_alive()]
        caught = all([r.stream.catch_up(timeout) for r in readers])  # (each asked, whatever the others answer)
        if not caught or self.ended.is_set():
            self.let_go()
            return None
        return CaughtUp(
            {base: r.spans() for base, r in self.readers.items() if r.is_trace and r in readers},
            {base: r.log for base, r in self.readers.items() if not r.is_trace and r in readers},
        )

    def _read(self, timeout: float) -> CaughtUp | None:
        """After the run: what each reader read once it is done (the trace's spans by thread, the log)."""
        readers = list(self.readers.values())
        for reader in readers:
            reader.thread.join(timeout)
        if any(r.thread.is_alive() for r in readers):
            return None
        traces = {base: r.spans() for base, r in self.readers.items() if isinstance(r.result, ProfilerTrace)}
        logs = {base: r.result for base, r in self.readers.items() if isinstance(r.result, VerboseLog)}
        return CaughtUp(traces, logs)

    def refreshed(self) -> bool:
        """Whether the hooked process has written a clock reading and its thread map in its sidecar since asked
        (inprocess.Session.refresh: within its watcher's second), asking when not asked yet; True too once it
        has not answered for REFRESH_S (it has ended, or its watcher has stopped: its sidecar as it is)."""
        request = os.path.join(self.directory, REFRESH_REQUEST)
        if self.ended.is_set():
            return True  # (the run is over: its sidecar is final)
        if self.asked_at is None:
            try:
                os.close(create_file(self.directory, REFRESH_REQUEST))
            except FileExistsError:
                pass  # (left by an ask not answered)
            except OSError:
                return True
            self.asked_at = time.monotonic()
            return False
        if os.path.exists(request) and time.monotonic() - self.asked_at < REFRESH_S:
            return False
        self.asked_at = None
        return True

    def let_go(self) -> None:
        """The readers go on as before `catch_up`."""
        for reader in list(self.readers.values()):
            reader.stream.let_go()

    def trace(self, path: str) -> ProfilerTrace | None:
        """The trace of `path`'s segments (problems included), or None when none were read."""
        return self._result(path, ProfilerTrace)

    def verbose(self, path: str) -> VerboseLog | None:
        """The verbose log of `path`'s segments (problems included), or None when none were read."""
        return self._result(path, VerboseLog)

    def _result(self, path: str, kind: type[Read]) -> Read | None:
        reader = self._reader(path)
        if reader is None:
            return None
        if reader.error is not None or not isinstance(reader.result, kind):
            raise OSError(reader.error or "its segments were not read")
        return reader.result

    def read_bytes(self, path: str) -> tuple[int, int] | None:
        """(bytes read of `path`'s segments, of those read while the program ran), or None."""
        reader = self._reader(path)
        return (reader.stream.bytes, reader.stream.during) if reader is not None else None
