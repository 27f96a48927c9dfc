r"""Which threads of a system-wide recording (`perf record -a`) belong to the target: the processes
descended from one process, known from perf's task records (synthesized at start, then as they happen):
    perf     0/0         0.000000: PERF_RECORD_FORK(13078:13078):(13076:13076)     <- perf's workload
    wake 13078/13078 10671.642436: PERF_RECORD_COMM exec: wake:13078/13078
    wake 13078/13078 10671.643011: PERF_RECORD_FORK(13078:13080):(13078:13078)
    python   0/0         0.000000: PERF_RECORD_COMM: python:4242/4250              <- a thread alive at start

`ProcessTree(4242, include_root=True)` keeps process 4242 (`--pid`) and what it starts, from the
first tracepoint sample (before it, only perf's side-band records flow);
`ProcessTree(perf_pid, include_root=False)` keeps perf's workload and what it starts, from its exec
(before it, the workload is perf's own child waiting for the go).
"""

from __future__ import annotations

DEPTH = 256  # a longer chain of parents is a loop in damaged input


class ProcessTree:
    def __init__(self, root: int, include_root: bool) -> None:
        self.root = root
        self.include_root = include_root
        self.started = False  # a launched workload counts from its exec; a process from the first sample
        self.pid_of: dict[int, int] = {}  # tid -> pid
        self.parent: dict[int, int] = {}  # pid -> parent pid
        self.cache: dict[int, bool] = {}

    def fork(self, pid: int, tid: int, parent: int | None) -> None:
        """PERF_RECORD_FORK(pid:tid):(ppid:ptid); a new process (pid == tid) records its parent."""
        self.pid_of[tid] = pid
        if parent is not None and pid == tid and pid != parent:
            self.parent[pid] = parent
        self.cache.pop(tid, None)

    def comm(self, pid: int, tid: int) -> None:
        self.pid_of.setdefault(tid, pid)

    def exec(self, pid: int) -> bool:
        """A timed COMM exec: True when it starts the launched workload (the window opens there)."""
        if self.started or not self._descends(pid):
            return False
        self.started = True
        return True

    def attached(self) -> bool:
        """The first tracepoint sample of a recording of --pid's tree: True once, when the window opens
        (perf enables its events only once it has described every process: seconds on a busy machine)."""
        if self.started or not self.include_root:
            return False
        self.started = True
        return True

    def wants(self, tid: int) -> bool:
        if not self.started:
            return False
        known = self.cache.get(tid)
        if known is None:
            pid = self.pid_of.get(tid)
            known = pid is not None and self._descends(pid)
            self.cache[tid] = known
        return known

    def _descends(self, pid: int) -> bool:
        if pid == self.root:
            return self.include_root
        current: int | None = pid
        for _ in range(DEPTH):
            current = self.parent.get(current) if current is not None else None
            if current is None:
                return False
            if current == self.root:
                return True
        return False
