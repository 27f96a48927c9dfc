"""Off-CPU flame graphs: record sched_switch with stacks, pair each wait's two ends, fold to microseconds.

The pipeline behind `flamegraph offcpu` and `flamegraph fold --offcpu`:

    perf record -e sched:sched_switch --switch-events --call-graph dwarf,8192 (-p PID | -- COMMAND)
    perf script --no-inline -F comm,tid,time,event,trace,ip,sym,dso
                --show-switch-events --show-task-events --show-lost-events
    -> collapse.perf_sched (one wait per switch-out/switch-in pair) -> FoldedProfile in microseconds

`--switch-events` gives every traced thread a PERF_RECORD_SWITCH IN record, so a wait ends even
when the CPU goes idle or to another process (pairing on `next_pid` alone loses those in -p mode).
`-p` follows threads created during the recording (perf inherits the events to them).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, NamedTuple

from .collapse.perf_sched import THROUGHOUT, WHOLE_RECORDING, OffCpuOptions, SchedCollapser, Wait, state_frame
from .collapse.sched_totals import OffCpuFolder
from .diagnostics import Diagnostics, FlamegraphError, NoSamples, NotPermitted, PerfFailed
from .fold import open_lines
from .inputs import STDIN, label, open_stream
from .model import FoldedProfile
from .record import Recording, RecordOptions, RecordSpec, Status, record, show_progress
from .record.spec import OFFCPU_CALL_GRAPH

EVENT = "sched:sched_switch"
NO_END_NS = 2**62  # an open window's end: later than any CLOCK_MONOTONIC time (146 years)
SCRIPT_OPTIONS = (
    "-F",
    "comm,tid,time,event,trace,ip,sym,dso",
    "--show-switch-events",
    "--show-task-events",
    "--show-lost-events",
)
TRACEFS_DIRS = ("/sys/kernel/tracing", "/sys/kernel/debug/tracing")
TRACEPOINT = "events/sched/sched_switch"
CAP_SYS_ADMIN, CAP_PERFMON = 21, 38
MOUNT_HINT = "mount it with `mount -t tracefs nodev /sys/kernel/tracing` (as root)"


def offcpu_options(duration: float | None = None, call_graph: str = OFFCPU_CALL_GRAPH) -> RecordOptions:
    """Every sched_switch, with stacks, plus the switch-in records (whatever the target)."""
    return RecordOptions(
        event=EVENT,
        freq=None,  # a tracepoint: every event, never sampled
        call_graph=call_graph,
        extra_args=("--switch-events",),
        duration=duration,
    )


def offcpu_spec(
    pid: int | None = None,
    command: Sequence[str] = (),
    duration: float | None = None,
    call_graph: str = OFFCPU_CALL_GRAPH,
) -> RecordSpec:
    """Every sched_switch of the target's threads, with stacks, plus the switch-in records."""
    return RecordSpec(command=tuple(command), pid=pid, options=offcpu_options(duration, call_graph))


# -- why a tracepoint cannot be recorded ---------------------------------------------------------
def paranoid_level() -> str:
    try:
        return Path("/proc/sys/kernel/perf_event_paranoid").read_text().strip()
    except OSError:
        return "unknown"


def mounted_tracefs(mounts: str = "/proc/self/mounts") -> list[str]:
    """Directories where tracefs is mounted (directly, or inside a mounted debugfs)."""
    found = []
    try:
        lines = Path(mounts).read_text().splitlines()
    except OSError:
        return [d for d in TRACEFS_DIRS if os.path.isdir(os.path.join(d, "events"))]
    for line in lines:
        fields = line.split()
        if len(fields) >= 3 and fields[2] == "tracefs":
            found.append(fields[1])
        elif len(fields) >= 3 and fields[2] == "debugfs":
            found.append(os.path.join(fields[1], "tracing"))
    return found


def may_trace_raw() -> bool:
    """The kernel hands raw tracepoint data to CAP_PERFMON / CAP_SYS_ADMIN, or to all at paranoid -1."""
    try:
        status = Path("/proc/self/status").read_text()
        caps = int(next(ln.split()[1] for ln in status.splitlines() if ln.startswith("CapEff:")), 16)
    except (OSError, StopIteration, ValueError):
        caps = 0
    return bool(caps & (1 << CAP_SYS_ADMIN | 1 << CAP_PERFMON)) or paranoid_level() == "-1"


