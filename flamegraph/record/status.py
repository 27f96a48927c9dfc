"""The progress line of long steps (recording, folding), kept apart from the recorded program's output."""

from __future__ import annotations

import io
import os
import stat
import sys
import threading
import time
from typing import IO

from ..io.diagnostics import terminal_text


class Status:
    """One progress line on stderr: redrawn in place on a terminal, a plain line every 10 s otherwise.

    While a command we launched writes its output straight into that terminal (its stdout is ours), the
    line is not redrawn in place: it would end up glued to the program's own lines ("...Ctrl-C
    stopsline8"), and that output, which we do not see, cannot be redrawn around. The first progress is
    then one whole line (perf has begun, Ctrl-C stops), and no more (`command_shares_terminal`).

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
        self._shared = False  # a launched command writes into our terminal: no progress drawn in place
        self._said = False  # ... but its first progress said as one whole line

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

    def command_shares_terminal(self, shared: bool) -> None:
        """From now on a launched command writes into our terminal (True), or no longer does (False)."""
        with self.lock:
            self.clear()
            self._shared = shared and self.tty
            self._said = False

    def shares_with(self, output: int | str) -> bool:
        """Whether `output` (the stdout a launched command inherits: 1; an attached process's:
        /proc/PID/fd/1) is the terminal our progress is drawn on."""
        if not self.tty:
            return False
        try:
            ours = os.fstat(self.sink.fileno())
            theirs = os.fstat(output) if isinstance(output, int) else os.stat(output)
        except (OSError, ValueError, io.UnsupportedOperation):
            return False
        return stat.S_ISCHR(theirs.st_mode) and theirs.st_rdev == ours.st_rdev

    def show(self, text: str) -> None:
        with self.lock:
            now = time.monotonic()
            if self._shared:
                if not self._said:
                    self.put(self.sink, terminal_text(text).encode() + b"\n")
                    self._said = True
                return
            if self.tty:
                self.put(self.sink, b"\r\x1b[K" + terminal_text(text).encode())
                self._shown = True
            elif now - self._last >= self.every:
                self.put(self.sink, terminal_text(text).encode() + b"\n")
                self._last = now

    def clear(self) -> None:
        with self.lock:
            if self._shown:
                self.put(self.sink, b"\r\x1b[K")
                self._shown = False

    def note(self, text: str) -> None:
        with self.lock:
            self.clear()
            self.put(self.sink, terminal_text(text).encode() + b"\n")
