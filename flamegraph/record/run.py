"""Running `perf record`: relay the program's output, show progress, stop at --duration, Ctrl-C, SIGTERM or
SIGHUP, and say why perf failed; no perf, nor the command it launched or its children, outlives a call."""

from __future__ import annotations

import contextlib
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

from ..io.diagnostics import FlamegraphError, OutputFailed, PerfFailed, PerfMissing, StopSignal
from ..io.perf import describe_exit, find_perf
from .command import command_facts, perf_environment, python_note, resolve_command
from .exec_forks import mark_exec_forks
from .guard import GRACE, Guard, live_children
from .lost import PerfWarnings, read_lost
from .privileges import CAP_IPC_LOCK, has_capability
from .processes import Terminal, end_group, perf_preexec, remove_vdso_copies, stopped, vdso_copies
from .scope import kernel_note, recorded_events, user_space_only
from .spec import (
    RecordHook,
    Recording,
    RecordSpec,
    capture_metadata,
    check_target,
    explain_failure,
    record_command,
)
from .spool import Spool
from .status import Status

HOLD_SECONDS = 0.5  # perf's start-up errors come well within this
PERF_ARGV0 = "perf"
READY_SECONDS = 5.0  # how long --duration waits past its time for perf to begin before stopping it anyway
ENDED, STOPPED, INTERRUPTED = "ended", "stopped", "interrupted"  # how a recording finished
PERF_STATE_LINES = ("Events disabled", "Events enabled")  # -D -1 / --control: perf's own, not the program's
LEFT_LOOP = "[ perf record: Woken up"  # perf 6.1 prints it as it stops sampling, before it ends its command
POLL_SECONDS = 0.25
CAPTURED = re.compile(r"Captured and wrote ([0-9.]+) MB .*?(?:\((\d+) samples\))? \]")


class _Relay:
    """Copies a child's pipe line by line to our terminal (clearing the progress line first).

    Until `release()` the lines are held back: perf complains within milliseconds when it cannot
    record, and that multi-line complaint becomes our one-line error instead of reaching the user.
    """

    def __init__(
        self,
        pipe: IO[bytes],
        sink: IO[bytes],
        status: Status,
        tap: Callable[[str], None],
        hold: bool,
        warnings: PerfWarnings | None = None,
    ) -> None:
        self.tail: deque[str] = deque(maxlen=60)
        self.perf_lines: list[str] = []
        self.left_loop_ns: int | None = None  # CLOCK_MONOTONIC when perf said it stopped sampling (LEFT_LOOP)
        self.warnings = warnings  # perf's lost-samples warnings: counted there, not shown
        self._sink, self._status, self._tap = sink, status, tap
        self._held: list[bytes] | None = [] if hold else None
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, args=(pipe,), daemon=True)
        self._thread.start()

    def _run(self, pipe: IO[bytes]) -> None:
        with pipe:
            self._copy(pipe)
            if self.warnings is not None:
                for line in self.warnings.flush():
                    self._pass(line.encode(errors="surrogateescape"), line)

    def _copy(self, pipe: IO[bytes]) -> None:
        for raw in pipe:
            line = raw.decode(errors="replace")
            if line.startswith(LEFT_LOOP) and self.left_loop_ns is None:
                self.left_loop_ns = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
            if line.startswith("[ perf record:") or line.rstrip("\n") in PERF_STATE_LINES:
                self.perf_lines.append(line.strip())
                continue
            self.tail.append(line)
            if self.warnings is None:
                self._pass(raw, line)
                continue
            for kept in self.warnings.take(line):
                self._pass(raw if kept is line else kept.encode(), kept)

    def _pass(self, raw: bytes, line: str) -> None:
        self._tap(line.rstrip("\n"))
        with self._lock:
            if self._held is not None:
                self._held.append(raw)
                return
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
        """Once perf's group has ended its end of the pipe is closed; a process that left the group (a
        daemon, setsid) may hold it open: its later lines are not worth a stall."""
        self._thread.join(timeout=2)


