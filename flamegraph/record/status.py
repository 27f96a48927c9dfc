"""The progress line of long steps (recording, folding), kept apart from the recorded program's output."""

from __future__ import annotations

import sys
import threading
import time
from typing import IO


class Status:
    """One progress line on stderr: redrawn in place on a terminal, a plain line every 10 s otherwise."""

    def __init__(self, sink: IO[bytes] | None = None, out_sink: IO[bytes] | None = None, every: float = 10.0):
        self.sink = sink or sys.stderr.buffer
        self.out_sink = out_sink or sys.stdout.buffer
        self.tty = self.sink.isatty()
        self.every = every
        self.lock = threading.RLock()
        self._shown = False
        self._last = -every

    def show(self, text: str) -> None:
        with self.lock:
            now = time.monotonic()
            if self.tty:
                self.sink.write(b"\r\x1b[K" + text.encode())
                self._shown = True
            elif now - self._last >= self.every:
                self.sink.write(text.encode() + b"\n")
                self._last = now
            self.sink.flush()

    def clear(self) -> None:
        with self.lock:
            if self._shown:
                self.sink.write(b"\r\x1b[K")
                self.sink.flush()
                self._shown = False

    def note(self, text: str) -> None:
        with self.lock:
            self.clear()
            self.sink.write(text.encode() + b"\n")
            self.sink.flush()
