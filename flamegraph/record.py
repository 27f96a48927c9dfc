"""Recording with `perf record`: build the command line, run it with progress, stop it cleanly, fold it.

Generic over the event, so on-CPU (`cpu-clock`), off-CPU (`sched:sched_switch`) and JIT-aware
recordings share it. The API, top to bottom:

    spec = RecordSpec(command=("python", "train.py"))                 # launch a command, or
    spec = RecordSpec(pid=1234, event="sched:sched_switch", freq=None,
                      call_graph="dwarf,8192", extra_args=("--switch-events",), duration=3.0)
    record_command(spec, perf, output) -> list[str]      # the `perf record` argv (pure)
    record(spec, output, hooks=(), on_output=None, status=None) -> Recording
        # runs perf with a progress line; Ctrl-C (or --duration) stops perf and keeps the data;
        # raises PerfMissing / NotPermitted / NoSuchProcess / CommandNotFound / PerfFailed
    capture_metadata(spec, perf) -> dict[str, str]         # command, event, perf version, kernel...
    script_args(recording, window, fields) -> list[str]    # `perf script` options (--time START,END)
    fold_recording(recording, options, window, diagnostics, status) -> FoldedProfile   # on-CPU

Pre- and post-steps plug in as hooks (e.g. JIT naming: DNNL_JIT_DUMP=1 and a scratch cwd before,
`perf inject --jit` after):

    class RecordHook(Protocol):
        def prepare(self, spec: RecordSpec) -> RecordSpec     # env, cwd, command wrapper, call graph
        def finish(self, recording: Recording) -> Recording   # e.g. swap in an injected perf.data
"""

from __future__ import annotations

import dataclasses
import os
import platform
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Protocol

from .collapse.perf import FoldOptions, PerfCollapser
from .diagnostics import (
    CommandNotFound,
    Diagnostics,
    FlamegraphError,
    NoSamples,
    NoSuchProcess,
    NotPermitted,
    PerfFailed,
)
from .model import FoldedProfile
from .perf import find_perf, script_command, stream_script

# Defaults measured on the MXNet MLP (see README "Recording defaults"): frame pointers give 0 % complete
# stacks on libraries built without them, DWARF ~82 %; 499 Hz keeps DWARF's overhead near 7 %.
DEFAULT_EVENT = "cpu-clock"  # software event: works in VMs without a hardware PMU
DEFAULT_FREQ = 499
DEFAULT_CALL_GRAPH = "dwarf,16384"
DEFAULT_MMAP = "16M"  # DWARF needs big buffers; only root may lock this much (perf_event_mlock_kb)
ONCPU_FIELDS = "comm,pid,tid,time,event,ip,sym,dso"
MAX_DWARF_SIZE = 65528
CALL_GRAPH = re.compile(r"^(fp|lbr|dwarf)(?:,(\d+))?$")


def parse_call_graph(text: str) -> str:
    """'fp', 'lbr', 'dwarf' or 'dwarf,SIZE' (SIZE a multiple of 8, at most 65528) -> perf's spelling."""
    match = CALL_GRAPH.match(text.strip())
    if match is None or (match.group(2) and match.group(1) != "dwarf"):
        raise ValueError(f"call graph {text!r}: expected fp, lbr, dwarf or dwarf,SIZE")
    if match.group(2):
        size = int(match.group(2))
        if size % 8 or not 8 <= size <= MAX_DWARF_SIZE:
            raise ValueError(f"dwarf stack size {size}: a multiple of 8 from 8 to {MAX_DWARF_SIZE}")
    return text.strip()


def parse_window(text: str) -> tuple[float | None, float | None]:
    """'START,END' in perf's clock seconds ('START,' or ',END' leave that side open)."""
    start, sep, end = text.partition(",")
    try:
        bounds = tuple(float(part) if part.strip() else None for part in (start, end))
    except ValueError:
        bounds = ()
    if not sep or len(bounds) != 2 or (None not in bounds and bounds[0] > bounds[1]):  # type: ignore[operator]
        raise ValueError(f"window {text!r}: expected START,END in seconds with START <= END")
    return bounds  # type: ignore[return-value]


@dataclass(frozen=True)
class RecordSpec:
    """What to record and how; exactly one of `command` and `pid`."""

    command: tuple[str, ...] = ()
    pid: int | None = None
    event: str = DEFAULT_EVENT
    freq: int | None = DEFAULT_FREQ  # None: perf's default (tracepoints: every event)
    call_graph: str | None = DEFAULT_CALL_GRAPH  # None: no stacks
    mmap: str | None = DEFAULT_MMAP  # -m; dropped when not root
    extra_args: tuple[str, ...] = ()  # more `perf record` options, e.g. ("--switch-events",)
    duration: float | None = None  # seconds; None: until the command ends or Ctrl-C
    env: dict[str, str] = field(default_factory=dict)  # added to the command's environment
    cwd: str | None = None  # the command's working directory (perf.data paths stay absolute)

    def __post_init__(self) -> None:
        if bool(self.command) == (self.pid is not None):
            raise ValueError("RecordSpec needs exactly one of command and pid")

    def replace(self, **changes: object) -> RecordSpec:
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]


