"""Running `perf record`: relay the program's output, show progress, stop at --duration or Ctrl-C."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO

from ..perf import find_perf
from .spec import (
    RecordHook,
    Recording,
    RecordSpec,
    capture_metadata,
    check_target,
    explain_failure,
    record_command,
)
from .status import Status

HOLD_SECONDS = 0.5  # perf's start-up errors come well within this
ENDED, STOPPED, INTERRUPTED = "ended", "stopped", "interrupted"  # how a recording finished
CAPTURED = re.compile(r"Captured and wrote ([0-9.]+) MB .*?(?:\((\d+) samples\))?")


class _Relay:
    """Copies a child's pipe line by line to our terminal (clearing the progress line first).

    Until `release()` the lines are held back: perf complains within milliseconds when it cannot
    record, and that multi-line complaint becomes our one-line error instead of reaching the user.
    """

    def __init__(
        self, pipe: IO[bytes], sink: IO[bytes], status: Status, tap: Callable[[str], None], hold: bool
    ) -> None:
        self.tail: deque[str] = deque(maxlen=60)
        self.perf_lines: list[str] = []
        self._sink, self._status, self._tap = sink, status, tap
        self._held: list[bytes] | None = [] if hold else None
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, args=(pipe,), daemon=True)
        self._thread.start()

    def _run(self, pipe: IO[bytes]) -> None:
        for raw in pipe:
            line = raw.decode(errors="replace")
            if line.startswith("[ perf record:"):
                self.perf_lines.append(line.strip())
                continue
            self.tail.append(line)
            self._tap(line.rstrip("\n"))
            with self._lock:
                if self._held is not None:
                    self._held.append(raw)
                    continue
            self._write([raw])

    def _write(self, lines: list[bytes]) -> None:
        with self._status.lock:
            self._status.clear()
            self._sink.writelines(lines)
            self._sink.flush()

    def release(self) -> None:
        """From now on lines go straight through; the held ones first."""
        with self._lock:
            held, self._held = self._held, None
        if held:
            self._write(held)

    def join(self) -> None:
        self._thread.join(timeout=10)


def record(
    spec: RecordSpec,
    output: Path,
    hooks: Sequence[RecordHook] = (),
    on_output: Callable[[str], None] | None = None,
    status: Status | None = None,
) -> Recording:
    """Run `perf record` for `spec` into `output`; returns once perf has written the file."""
    perf = find_perf()
    for hook in hooks:
        spec = hook.prepare(spec)
    check_target(spec)
    status = status or Status()
    output = Path(output).absolute()
    output.parent.mkdir(parents=True, exist_ok=True)
    metadata = capture_metadata(spec, perf)
    argv = record_command(spec, perf, output)
    env = {**os.environ, **spec.env}
    stdout = subprocess.PIPE if on_output else None
    proc = subprocess.Popen(argv, stdout=stdout, stderr=subprocess.PIPE, env=env, cwd=spec.cwd)
    assert proc.stderr is not None
    err = _Relay(proc.stderr, status.sink, status, on_output or _ignore, hold=True)
    out = _Relay(proc.stdout, status.out_sink, status, on_output, hold=False) if proc.stdout and on_output else None
    started = time.monotonic()
    how = _wait(proc, spec, started, output, status, err)
    interrupted = how == INTERRUPTED
    seconds = time.monotonic() - started
    for relay in (err, out):
        if relay is not None:
            relay.join()
    status.clear()
    captured = [m for line in err.perf_lines if (m := CAPTURED.search(line))]
    if not captured or not output.is_file():
        raise explain_failure(spec, "".join(err.tail))
    err.release()
    samples = captured[-1].group(2)
    metadata["duration"] = f"{seconds:.1f} s" + (" (stopped by Ctrl-C)" if interrupted else "")
    # perf ends a launched command with SIGTERM when stopped, and exits with the command's status.
    exit_status = proc.returncode if spec.command and how == ENDED else None
    recording = Recording(output, spec, metadata, seconds, int(samples) if samples else None, interrupted, exit_status)
    for hook in hooks:
        recording = hook.finish(recording)
    return recording


def _ignore(line: str) -> None:
    pass


def _wait(
    proc: subprocess.Popen[bytes], spec: RecordSpec, started: float, output: Path, status: Status, err: _Relay
) -> str:
    """Waits for perf, showing progress; stops it at the duration or on Ctrl-C. Returns how it ended."""
    stop_sent = False
    try:
        while proc.poll() is None:
            elapsed = time.monotonic() - started
            if elapsed >= HOLD_SECONDS:
                err.release()  # perf is recording: what comes now is the program's or perf's warnings
            if spec.duration is not None and elapsed >= spec.duration and not stop_sent:
                proc.send_signal(signal.SIGINT)  # perf stops, writes its data, ends the command
                stop_sent = True
            if elapsed >= HOLD_SECONDS:
                size = output.stat().st_size if output.exists() else 0
                left = f", {max(spec.duration - elapsed, 0):.0f} s left" if spec.duration else ", Ctrl-C stops"
                status.show(f"recording {elapsed:5.1f} s, {size / 1e6:7.1f} MB{left}")
            try:
                proc.wait(timeout=0.25)
            except subprocess.TimeoutExpired:
                pass
        return STOPPED if stop_sent else ENDED
    except KeyboardInterrupt:
        status.clear()
        status.note("stopping the recording (Ctrl-C again aborts)")
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)  # perf also got it from the terminal; once more is harmless
        try:
            proc.wait()
        except KeyboardInterrupt:
            proc.kill()
            proc.wait()
            raise
        return INTERRUPTED
