"""In the profiled process: MXNet's profiler and oneDNN's verbose log on, both written to DIR.

Called by the in-process hook (`flamegraph/frameworks/flamegraph_launcher.py --mxnet-dir DIR -- PROGRAM`) before the
program runs; the program itself is not changed. Standard library only, and mxnet is never
imported here: the profiler is configured when the *program* imports mxnet (a meta-path finder
wraps that one import), through the module the program loaded.

    DIR/dnnl-verbose-<pid>.log   oneDNN's exec lines: oneDNN prints them on the C-level stdout
                                 (fd 1), so fd 1 goes to this file (through a pipe that a forked
                                 process empties: drain.py) and Python's sys.stdout keeps the
                                 original stdout (the program's prints pass through as before)
    DIR/profile-<pid>.json       the profiler's Chrome trace (symbolic and imperative operators): MXNet
                                 writes it to /proc/self/fd/N, a pipe that another forked process
                                 empties into this file (drain.py; no ext4 write on MXNet's dump thread)
    DIR/mxnet-<pid>.json         the sidecar: both clocks at start and exit, file names, notes

The profiler runs without `aggregate_stats`: with it, MXNet formats every operator's attributes
through a std::stringstream on the engine thread (outside the operator's span); the tables sum
the same spans from the trace instead, which is what `dumps()` would add up.

The profiler is stopped and dumped at exit (atexit, before MXNet's own shutdown handler), after
`mx.nd.waitall()`; then both pipes are closed and their drainers waited for (≤ 2 s each), so the trace
and the log are complete when the process ends (a killed process closes them too: the drainers write
what reached the pipes). With caps (`record --mxnet` streamed: FLAMEGRAPH_MXNET_CAPS, from
`--max-spool`), a thread of ours stops both instruments when one file nears its cap (limit.py,
`stop_instruments`): the trace is then dumped whole at once and both files are final from that moment
on; the sidecar's "capped" says when.
A SIGTERM (perf stopping its workload on Ctrl-C) becomes SystemExit when the
program has no handler of its own, so the exit handlers run and what was profiled is kept.
"""

from __future__ import annotations

import atexit
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Container, Mapping, Sequence
from types import ModuleType
from typing import Any

from ...io.private import create_file, private_dir, replace_file
from .clock import read_clocks
from .drain import TRACE_POLL_S, TRACE_STILL_OPEN, Drain, Segmented, close_drain, start_drain, start_pipe
from .gate import GATE, enable
from .limit import CAPS, Cap, Limits
from .pthreads import ThreadWatch
from .segments import REFRESH_REQUEST, SEGMENTS, STOP_REQUEST, parse_byte_pair, segment_name

# Written to the program's environment when not set there already (MXNet reads them at bind time).
# DNNL_VERBOSE=1 prints one line per primitive execution; the bulk settings make the profiler time
# single operators instead of bulk segments. The first two cover the symbolic executor (Module API:
# segments "[FullyConnected,Activation,...]"); a hybridized Gluon block's CachedOp ignores them and
# bulks by the engine's bulk size, which it sets to MAX_NODE_TRAIN_FWD/_BWD (default 15) around its
# forward and backward passes: one "ImperativeBulk" span per pass, its operators not recorded.
ENVIRONMENT = {
    "DNNL_VERBOSE": "1",
    "DNNL_VERBOSE_TIMESTAMP": "1",
    "MXNET_EXEC_BULK_EXEC_TRAIN": "0",
    "MXNET_EXEC_BULK_EXEC_INFERENCE": "0",
    "MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN_FWD": "0",
    "MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN_BWD": "0",
}
# MXNet reads _FWD and _BWD with this one as their default: a user who set it keeps it for both.
BULK_FALLBACK = {
    "MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN": (
        "MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN_FWD",
        "MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN_BWD",
    )
}
BULK_VARIABLES = (*(name for name in ENVIRONMENT if name.startswith("MXNET_EXEC_BULK")), *BULK_FALLBACK)


def bulk_settings(environment: Mapping[str, str | None]) -> dict[str, str]:
    """The bulk variables set in `environment` whose value leaves some bulking on (not "0")."""
    return {name: value for name in BULK_VARIABLES if (value := environment.get(name)) not in (None, "0")}


def environment_to_set(present: Container[str]) -> dict[str, str]:
    """The part of ENVIRONMENT the user's environment (`present`: its names) leaves to us."""
    kept = {name for fallback, names in BULK_FALLBACK.items() if fallback in present for name in names}
    return {name: value for name, value in ENVIRONMENT.items() if name not in present and name not in kept}