@dataclass
class Recording:
    """A finished `perf record`: where the data are and how they were made."""

    perf_data: Path
    spec: RecordSpec
    metadata: dict[str, str]
    seconds: float
    samples: int | None = None  # from perf's "Captured and wrote ... (N samples)"
    interrupted: bool = False  # stopped by Ctrl-C (the data are complete up to then)
    exit_status: int | None = None  # the launched command's status (None with --pid)
    script_extra: tuple[str, ...] = ()  # options hooks add to `perf script` (e.g. --show-mmap-events)


class RecordHook(Protocol):
    def prepare(self, spec: RecordSpec) -> RecordSpec: ...

    def finish(self, recording: Recording) -> Recording: ...


def record_command(spec: RecordSpec, perf: str, output: Path) -> list[str]:
    """The `perf record` argv: -N (no ~/.debug copies), -k CLOCK_MONOTONIC (for --time windows)."""
    argv = [perf, "record", "-N", "-k", "CLOCK_MONOTONIC", "-e", spec.event]
    if spec.freq is not None:
        argv += ["-F", str(spec.freq)]
    if spec.call_graph == "fp":
        argv += ["-g"]
    elif spec.call_graph:
        argv += ["--call-graph", spec.call_graph]
    if spec.mmap and os.geteuid() == 0:
        argv += ["-m", spec.mmap]
    argv += [*spec.extra_args, "-o", str(output)]
    if spec.pid is not None:
        return [*argv, "-p", str(spec.pid)]
    return [*argv, "--", *spec.command]


def paranoid_level() -> str:
    try:
        return Path("/proc/sys/kernel/perf_event_paranoid").read_text().strip()
    except OSError:
        return "unknown"


def check_target(spec: RecordSpec) -> None:
    """Fail early, in one line, for a pid that does not exist or a command that cannot be found."""
    if spec.pid is not None:
        try:
            os.kill(spec.pid, 0)
        except ProcessLookupError:
            raise NoSuchProcess(f"no process with pid {spec.pid}") from None
        except PermissionError:
            pass  # it exists; perf decides whether we may profile it
        return
    program = spec.command[0]
    if "/" in program:
        path = Path(spec.cwd or ".") / program
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise CommandNotFound(f"{program}: no such executable file")
    elif shutil.which(program, path={**os.environ, **spec.env}.get("PATH")) is None:
        raise CommandNotFound(f"{program}: command not found (not on PATH)")


def explain_failure(spec: RecordSpec, stderr: str) -> FlamegraphError:
    """perf's multi-line complaint -> one of our errors, with the fix."""
    if "mapping pages" in stderr:
        return NotPermitted(
            f"perf record: not permitted to lock {spec.mmap} of buffers (perf_event_mlock_kb): run as root"
        )
    if "perf_event_paranoid" in stderr or "Permission" in stderr or "not permitted" in stderr:
        who = "root" if os.geteuid() == 0 else "not root"
        return NotPermitted(
            f"perf record: not permitted (perf_event_paranoid is {paranoid_level()}, {who}): "
            "run as root or lower it with `sysctl kernel.perf_event_paranoid=1`"
        )
    if spec.pid is not None and ("No such process" in stderr or "thread/CPU maps" in stderr):
        return NoSuchProcess(f"no process with pid {spec.pid} (it exited before perf attached)")
    if spec.command and "No such file or directory" in stderr and "workload" in stderr:
        return CommandNotFound(f"{spec.command[0]}: command not found")
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip() and ln.strip() != "Error:"]
    return PerfFailed(f"perf record failed: {lines[0] if lines else 'no message'}")


