"""The processes around perf record. perf runs in a process group of its own, and the command it
launches (perf forks it) with it: a signal to our group (a hangup, `kill -- -PGID`, Ctrl-C when we keep
the terminal) reaches us, not perf, and we stop perf cleanly. Once perf has ended, what is left of that
group (the command, its children) is ended at once. A command we launch gets the terminal (stdin, Ctrl-C,
Ctrl-Z) as if it ran alone; perf is told to stop should we die."""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from ..io.children import die_with

SIG_DFL, SIG_IGN = 0, 1  # signal.h's, as the pointer libc's signal() takes
_LIBC = ctypes.CDLL(None, use_errno=True)  # looked up before fork: the child only calls it
_LIBC.signal.argtypes = (ctypes.c_int, ctypes.c_void_p)
_LIBC.signal.restype = ctypes.c_void_p
_LIBC.sigprocmask.argtypes = (ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)
SIG_SETMASK = 2  # signal.h (Linux)
_NO_SIGNALS = ctypes.create_string_buffer(128)  # an empty sigset_t (glibc's is 128 bytes), made before fork
VDSO_TEMP = "/tmp/perf-vdso.so-"  # perf's copy of the vDSO while it reads build-ids (util/vdso.c, fixed /tmp)


def perf_preexec(ignore_hangup: bool) -> Callable[[], None]:
    """In perf's child process before exec (already in its own process group): if we die (SIGKILL),
    perf gets SIGTERM and stops cleanly (perf handles SIGTERM as SIGINT: it writes its data and ends the
    command it launched). With the terminal handed to perf's group, a hangup also sends SIGHUP there
    (the kernel, as the shell exits), which perf does not handle: it ignores it, as under nohup.
    perf starts with no signal blocked, whatever the thread that starts it blocks (a signal mask
    survives exec): a perf with SIGINT blocked never stopped at --duration. And with SIGINT and SIGTERM
    at their default, whatever we inherited (a background job, a pytest-xdist worker ignore SIGINT; an
    ignored signal stays ignored across exec): our stop, sent before perf has installed its handlers
    (--duration's deadline on a loaded machine), then kills it and is reported, where an ignored one was
    lost and perf recorded on forever. perf installs its handlers before it forks the command, so the
    command's own dispositions do not change. (Helpers start through flamegraph.io.children.)"""
    parent = os.getpid()

    def preexec() -> None:
        _LIBC.sigprocmask(SIG_SETMASK, _NO_SIGNALS, None)
        _LIBC.signal(signal.SIGINT, SIG_DFL)
        _LIBC.signal(signal.SIGTERM, SIG_DFL)
        die_with(parent, signal.SIGTERM)
        if ignore_hangup:
            _LIBC.signal(signal.SIGHUP, SIG_IGN)

    return preexec


def end_group(pgid: int, grace: float = 2.0) -> None:
    """SIGTERM to whatever is left in perf's process group (the command perf launched and its children:
    perf only ends the command itself), then SIGKILL after `grace` seconds. Called once perf is reaped:
    its pid cannot be handed out again while any process of the group lives."""
    for signum in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pgid, signum)
        except (ProcessLookupError, PermissionError):
            return  # nobody left, or only processes that became another user's (nothing we may end)
        deadline = time.monotonic() + grace
        while _group_alive(pgid) and time.monotonic() < deadline:
            time.sleep(0.01)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def stopped(pid: int) -> bool:
    """Stopped by job control (Ctrl-Z, SIGTTIN): state T in /proc/PID/stat."""
    fields = _stat_fields(pid)
    return bool(fields) and fields[0] == "T"  # type: ignore[index]


