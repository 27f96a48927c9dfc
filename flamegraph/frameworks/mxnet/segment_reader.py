"""`record --mxnet` streamed: the instruments' segments read while the program runs, each deleted once read.

The drainers write MXNet's trace and oneDNN's verbose log in numbered segments (segments.py). A thread of
ours watches the directory; for each segmented file a reader thread reads its segments in order as one
stream (`SegmentStream`: a finished segment is read to its end and deleted, the next waited for) through
the same readers as a whole file (profile.read_trace: events paired as they come; dnnl.parse_verbose), so
the result is the whole file's, and what stays on disk is only what has not been read yet. The stream
ends once the run has ended (`finish`) and the last segment is read.

    readers = SegmentReaders(directory)   # started before the program runs
    ...                                   # the program runs; segments come and go
    readers.finish()                      # after it has ended: the rest read
    trace = readers.trace(path)           # ProfilerTrace of profile-PID.json's segments, or None

Memory is what those readers keep: the spans and the executions (the trace's ~0.13 KB a span, the log's
~0.15 KB an execution), not the files.
"""

from __future__ import annotations

import io
import os
import re
import threading
from pathlib import Path

from .dnnl import VerboseLog, parse_verbose
from .profile import ProfilerTrace, read_trace
from .segments import segment_name

POLL_S = 0.1  # the directory and a segment's end are looked at this often (a segment holds seconds of data)
FIRST = re.compile(r"^((?:profile-\d+\.json)|(?:dnnl-verbose-\d+\.log))\.0*1$")
READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC


class SegmentStream(io.RawIOBase):
    """The segments of `base` in `directory` as one stream: each read to its end once the next exists (or the
    writer has ended: `ended`), then deleted; a read waits while the last segment is still being written."""

    def __init__(self, directory: str, base: str, ended: threading.Event) -> None:
        super().__init__()
        self.directory, self.base, self.ended = directory, base, ended
        self.number = 1
        self.fd: int | None = None
        self.bytes = 0  # read so far
        self.segments = 0  # read to their end and deleted

    def readable(self) -> bool:
        return True

    def _path(self, number: int) -> str:
        return os.path.join(self.directory, segment_name(self.base, number))

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        while True:
            if self.fd is None:
                try:
                    self.fd = os.open(self._path(self.number), READ)
                except FileNotFoundError:
                    if self.ended.is_set():
                        return 0
                    self.ended.wait(POLL_S)
                    continue
            count = os.readv(self.fd, [buffer])
            if count:
                self.bytes += count
                return count
            ended = self.ended.is_set()  # (read before looking for the next: a writer that ended wrote no more)
            if os.path.exists(self._path(self.number + 1)) or ended:
                count = os.readv(self.fd, [buffer])  # what came between the read and the look
                if count:
                    self.bytes += count
                    return count
                self._done()
                if ended and not os.path.exists(self._path(self.number)):
                    return 0
                continue
            self.ended.wait(POLL_S)

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
    """One segmented file read in a thread of its own; `result` once the stream has ended."""

    def __init__(self, directory: str, base: str, ended: threading.Event) -> None:
        self.stream = SegmentStream(directory, base, ended)
        self.is_trace = base.startswith("profile-")
        self.result: ProfilerTrace | VerboseLog | None = None
        self.error: str | None = None
        self.thread = threading.Thread(target=self._run, name=f"mxnet-segments-{base}", daemon=True)

    def _run(self) -> None:
        try:
            with io.BufferedReader(self.stream, 1 << 20) as stream:
                self.result = read_trace(stream) if self.is_trace else parse_verbose(stream)
        except (OSError, ValueError) as err:  # the directory removed under us (a stopped run): nothing to keep
            self.error = f"cannot read its segments: {err}"


class SegmentReaders:
    """Every segmented file of the hooked processes in `directory`, each read by a `Reader` as it is written."""

    def __init__(self, directory: Path) -> None:
        self.directory = str(directory)
        self.ended = threading.Event()
        self.readers: dict[str, Reader] = {}  # base name -> its reader
        self._thread = threading.Thread(target=self._watch, name="mxnet-segments", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _watch(self) -> None:
        while not self.ended.wait(POLL_S):
            self._look()

    def _look(self) -> None:
        try:
            names = os.listdir(self.directory)
        except OSError:
            return  # not made yet (the hook makes it as perf starts), or removed
        for name in names:
            found = FIRST.match(name)
            if found is not None and found.group(1) not in self.readers:
                reader = self.readers[found.group(1)] = Reader(self.directory, found.group(1), self.ended)
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

    def trace(self, path: str) -> ProfilerTrace | None:
        """The trace of `path`'s segments (problems included), or None when none were read."""
        reader = self._reader(path)
        if reader is None:
            return None
        if reader.error is not None or not isinstance(reader.result, ProfilerTrace):
            raise OSError(reader.error or "its segments were not read")
        return reader.result

    def verbose(self, path: str) -> VerboseLog | None:
        reader = self._reader(path)
        if reader is None:
            return None
        if reader.error is not None or not isinstance(reader.result, VerboseLog):
            raise OSError(reader.error or "its segments were not read")
        return reader.result

    def read_bytes(self, path: str) -> int | None:
        reader = self._reader(path)
        return reader.stream.bytes if reader is not None else None
