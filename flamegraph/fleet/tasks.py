"""What runs on one host: record, fold there with that host's symbols, send back kilobytes.

The task runs `flamegraph record`'s own pipeline steps (flamegraph.pipeline.oncpu: the hooks,
`record_hooked`, `fold_oncpu`) with the same RecordSpec defaults, so grouping by build-id and the
attribution figures are computed where the binaries are; only perf's stopping is its own. perf.data
stays in a scratch directory on the host (in the Dask worker's own directory, which Dask removes
with the worker) and is removed once folded; it is kept in $TMPDIR (and its path sent back) only
when folding it failed. Runs without Dask: `stop(seconds)` is how the client says stop.

What is recorded on a host, as `perf record` sees it:
    --match REGEX:   perf record ... -p PID,PID,... -- sleep DURATION
    --all-cpus:      perf record ... -a -- sleep DURATION
    -- CMD ARGS:     perf record ... -- CMD ARGS       (stopped at --duration, as `record --duration`)
The `sleep` bounds perf by itself: even a worker that froze or was killed leaves no perf running
past DURATION. A launched command is stopped by record() at --duration (perf dies with a killed
worker: its parent-death signal); a worker that is stopped, not dead, cannot do either, so a
watchdog process (watchdog.py) stops perf 2 s past --duration in its place.
"""

from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path

from ..io.diagnostics import FlamegraphError, NoSamples, NoSuchProcess
from ..io.private import scratch_dir
from ..pipeline.oncpu import OnCpuRequest, RecordHooks, fold_oncpu, record_hooked
from ..pipeline.scratch import command_ended
from ..record import RecordOptions, RecordSpec, Status
from ..record.command import python_target
from . import watchdog
from .hosts import children, command_line, matching_processes, records_into
from .model import FAILED, OK, HostIdentity, HostRequest, HostResult

StopCheck = Callable[[float], bool]  # waits up to N seconds; True once the client asked every host to stop
POLL = 0.2


class NoteCollector(Status):
    """A `Status` that keeps the notes (what `flamegraph record` prints) and drops the progress line."""

    def __init__(self) -> None:
        import io

        super().__init__(sink=io.BytesIO(), out_sink=io.BytesIO())
        self.lines: list[str] = []

    def show(self, text: str) -> None:
        pass

    def note(self, text: str) -> None:
        self.lines.append(text)


def record_host(
    request: HostRequest, identity: HostIdentity, worker: str, stop: StopCheck, scratch: Path | None = None
) -> HostResult:
    """Record and fold on this host, perf.data in a private directory under `scratch` (the worker's own
    directory; None: $TMPDIR); a user-facing failure comes back as a FAILED result, not an exception."""
    notes = NoteCollector()
    result = HostResult(identity.host, FAILED, worker=worker, simulated=identity.simulated, notes=notes.lines)
    try:
        if stop(0):
            raise NoSuchProcess("stopped before the recording started")
        spec, pids = spec_for(request)
        result.pids = pids
        _record_and_fold(request, spec, notes, result, stop, scratch)
    except FlamegraphError as err:
        result.reason, result.exit_code = str(err), err.exit_code
    return result


def spec_for(request: HostRequest) -> tuple[RecordSpec, tuple[int, ...]]:
    """The RecordSpec for this host's target (see the module docstring) and the pids it names."""
    target = request.target
    how = RecordOptions(event=request.event, freq=request.freq, call_graph=request.call_graph)
    bounded = ("sleep", f"{request.duration:g}")
    if target.command:
        return RecordSpec(command=target.command, options=how.replace(duration=request.duration)), ()
    if target.all_cpus:
        return RecordSpec(command=bounded, options=how.replace(extra_args=("-a",))), ()
    assert target.match is not None
    pids = tuple(matching_processes(target.match))
    if not pids:
        raise NoSuchProcess(f"no process matches /{target.match}/ on this host")
    joined = ",".join(map(str, pids))
    return RecordSpec(command=bounded, options=how.replace(extra_args=("-p", joined))), pids


