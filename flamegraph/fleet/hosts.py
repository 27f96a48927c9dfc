"""On a host: who it is, and which of its processes a `--match` pattern names.

Runs inside a Dask worker, without Dask. The host is the machine's name; `FLAMEGRAPH_FLEET_HOST`
in a worker's environment overrides it, so that tests (and demos) can let several workers on one
machine stand for several hosts. The header then says the names were simulated.
"""

from __future__ import annotations

import os
import re
import socket
from pathlib import Path

from .model import HostIdentity

HOST_VARIABLE = "FLAMEGRAPH_FLEET_HOST"


def installed_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("flamegraph-perf")
    except PackageNotFoundError:
        return "unknown"


def host_identity() -> HostIdentity:
    """This worker's host (called on each worker through `Client.run`)."""
    override = os.environ.get(HOST_VARIABLE, "").strip()
    return HostIdentity(override or socket.gethostname(), bool(override), installed_version())


def parent_of(pid: int, proc: Path = Path("/proc")) -> int | None:
    try:
        stat = (proc / str(pid) / "stat").read_bytes()
    except OSError:
        return None
    return int(stat[stat.rfind(b")") + 2 :].split()[1])  # field 4, after "(comm)", which may hold blanks


def _ancestors(pid: int, proc: Path) -> set[int]:
    """`pid` and every process above it: the worker, its nanny, the shell that started them."""
    seen: set[int] = set()
    current: int | None = pid
    while current is not None and current > 0 and current not in seen:
        seen.add(current)
        current = parent_of(current, proc)
    return seen


def _pids(proc: Path) -> list[int]:
    return [int(entry.name) for entry in proc.iterdir() if entry.name.isdigit()]


def children(pid: int, proc: Path = Path("/proc")) -> list[int]:
    """The processes whose parent is `pid`."""
    return [child for child in _pids(proc) if parent_of(child, proc) == pid]


def command_line(pid: int, proc: Path = Path("/proc")) -> str | None:
    """The process's argv joined by blanks (as `pgrep -f` matches it); None for kernel threads or gone."""
    try:
        raw = (proc / str(pid) / "cmdline").read_bytes()
    except OSError:
        return None
    parts = [part for part in raw.split(b"\0") if part]
    return b" ".join(parts).decode("utf-8", "surrogateescape") if parts else None


def records_into(pid: int, data: str, proc: Path = Path("/proc")) -> bool:
    """Whether process `pid` is a perf record writing `data` (`-o DATA` among its arguments)."""
    try:
        argv = (proc / str(pid) / "cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    wanted = os.fsencode(data)
    return any(flag == b"-o" and value == wanted for flag, value in zip(argv, argv[1:], strict=False))


def matching_processes(pattern: str, proc: Path = Path("/proc")) -> dict[int, str]:
    """pid -> command line of the processes `pattern` finds (re.search), this worker and its ancestors
    left out (a pattern like `python` must not record the Dask worker asking)."""
    regex = re.compile(pattern)
    mine = _ancestors(os.getpid(), proc)
    found = {}
    for pid in _pids(proc):
        line = command_line(pid, proc) if pid not in mine else None
        if line is not None and regex.search(line):
            found[pid] = line
    return dict(sorted(found.items()))
