"""CPU time of a process tree, by role: the workload, `perf record`, `perf script` (and `perf inject`), our own
process (its Python collapser), polled from /proc.

    with TreeCpu(root_pid, classify) as tree:   # polls every 50 ms in a thread
        ...                                      # the recording runs
    tree.seconds()    # {"workload": (user, sys), "perf record": (...), "perf script": (...), "ours": (...)}

Each process's utime/stime (its own and its dead threads', not its children's) is kept as last seen;
a process that ends loses at most one poll (50 ms) of CPU. CPU seconds, not wall time: what each part
takes from the two cores whatever else the machine runs (a loaded machine stretches the wall clock of
all three alike, their CPU far less).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

TICK = os.sysconf("SC_CLK_TCK")
POLL_SECONDS = 0.05


def role_of(pid: int, root: int) -> str:
    """perf record / perf script (perf inject and c++filt too) / ours (the flamegraph process) / workload (the rest)."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return ""
    words = [a.decode(errors="replace") for a in argv if a]
    if not words:
        return ""  # a zombie (or a kernel thread): the role it was seen with stays
    if len(words) >= 2 and os.path.basename(words[0]) == "perf":
        return "perf record" if words[1] == "record" else "perf script"
    if os.path.basename(words[0]) == "c++filt":
        return "perf script"  # the streamed folder's demangling (flamegraph.record.chunk_names): perf script's part
    if pid == root and any(w.endswith("flamegraph") for w in words[1:3]):
        return "ours"  # the flamegraph process (python -m flamegraph): its Python collapser, naming and writing
    return "workload"


def _children(pid: int) -> list[int]:
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    found: list[int] = []
    for tid in tasks:
        try:
            found += [int(c) for c in Path(f"/proc/{pid}/task/{tid}/children").read_text().split()]
        except (OSError, ValueError):
            pass
    return found


def _times(pid: int) -> tuple[float, float] | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rpartition(")")[2].split()
    return int(fields[11]) / TICK, int(fields[12]) / TICK  # utime, stime (fields 14, 15)


class TreeCpu:
    """Polls the tree under `root` (itself included unless `skip_root`) until closed (see the module's doc)."""

    def __init__(self, root: int, classify: Callable[[int, int], str] = role_of, skip_root: bool = False) -> None:
        self.root = root
        self._classify, self._skip_root = classify, skip_root
        self._seen: dict[int, tuple[str, float, float]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> TreeCpu:
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while True:
            self.poll()
            if self._stop.wait(POLL_SECONDS):
                self.poll()
                return

    def poll(self) -> None:
        todo = [self.root]
        while todo:
            pid = todo.pop()
            todo += _children(pid)
            if pid == self.root and self._skip_root:
                continue
            times = _times(pid)
            if times is None:
                continue
            role = self._classify(pid, self.root) or (self._seen[pid][0] if pid in self._seen else "")
            if role:  # (classified at every poll: perf's fork of the workload is "perf record" until it execs)
                self._seen[pid] = (role, *times)

    def seconds(self) -> dict[str, tuple[float, float]]:
        """(user, sys) CPU seconds per role."""
        totals: dict[str, tuple[float, float]] = {}
        for role, user, system in self._seen.values():
            u, s = totals.get(role, (0.0, 0.0))
            totals[role] = (u + user, s + system)
        return totals