def _record_and_fold(
    request: HostRequest,
    spec: RecordSpec,
    notes: NoteCollector,
    result: HostResult,
    stop: StopCheck,
    parent: Path | None,
) -> None:
    scratch = scratch_dir("flamegraph-fleet-", parent)
    data = scratch / "perf.data"
    keep = False

    def recorded() -> None:  # perf.data holds a recording (maybe cut short): a failure from here keeps it
        nonlocal keep
        keep = True

    if request.target.command and (said := python_frames_note(spec.command)) is not None:
        notes.note(said)
    # python=False: a fleet records no Python frames (no --python), so there are no interpreter frames to fold
    oncpu = OnCpuRequest(spec, threads=request.threads, group_unknown=request.group_unknown, keep_interpreter=True,
                         jit=request.jit, python=False, mxnet=request.mxnet)  # fmt: skip
    try:
        with RecordHooks.of(oncpu, data, notes.note) as hooks:
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            with Stopper(data, stop, request.duration if request.target.command else None) as stopper:
                recording, _ = record_hooked(oncpu, data, hooks, notes, on_recording=recorded)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if not request.target.command:  # else the command's CPU is mixed in
                result.perf_cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            # (not the `sleep` that bounds a --match recording; not the SIGTERM perf ends it with when stopped)
            if recording.exit_status and request.target.command and not stopper.interrupted:
                notes.note(command_ended(recording.exit_status))
                result.command_status = recording.exit_status
            profile = fold_oncpu(recording, oncpu, notes, hooks)  # the perf maps the JIT hook wrote go after it
        if result.pids:
            profile.metadata["command"] = "; ".join(
                f"pid {pid}: {command_line(pid) or '(exited)'}" for pid in result.pids
            )
        result.profile, result.seconds, result.state = profile, recording.seconds, OK
        keep = False
    except NoSamples:
        keep = False  # an empty recording (stopped as it started) is worth nothing to keep
        raise
    except FlamegraphError as err:
        if keep:
            err.args = (f"{err}; the recording is kept on this host in {_kept(data, parent)}",)
        raise
    finally:
        if not keep:
            shutil.rmtree(scratch, ignore_errors=True)


def python_frames_note(command: tuple[str, ...]) -> str | None:
    """One line for a launched Python 3.12+ command: fleet records no Python frames (`flamegraph record`
    does; a 3.11 command gets record's own note). Python frames need the hook, perf inject and the
    interpreter folding on the host, which fleet's fold does not do."""
    target = python_target(command, os.environ)
    if target is None or target.version < (3, 12):
        return None
    return (f"{target.interpreter} is Python {target.release}: fleet records no Python frames, only the "
            "interpreter's C functions (flamegraph record -- COMMAND draws its Python functions)")  # fmt: skip


def _kept(data: Path, parent: Path | None) -> Path:
    """Where a recording that could not be folded stays: out of the worker's directory (gone with the
    worker), into a private directory in $TMPDIR."""
    if parent is None:
        return data
    kept = scratch_dir("flamegraph-fleet-kept-") / data.name
    try:
        shutil.move(data, kept)
    except OSError:
        return data
    return kept


class Stopper:
    """Watches `stop` while perf records into `data`; when the client says stop, sends perf SIGINT (as
    Ctrl-C and --duration do: perf writes its data and ends the command it launched). perf is found as
    this process's child whose arguments name `data` (the scratch path is unique). A launched command
    (no `sleep` bounds perf) also gets a watchdog process (watchdog.py), should this worker stop
    answering before record() stops perf."""

    def __init__(self, data: Path, stop: StopCheck, duration: float | None = None) -> None:
        self.data = str(data)
        self.stop = stop
        self.duration = duration
        self.watchdog: subprocess.Popen[bytes] | None = None
        self.done = threading.Event()
        self.interrupted = False  # perf was told to stop: the command's end (perf's SIGTERM) is ours, not its own
        self.thread = threading.Thread(target=self._run, name="flamegraph-fleet-stopper", daemon=True)

    def __enter__(self) -> Stopper:
        if self.duration is not None:
            self.watchdog = watchdog.start(Path(self.data), self.duration)
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.done.set()
        self.thread.join(timeout=5)
        if self.watchdog is not None:
            self.watchdog.kill()
            self.watchdog.wait()

    def _run(self) -> None:
        while not self.done.is_set():
            if self.stop(POLL):
                break
        while not self.done.is_set():  # perf may not have started yet: try until record() returns
            self._interrupt_perf()
            self.done.wait(0.2 if not os.path.exists(self.data) else 1.0)

    def _interrupt_perf(self) -> None:
        if not os.path.exists(self.data):
            return  # perf creates its output once it handles SIGINT: before, SIGINT would kill it
        for pid in children(os.getpid()):
            if records_into(pid, self.data):
                try:
                    os.kill(pid, signal.SIGINT)
                    self.interrupted = True
                except OSError:
                    pass
