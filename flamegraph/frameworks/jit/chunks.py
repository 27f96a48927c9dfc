"""A streamed recording's chunks given their JIT names and unwind info, each before it is folded.

Each chunk of the spool (flamegraph.record.spool) is a whole perf.data holding the mmap of every jitdump
marker (synthesised at the switch, at time 0), so `perf inject --jit` works chunk by chunk. Before chunk k
is folded, `ChunkJit(chunk)`:
- locates the oneDNN kernels of each process that mapped a marker: from outside while it runs (its dump
  files matched against its memory through /proc/PID/mem, jitmap.scan: 10-60 ms), from the kernels file
  its hook wrote at exit once it has ended. Every kernel seen is kept with its code: one created in
  chunk 2 and sampled in chunk 5 is in every jitdump written from chunk 2 on;
- reads the Python trampolines of /tmp/perf-PID.map as it is now, each run stamped from the chunk's own
  mappings (trampolines.read_arenas);
- rewrites the jitdump records (session.complete: all the kernels and runs so far), injects the chunk in
  place and names the Python functions in the jitted files (session.name_python).
Chunk k has ended before this runs, so every kernel and trampoline it sampled exists by then; a kernel
freed before the scan is the exception: its samples stay unnamed, never misnamed (a kernel is mapped from
its creation time on). The markers, dumps and perf maps stay where the process writes them until the run
ends; the directory is then cleaned as after a whole recording.

    completer = ChunkJit(hook, cwd, scratch=spool.directory)
    fold = StreamedFold(spool, ..., prepare=completer)   # each chunk completed, then folded
    ...
    completer.finish(recording)                          # the summary said once, the facts
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from ...io.perf import find_perf
from ...record.spec import Recording
from . import jitmap, session, trampolines
from .hook import JitHook, inject
from .jitmap import Kernel


@dataclass
class ChunkJit:
    """Completes each chunk of one streamed recording (see the module's doc)."""

    hook: JitHook
    cwd: str  # where the command started: oneDNN writes its dumps into its working directory
    scratch: Path | None = None  # where perf inject writes (the spool's directory: counted in its bound)
    perf: str = field(default_factory=find_perf)
    chunks: int = 0  # chunks injected
    unwind_seconds: float = 0.0
    inject_seconds: float = 0.0
    failures: int = 0  # chunks perf inject failed on (their JIT frames keep perf-map names, if any)
    _seen: dict[int, dict[tuple[int, bytes], Kernel]] = field(default_factory=dict)
    _naming: dict[int, tuple[str, int | None]] = field(default_factory=dict)  # pid -> (how, ms) at exit
    _unreadable: set[int] = field(default_factory=set)
    _completed: list[session.Completed] = field(default_factory=list)
    _forked: dict[int, int] = field(default_factory=dict)  # every chunk's forks: child pid -> parent pid

    def __call__(self, chunk: Path) -> None:
        if not self.hook.in_use:  # not a Python or --jit command: nothing to complete
            return
        directory = str(self.hook.directory)
        started = time.perf_counter()
        located = self._locate(directory) if self.hook.dnnl else {}
        processes = trampolines.read_processes(self.perf, str(chunk)) if session.python_pids(directory) else None
        arenas = processes.arenas if processes is not None else None
        self._forked.update(processes.forked if processes is not None else {})
        completed = [c for c in session.complete(directory, arenas, located) if c.kernels or c.python_functions]
        self.unwind_seconds += time.perf_counter() - started
        if not completed:
            return
        started = time.perf_counter()
        failure = inject(chunk, self.hook.directory, self.scratch, session.loaded(completed))
        if failure is None:
            unnamed = session.name_python(directory, completed)
            if unnamed:
                self.hook.note(f"flamegraph: {unnamed} runs of Python functions could not be named in their "
                               "jitted files")  # fmt: skip
            self.chunks += 1
        else:
            if not self.failures:  # said once: the next chunks likely fail alike (counted at the end)
                self.hook.note(f"flamegraph: {failure}; the chunk's JIT frames keep their perf-map names only")
            self.failures += 1
        self.inject_seconds += time.perf_counter() - started
        self._completed = completed

    def finish(self, recording: Recording) -> Recording:
        """After the last chunk: what was completed said once (as after a whole recording), and the facts."""
        if self.failures:
            self.hook.note(f"flamegraph: perf inject --jit failed on {self.failures} of "
                           f"{self.failures + self.chunks} chunks")  # fmt: skip
        processes = trampolines.Processes({}, self._forked)
        self.hook.report(self._completed, self.chunks > 0, self.unwind_seconds, self.inject_seconds, processes)
        self.hook.say_unhooked(processes)
        self.hook.summary.chunks = self.chunks + self.failures
        recording.metadata.update(self.hook.summary.metadata())
        return recording

    def _locate(self, directory: str) -> dict[int, session.Located]:
        """Every kernel seen so far of each process with a marker in `directory`, earliest first."""
        located = {}
        for pid in marker_pids(directory):
            seen = self._seen.setdefault(pid, {})
            for kernel, code in self._kernels_now(directory, pid):
                key = (kernel.address, code)
                if key not in seen or kernel.created < seen[key].created:
                    seen[key] = kernel
            if seen:
                kernels = sorted(((k, code) for (_, code), k in seen.items()), key=lambda kc: kc[0].created)
                how, ms = self._naming.get(pid, (f"{len(seen)} JIT kernels located while it ran", None))
                located[pid] = session.Located(tuple(kernels), how, ms)
        return located

    def _kernels_now(self, directory: str, pid: int) -> list[tuple[Kernel, bytes]]:
        """The process's kernels: from its kernels file once it has ended (its hook wrote it at exit),
        else from its memory, read from outside."""
        kernels_file = session.kernels_path(directory, pid)
        if os.path.isfile(kernels_file):
            comment, ms = session.read_kernels_header(kernels_file)
            self._naming[pid] = (f"at exit, {comment}" if comment else "", ms)
            return _with_code(session.read_kernels(kernels_file))
        try:
            dirs = [self.cwd, os.readlink(f"/proc/{pid}/cwd")]
            result = jitmap.scan(pid, dirs)
        except PermissionError as err:
            if pid not in self._unreadable:
                self._unreadable.add(pid)
                self.hook.note(f"flamegraph: cannot read the memory of pid {pid} while it runs ({err.strerror}): "
                               "its JIT kernels are named only in the chunks folded after it exits")  # fmt: skip
            return []
        except OSError:  # it has just ended: its kernels file comes with the next chunk
            return []
        return _with_code(result.kernels)


def marker_pids(directory: str) -> list[int]:
    """The processes that mapped a jitdump marker in `directory` (the hook makes one per process)."""
    pids = []
    for name in os.listdir(directory):
        if name.startswith("jit-") and name.endswith(".dump") and name[4:-5].isdigit():
            pids.append(int(name[4:-5]))
    return sorted(pids)


def _with_code(kernels: list[Kernel]) -> list[tuple[Kernel, bytes]]:
    """Each kernel with the code of its dump file (read now: the hook moves the files at exit); a file
    gone or changed meanwhile leaves its kernel out (the next chunk finds it in the kernels file)."""
    found = []
    for kernel in kernels:
        code = session.read_code(kernel.path)
        if len(code) == kernel.size:
            found.append((kernel, code))
    return found
