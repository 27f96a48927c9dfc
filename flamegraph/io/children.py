"""Starting the helper processes a run needs (`perf script`, `perf inject`, `perf evlist`, `c++filt`): each in
a process group of its own, killed should we die.

A terminal's Ctrl-C, Ctrl-\\ and Ctrl-Z, `kill -- -PGID` and `timeout -s INT` signal a whole process group.
A helper in ours would get them with us: a `perf script` folding a finished chunk of a streamed recording
stops early (perf script ends quietly on SIGINT) and that chunk's samples are lost, while we stop perf
record cleanly and still write the graph. In a group of its own only we decide when it stops: an error or a
second Ctrl-C of ours kills it (`subprocess.run` on any exception, `stream_script`'s `finally`, a streamed
fold's `stop`). Out of our group, `kill -9 -PGID` no longer reaches it: it is killed as we die
(PR_SET_PDEATHSIG, SIGKILL), whatever kills us. perf record has its own start (flamegraph.record.processes:
the terminal, the command it launches) on the same two rules.

    proc = start([perf, "script", ...], stdout=subprocess.PIPE)   # subprocess.Popen's arguments
    done = run([cxxfilt, "-p"], input=names, capture_output=True) # subprocess.run's

PR_SET_PDEATHSIG fires when the thread that started the child ends: start a helper from a thread that
outlives it (the thread that waits for it does).
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
from collections.abc import Callable, Sequence
from typing import Any

PR_SET_PDEATHSIG = 1  # linux/prctl.h
# Looked up once, here: the child between fork and exec only calls it. A look-up there (ctypes' dlsym takes
# the loader's lock) could hang the child for ever if another thread held that lock at the fork.
PRCTL = ctypes.CDLL(None, use_errno=True).prctl
PRCTL.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
PRCTL.restype = ctypes.c_int


def die_with(parent: int, signum: int) -> None:
    """In a child before exec: `signum` when its parent dies; if the parent is already gone (it died
    between fork and here), exit now. The kernel clears it at the exec of a binary with file capabilities
    (a perf given `setcap cap_perfmon`, a setuid one): such a helper outlives a `kill -9` of ours."""
    PRCTL(PR_SET_PDEATHSIG, signum, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


def _helper_preexec(parent: int) -> Callable[[], None]:
    def preexec() -> None:
        die_with(parent, signal.SIGKILL)

    return preexec


def _options(kwargs: dict[str, Any]) -> dict[str, Any]:
    """process_group=0 (setpgid in the child, before exec: no window where a group signal reaches it),
    the parent-death signal, and stdin from /dev/null unless given: a helper in a background group that
    read the terminal would be stopped (SIGTTIN)."""
    if "input" not in kwargs:
        kwargs.setdefault("stdin", subprocess.DEVNULL)
    return {**kwargs, "process_group": 0, "preexec_fn": _helper_preexec(os.getpid())}


def start(argv: Sequence[str], **kwargs: Any) -> subprocess.Popen[Any]:
    """subprocess.Popen(argv, ...) as a helper (see the module's doc)."""
    return subprocess.Popen(list(argv), **_options(kwargs))


def run(argv: Sequence[str], **kwargs: Any) -> subprocess.CompletedProcess[Any]:
    """subprocess.run(argv, ...) as a helper (see the module's doc); killed if the wait is interrupted."""
    return subprocess.run(list(argv), **_options(kwargs))
