"""Running `perf record`: relay the program's output, show progress, stop at --duration, Ctrl-C, SIGTERM or
SIGHUP, and say why perf failed; no perf, nor the command it launched, outlives a call."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from ..diagnostics import FlamegraphError, OutputFailed, PerfFailed, PerfMissing, StopSignal
from ..perf import describe_exit, find_perf
from .processes import Workload, die_with_parent
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
        with pipe:
            self._copy(pipe)

    def _copy(self, pipe: IO[bytes]) -> None:
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
            self._status.put(self._sink, lines)  # a gone terminal: dropped, the pipe still drained

    @property
    def released(self) -> bool:
        return self._held is None

    def release(self) -> None:
        """From now on lines go straight through; the held ones first."""
        with self._lock:
            held, self._held = self._held, None
        if held:
            self._write(held)

    def join(self) -> None:
        self._thread.join(timeout=10)


@dataclass(frozen=True)
class _Ending:
    """How perf ended: by itself (the command or pid exited), at --duration, or by a signal to us."""

    how: str  # ENDED, STOPPED or INTERRUPTED
    signum: int | None = None  # what interrupted: SIGINT (Ctrl-C), SIGTERM or SIGHUP
    stopped_ns: int | None = None  # CLOCK_MONOTONIC when perf was told to stop (perf's clock, -k)


def record(
    spec: RecordSpec,
    output: Path,
    hooks: Sequence[RecordHook] = (),
    on_output: Callable[[str], None] | None = None,
    status: Status | None = None,
    on_recording: Callable[[], None] | None = None,
) -> Recording:
    """Run `perf record` for `spec` into `output`; returns once perf has written the file.

    `on_recording` is called once `output` holds a recording, finished or cut short (perf killed, a
    full disk, a second Ctrl-C), that no later failure may throw away. Whatever ends this call, no
    perf is left running, nor the command perf launched (it is ended as perf ends it: SIGTERM)."""
    perf = find_perf()
    keep = on_recording or (lambda: None)
    for hook in hooks:
        spec = hook.prepare(spec)
    check_target(spec)
    status = status or Status()
    output = Path(output).absolute()
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
    except OSError as failed:
        raise OutputFailed(f"{output.parent}: cannot create the directory: {failed.strerror}") from None
    metadata = capture_metadata(spec, perf)
    argv = record_command(spec, perf, output)
    proc, reader = _start(argv, bool(on_output), {**os.environ, **spec.env}, spec.cwd)
    err = _Relay(reader, status.sink, status, on_output or _ignore, hold=True)
    out = _Relay(proc.stdout, status.out_sink, status, on_output, hold=False) if proc.stdout and on_output else None
    workload = Workload(proc, bool(spec.command))
    started = time.monotonic()
    try:
        ending = _wait(proc, spec, started, output, status, err, workload)
        seconds = time.monotonic() - started
        if proc.returncode != 0:
            workload.end()  # perf killed or failed: the command it launched may still run (a no-op if not)
    except BaseException:
        _abort(proc, workload)
        if err.released and output.is_file():
            keep()  # aborted while recording: what perf wrote is kept
        raise
    finally:
        for relay in (err, out):
            if relay is not None:
                relay.join()  # until the command's end closes its end of the pipes
        status.clear()
    captured = [m for line in err.perf_lines if (m := CAPTURED.search(line))]
    if not captured or not output.is_file():
        failure = _failure(spec, err, proc.returncode, seconds, output, ending)
        if failure is None:  # interrupted before perf had started: nothing recorded
            raise KeyboardInterrupt if ending.signum == signal.SIGINT else StopSignal(ending.signum or signal.SIGTERM)
        error, cut = failure
        if cut:
            keep()
        raise error
    err.release()
    keep()
    recording = _recording(spec, output, metadata, seconds, captured[-1].group(2), ending, proc.returncode)
    for hook in hooks:
        recording = hook.finish(recording)
    return recording


def _start(
    argv: list[str], piped: bool, env: dict[str, str], cwd: str | None
) -> tuple[subprocess.Popen[bytes], IO[bytes]]:
    """perf, started; its stderr (and the command's) to read. perf gets a copy of that pipe's read end:
    should we die (SIGKILL), its closing messages then fit in the pipe instead of killing it by SIGPIPE
    before it has finished perf.data and ended the command it launched."""
    reader, writer = os.pipe()
    try:
        proc = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE if piped else None,
            stderr=writer,
            env=env,
            cwd=cwd,
            pass_fds=(reader,),
            preexec_fn=die_with_parent,
        )
    except OSError as failed:
        os.close(reader)
        raise PerfMissing(f"cannot run {argv[0]}: {failed.strerror}") from None
    except BaseException:
        os.close(reader)
        raise
    finally:
        os.close(writer)
    return proc, os.fdopen(reader, "rb")


def _recording(
    spec: RecordSpec,
    output: Path,
    metadata: dict[str, str],
    seconds: float,
    samples: str | None,
    ending: _Ending,
    returncode: int,
) -> Recording:
    stopped = f" (stopped by {stop_name(ending.signum)})" if ending.signum else ""
    metadata["duration"] = f"{seconds:.1f} s{stopped}"
    # perf ends a launched command with SIGTERM when stopped, and exits with the command's status.
    exit_status = returncode if spec.command and ending.how == ENDED else None
    return Recording(
        output,
        spec,
        metadata,
        seconds,
        int(samples) if samples else None,
        ending.how == INTERRUPTED,
        exit_status,
        stop_signal=ending.signum,
        stopped_ns=ending.stopped_ns,
    )


def stop_name(signum: int | None) -> str:
    return "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name if signum else "nothing"


WRITE_FAILED = "failed to write perf data"  # perf 6.1: "failed to write perf data, error: No space left on device"


def _failure(
    spec: RecordSpec, err: _Relay, code: int, seconds: float, output: Path, ending: _Ending
) -> tuple[FlamegraphError, bool] | None:
    """perf ended without finishing its data: why, in one line, and whether what it wrote is a cut
    recording to keep (perf cannot read a file it did not finish, but nothing recorded is thrown away).
    None: an interruption came before perf had started; the interruption itself is the answer."""
    said = "".join(err.tail)
    lines = [line.strip() for line in err.tail if line.strip()]
    after = f"after {seconds:.1f} s of recording"
    if WRITE_FAILED in said:  # a full disk, a quota
        why = next(line for line in reversed(lines) if WRITE_FAILED in line).partition("error: ")[2]
        return OutputFailed(f"{output}: perf record could not write its data {after}: {why or 'write error'}"), True
    if code == -signal.SIGINT and ending.how != ENDED:  # our SIGINT came before perf could handle it
        if ending.how == INTERRUPTED:
            return None
        return PerfFailed(f"perf record had not started after {seconds:.1f} s, when --duration stopped it"), False
    if code < 0 and err.released and output.is_file():  # killed while recording (SIGKILL, the OOM killer)
        return PerfFailed(f"perf record was {describe_exit(code)} {after}"), True
    return explain_failure(spec, said, code), False


def _abort(proc: subprocess.Popen[bytes], workload: Workload) -> None:
    """A second Ctrl-C/SIGTERM (or a bug): perf is killed, and the command it launched ended."""
    workload.look()
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    workload.end()


def _ignore(line: str) -> None:
    pass


def _wait(
    proc: subprocess.Popen[bytes],
    spec: RecordSpec,
    started: float,
    output: Path,
    status: Status,
    err: _Relay,
    workload: Workload,
) -> _Ending:
    """Waits for perf, showing progress; stops it at the duration or on Ctrl-C/SIGTERM/SIGHUP."""
    stopped_ns = None
    duration = spec.options.duration
    try:
        while proc.poll() is None:
            workload.look()
            elapsed = time.monotonic() - started
            if elapsed >= HOLD_SECONDS and not err.released:
                err.release()  # perf is recording: what comes now is the program's or perf's warnings
            if duration is not None and elapsed >= duration and stopped_ns is None:
                stopped_ns = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
                proc.send_signal(signal.SIGINT)  # perf stops, writes its data, ends the command
            if elapsed >= HOLD_SECONDS:
                size = output.stat().st_size if output.exists() else 0
                left = f", {max(duration - elapsed, 0):.0f} s left" if duration else ", Ctrl-C stops"
                status.show(f"recording {elapsed:5.1f} s, {size / 1e6:7.1f} MB{left}")
            try:
                proc.wait(timeout=0.02 if workload.looking else 0.25)
            except subprocess.TimeoutExpired:
                pass
        return _Ending(ENDED if stopped_ns is None else STOPPED, None, stopped_ns)
    except (KeyboardInterrupt, StopSignal) as stop:
        stopped_ns = stopped_ns or time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        signum = stop.signum if isinstance(stop, StopSignal) else signal.SIGINT
        status.clear()
        again = "Ctrl-C again aborts" if signum == signal.SIGINT else f"{stop_name(signum)} received, again aborts"
        status.note(f"stopping the recording ({again})")
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)  # after Ctrl-C perf also got it from the terminal: harmless
        proc.wait()  # a second signal raises here: record() kills perf
        return _Ending(INTERRUPTED, signum, stopped_ns)
