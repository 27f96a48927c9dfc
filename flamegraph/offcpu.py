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

import gzip
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from .collapse.perf_sched import OffCpuFolder, OffCpuOptions, SchedCollapser
from .diagnostics import Diagnostics, FlamegraphError, InputMissing, NoSamples, NotPermitted, PerfFailed
from .inputs import STDIN, kind_of, label
from .model import FoldedProfile
from .perf import script_command, stream_script
from .record import Recording, RecordSpec, Status, iter_progress, record

EVENT = "sched:sched_switch"
DEFAULT_CALL_GRAPH = "dwarf,8192"  # frame pointers stop at libc's futex wrappers: 1 user frame
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


def offcpu_spec(
    pid: int | None = None,
    command: Sequence[str] = (),
    duration: float | None = None,
    call_graph: str = DEFAULT_CALL_GRAPH,
) -> RecordSpec:
    """Every sched_switch of the target's threads, with stacks, plus the switch-in records."""
    return RecordSpec(
        command=tuple(command),
        pid=pid,
        event=EVENT,
        freq=None,  # a tracepoint: every event, never sampled
        call_graph=call_graph,
        extra_args=("--switch-events",),
        duration=duration,
    )


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
    where = mounted_tracefs()
    if not where:
        return NotPermitted(f"tracefs is not mounted, so {EVENT} cannot be recorded: {MOUNT_HINT}")
    for directory in where:
        event = os.path.join(directory, TRACEPOINT)
        if os.path.isdir(event) and not os.access(event, os.R_OK | os.X_OK):
            return NotPermitted(
                f"not permitted to read {event} (not root): run as root, or "
                f"`mount -o remount,mode=755 {directory}` and `sysctl kernel.perf_event_paranoid=-1`"
            )
        if os.path.isdir(event):
            break
    else:
        return NotPermitted(
            f"no {EVENT} tracepoint under {', '.join(where)}: is tracefs complete? {MOUNT_HINT}"
        )
    if not may_trace_raw():
        return NotPermitted(
            f"not permitted to record {EVENT} with its fields (perf_event_paranoid is {paranoid_level()}, "
            "no CAP_PERFMON): run as root or `sysctl kernel.perf_event_paranoid=-1`"
        )
    return None


def record_offcpu(spec: RecordSpec, output: Path, status: Status | None = None) -> Recording:
    """`perf record` of sched_switch; perf's complaints about tracepoints become one clear line."""
    if os.geteuid() != 0:  # as root, perf mounts a missing tracefs itself: let it try first
        problem = tracepoint_problem()
        if problem is not None:
            raise problem
    try:
        return record(spec, output, status=status)
    except (PerfFailed, NotPermitted) as err:
        problem = tracepoint_problem()
        raise (problem or err) from None


# -- folding --------------------------------------------------------------------------------------
@contextmanager
def open_offcpu(path: str) -> Iterator[BinaryIO]:
    """`perf script` text (plain or gzip) or a perf.data file, which is scripted with our options."""
    kind = kind_of(path)
    if kind == "perf.data":
        command = script_command(path, extra=SCRIPT_OPTIONS)
        with stream_script(command, path) as stream:
            yield stream
        return
    if path == STDIN:
        yield gzip.GzipFile(fileobj=sys.stdin.buffer) if kind == "gzip" else sys.stdin.buffer  # type: ignore[misc]
        return
    with open(path, "rb") as raw:
        if kind == "gzip":
            with gzip.open(raw, "rb") as unzipped:
                yield unzipped  # type: ignore[misc]
        else:
            yield raw


def fold_offcpu(
    inputs: Sequence[str],
    options: OffCpuOptions | None = None,
    diagnostics: Diagnostics | None = None,
    status: Status | None = None,
) -> FoldedProfile:
    """Off-CPU time per stack (microseconds) of each recording in `inputs`, summed into one profile."""
    options = options or OffCpuOptions()
    diagnostics = diagnostics or Diagnostics()
    collapser = SchedCollapser(options, diagnostics)
    folder = OffCpuFolder(options)
    for path in inputs or [STDIN]:
        try:
            with open_offcpu(path) as stream:
                lines = iter_progress(stream, status, "pairing") if status else stream
                for wait in collapser.iter_waits(lines, label(path)):
                    folder.add(wait)
        except (EOFError, gzip.BadGzipFile) as err:
            raise InputMissing(f"{label(path)}: truncated or corrupt gzip data: {err}") from None
        except OSError as err:
            raise InputMissing(f"{label(path)}: read failed: {err.strerror or err}") from None
    diagnostics.finish()
    profile = folder.profile(collapser.window_ns, collapser.lost)
    if not profile.counts:
        names = ", ".join(label(p) for p in inputs) or "<stdin>"
        what = (
            f"{collapser.switches:,} sched_switch records"
            if collapser.switches
            else "no sched_switch records"
        )
        raise NoSamples(f"{names}: no off-CPU time found ({what}; record with -e {EVENT} --switch-events)")
    return profile


def fold_offcpu_recording(
    recording: Recording,
    options: OffCpuOptions | None = None,
    diagnostics: Diagnostics | None = None,
    status: Status | None = None,
) -> FoldedProfile:
    """The profile of a fresh recording, with its capture facts after the off-CPU totals."""
    try:
        profile = fold_offcpu([str(recording.perf_data)], options, diagnostics, status)
    except NoSamples as err:
        raise NoSamples(f"{err} (the recording is kept)") from None
    captured = {k: v for k, v in recording.metadata.items() if k not in ("frequency",)}
    profile.metadata.update(captured)
    size = recording.perf_data.stat().st_size / 1e6
    if recording.seconds > 0:
        rate = size / recording.seconds
        profile.metadata["data"] = f"{size:,.1f} MB in {recording.seconds:.1f} s ({rate:,.1f} MB/s)"
    return profile
