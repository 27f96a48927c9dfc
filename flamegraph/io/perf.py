"""Building and running perf command lines (`perf script` here; recording lives beside it)."""

from __future__ import annotations

import shutil
import signal
import subprocess
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import IO, Protocol, cast

from . import children
from .diagnostics import InputMissing, NotPermitted, PerfFailed, PerfMissing
from .perf_header import tracepoints_with_callchains

INSTALL_HINT = "install it with `apt-get install linux-perf` (Debian) or your distribution's perf package"
# perf mmaps perf.data: reading past the end of a truncated file is a SIGBUS, not an error message.
CORRUPT_SIGNALS = frozenset({signal.SIGBUS, signal.SIGSEGV})
CORRUPT_HINT = "the file is likely truncated or corrupt"
# What perf 6.1 prints for a record it cannot parse (a file cut short, not at a page boundary):
#   0x30d68 [0]: failed to process type: 0 [Invalid argument]
# and for a header cut short (the magic is there: we only script files that start with it):
#   incompatible file format (rerun with -v to learn more)
CORRUPT_MESSAGES = ("failed to process type", "incompatible file format")
# ... and for a file `perf record` never finished (killed, or its disk filled), in two lines:
#   WARNING: The perf.data file's data size field is 0 which is unexpected.
#   Was the 'perf record' command properly terminated?
UNFINISHED_MESSAGE = "data size field is 0"


def find_perf() -> str:
    perf = shutil.which("perf")
    if perf is None:
        raise PerfMissing(f"perf is not installed: {INSTALL_HINT}")
    return perf


# perf script keeps at most kernel.perf_event_max_stack frames (127) of a call chain, from the leaf:
# deeper stacks (Python's nested imports and C->Python calls, recursion) lost their root. A DWARF dump
# of 64 KiB holds fewer frames than this, so the whole unwound chain is kept.
MAX_STACK = 4096


def script_command(perf_data: str, with_pid: bool = False, extra: Sequence[str] = ()) -> list[str]:
    """`perf script` for folding: --no-inline (addr2line inline resolution is ~130x slower on DWARF).

    Without fields of the caller's (`-F` in `extra`), perf's default fields less the period: a
    folded count of perf.data is a number of samples, as `record` folds it (`record` names its fields
    without the period). With the period printed, each sample would weigh its period (ns of cpu-clock)."""
    command = [find_perf(), "script", "-i", perf_data, "--no-inline", "--max-stack", str(MAX_STACK)]
    if "-F" not in extra:
        if tracepoints_with_callchains(perf_data):
            # Any -F (the period's too) makes perf drop the frames it adds to a tracepoint's default fields
            # when the samples have call chains: name them again. Before the -period: no override warning.
            command += ["-F", "trace:+ip,+sym,+symoff,+dso"]
        command += ["-F", "+pid,-period" if with_pid else "-period"]  # +pid: the reference's --pid/--tid headers
    return [*command, *extra]


def failure_reason(stderr: str) -> str:
    """perf's reason for failing: the last line it printed."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    return lines[-1] if lines else "no message"


def describe_exit(code: int) -> str:
    """A child's return code in words: 'exit 2', or 'killed by SIGBUS' for -7."""
    if code >= 0:
        return f"exit {code}"
    try:
        return f"killed by {signal.Signals(-code).name}"
    except ValueError:
        return f"killed by signal {-code}"


class StderrTail:
    """Drains a child's stderr in a thread, keeping its last lines.

    perf writes a warning per unwinding failure: read only after stdout closes, its stderr fills the
    pipe (64 KiB) and perf blocks on it while we wait for stdout, for ever.
    """

    def __init__(self, pipe: IO[bytes], keep: int = 20) -> None:
        self._lines: deque[str] = deque(maxlen=keep)
        self._thread = threading.Thread(target=self._run, args=(pipe,), daemon=True)
        self._thread.start()

    def _run(self, pipe: IO[bytes]) -> None:
        with pipe:
            for raw in pipe:
                line = raw.decode(errors="replace").strip()
                if line:
                    self._lines.append(line)

    def lines(self) -> list[str]:
        """The last lines, once the child has closed its stderr (it has exited)."""
        self._thread.join(timeout=10)
        return list(self._lines)


class ScriptKilled(PerfFailed):
    """`perf script` killed by a signal we did not send (SIGKILL from elsewhere, the OOM killer): its text
    was cut short. A streamed recording counts that chunk's samples lost and goes on (record.stream)."""

    def __init__(self, label: str, code: int, said: str) -> None:
        super().__init__(f"{label}: perf script failed ({describe_exit(code)}): {said or 'no message'}")
        self.how = describe_exit(code)  # 'killed by SIGKILL'