SIDECAR_VERSION = 1
PROFILE_MEMORY = "FLAMEGRAPH_MXNET_PROFILE_MEMORY"  # "1": the storage counters too (record --memory --mxnet)
TRACE_BY_NAME = "FLAMEGRAPH_MXNET_TRACE"  # "file": MXNet writes its trace file itself, as before the pipe (benches)
# The profiler keeps every event in memory until it is dumped (~8 MB/s for the MLP): a timer thread
# of MXNet's writes them out this often, so memory stays flat and a killed process leaves a trace
# that is complete up to its last dump (read back by profile.py's recovery).
DUMP_PERIOD_S = 1.0


def sidecar_path(directory: str, pid: int) -> str:
    return os.path.join(directory, f"mxnet-{pid}.json")


def profile_path(directory: str, pid: int) -> str:
    return os.path.join(directory, f"profile-{pid}.json")


def verbose_path(directory: str, pid: int) -> str:
    return os.path.join(directory, f"dnnl-verbose-{pid}.log")


class Session:
    """What the hook knows about this process; written to the sidecar at start and at exit."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.drain: Drain | None = None  # the verbose log's pipe, closed at exit
        self.trace: tuple[Drain, int] | None = None  # the trace's pipe and our end of it, closed at exit
        self.pid = os.getpid()
        self.facts: dict[str, Any] = {
            "version": SIDECAR_VERSION,
            "pid": self.pid,
            "clock_start": read_clocks().as_list(),
            "clock_end": None,
            "profile": profile_path(directory, self.pid),
            "verbose": verbose_path(directory, self.pid),
            "environment": {name: os.environ.get(name) for name in (*ENVIRONMENT, *BULK_FALLBACK)},
            "mxnet": None,  # its version, once the program imports it
            "dump_seconds": None,
            "dump_thread": None,  # the TID of MXNet's dump timer: the one thread set_config started
            "threads": None,  # the profiler tid -> Linux TID map read at exit (pthreads.py)
            "verbose_drain": None,  # the PID of the process that writes the verbose log (drain.py)
            "trace_drain": None,  # the PID of the process that writes the profiler's trace (drain.py)
            "trace_written_as": None,  # the name MXNet writes the trace to: /proc/self/fd/N (a pipe), or the file
            "caps": None,  # {"trace": bytes, "verbose": bytes}: the files' caps (limit.py), None: unbounded
            "segments": None,  # {"trace": bytes, "verbose": bytes}: written in numbered segments (segments.py)
            "capped": None,  # when a file neared its cap and both instruments were stopped (stop_instruments)
            "clocks": [],  # readings while it runs, when flamegraph asks (segmented runs joined as they go: `refresh`)
            "notes": [],
        }
        self.limits: Limits | None = None
        self.lock = threading.RLock()  # the facts written whole; a cap's clock reading and its facts together

    def write(self) -> None:
        # A fresh name and a rename: nothing planted in the directory is followed (flamegraph/io/private.py).
        with self.lock:
            replace_file(sidecar_path(self.directory, self.pid), json.dumps(self.facts, indent=1).encode())

    def refresh(self, watch: ThreadWatch) -> None:
        """From the watcher, each second while the program runs (segmented files): when flamegraph asks
        (REFRESH_REQUEST: its kept samples passed their budget, running.py), a clock reading and the thread map
        in the sidecar, then the request removed. The reading is taken first and the map then made complete,
        so that the sidecar holds, as of its latest reading, every thread then alive and the clocks to convert
        any time before it (clock.Alignment). Not asked, nothing is done (a stat a second)."""
        request = os.path.join(self.directory, REFRESH_REQUEST)
        if not os.path.exists(request):
            return
        with self.lock:
            reading = read_clocks()
            watch.update()
            self.facts["threads"] = watch.facts()
            self.facts["clocks"].append(reading.as_list())
            try:
                self.write()
                os.unlink(request)  # (after the write: its absence says the sidecar is new)
            except OSError:
                pass

    def note(self, text: str) -> None:
        self.facts["notes"].append(text)


def first_file(path: str, segment: int | None) -> tuple[int, Segmented | None]:
    """The file a drainer begins with (ours, exclusive): `path`, or its first segment (segments.py)."""
    directory, base = os.path.dirname(path), os.path.basename(path)
    if segment is None:
        return create_file(directory, base), None
    return create_file(directory, segment_name(base, 1)), Segmented(directory, base, segment)


def redirect_c_stdout(path: str, cap: int | None = None, segment: int | None = None) -> Drain:
    """fd 1 -> a pipe emptied into `path` (oneDNN prints there: drain.py says why a pipe); sys.stdout keeps
    writing to the original stdout."""
    sys.stdout.flush()
    original = os.dup(1)
    target, segments = first_file(path, segment)
    pipe = start_drain(target, cap=cap, segments=segments)
    old = sys.stdout
    stream = os.fdopen(original, "w", encoding=old.encoding, errors=old.errors, closefd=True)
    stream.reconfigure(line_buffering=bool(old.line_buffering))
    sys.stdout = stream
    if sys.__stdout__ is old:
        sys.__stdout__ = stream  # type: ignore[misc]
    return pipe


def open_trace_pipe(path: str, cap: int | None = None, segment: int | None = None) -> tuple[Drain, int] | None:
    """The trace's file (or first segment) created (ours, exclusive) and a pipe drained into it (drain.py says
    why), or None where /proc/self/fd does not name our descriptors (MXNet then writes the file itself)."""
    if not os.path.isdir("/proc/self/fd"):
        os.close(create_file(os.path.dirname(path), os.path.basename(path)))
        return None
    target, segments = first_file(path, segment)
    return start_pipe(target, poll=TRACE_POLL_S, cap=cap, segments=segments)


def trace_name(session: Session) -> str:
    """What MXNet is told to write to: our pipe's end by number, or the trace's file."""
    return f"/proc/self/fd/{session.trace[1]}" if session.trace is not None else str(session.facts["profile"])


def close_trace(session: Session) -> None:
    """Our end of the trace's pipe closed (after MXNet's last dump), its drainer waited for."""
    if session.trace is not None:
        drain, fd = session.trace
        session.trace = None
        problem = close_drain(drain, fd, TRACE_STILL_OPEN)
        if problem:
            session.note(problem)


def _forget_trace(session: Session) -> None:
    """In a child the program forks: its copy of our end of the trace's pipe goes to /dev/null, so the
    drainer sees the end when the program exits, not when its last child does (nothing of MXNet's
    dump thread survives a fork: the child has no trace to write)."""
    if session.trace is not None:
        drain, fd = session.trace
        session.trace = None
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, fd, inheritable=False)
        os.close(null)
        os.close(drain.done)


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs `then(module)` once the program's `import mxnet` has finished."""

    def __init__(self, name: str, then: Any) -> None:
        self.name, self.then = name, then

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader, then = spec.loader, self.then
        run = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            run(module)
            then(module)

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def start_profiler(session: Session, mx: Any) -> None:
    """Profile symbolic and imperative operators into DIR; dump at exit (before MXNet shuts down).
    Under `record --memory` perf's events are enabled first (gate.py): the import's allocations are left out."""
    session.facts["mxnet"] = str(getattr(mx, "__version__", "unknown"))
    if GATE in os.environ:
        problem = enable(os.environ)
        session.facts["perf_enabled"] = problem is None
        if problem is not None:
            session.note(problem)
    try:
        session.facts["dump_thread"] = thread_started_by(lambda: mx.profiler.set_config(
            filename=trace_name(session), profile_symbolic=True, profile_imperative=True,
            profile_memory=os.environ.get(PROFILE_MEMORY) == "1", profile_api=False, aggregate_stats=False,
            continuous_dump=True, dump_period=DUMP_PERIOD_S,
        ))  # fmt: skip
        mx.profiler.set_state("run")
    except Exception as err:  # noqa: BLE001 - the program must run on whatever MXNet says
        session.note(f"the profiler could not be started: {type(err).__name__}: {err}")
        session.write()
        return
    watch = ThreadWatch(DUMP_PERIOD_S)
    if session.facts["segments"] is not None:
        watch.tick = lambda: session.refresh(watch)
    watch.start()
    atexit.register(dump_profiler, session, mx, watch)
    if session.facts["caps"] is not None:
        caps = session.facts["caps"]
        segmented = session.facts["segments"] is not None
        session.limits = Limits(
            [Cap("MXNet's trace", session.facts["profile"], caps["trace"], segmented and session.trace is not None),
             Cap("oneDNN's verbose log", session.facts["verbose"], caps["verbose"], segmented)],
            lambda cap, size: stop_instruments(session, mx, cap, size),
            os.path.join(os.path.dirname(session.facts["profile"]), STOP_REQUEST) if segmented else None,
        )  # fmt: skip
        session.limits.start()
    session.write()