def tracepoint_problem() -> FlamegraphError | None:
    """Why `-e sched:sched_switch` cannot work here, in one line; None when nothing is visibly wrong."""
    where = [d for d in mounted_tracefs() if os.path.exists(d)]  # a mount hidden by another is no use
    if not where:
        return NotPermitted(f"tracefs is not mounted, so {EVENT} cannot be recorded: {MOUNT_HINT}")
    denied = [d for d in where if not os.access(d, os.R_OK | os.X_OK)]
    for directory in where:
        event = os.path.join(directory, TRACEPOINT)
        if directory not in denied and os.path.isdir(event):
            denied += [event] if not os.access(event, os.R_OK | os.X_OK) else []
            break
    else:
        if not denied:
            places = ", ".join(where)
            return NotPermitted(f"no {EVENT} tracepoint under {places} (kernel without it?)")
    if denied:
        return NotPermitted(
            f"not permitted to read {denied[-1]} (not root): run as root, or "
            f"`mount -o remount,mode=755 {where[0]}` and `sysctl kernel.perf_event_paranoid=-1`"
        )
    if not may_trace_raw():
        return NotPermitted(
            f"not permitted to record {EVENT} with its fields (perf_event_paranoid is {paranoid_level()}, "
            "no CAP_PERFMON): run as root or `sysctl kernel.perf_event_paranoid=-1`"
        )
    return None


def record_offcpu(
    spec: RecordSpec, output: Path, status: Status | None = None, on_recording: Callable[[], None] | None = None
) -> Recording:
    """`perf record` of sched_switch; perf's complaints about tracepoints become one clear line."""
    if os.geteuid() != 0:  # as root, perf mounts a missing tracefs itself: let it try first
        problem = tracepoint_problem()
        if problem is not None:
            raise problem
    try:
        return record(spec, output, status=status, on_recording=on_recording)
    except (PerfFailed, NotPermitted) as err:
        problem = tracepoint_problem()
        raise (problem or err) from None


# -- threads that never switch during the recording --------------------------------------------
class ThreadState(NamedTuple):
    """One thread as /proc shows it: state letter and schedstat (on-CPU ns, run-queue ns, slices)."""

    state: str
    on_cpu_ns: int
    run_delay_ns: int
    slices: int


def snapshot_threads(pid: int) -> dict[int, ThreadState]:
    """Every thread of `pid` now; {} if it is gone. Read before and after a recording."""
    threads = {}
    try:
        tids = [int(name) for name in os.listdir(f"/proc/{pid}/task")]
    except (OSError, ValueError):
        return {}
    for tid in tids:
        base = f"/proc/{pid}/task/{tid}"
        try:
            state = Path(f"{base}/stat").read_text().rpartition(")")[2].split()[0]
            on_cpu, delay, slices = (int(x) for x in Path(f"{base}/schedstat").read_text().split()[:3])
        except (OSError, ValueError, IndexError):
            continue
        threads[tid] = ThreadState(state, on_cpu, delay, slices)
    return threads


def kernel_stack(pid: int, tid: int) -> list[bytes]:
    """Root-first kernel frames of a blocked thread ("[<0>] do_nanosleep+0x5e/0x170" lines; root only)."""
    try:
        lines = Path(f"/proc/{pid}/task/{tid}/stack").read_bytes().splitlines()
    except OSError:
        return []
    frames = [line.split(b"] ", 1)[-1].split(b"+", 1)[0].strip() for line in lines]
    return [frame.replace(b";", b":") for frame in reversed(frames) if frame]


Resolver = Callable[[list[tuple[int, bytes]], int], list[Wait]]


def whole_window_resolver(pid: int, before: dict[int, ThreadState]) -> Resolver:
    """Threads of `pid` without a single record: off-CPU for the whole recording if /proc says they
    never ran between the snapshot taken before perf started and now (their slices and CPU time
    unchanged, not runnable). Their wait is drawn with the kernel stack they are blocked in."""

    def resolve(silent: list[tuple[int, bytes]], window_ns: int) -> list[Wait]:
        after = snapshot_threads(pid)
        waits = []
        for tid, name in silent:
            old, new = before.get(tid), after.get(tid)
            if old is None or new is None or new.state.startswith("R") or new.state in "XZ":
                continue
            if (old.slices, old.on_cpu_ns) != (new.slices, new.on_cpu_ns):
                continue  # it ran, and perf lost what it did: leave it to the "no switch" note
            state = new.state.encode()
            stack = b";".join([name, WHOLE_RECORDING, *kernel_stack(pid, tid), state_frame(state)])
            waits.append(Wait(stack, name, state, window_ns, THROUGHOUT))
        return waits

    return resolve