@dataclass(frozen=True)
class _Ending:
    """How perf ended: by itself (the command or pid exited), at --duration, or by a signal to us."""

    how: str  # ENDED, STOPPED or INTERRUPTED
    signum: int | None = None  # what interrupted: SIGINT (Ctrl-C), SIGTERM or SIGHUP
    stopped_ns: int | None = None  # CLOCK_MONOTONIC when perf was told to stop (perf's clock, -k)


class _Command:
    """The command perf launched, once perf has stopped: perf SIGTERMs it and waits for it, so one still
    alive after its grace is killed, and said: 2 s if it ignores SIGTERM (it never ends by itself), 30 s if
    it handles it (a shutdown under way: MXNet's profiler dump, --jit's kernels), said at 2 s."""

    def __init__(self, perf: int, err: _Relay, status: Status) -> None:
        self._perf, self._err, self._status = perf, err, status
        self.killed = False
        self._told: set[int] = set()
        self._killed: set[int] = set()  # (a killed process is listed until it is a zombie: killed once, said once)

    def stopped_ns(self, ours: int | None) -> int | None:
        """When perf stopped sampling: our stop (--duration, a signal to us) or its own (a Ctrl-C in the
        terminal reached perf), whichever came first."""
        times = [t for t in (ours, self._err.left_loop_ns) if t is not None]
        return min(times) if times else None

    def end(self, ours: int | None, at_once: bool = False) -> bool:
        """SIGKILL the command if it outlived its grace since perf stopped (perf's line; our stop when
        perf prints none); `at_once`: now, on a second Ctrl-C/SIGTERM, if perf said it stopped (it has
        then SIGTERMed the command and waits for it). Whether one was killed now."""
        since = self._err.left_loop_ns
        if since is None and not at_once:
            since = ours  # (a perf that prints no such line: from our stop)
        if since is None:
            return False
        waited = (time.clock_gettime_ns(time.CLOCK_MONOTONIC) - since) / 1e9
        if waited < GRACE and not at_once:
            return False
        killed = False
        for command in live_children(self._perf):
            if command.pid in self._killed:
                continue
            if not at_once and waited < command.grace():
                if command.pid not in self._told:
                    self._told.add(command.pid)
                    self._status.clear()
                    self._status.note(
                        f"the command {command.name} (pid {command.pid}) handles SIGTERM and has not ended yet: "
                        f"killed (SIGKILL) if it has not {command.grace():.0f} s after it"
                    )
                continue
            with contextlib.suppress(OSError):
                os.kill(command.pid, signal.SIGKILL)
                killed = True
                self._killed.add(command.pid)
                when = "now (a second stop)" if at_once else f"after {command.grace():.0f} s"
                self._status.clear()
                self._status.note(f"the command {command.describe()}: killed (SIGKILL) {when}")
        self.killed = self.killed or killed
        return killed