def thread_started_by(call: Callable[[], object]) -> int | None:
    """`call` run; the TID of the one thread it started (continuous_dump's timer, for set_config), None when it
    started none or more than one (another thread of the program started meanwhile: no guess)."""
    before = _tasks()
    call()
    started = _tasks() - before
    return started.pop() if len(started) == 1 else None


def _tasks() -> set[int]:
    try:
        return {int(name) for name in os.listdir("/proc/self/task")}
    except OSError:
        return set()


def stop_instruments(session: Session, mx: Any, cap: Cap, size: int) -> None:
    """A file neared its cap, or flamegraph asked (limit.py): the profiler stopped and dumped whole (its trace
    ends as valid JSON, MXNet's dump thread stops), fd 1 to /dev/null (oneDNN's lines go nowhere; no switch for
    them is exported), both drainers waited for: the files are complete up to now and grow no more. The moment
    is in the sidecar."""
    with session.lock:  # (no clock reading written between this one and the facts saying it: Session.refresh)
        clocks = read_clocks()
        try:
            mx.profiler.set_state("stop")
            mx.profiler.dump()
        except Exception as err:  # noqa: BLE001 - the program must run on whatever MXNet says
            session.note(f"the profiler could not be stopped at its cap: {type(err).__name__}: {err}")
        close_drains(session)
        seconds = clocks.monotonic - float(session.facts["clock_start"][0])
        session.facts["capped"] = {"file": cap.label, "size": size, "cap": cap.limit, "clock": clocks.as_list(),
                                   "seconds": round(seconds, 3), "segments": cap.segmented,
                                   "requested": cap.requested}  # fmt: skip
        try:
            session.write()
        except OSError:
            pass


