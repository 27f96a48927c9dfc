"""The guard: a small process that ends perf and the command it launched should flamegraph die (SIGKILL, the
OOM killer), when nothing of ours is left to do it.

perf's parent-death signal (SIGTERM) makes it stop, finish perf.data and SIGTERM its command, but then perf
waits for that command: one that ignores SIGTERM (or is slow to end) kept perf and itself running for ever,
reparented to init. The guard, started beside perf in a process group of its own (a signal to ours does not
reach it), holds the read end of a pipe whose write end only we hold: end of file without our word means we
died. It then waits GRACE seconds for perf, SIGKILLs perf's children (the command), gives perf FINISH seconds
to finish its data, kills it if it has not, and ends the rest of perf's process group (SIGTERM, then SIGKILL
after GRACE), as `processes.end_group` does when we are alive. perf is named by a pidfd, so a pid handed out
again is never signalled. Run as a script (`python -I -S guard.py PERF_PID PIDFD`): stdlib only,
no site, nothing imported from flamegraph (~10 ms to start).

    guard = Guard.start(perf_pid)   # after perf has started
    ...
    guard.release()                 # perf's group has ended: the guard exits, reaped
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import time

GRACE = 2.0  # seconds a command has to end after SIGTERM (processes.end_group's too)
FINISH = 10.0  # seconds perf has to finish perf.data once its command has ended


class Guard:
    """Our side of the guard: its process and the pipe that tells it we are alive."""

    def __init__(self, proc: subprocess.Popen[bytes] | None = None, writer: int | None = None) -> None:
        self._proc, self._writer = proc, writer

    @classmethod
    def start(cls, perf: int) -> Guard:
        """A guard for perf `perf` (our child, not yet reaped: its pid is certainly perf's). Where it cannot
        start (no pidfd, no Python executable), none: perf's parent-death signal alone, as before."""
        if not sys.executable:
            return cls()
        try:
            pidfd = os.pidfd_open(perf)
        except (AttributeError, OSError):
            return cls()
        try:
            reader, writer = os.pipe()  # not inherited: only we hold the write end
        except OSError:
            os.close(pidfd)
            return cls()
        try:
            proc = subprocess.Popen(
                [sys.executable, "-I", "-S", __file__, str(perf), str(pidfd)],
                stdin=reader,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                pass_fds=(pidfd,),
                process_group=0,
            )
        except OSError:
            os.close(writer)
            return cls()
        finally:
            os.close(reader)
            os.close(pidfd)
        return cls(proc, writer)

    def release(self) -> None:
        """perf's group has ended (we are alive): the guard is told so, exits, and is reaped."""
        if self._writer is not None:
            with contextlib.suppress(OSError):
                os.write(self._writer, b"x")
            os.close(self._writer)
            self._writer = None
        if self._proc is None:
            return
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._proc.wait(timeout=5)
        if self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
        self._proc = None


def _alive(pidfd: int, seconds: float) -> bool:
    """perf still runs after waiting up to `seconds` (a pidfd is readable once the process has exited)."""
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    deadline = time.monotonic() + seconds
    while True:
        left = deadline - time.monotonic()
        if poller.poll(max(left, 0) * 1000):
            return False
        if left <= 0:
            return True


def _children(pid: int) -> list[int]:
    found = []
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as listing:
                found += [int(child) for child in listing.read().split()]
    return found


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except OSError:
        return False
    return True


def _guard(perf: int, pidfd: int) -> None:
    if os.read(0, 1):
        return  # our word: we are alive and perf's group has ended
    # We died. perf got SIGTERM (its parent-death signal): it stops and SIGTERMs its command.
    if _alive(pidfd, GRACE):
        for child in _children(perf):  # the command, which did not end on SIGTERM: perf waits for it
            with contextlib.suppress(OSError):
                os.kill(child, signal.SIGKILL)
        if _alive(pidfd, FINISH):
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
            _alive(pidfd, GRACE)
    for signum in (signal.SIGTERM, signal.SIGKILL):  # what is left of perf's group (the command's children)
        try:
            os.killpg(perf, signum)
        except OSError:
            return
        deadline = time.monotonic() + GRACE
        while _group_alive(perf) and time.monotonic() < deadline:
            time.sleep(0.05)


if __name__ == "__main__":  # (in a process group of its own: a terminal's signals do not reach it)
    _guard(int(sys.argv[1]), int(sys.argv[2]))
