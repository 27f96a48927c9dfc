"""oneDNN's verbose log and MXNet's trace through pipes, each emptied into its file by a process of ours.

oneDNN prints every exec line with printf and fflush(stdout) on the thread that ran the primitive (the
engine's worker: the operators' critical path), so each primitive execution is one write(2). Into a file
on ext4 each such append is journalled: on the MLP 125 of the log's 162 samples (77 %) were in the
kernel (docs/record.md). Into a pipe it is a copy. The drainer is a forked process, so it shares no GIL
with the program (a drain thread could wait for the GIL while an engine worker blocks on a full pipe);
it sleeps between polls and writes what the pipe holds in one large write, so no line wakes it. It is
forked twice (the program never reaps it, nor meets it in os.wait()) and ends once every writer has
closed the pipe: `close_drain` (at exit) gives up our end and waits for it, so the log is complete when the
process ends. Standard library only (it runs in the profiled process).

MXNet's profiler trace goes the same way (`start_pipe`): its dump thread formats every event and ends it
with std::endl, and MXNet 1.9.1 opens the trace by name at each dump (O_TRUNC the first time, O_APPEND
after; it unlinks the name once, at set_config): named `/proc/self/fd/N` of a pipe, its appends are pipe
copies instead of ext4 writes (43 % of the dump thread's time, docs/record.md), and the unlink fails
harmlessly (EPERM). Its bursts (a second's events, ~8 MB/s for the MLP) outrun a 1 MB pipe, so that
drainer polls more often (TRACE_POLL_S): a full pipe only holds up MXNet's dump thread, never an operator.
With segments (`record --mxnet` streamed: segments.py), a drainer writes numbered files of a set size, the
next one begun when one is full; flamegraph reads and deletes the finished ones as the run goes. With a cap
(limit.py), a drainer writes no byte past it and drops the rest (spliced to /dev/null): with segments the
cap bounds those still on disk (re-counted at each new segment and when the room runs out); the bound holds
even when the in-process stop comes late.
Both drainers are forked before the program imports mxnet: a fork after it would run MXNet's
pthread_atfork handlers (its engine stopped and restarted) and fork a process full of threads.
"""

from __future__ import annotations

import fcntl
import os
import select
import signal
import time
from dataclasses import dataclass

from ...io.private import create_file
from .segments import present_bytes, segment_name

F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)
PIPE_BYTES = 1 << 20  # ~0.6 s of the MLP's log (1.7 MB/s): the drainer polls far more often than that
POLL_S = 0.05
TRACE_POLL_S = 0.01  # the trace comes in bursts of ~8 MB a second: 1 MB each 10 ms keeps up with 100 MB/s
CLOSE_WAIT_S = 2.0  # a child of the program may hold fd 1 longer: then the log may lack its last lines
STILL_OPEN = (
    "the C-level stdout is still open in another process (a child of the program?) at exit: "
    "the verbose log may lack that process's last lines"
)
TRACE_STILL_OPEN = (
    "the profiler's trace pipe is still open in another process (a child of the program?) at exit: "
    "the trace is complete only once that process has ended"
)


@dataclass(frozen=True)
class Segmented:
    """Where a drainer writes its numbered segments (segments.py), and their size."""

    directory: str
    base: str  # the file's name without the number
    size: int  # bytes


@dataclass(frozen=True)
class Drain:
    pid: int  # the drainer's (its samples are ours: instruments.py marks them)
    done: int  # the read end of a pipe the drainer holds until it has written everything


def start_pipe(
    target: int, poll: float = POLL_S, cap: int | None = None, segments: Segmented | None = None
) -> tuple[Drain, int]:
    """A new pipe whose bytes end up in `target` (an fd opened for writing; closed here): its drainer, and
    the pipe's write end (close-on-exec) for the caller to hand out. With `cap`, no byte beyond the first
    `cap` is written (the rest is read and dropped: the writer is never held up). With `segments`, `target`
    is the first segment and the drainer begins the next ones itself; the cap bounds those on disk."""
    source, sink = os.pipe()
    try:
        fcntl.fcntl(sink, F_SETPIPE_SZ, PIPE_BYTES)
    except OSError:
        pass  # the default 64 KiB still holds ~35 ms of the MLP's log: a poll's worth
    done, done_sink = os.pipe()
    told, tell = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - runs in the forked processes (the tests read what they leave)
        try:
            if os.fork() == 0:
                os.write(tell, str(os.getpid()).encode())
                _run(source, target, keep=(source, target, done_sink), poll=poll, cap=cap, segments=segments)
        finally:
            os._exit(0)
    os.waitpid(child, 0)
    os.close(tell)
    text = os.read(told, 32)
    os.close(told)
    for fd in (source, target, done_sink):
        os.close(fd)
    return Drain(int(text or b"0"), done), sink


