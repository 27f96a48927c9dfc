"""The streamed folder's `perf script` runs at idle priority while the spool has room, at normal priority
when it falls behind or once perf has ended.

Folding while perf records takes CPU from the program recorded: on two cores, `perf script` unwinding
64 KB DWARF stacks is a third of the fold's CPU and competes with a program that keeps both busy. Run
as SCHED_IDLE it only takes CPU no one else wants; the spool's cap is its slack (a chunk is a sixth of
`--max-spool`, a chunk is dropped when four wait). Once a finished chunk waits behind the one being
folded, the running script and the next ones go back to normal priority (SCHED_OTHER), so that a busy
machine slows the program rather than lose its samples; idle again once it has caught up. Once perf has
ended nothing is recorded any more and the user waits for the folding: the last scripts run at normal
priority (idle, they starved behind any busy process, such as a --pid target still running: seen, 12 s
at 1 % CPU to fold a 2 s recording beside two busy loops on two cores). Our own
process keeps its priority: a descheduled thread holding the GIL would stall the spool's watcher
(measured: nice +10 for the whole fold thread switched chunks late, past the cap). A user who may not
set a script back (no CAP_SYS_NICE and an RLIMIT_NICE below 20: sched(7)) gets normal priority
throughout: an idle script that can never be raised would starve behind a busy machine and lose chunks.

    priority = FoldPriority(spool)           # FLAMEGRAPH_FOLD_PRIORITY=normal: never idle
    with priority.watching():                # the folder thread: its perf scripts are watched
        ...
"""

from __future__ import annotations

import os
import resource
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol

from ..io.diagnostics import BadOption
from ..io.perf import watching_scripts

PRIORITY_VARIABLE = "FLAMEGRAPH_FOLD_PRIORITY"
IDLE, NORMAL = "idle", "normal"
URGENT_WAITING = 1  # a chunk waiting: behind; three more before a drop (flamegraph.record.spool)
POLL_SECONDS = 0.1
CAP_SYS_NICE = 23  # linux/capability.h


class Waiting(Protocol):
    @property
    def waiting(self) -> int: ...

    @property
    def perf_ended(self) -> bool: ...


def priority_mode(environ: dict[str, str] | None = None) -> str:
    """idle (the default: idle while the spool has room) or normal, from FLAMEGRAPH_FOLD_PRIORITY."""
    value = (environ if environ is not None else os.environ).get(PRIORITY_VARIABLE, IDLE).strip().lower() or IDLE
    if value not in (IDLE, NORMAL):
        raise BadOption(f"{PRIORITY_VARIABLE}={value!r}: expected {IDLE} or {NORMAL}")
    return value


def can_leave_idle(status: str = "/proc/self/status") -> bool:
    """Whether a perf script of ours, once SCHED_IDLE, may be set back to SCHED_OTHER: with CAP_SYS_NICE,
    or where RLIMIT_NICE allows nice 0 (a limit of 20 or more; sched(7), Linux 2.6.39 and later)."""
    try:
        with open(status) as lines:
            effective = next((line.split()[1] for line in lines if line.startswith("CapEff:")), "0")
        if int(effective, 16) >> CAP_SYS_NICE & 1:
            return True
    except (OSError, ValueError):
        pass  # no /proc: the limit decides
    soft, _ = resource.getrlimit(resource.RLIMIT_NICE)
    return soft == resource.RLIM_INFINITY or soft >= 20


class FoldPriority:
    """Sets each watched `perf script`'s scheduling policy from the spool's queue (see the module's doc)."""

    def __init__(self, spool: Waiting, mode: str | None = None) -> None:
        self.mode = mode if mode is not None else priority_mode()
        if self.mode == IDLE and not can_leave_idle():
            self.mode = NORMAL  # an idle script could never be raised when the folding falls behind
        self.raised = 0  # times a script went from idle to normal because the folding was behind
        self._spool = spool
        self._lock = threading.Lock()
        self._pid: int | None = None
        self._idle = False  # the watched script's policy as we set it
        self._stop = threading.Event()

    @contextmanager
    def watching(self) -> Iterator[None]:
        if self.mode == NORMAL:
            yield
            return
        poller = threading.Thread(target=self._poll, name="fold-priority", daemon=True)
        poller.start()
        try:
            with watching_scripts(self):
                yield
        finally:
            self._stop.set()
            poller.join()

    def started(self, pid: int) -> None:
        with self._lock:
            self._pid, self._idle = pid, False
            self._apply()

    def ended(self, pid: int) -> None:
        with self._lock:
            if self._pid == pid:
                self._pid = None

    def _poll(self) -> None:
        while not self._stop.wait(POLL_SECONDS):
            with self._lock:
                self._apply()

    def _apply(self) -> None:
        if self._pid is None:
            return
        behind = self._spool.waiting >= URGENT_WAITING
        idle = not behind and not self._spool.perf_ended  # ended: the user waits for the fold, not the program
        if idle == self._idle:
            return
        policy = os.SCHED_IDLE if idle else os.SCHED_OTHER
        try:
            os.sched_setscheduler(self._pid, policy, os.sched_param(0))
        except PermissionError:  # back from SCHED_IDLE needs RLIMIT_NICE room (root has it): its next chunk's does
            return
        except ProcessLookupError:
            self._pid = None
            return
        if self._idle and behind:
            self.raised += 1
        self._idle = idle
