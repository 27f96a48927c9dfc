"""A host's recording watchdog: stops perf when the worker that should stop it no longer answers.

`record()` stops perf at --duration from a thread of the Dask worker. A worker that is stopped
(SIGSTOP, a debugger, a frozen container) is not dead, so perf's parent-death signal never comes:
perf and the command it launched ran on after the client had given up on the host. The watchdog is
a process apart (its own session, so a signal to the worker's group does not stop it too): at
perf's start + duration + MARGIN it sends perf SIGINT, as --duration does (perf writes its data and
ends the command), and SIGKILL to perf's process group (perf, the command, its children) KILL_AFTER
seconds later if perf is still there. A worker that answers stops perf first and ends the watchdog.

    python -c BOOT ROOT WORKER_PID PERF_DATA DURATION     (started by tasks.Stopper)
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from ..record.processes import children_of, start_time
from .hosts import records_into

MARGIN = 2.0  # seconds past --duration before the watchdog steps in (record() stops perf at --duration)
KILL_AFTER = 10.0  # seconds perf gets to write its data after SIGINT
FIND_PERF = 60.0  # seconds after which a perf that never started is no longer looked for
POLL = 0.2
BOOT = "import sys; sys.path.insert(0, sys.argv[1]); from flamegraph.fleet.watchdog import main; main(sys.argv[2:])"


def start(data: Path, duration: float) -> subprocess.Popen[bytes]:
    """The watchdog of the perf this process is about to start to record into `data`."""
    root = str(Path(__file__).resolve().parents[2])  # the directory holding the flamegraph package
    argv = [sys.executable, "-c", BOOT, root, str(os.getpid()), str(data), repr(duration)]
    return subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )


def main(argv: list[str]) -> None:
    worker, data, duration = int(argv[0]), argv[1], float(argv[2])
    perf = _find_perf(worker, data)
    if perf is None:
        return
    pid, started = perf
    deadline = _started_at(started) + duration + MARGIN
    while _boot_clock() < deadline:
        if start_time(pid) != started:
            return  # perf ended in time: the worker is well
        time.sleep(POLL)
    _signal(pid, started, signal.SIGINT)
    end = time.monotonic() + KILL_AFTER
    while start_time(pid) == started and time.monotonic() < end:
        time.sleep(POLL)
    if start_time(pid) == started:  # perf leads its own process group (record/run.py): the command too
        with contextlib.suppress(OSError):
            os.killpg(pid, signal.SIGKILL)


def _find_perf(worker: int, data: str) -> tuple[int, str] | None:
    """(pid, start time) of the worker's child that records into `data`; None if none comes."""
    end = time.monotonic() + FIND_PERF
    while time.monotonic() < end and start_time(worker) is not None:
        for pid in children_of(worker):
            started = start_time(pid)
            if started is not None and records_into(pid, data):
                return pid, started
        time.sleep(POLL)
    return None


def _started_at(ticks: str) -> float:
    """A /proc start time (clock ticks since boot) in CLOCK_BOOTTIME seconds."""
    return int(ticks) / os.sysconf("SC_CLK_TCK")


def _boot_clock() -> float:
    return time.clock_gettime(time.CLOCK_BOOTTIME)


def _signal(pid: int, started: str | None, signum: int) -> None:
    """Signal `pid` if it is still the process that started at `started` (not a later one with its pid)."""
    if started is not None and start_time(pid) == started:
        with contextlib.suppress(OSError):
            os.kill(pid, signum)