def perf_version(perf: str) -> str:
    try:
        out = subprocess.run([perf, "--version"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return out.strip().removeprefix("perf version ") or "unknown"


def describe_target(spec: RecordSpec) -> str:
    if spec.pid is None:
        return shlex.join(spec.command)
    try:
        cmdline = Path(f"/proc/{spec.pid}/cmdline").read_bytes().split(b"\0")
        return f"pid {spec.pid}: " + shlex.join(part.decode(errors="replace") for part in cmdline if part)
    except OSError:
        return f"pid {spec.pid}"


def capture_metadata(spec: RecordSpec, perf: str) -> dict[str, str]:
    """Capture facts for the SVG header, in the order the header shows them."""
    meta = {
        "command": describe_target(spec),
        "event": spec.event,
        "frequency": f"{spec.freq} Hz" if spec.freq is not None else "every event",
        "call graph": spec.call_graph or "none",
        "perf": perf_version(perf),
        "kernel": platform.release(),
        "host": socket.gethostname(),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    if spec.env:
        meta["environment"] = " ".join(f"{k}={v}" for k, v in sorted(spec.env.items()))
    return meta


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


CAPTURED = re.compile(r"Captured and wrote ([0-9.]+) MB .*?(?:\((\d+) samples\))?")


class _Relay:
    """Copies a child's pipe line by line to our terminal (clearing the progress line first)."""

    def __init__(self, pipe: IO[bytes], sink: IO[bytes], status: Status, tap: Callable[[str], None]) -> None:
        self.tail: deque[str] = deque(maxlen=60)
        self.perf_lines: list[str] = []
        self._thread = threading.Thread(target=self._run, args=(pipe, sink, status, tap), daemon=True)
        self._thread.start()

    def _run(self, pipe: IO[bytes], sink: IO[bytes], status: Status, tap: Callable[[str], None]) -> None:
        for raw in pipe:
            line = raw.decode(errors="replace")
            if line.startswith("[ perf record:"):
                self.perf_lines.append(line.strip())
                continue
            self.tail.append(line)
            tap(line.rstrip("\n"))
            with status.lock:
                status.clear()
                sink.write(raw)
                sink.flush()

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
    err = _Relay(proc.stderr, status.sink, status, lambda line: None)
    out = _Relay(proc.stdout, status.out_sink, status, on_output) if proc.stdout and on_output else None
    started = time.monotonic()
    interrupted = _wait(proc, spec, started, output, status)
    seconds = time.monotonic() - started
    for relay in (err, out):
        if relay is not None:
            relay.join()
    status.clear()
    captured = [m for line in err.perf_lines if (m := CAPTURED.search(line))]
    if not captured or not output.is_file():
        raise explain_failure(spec, "".join(err.tail))
    samples = captured[-1].group(2)
    metadata["duration"] = f"{seconds:.1f} s" + (" (stopped by Ctrl-C)" if interrupted else "")
    recording = Recording(
        output, spec, metadata, seconds, int(samples) if samples else None, interrupted,
        proc.returncode if spec.command else None,
    )  # fmt: skip
    for hook in hooks:
        recording = hook.finish(recording)
    return recording


def _wait(
    proc: subprocess.Popen[bytes], spec: RecordSpec, started: float, output: Path, status: Status
) -> bool:
    """Waits for perf, showing progress; stops it at --duration or Ctrl-C. True if Ctrl-C stopped it."""
    stop_sent = False
    try:
        while proc.poll() is None:
            elapsed = time.monotonic() - started
            if spec.duration is not None and elapsed >= spec.duration and not stop_sent:
                proc.send_signal(signal.SIGINT)  # perf stops, writes its data, ends the command
                stop_sent = True
            size = output.stat().st_size if output.exists() else 0
            left = f", {max(spec.duration - elapsed, 0):.0f} s left" if spec.duration else ", Ctrl-C stops"
            status.show(f"recording {elapsed:5.1f} s, {size / 1e6:7.1f} MB{left}")
            try:
                proc.wait(timeout=0.25)
            except subprocess.TimeoutExpired:
                pass
        return False
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
        return True


def script_args(
    recording: Recording, window: tuple[float | None, float | None] | None = None, fields: str = ONCPU_FIELDS
) -> list[str]:
    """`perf script` options: the fields to print, the --time window, and what hooks asked for."""
    extra = ["-F", fields]
    if window is not None:
        start, end = ("" if bound is None else f"{bound:.6f}" for bound in window)
        extra += ["--time", f"{start},{end}"]
    return [*extra, *recording.script_extra]


def iter_progress(lines: Iterable[bytes], status: Status, label: str) -> Iterator[bytes]:
    """Passes lines through, showing how much text has gone by (every 64k lines)."""
    size = 0
    for n, line in enumerate(lines, 1):
        size += len(line)
        if not n & 0xFFFF:
            status.show(f"{label}: {size / 1e6:.0f} MB of perf script text")
        yield line
    status.clear()


def fold_recording(
    recording: Recording,
    options: FoldOptions | None = None,
    window: tuple[float | None, float | None] | None = None,
    diagnostics: Diagnostics | None = None,
    status: Status | None = None,
) -> FoldedProfile:
    """`perf script --no-inline` streamed into the on-CPU folder; the capture metadata go along."""
    status = status or Status()
    diagnostics = diagnostics or Diagnostics()
    collapser = PerfCollapser(options or FoldOptions(), diagnostics)
    command = script_command(str(recording.perf_data), extra=script_args(recording, window))
    label = str(recording.perf_data)
    with stream_script(command, label) as lines:
        collapser.feed(iter_progress(lines, status, "folding"), label)
    diagnostics.finish()
    profile = collapser.profile()
    if not profile.counts:
        where = f" in the window {script_args(recording, window)[3]}" if window else ""
        raise NoSamples(f"{label}: no samples{where} (the data are kept there)")
    profile.metadata.update(recording.metadata)
    if window is not None:
        profile.metadata["window"] = ",".join("" if b is None else f"{b:.3f}" for b in window)
    return profile
