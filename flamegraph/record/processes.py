"""The processes around perf record: the command it launched, found and ended when perf cannot end
it; and perf itself, told to stop should we die."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import time
from pathlib import Path

PR_SET_PDEATHSIG = 1  # linux/prctl.h
_LIBC = ctypes.CDLL(None, use_errno=True)  # looked up before fork: the child only calls it


class Workload:
    """The command perf launched (its child), so that it can be ended when perf dies without ending it
    (perf SIGTERMs it when it stops normally; killed, it leaves it running)."""

    def __init__(self, perf: subprocess.Popen[bytes], launched: bool) -> None:
        self._perf = perf
        self._looking = launched
        self.pid: int | None = None
        self._started: str | None = None  # /proc start time: the pid is not someone else's later

    @property
    def looking(self) -> bool:
        """Not found yet: perf forks it early (it waits for perf's go-ahead before exec), so look
        often until then; a perf killed between its fork and our look would leave it running."""
        return self._looking

    def look(self) -> None:
        if not self._looking or self._perf.poll() is not None:
            return
        children = children_of(self._perf.pid)
        if children:
            self.pid, self._started = children[0], start_time(children[0])
            self._looking = False

    def end(self, grace: float = 2.0) -> None:
        """SIGTERM, as perf would have sent, then SIGKILL after `grace` seconds."""
        if self.pid is None:
            return
        for signum in (signal.SIGTERM, signal.SIGKILL):
            if not self._alive():
                return
            with contextlib.suppress(OSError):
                os.kill(self.pid, signum)
            deadline = time.monotonic() + grace
            while self._alive() and time.monotonic() < deadline:
                time.sleep(0.02)

    def _alive(self) -> bool:
        return self.pid is not None and self._started is not None and start_time(self.pid) == self._started


def children_of(pid: int) -> list[int]:
    """The pids whose parent is `pid` (/proc/PID/task/*/children; a /proc scan if that file is absent)."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
        return [int(c) for t in tasks for c in Path(f"/proc/{pid}/task/{t}/children").read_text().split()]
    except FileNotFoundError:
        pass  # a kernel without CONFIG_PROC_CHILDREN, or perf gone
    except OSError:
        return []
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = _stat_fields(int(entry))
            if stat and stat[1] == str(pid):
                found.append(int(entry))
    return found


def start_time(pid: int) -> str | None:
    """The process's start time (field 22 of /proc/PID/stat); None once it is gone or a zombie."""
    fields = _stat_fields(pid)
    return fields[19] if fields and fields[0] not in ("Z", "X") else None


def _stat_fields(pid: int) -> list[str] | None:
    """/proc/PID/stat after the command name: state, ppid, ... (field 3 onwards)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None


def die_with_parent() -> None:
    """In perf's child process before exec: if we die (SIGKILL), perf gets SIGTERM and stops cleanly
    (perf handles SIGTERM as SIGINT: it writes its data and ends the command it launched)."""
    _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
