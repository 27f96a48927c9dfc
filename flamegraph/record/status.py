"""The progress line of long steps (recording, folding), kept apart from the recorded program's output."""

from __future__ import annotations

import sys
import threading
import time
from typing import IO


class Status:
    """One progress line on stderr: redrawn in place on a terminal, a plain line every 10 s otherwise.

    Writing is best effort: once the terminal is gone (SIGHUP, then EIO on every write) the lines are
    dropped, so that stopping perf and drawing the graph go on without it."""

    def __init__(self, sink: IO[bytes] | None = None, out_sink: IO[bytes] | None = None, every: float = 10.0):
        self.sink = sink or sys.stderr.buffer
        self.out_sink = out_sink or sys.stdout.buffer
        self.tty = self.sink.isatty()
        self.every = every
        self.lock = threading.RLock()
        self._shown = False
        self._last = -every
        self._gone: set[int] = set()  # ids of the sinks that failed

    def put(self, sink: IO[bytes], data: bytes | list[bytes]) -> None:
        """Write and flush `data` to `sink` (ours or the relayed program's), unless it has failed."""
        if id(sink) in self._gone:
            return
        try:
            if isinstance(data, bytes):
                sink.write(data)
            else:
                sink.writelines(data)
            sink.flush()
        except OSError:
            self._gone.add(id(sink))

    def show(self, text: str) -> None:
        with self.lock:
            now = time.monotonic()
            if self.tty:
                self.put(self.sink, b"\r\x1b[K" + text.encode())
                self._shown = True
            elif now - self._last >= self.every:
                self.put(self.sink, text.encode() + b"\n")
                self._last = now

    def clear(self) -> None:
        with self.lock:
            if self._shown:
                self.put(self.sink, b"\r\x1b[K")
                self._shown = False

    def note(self, text: str) -> None:
        with self.lock:
            self.clear()
            self.put(self.sink, text.encode() + b"\n")
