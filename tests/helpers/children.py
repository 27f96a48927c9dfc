"""The processes a test starts and stops: a child that Ctrl-C can reach whatever pytest inherited, and the
end of whatever a test's child left running (a failed assertion must not leave a spinning recording)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TypeVar

Child = subprocess.Popen[bytes] | subprocess.Popen[str]
P = TypeVar("P", subprocess.Popen[bytes], subprocess.Popen[str])
_watched: list[Child] = []  # what `tracked` was given during the current `watchdog`


def interruptible() -> None:
    """preexec_fn of a child a test sends SIGINT (or Ctrl-C on a pty): it starts with SIGINT at its default.
    A pytest-xdist worker or a background job (`(pytest &)`) ignores SIGINT, a child inherits SIG_IGN and
    keeps it (Python installs no KeyboardInterrupt handler then, `sh` cannot even trap it), and the test
    that expects a user's Ctrl-C to stop it fails or hangs. SIGHUP likewise: under `nohup make test` every
    child inherits it ignored, and flamegraph rightly keeps it ignored (as `nohup` asked)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def session_members(session: int) -> list[str]:
    """'pid comm state' of the live processes of `session` (a child started with start_new_session=True:
    its pid is the session id): flamegraph, perf, the command perf launched, perf script."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_bytes().decode(errors="replace")  # any comm: 0xff too
        except OSError:
            continue
        comm, fields = stat[stat.index("(") + 1 : stat.rindex(")")], stat.rpartition(")")[2].split()
        if int(fields[3]) == session and fields[0] not in ("Z", "X"):
            found.append(f"{entry} {comm} {fields[0]}")
    return found


def end_session(proc: Child, grace: float = 5.0) -> None:
    """SIGKILL the child and every process left in its session (started with start_new_session=True;
    otherwise the child alone, and perf ends on its parent-death signal), repeatedly until none is left
    (a dying perf may still fork), at most `grace` seconds; the child reaped. A no-op once all ended."""
    deadline = time.monotonic() + grace
    with contextlib.suppress(ProcessLookupError):
        proc.kill()
    while True:
        members = [int(line.split()[0]) for line in session_members(proc.pid)]
        for pid in members:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        if not members or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=grace)


@contextlib.contextmanager
def ended(proc: Child) -> Iterator[None]:
    """`with ended(proc):` the body, then the child's session ended however the body left."""
    try:
        yield
    finally:
        end_session(proc)


def tracked(proc: P) -> P:
    """`proc`, to be ended with the current `watchdog`."""
    _watched.append(proc)
    return proc


@contextlib.contextmanager
def watchdog(limit: float, *children: Child) -> Iterator[None]:
    """`children`, and every child `tracked` meanwhile, are ended (their sessions) when the body ends, or
    once it has run `limit` seconds: a test stalled on a child's pipe (a readline, a wait without timeout)
    then sees it end and fails, instead of hanging the suite; a failed test leaves no recording spinning."""

    def end_all() -> None:
        for proc in list(_watched):
            end_session(proc)

    _watched.extend(children)
    timer = threading.Timer(limit, end_all)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        end_all()
        _watched.clear()