def script_error(label: str, code: int, stderr: list[str]) -> Exception:
    """A failed `perf script` as one of our errors: perf's last line, and what a signal death means."""
    said = stderr[-1] if stderr else ""
    if "not owned by current user" in said or "Permission denied" in said:
        return NotPermitted(f"{label}: perf script: {said}")
    if code < 0 and -code in CORRUPT_SIGNALS:
        detail = f" (perf said: {said})" if said else ""
        return InputMissing(f"{label}: perf script was {describe_exit(code)}: {CORRUPT_HINT}{detail}")
    if any(UNFINISHED_MESSAGE in line for line in stderr):
        return InputMissing(
            f"{label}: perf record never finished this file (it was killed, or its disk filled): perf cannot read it"
        )
    if any(text in said for text in CORRUPT_MESSAGES):
        return InputMissing(f"{label}: perf script failed ({describe_exit(code)}): {said}: {CORRUPT_HINT}")
    if code < 0:
        return ScriptKilled(label, code, said)
    return PerfFailed(f"{label}: perf script failed ({describe_exit(code)}): {said or 'no message'}")


_RUNNING: set[subprocess.Popen[bytes]] = set()  # the perf scripts being read, in any thread
_RUNNING_LOCK = threading.Lock()


def kill_running_scripts() -> None:
    """Kill every `perf script` being read: a signal to the main thread while another thread folds (a
    streamed recording's folder) must not leave one running. Their readers then fail, and are not waited for."""
    with _RUNNING_LOCK:
        for proc in _RUNNING:
            proc.kill()


class ScriptWatcher(Protocol):
    """Told of each `perf script` a thread starts, and of its end before it is reaped (its pid still its own)."""

    def started(self, pid: int) -> None: ...

    def ended(self, pid: int) -> None: ...


_WATCHER: ContextVar[ScriptWatcher | None] = ContextVar("script_watcher", default=None)


@contextmanager
def watching_scripts(watcher: ScriptWatcher) -> Iterator[None]:
    """The `perf script`s this thread starts meanwhile are told to `watcher` (the streamed folder sets their
    scheduling priority: flamegraph.record.fold_priority)."""
    token = _WATCHER.set(watcher)
    try:
        yield
    finally:
        _WATCHER.reset(token)


class ScriptOutput:
    """`perf script`'s stdout, read as a binary stream or line by line, that does not end quietly when perf
    was killed: perf's stdout is block-buffered, so a signal cuts it mid-record. At the end of the text it
    waits for perf, and a death by signal is raised there (`script_error`: ScriptKilled, InputMissing)
    before the reader sees the end: the record cut short, held back until then (a reader's carry, a record
    the fold has begun), is never folded as if it were whole."""

    def __init__(self, raw: IO[bytes], end: Callable[[], int], label: str, said: Callable[[], list[str]]) -> None:
        self._raw = raw
        self._end = end  # waits for perf: its return code
        self._label = label
        self._said = said

    def read(self, size: int = -1) -> bytes:
        data = self._raw.read(size)
        if size < 0 or not data and size:  # at the end (read() reads to it)
            self._ended()
        return data

    def __iter__(self) -> Iterator[bytes]:
        yield from self._raw
        self._ended()

    def fileno(self) -> int:
        return self._raw.fileno()

    def close(self) -> None:
        self._raw.close()

    def _ended(self) -> None:
        code = self._end()
        if code < 0:
            raise script_error(self._label, code, self._said())


@contextmanager
def stream_script(command: list[str], label: str) -> Iterator[IO[bytes]]:
    """Run `perf script`, yield its stdout as it comes; a failure becomes one clear error.

    stderr is drained alongside (see StderrTail); if the reader stops with an exception (Ctrl-C,
    SIGTERM, a --strict failure) perf is killed rather than left writing to a closed pipe. perf runs as
    a helper (flamegraph.io.children): a Ctrl-C to our process group does not cut its text short. Killed
    by a signal, its end is raised where the reader reaches it (ScriptOutput)."""
    try:
        proc = children.start(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=1 << 20)
    except OSError as err:
        raise PerfFailed(f"{label}: cannot run perf: {err.strerror}") from None
    assert proc.stdout is not None and proc.stderr is not None
    stderr = StderrTail(proc.stderr)
    finished = False
    watcher = _WATCHER.get()
    told = False

    def end() -> int:
        nonlocal told
        if watcher is not None and not told:
            told = True
            watcher.ended(proc.pid)  # (before the wait: until reaped, the pid cannot name another process)
        return proc.wait()

    with _RUNNING_LOCK:
        _RUNNING.add(proc)
    try:
        if watcher is not None:
            watcher.started(proc.pid)
        yield cast(IO[bytes], ScriptOutput(proc.stdout, end, label, stderr.lines))  # what readers use of IO
        finished = True
    finally:
        if not finished:
            proc.kill()
        proc.stdout.close()
        code = end()
        with _RUNNING_LOCK:
            _RUNNING.discard(proc)
        said = stderr.lines()
    if code != 0:
        raise script_error(label, code, said)