def children_of(pid: int) -> list[int]:
    """The pids whose parent is `pid` (/proc/PID/task/*/children; a /proc scan if that file is absent)."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
        return [int(c) for t in tasks for c in Path(f"/proc/{pid}/task/{t}/children").read_text().split()]
    except FileNotFoundError:
        pass  # a kernel without CONFIG_PROC_CHILDREN, or the process gone
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
    """The process's start time (field 22 of /proc/PID/stat); None once it is gone or a zombie: with the
    pid, it names one process (not a later one given the same pid)."""
    fields = _stat_fields(pid)
    return fields[19] if fields and fields[0] not in ("Z", "X") else None


def _stat_fields(pid: int) -> list[str] | None:
    """/proc/PID/stat after the command name: state, ppid, ... (field 3 onwards)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None


class Terminal:
    """Our controlling terminal while a command we launched records in it: perf's process group becomes
    its foreground group, so that the command reads stdin and gets Ctrl-C, Ctrl-Z as if it ran alone
    (perf gets Ctrl-C too and stops cleanly on it), and is given back to us when perf ends."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.group: int | None = None
        self._hung_up = False

    @classmethod
    def held(cls) -> Terminal | None:
        """Stdin as a terminal whose foreground group is ours (not in the background, not a pipe, not
        a library caller's thread): the only case where the command could read it or get Ctrl-C."""
        if threading.current_thread() is not threading.main_thread():
            return None
        try:
            return cls(0) if os.isatty(0) and os.tcgetpgrp(0) == os.getpgrp() else None
        except OSError:
            return None

    def give(self, pgid: int) -> None:
        self.group = pgid
        with contextlib.suppress(OSError):
            os.tcsetpgrp(self.fd, pgid)

    def take_back(self) -> None:
        """Ours again (from the background, hence SIGTTOU blocked); a hung-up terminal: nothing to take."""
        if self.group is None:
            return
        self.group = None
        with _blocked(signal.SIGTTOU), contextlib.suppress(OSError):
            os.tcsetpgrp(self.fd, os.getpgrp())

    def suspend(self) -> None:
        """Ctrl-Z stopped perf's group: stop ours too, so that the shell sees the job stopped and takes
        the terminal; on `fg` (SIGCONT to us) hand it back and continue perf's group."""
        group = self.group
        if group is None:
            return
        self.take_back()
        with contextlib.suppress(OSError):
            os.killpg(os.getpgrp(), signal.SIGTSTP)  # discarded in an orphaned group: we just go on
        self.give(group)
        with contextlib.suppress(OSError):
            os.killpg(group, signal.SIGCONT)

    def hung_up(self) -> bool:
        """True once, when the terminal has hung up: the SIGHUP may have gone to perf's group alone
        (the kernel sends it to the foreground group when the session leader exits)."""
        if self._hung_up or self.group is None:
            return False
        poller = select.poll()
        poller.register(self.fd, 0)  # POLLHUP is always reported
        self._hung_up = any(events & (select.POLLHUP | select.POLLERR) for _, events in poller.poll(0))
        return self._hung_up


@contextlib.contextmanager
def _blocked(signum: int) -> Iterator[None]:
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signum})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def vdso_copies() -> set[str]:
    """perf's temporary vDSO copies now in /tmp that are ours (perf removes its own as it exits)."""
    folder, _, prefix = VDSO_TEMP.rpartition("/")
    try:
        names = [entry for entry in os.scandir(folder) if entry.name.startswith(prefix)]
        return {entry.path for entry in names if entry.is_file(follow_symlinks=False) and _ours(entry)}
    except OSError:
        return set()


def _ours(entry: os.DirEntry[str]) -> bool:
    with contextlib.suppress(OSError):
        return entry.stat(follow_symlinks=False).st_uid == os.geteuid()
    return False


def remove_vdso_copies(before: set[str]) -> None:
    """After perf was killed: the vDSO copies that appeared while it ran were its own (another perf of
    ours finishing at that very moment would lose its copy too: a narrow race, and only vDSO names)."""
    for path in vdso_copies() - before:
        with contextlib.suppress(OSError):
            os.unlink(path)