def start_drain(target: int, cap: int | None = None, segments: Segmented | None = None) -> Drain:
    """fd 1 -> a new pipe whose bytes end up in `target` (an fd opened for writing; closed here)."""
    drain, sink = start_pipe(target, cap=cap, segments=segments)
    os.dup2(sink, 1)
    os.close(sink)
    return drain


def close_drain(drain: Drain, fd: int = 1, still_open: str = STILL_OPEN) -> str | None:
    """Give up our end of the pipe (`fd` becomes /dev/null: a late write or open by number goes nowhere,
    never into a file that reused the number) and wait until the drainer has written the rest: None, or
    one line (`still_open`) when another process still holds the pipe."""
    if fd == 1:
        try:
            import ctypes

            ctypes.CDLL(None).fflush(None)  # C stdout's buffered bytes (the program's own prints) first
        except (OSError, AttributeError):
            pass
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, fd, inheritable=fd <= 2)
    os.close(null)
    ended, _, _ = select.select([drain.done], [], [], CLOSE_WAIT_S)
    os.close(drain.done)
    return None if ended else still_open


class Writer:
    """Where the drainer's next bytes go: the file (or its current segment), and how many it may still take."""

    def __init__(self, target: int, cap: int | None, segments: Segmented | None) -> None:
        self.target, self.cap, self.segments = target, cap, segments
        self.room = cap if cap is not None else -1  # bytes the file(s) may still take (-1: no cap)
        self.written = 0  # into the current segment
        self.number = 1
        self.dropped = False  # bytes went to /dev/null: nothing more is written (a hole would read as whole)

    def next_size(self) -> tuple[int, int]:
        """(fd, at most how many bytes): the file, or fd 1 (/dev/null) past the cap."""
        segments = self.segments
        if segments is not None and self.written >= segments.size:
            os.close(self.target)
            self.number += 1
            self.target = create_file(segments.directory, segment_name(segments.base, self.number))
            self.written = 0
            self._recount()
        if self.room == 0 and segments is not None and not self.dropped:
            self._recount()  # read and deleted meanwhile: room again, unless bytes were dropped already
        if self.room == 0:
            return 1, PIPE_BYTES
        size = PIPE_BYTES if self.room < 0 else min(self.room, PIPE_BYTES)
        return self.target, size if segments is None else min(size, segments.size - self.written)

    def wrote(self, into: int, count: int) -> None:
        if into != self.target:
            self.dropped = self.dropped or count > 0
            return
        self.written += count
        if self.room > 0:
            self.room -= count

    def _recount(self) -> None:
        if self.cap is not None and self.segments is not None:
            self.room = max(self.cap - present_bytes(self.segments.directory, self.segments.base), 0)


def _run(
    source: int, target: int, keep: tuple[int, ...], poll: float, cap: int | None, segments: Segmented | None
) -> None:  # pragma: no cover
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)  # it ends when the pipe does, never before the program
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    low = 3
    for fd in sorted(keep):  # nothing else of the program's stays open here (its pipes must see EOF)
        os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, os.sysconf("SC_OPEN_MAX"))
    os.set_blocking(source, False)
    move = getattr(os, "splice", None)  # Python 3.10+: the pipe's pages go to the file without a copy through us
    writer = Writer(target, cap, segments)
    while True:
        try:
            into, size = writer.next_size()
        except OSError:
            into, size = 1, PIPE_BYTES  # no next segment (a full disk, the directory gone): the rest dropped
            writer.segments, writer.room = None, 0
        try:
            if move is not None:  # (fd 1 is /dev/null here: past the cap the bytes go there)
                moved = move(source, into, size)
                if moved == 0:
                    return
                writer.wrote(into, moved)
                continue
            data = os.read(source, size)
        except BlockingIOError:
            select.select([source], [], [])  # asleep until the next write (or the end), then a batch
            time.sleep(poll)
            continue
        except OSError:
            if move is None:
                return  # the pipe itself failed
            move = None  # splice refused (a full disk, a file system without it): read, and drop what cannot be written
            continue
        if not data:
            return
        writer.wrote(into, len(data))
        if into != writer.target:
            continue  # past the cap: dropped
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(into, view) :]
            except OSError:  # a full disk: the rest is dropped, the program is never held up by it
                writer.room, writer.dropped = 0, True
                break