def record(
    spec: RecordSpec,
    output: Path,
    hooks: Sequence[RecordHook] = (),
    on_output: Callable[[str], None] | None = None,
    status: Status | None = None,
    on_recording: Callable[[], None] | None = None,
    spool: Spool | None = None,
) -> Recording:
    """Run `perf record` for `spec` into `output`; returns once perf has written the file.

    With `spool` perf writes rotating chunks (`output` is the spool's open one) that the spool hands to
    its folder while perf runs; the samples and lost samples are then counted from the chunks.

    `on_recording` is called once `output` holds a recording, finished or cut short (perf killed, a
    full disk), that no later failure may throw away. Whatever ends this call, no perf is left running,
    nor the command perf launched, nor its children (perf's process group is ended: SIGTERM)."""
    perf = find_perf()
    keep = on_recording or (lambda: None)
    status = status or Status()
    typed = spec.command
    if typed:  # found as the user's shell finds it, before a hook wraps it (perf's PATH would find another)
        spec = spec.replace(command=resolve_command(typed, {**os.environ, **spec.env}, spec.cwd))
        if (note := python_note(spec.command, {**os.environ, **spec.env}, spec.cwd)) is not None:
            status.note(f"note: {note}")
    for hook in hooks:
        spec = hook.prepare(spec)
    check_target(spec)
    output = Path(output).absolute()
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
    except OSError as failed:
        raise OutputFailed(f"{output.parent}: cannot create the directory: {failed.strerror}") from None
    metadata = capture_metadata(spec, perf)
    env = perf_environment({**os.environ, **spec.env}, spec.cwd) if spec.command else {**os.environ, **spec.env}
    if spool is not None:
        extra, buffers = (*spec.options.extra_args, *spool.args), spool.buffers(spec.options.mmap)
        if buffers != spec.options.mmap and has_capability(CAP_IPC_LOCK):  # (-m is not given otherwise)
            status.note(f"note: perf's buffers cut from {spec.options.mmap} to {buffers} a CPU to stay under "
                        f"--max-spool {spool.cap / 1e6:.0f} MB (perf drains them in one go): a burst loses more "
                        "samples (a larger --max-spool keeps them)")  # fmt: skip
        spec = spec.replace(options=spec.options.replace(extra_args=extra, mmap=buffers))
    argv = record_command(spec, perf, output)
    terminal = Terminal.held() if spec.command else None
    vdso_before = vdso_copies()
    previous = _identity(output)  # perf renames an old file away: a new one means perf has begun
    proc, reader = _start(argv, bool(on_output), env, spec.cwd, terminal is not None, spec.stdout_ours)
    # The command's stdout is ours (our stderr with -o -) unless relayed (on_output); an attached process
    # may write into our terminal too (started from it): there, the progress stays out of its lines.
    if spec.command:
        command_out = STDERR_FD if spec.stdout_ours else 1
        status.command_shares_terminal(not on_output and status.shares_with(command_out))
    elif spec.pid is not None:
        status.command_shares_terminal(status.shares_with(f"/proc/{spec.pid}/fd/1"))
    guard = Guard.start(proc.pid)  # should we die (SIGKILL), it ends perf and its command
    warnings = PerfWarnings()
    err = _Relay(reader, status.sink, status, on_output or _ignore, hold=True, warnings=warnings)
    out = _Relay(proc.stdout, status.out_sink, status, on_output, hold=False) if proc.stdout and on_output else None
    if terminal is not None:
        terminal.give(proc.pid)
    started = time.monotonic()
    if spool is not None:
        spool.started(proc.pid)
    command = _Command(proc.pid, err, status)
    try:
        ending = _wait(proc, spec, started, output, status, err, terminal, previous, command, spool)
        # what was sampled: up to perf's stop, not the wait for a command slow to end after it
        ended = ending.stopped_ns / 1e9 if ending.stopped_ns is not None else time.monotonic()
        seconds = max(ended - started, 0.0)
    except BaseException:
        if _abort(proc, output, status) and err.released:
            keep()  # a bug, not our kill of a finishing perf: what perf wrote is kept
        remove_vdso_copies(vdso_before)
        raise
    finally:
        if terminal is not None:
            terminal.take_back()
        end_group(proc.pid)  # the command perf launched and its children: perf SIGTERMs the command only
        guard.release()
        if spool is not None:
            spool.ended()  # perf's last chunk is queued: the folder can finish
        for relay in (err, out):
            if relay is not None:
                relay.join()  # the group's end closed its end of the pipes
        if spec.command:  # it has ended: folding's progress is drawn again (an attached process writes on)
            status.command_shares_terminal(False)
        status.clear()
    captured = [m for line in err.perf_lines if (m := CAPTURED.search(line))]
    if not captured or not (output.is_file() or spool is not None):
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
    recording.perf_pid = proc.pid
    if spool is None:  # (a spool's chunks are marked one by one, before they are folded)
        mark_exec_forks(str(output))  # before the hooks' perf inject: an exec'd child's maps are its own
    for hook in hooks:
        recording = hook.finish(recording)
    if typed:
        recording.metadata.update(command_facts(typed, spec.command))
    if spool is None:  # a spool's chunks are gone by now: its folder counts what they lost
        _read_scope_and_lost(perf, output, recording, warnings, status)
    return recording