# -- folding --------------------------------------------------------------------------------------
def window_ns(window: tuple[float | None, float | None]) -> tuple[int, int]:
    """(start, end) in seconds of perf's clock, either open (None) -> the ns span `OffCpuOptions.window` takes."""
    start, end = window
    return (0 if start is None else round(start * 1e9), NO_END_NS if end is None else round(end * 1e9))


@contextmanager
def open_offcpu(path: str) -> Iterator[IO[bytes]]:
    """`perf script` text (plain, gzip, stdin) or a perf.data file scripted with the off-CPU options."""
    with open_stream(path, script_args=SCRIPT_OPTIONS) as stream:
        yield stream


def fold_offcpu(
    inputs: Sequence[str],
    options: OffCpuOptions | None = None,
    diagnostics: Diagnostics | None = None,
    status: Status | None = None,
    resolve: Resolver | None = None,
    recording_end: int | None = None,
) -> FoldedProfile:
    """Off-CPU time per stack (microseconds) of each recording in `inputs`, summed into one profile.

    `resolve` turns the threads a recording shows no record of into waits, where something outside
    the text (the live process) can tell; the others are named in the header. `recording_end` (ns,
    perf's clock) is when perf stopped, if known: waits still open then end there, not at the last record."""
    options = options or OffCpuOptions()
    diagnostics = diagnostics or Diagnostics()
    collapser = SchedCollapser(options, diagnostics)
    folder = OffCpuFolder(options)
    silent: list[bytes] = []
    progress = show_progress(status, "pairing") if status else None
    for path in inputs or [STDIN]:
        # Pairing is sequential (a wait's two ends may be far apart): one process, reading perf
        # script's text as it is written, frames named through the same cache as `fold`.
        with open_lines(path, SCRIPT_OPTIONS, progress) as lines:
            for wait in collapser.iter_waits(lines, label(path), recording_end):
                folder.add(wait)
        if status:
            status.clear()
        resolved = resolve(collapser.silent, collapser.last_window_ns) if resolve else []
        for wait in resolved:
            folder.add(wait)
        done = {wait.thread for wait in resolved}
        silent += [name for _, name in collapser.silent if name not in done]
    diagnostics.finish()
    profile = folder.profile(collapser.window_ns, collapser.lost, silent)
    if not profile.counts:
        names = ", ".join(label(p) for p in inputs) or "<stdin>"
        what = f"{collapser.switches:,} sched_switch records" if collapser.switches else "no sched_switch records"
        raise NoSamples(f"{names}: no off-CPU time found ({what}; record with -e {EVENT} --switch-events)")
    return profile


def fold_offcpu_recording(
    recording: Recording,
    options: OffCpuOptions | None = None,
    diagnostics: Diagnostics | None = None,
    status: Status | None = None,
    resolve: Resolver | None = None,
) -> FoldedProfile:
    """The profile of a fresh recording, with its capture facts after the off-CPU totals."""
    if resolve is not None:  # a recording where nothing switched has no timestamps: perf's run time then
        inner, seconds = resolve, recording.seconds
        resolve = lambda silent, window: inner(silent, window or int(seconds * 1e9))  # noqa: E731
    end = recording.stopped_ns  # perf records with -k CLOCK_MONOTONIC: the clock we read it from
    profile = fold_offcpu([str(recording.perf_data)], options, diagnostics, status, resolve, end)
    captured = {k: v for k, v in recording.metadata.items() if k not in ("frequency", "event")}  # said above
    profile.metadata.update(captured)
    size = recording.perf_data.stat().st_size / 1e6
    if recording.seconds > 0:
        rate = size / recording.seconds
        profile.metadata["data"] = f"{size:,.1f} MB in {recording.seconds:.1f} s ({rate:,.1f} MB/s)"
    return profile
