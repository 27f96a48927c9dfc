"""The guard: a small process that ends perf and the command it launched should flamegraph die (SIGKILL, the
OOM killer), when nothing of ours is left to do it.

perf's parent-death signal (SIGTERM) makes it stop, finish perf.data and SIGTERM its command, but then perf
waits for that command: one that ignores SIGTERM (or is slow to end) kept perf and itself running for ever,
reparented to init. The guard, started beside perf in a process group of its own (a signal to ours does not
reach it), holds the read end of a pipe whose write end only we hold: end of file without our word means we
died. It then waits for perf, SIGKILLs perf's children (the command) GRACE seconds after (SHUTDOWN_GRACE
if it handles SIGTERM: a shutdown under way), gives perf FINISH seconds to finish its data, kills it if it
has not, and ends the rest of perf's process group (SIGTERM, then SIGKILL after GRACE), as
`processes.end_group` does when we are alive. perf is named by a pidfd, so a pid handed out again is never
signalled. Run as a script (`python -I -S guard.py PERF_PID PIDFD`): stdlib only, no site, nothing imported
from flamegraph (~10 ms to start); `run.py` asks it too what a command does with SIGTERM (`live_children`).

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
SHUTDOWN_GRACE = 30.0  # ... a command that handles SIGTERM: its exit handlers run (MXNet's dump, --jit's kernels)
MASKS = ("SigIgn", "SigBlk", "SigCgt")  # /proc/PID/status: ignored, blocked, caught signals (hex masks)
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


class Command:
    """A live child of perf (the command it launched, which perf waits for once it has stopped): its name
    and what it does with SIGTERM, from /proc/PID/status."""

    def __init__(self, pid: int, name: str, ignores: bool, handles: bool) -> None:
        self.pid, self.name, self.ignores, self.handles = pid, name, ignores, handles

    def grace(self) -> float:
        """How long it may take to end after SIGTERM: a handler is a shutdown under way; ignored or
        blocked, it never ends by itself; at its default, alive is stuck (stopped, in the kernel)."""
        return SHUTDOWN_GRACE if self.handles else GRACE

    def describe(self) -> str:
        """'stubborn (pid 4242) ignores SIGTERM', 'sh (pid 4242) did not end on SIGTERM'."""
        how = "ignores SIGTERM" if self.ignores else "did not end on SIGTERM"
        return f"{self.name} (pid {self.pid}) {how}"


def live_children(pid: int) -> list[Command]:
    """perf's children still running (not zombies: those ended by themselves), with their SIGTERM."""
    found = []
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as listing:
                found += [command for child in listing.read().split() if (command := _command(int(child)))]
    return found


def _command(pid: int) -> Command | None:
    fields = {}
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                key, _, value = line.partition(":")
                fields[key] = value.strip()
        ignored, blocked, caught = (bool(int(fields[key], 16) >> (signal.SIGTERM - 1) & 1) for key in MASKS)
        # blocked with a handler: the handler runs (the kernel blocks its signal meanwhile); without: never
        return None if fields["State"][:1] in "ZX" else Command(
            pid, fields["Name"], ignored or blocked and not caught, caught and not ignored
        )
    except (OSError, KeyError, ValueError):
        return None


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
    started = time.monotonic()
    while _alive(pidfd, GRACE):
        waited = time.monotonic() - started
        commands = live_children(perf)  # the command, which did not end on SIGTERM: perf waits for it
        for command in commands:
            if waited >= command.grace():
                with contextlib.suppress(OSError):
                    os.kill(command.pid, signal.SIGKILL)
        if not commands and _alive(pidfd, FINISH):  # perf is finishing perf.data (or stuck)
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
            _alive(pidfd, GRACE)
            break
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