def _read_scope_and_lost(
    perf: str, output: Path, recording: Recording, warnings: PerfWarnings, status: Status
) -> None:
    """What perf.data says of what the recording misses: the kernel (perf's fallback), lost samples."""
    if (scope := user_space_only(recording.spec, recorded_events(perf, output))) is not None:
        recording.metadata["recorded"] = scope
        status.note(f"note: {kernel_note(scope)}")
    if warnings.seen and (lost := read_lost(perf, output) or warnings.estimate()) is not None and lost.lost:
        recording.metadata["lost samples"] = lost.fact()
        recording.lost = lost
        status.note(f"note: {lost.line()}")


STDERR_FD = 2


def _start(
    argv: list[str], piped: bool, env: dict[str, str], cwd: str | None, ignore_hangup: bool, stdout_ours: bool
) -> tuple[subprocess.Popen[bytes], IO[bytes]]:
    """perf, started in a process group of its own; its stderr (and the command's) to read. perf gets a
    copy of that pipe's read end: should we die (SIGKILL), its closing messages then fit in the pipe
    instead of killing it by SIGPIPE before it has finished perf.data and ended the command it launched.
    `stdout_ours`: our stdout carries the graph (-o -), so the command prints to our stderr instead."""
    reader, writer = os.pipe()
    try:
        proc = subprocess.Popen(
            [PERF_ARGV0, *argv[1:]],  # no directory in argv[0]: perf then puts none of its own in PATH
            executable=argv[0],
            stdout=subprocess.PIPE if piped else (STDERR_FD if stdout_ours else None),
            stderr=writer,
            env=env,
            cwd=cwd,
            pass_fds=(reader,),
            process_group=0,
            preexec_fn=perf_preexec(ignore_hangup),
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


def _abort(proc: subprocess.Popen[bytes], output: Path, status: Status) -> bool:
    """A third Ctrl-C/SIGTERM while perf finishes (or a bug): perf is killed. Returns whether what it
    wrote is worth keeping; a file perf was killed while finishing cannot be read, and we say so."""
    if proc.poll() is not None:
        return True
    proc.kill()
    proc.wait()
    if not output.is_file():
        return False
    size = output.stat().st_size / 1e6
    status.note(f"perf record was killed before it finished {output}: its {size:.1f} MB cannot be read")
    return False


def _identity(path: Path) -> tuple[int, ...] | None:
    """The file at `path` (device, inode, size, mtime), or None. perf renames a file with data away and
    truncates an empty one: either way the file after it has begun is another."""
    try:
        info = path.stat()
    except OSError:
        return None
    return info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns


def _began(output: Path, previous: tuple[int, ...] | None) -> bool:
    """perf has begun: it creates its output (a new file) just after installing its SIGINT handler
    (perf 6.1 __cmd_record), so from then on SIGINT stops it cleanly instead of killing it."""
    now = _identity(output)
    return now is not None and now != previous


def _ignore(line: str) -> None:
    pass


def _wait(
    proc: subprocess.Popen[bytes],
    spec: RecordSpec,
    started: float,
    output: Path,
    status: Status,
    err: _Relay,
    terminal: Terminal | None,
    previous: tuple[int, ...] | None,
    command: _Command,
    spool: Spool | None = None,
) -> _Ending:
    """Waits for perf, showing progress; stops it at the duration or on Ctrl-C/SIGTERM/SIGHUP, and ends
    a command that outlives perf's stop (`_Command`). `previous` is what `output` was before perf started
    (see `_identity`)."""
    stopped_ns = None
    duration = spec.options.duration
    try:
        while proc.poll() is None:
            elapsed = time.monotonic() - started
            if elapsed >= HOLD_SECONDS and not err.released:
                err.release()  # perf is recording: what comes now is the program's or perf's warnings
            if duration is not None and elapsed >= duration and stopped_ns is None and (
                _began(output, previous) or elapsed >= duration + READY_SECONDS
            ):  # a perf that has not yet begun would die of SIGINT, its recording unfinished
                stopped_ns = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
                proc.send_signal(signal.SIGINT)  # perf stops, writes its data, ends the command
            if terminal is not None:
                _watch_terminal(terminal, proc.pid)
            command.end(stopped_ns)
            if elapsed >= HOLD_SECONDS:
                size = spool.size() if spool is not None else output.stat().st_size if output.exists() else 0
                left = f", {max(duration - elapsed, 0):.0f} s left" if duration else ", Ctrl-C stops"
                status.show(f"recording {elapsed:5.1f} s, {size / 1e6:7.1f} MB{left}")
            try:
                proc.wait(timeout=POLL_SECONDS)
            except subprocess.TimeoutExpired:
                pass
        if stopped_ns is None and (command.killed or terminal is not None and proc.returncode == -signal.SIGINT):
            # Ctrl-C in the terminal went to perf's group: perf stopped on it and re-raised it as it exited
            # (or, its command killed by us, raised that command's SIGKILL)
            return _Ending(INTERRUPTED, signal.SIGINT if terminal is not None else None, command.stopped_ns(None))
        return _Ending(ENDED if stopped_ns is None else STOPPED, None, stopped_ns)
    except (KeyboardInterrupt, StopSignal) as stop:
        stopped_ns = command.stopped_ns(stopped_ns) or time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        signum = stop.signum if isinstance(stop, StopSignal) else signal.SIGINT
        _let_perf_finish(proc, output, status, signum, command, stopped_ns)
        return _Ending(INTERRUPTED, signum, stopped_ns)


def _watch_terminal(terminal: Terminal, perf: int) -> None:
    """Ctrl-Z stopped perf's group: the job stops with it. A hangup whose SIGHUP did not reach us (only
    perf's group, which ignores it): raised here, as if it had."""
    if stopped(perf):
        terminal.suspend()
    if terminal.hung_up():
        signal.raise_signal(signal.SIGHUP)  # ignored (nohup): perf goes on recording


def _let_perf_finish(
    proc: subprocess.Popen[bytes], output: Path, status: Status, signum: int, command: _Command, stopped_ns: int
) -> None:
    """Stops perf (SIGINT: it writes its data, ends the command) and waits while it finishes, the command
    killed if it outlives the grace. A second signal, even one that comes while the first is being said,
    kills a command perf still waits for at once; else it is told what a third would cost; the third
    raises (record() then kills perf)."""
    warned = said = sent = False
    while True:
        try:
            if not said:
                status.clear()
                status.note(f"stopping the recording ({stop_name(signum)} received)")
                said = True
            if not sent:
                if proc.poll() is None:
                    proc.send_signal(signal.SIGINT)  # (sent twice if a signal lands just here: harmless)
                sent = True
            while proc.poll() is None:
                command.end(stopped_ns)
                try:
                    proc.wait(timeout=POLL_SECONDS)
                except subprocess.TimeoutExpired:
                    pass
            return
        except (KeyboardInterrupt, StopSignal):
            if command.end(stopped_ns, at_once=True):
                continue  # perf was waiting for it: it finishes now
            if warned:
                raise
            warned = True
            size = output.stat().st_size / 1e6 if output.exists() else 0.0
            status.note(f"perf is still writing {output} ({size:.1f} MB); once more abandons the recording")