def close_drains(session: Session) -> None:
    """The trace's pipe and the verbose log's drainer closed and waited for: both files final."""
    close_trace(session)
    if session.drain is not None:
        problem = close_drain(session.drain)
        session.drain = None
        if problem:
            session.note(problem)


def dump_profiler(session: Session, mx: Any, watch: ThreadWatch) -> None:
    started = time.perf_counter()
    if session.limits is not None:
        session.limits.close()  # (a stop at the cap under way is finished first)
    try:
        if session.facts["capped"] is None:  # (stopped and dumped at its cap: a second dump is refused)
            mx.nd.waitall()
            mx.profiler.set_state("stop")
            mx.profiler.dump()
    except Exception as err:  # noqa: BLE001 - report, never break the program's exit
        session.note(f"the profiler could not be dumped: {type(err).__name__}: {err}")
    session.facts["dump_seconds"] = round(time.perf_counter() - started, 3)
    watch.stop()  # the last scan: MXNet's shutdown handler, which ends the engine's workers, runs after us
    session.facts["threads"] = watch.facts()
    finish(session)


def finish(session: Session) -> None:
    session.facts["clock_end"] = read_clocks().as_list()
    close_drains(session)
    try:
        sys.stdout.flush()
        session.write()
    except OSError:
        pass


def _terminate(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def install(directory: str) -> Session:
    """Set the environment, redirect oneDNN's stdout, and arm the profiler for `import mxnet`.
    `directory` must be ours alone (private.NotPrivate otherwise): MXNet writes its trace there by name."""
    private_dir(directory)
    os.environ.update(environment_to_set(os.environ))
    session = Session(directory)
    caps = parse_byte_pair(os.environ.get(CAPS))
    if caps is not None:
        session.facts["caps"] = {"trace": caps[0], "verbose": caps[1]}
    segments = parse_byte_pair(os.environ.get(SEGMENTS))
    if segments is not None and os.environ.get(TRACE_BY_NAME) != "file":
        session.facts["segments"] = {"trace": segments[0], "verbose": segments[1]}
    else:
        segments = None  # (MXNet writing its trace itself, by name, writes one file)
    session.drain = redirect_c_stdout(session.facts["verbose"], caps[1] if caps else None,
                                      segments[1] if segments else None)  # fmt: skip
    session.facts["verbose_drain"] = session.drain.pid
    if os.environ.get(TRACE_BY_NAME) != "file":  # forked now: before mxnet's threads exist
        session.trace = open_trace_pipe(session.facts["profile"], caps[0] if caps else None,
                                        segments[0] if segments else None)  # fmt: skip
    session.facts["trace_drain"] = session.trace[0].pid if session.trace is not None else None
    session.facts["trace_written_as"] = trace_name(session)
    os.register_at_fork(after_in_child=lambda: _forget_trace(session))
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _terminate)
    if "mxnet" in sys.modules:
        start_profiler(session, sys.modules["mxnet"])
    else:
        sys.meta_path.insert(0, _AfterImport("mxnet", lambda module: start_profiler(session, module)))
        session.write()
    atexit.register(_finish_if_never_imported, session)
    return session


def _finish_if_never_imported(session: Session) -> None:
    if session.facts["mxnet"] is None:
        session.note("the program never imported mxnet")
        if GATE in os.environ:
            session.note("perf's events are enabled once mxnet is imported: no allocations were recorded")
        finish(session)
