"""What to record and the `perf record` command line for it: options, checks, errors, capture metadata.

Pure apart from the few look-ups a check needs (`/proc`, PATH, `perf --version`).
"""

from __future__ import annotations

import dataclasses
import os
import re
import shlex
import subprocess
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from ..io.diagnostics import CommandNotFound, FlamegraphError, NoSuchProcess, NotPermitted, PerfFailed
from ..io.perf import describe_exit
from .command import resolve_program
from .defaults import DEFAULT_CALL_GRAPH as DEFAULT_CALL_GRAPH  # the defaults live in defaults.py (for --help)
from .defaults import DEFAULT_EVENT as DEFAULT_EVENT
from .defaults import DEFAULT_FREQ as DEFAULT_FREQ
from .defaults import OFFCPU_CALL_GRAPH as OFFCPU_CALL_GRAPH
from .lost import LostSamples
from .privileges import CAP_IPC_LOCK, has_capability, paranoid_level, who_am_i
from .tracefs import is_tracepoint, tracepoint_problem

DEFAULT_MMAP = "16M"  # DWARF needs big buffers; only root may lock this much (perf_event_mlock_kb)
ONCPU_FIELDS = "comm,pid,tid,time,event,ip,sym,dso"
MAX_DWARF_SIZE = 65528
CALL_GRAPH = re.compile(r"^(fp|lbr|dwarf)(?:,(\d{1,9}))?$")  # int() of 4,300+ digits would say "Exceeds the limit"


def parse_call_graph(text: str) -> str:
    """'fp', 'lbr', 'dwarf' or 'dwarf,SIZE' (SIZE a multiple of 8, at most 65528) -> perf's spelling."""
    match = CALL_GRAPH.match(text.strip())
    if match is None or (match.group(2) and match.group(1) != "dwarf"):
        raise ValueError(f"call graph {text!r}: expected fp, lbr, dwarf or dwarf,SIZE")
    if match.group(2):
        size = int(match.group(2))
        if size % 8 or not 8 <= size <= MAX_DWARF_SIZE:
            raise ValueError(f"dwarf stack size {size}: a multiple of 8 from 8 to {MAX_DWARF_SIZE}")
    return text.strip()


@dataclass(frozen=True)
class RecordOptions:
    """How to record, whatever the target: the event, how often, the call graph, buffers, how long."""

    event: str = DEFAULT_EVENT
    freq: int | None = DEFAULT_FREQ  # None: perf's default (tracepoints: every event)
    call_graph: str | None = DEFAULT_CALL_GRAPH  # None: no stacks
    mmap: str | None = DEFAULT_MMAP  # -m; dropped when not root
    extra_args: tuple[str, ...] = ()  # more `perf record` options, e.g. ("--switch-events",)
    duration: float | None = None  # seconds; None: until the command ends or Ctrl-C

    def replace(self, **changes: object) -> RecordOptions:
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]


@dataclass(frozen=True)
class RecordSpec:
    """What to record (exactly one of `command` and `pid`, checked here) and how (`options`)."""

    command: tuple[str, ...] = ()
    pid: int | None = None
    options: RecordOptions = RecordOptions()
    env: dict[str, str] = field(default_factory=dict)  # added to the command's environment
    stdout_ours: bool = False  # an output goes to our stdout (-o -): the command's stdout goes to our stderr
    cwd: str | None = None  # the command's working directory (perf.data paths stay absolute)

    def __post_init__(self) -> None:
        if bool(self.command) == (self.pid is not None):
            raise ValueError("RecordSpec needs exactly one of command and pid")

    def replace(self, **changes: object) -> RecordSpec:
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]


@dataclass
class Recording:
    """A finished `perf record`: where the data are and how they were made."""

    perf_data: Path
    spec: RecordSpec
    metadata: dict[str, str]
    seconds: float
    samples: int | None = None  # from perf's "Captured and wrote ... (N samples)"
    interrupted: bool = False  # stopped by Ctrl-C, SIGTERM or SIGHUP (the data are complete up to then)
    exit_status: int | None = None  # the launched command's status (None with --pid)
    script_extra: tuple[str, ...] = ()  # options hooks add to `perf script` (e.g. --show-mmap-events)
    stop_signal: int | None = None  # the signal that stopped it (SIGINT for Ctrl-C); None: duration or exit
    stopped_ns: int | None = None  # when perf was told to stop (CLOCK_MONOTONIC ns, perf's clock); None: ended
    lost: LostSamples | None = None  # samples perf lost (its buffers overran); None: none lost
    perf_pid: int | None = None  # perf's own pid: its workload's threads are its descendants (perf record -a)
    label: str | None = None  # how a message on a line of its text names perf.data, when not by its path


class RecordHook(Protocol):
    def prepare(self, spec: RecordSpec) -> RecordSpec: ...

    def finish(self, recording: Recording) -> Recording: ...


def record_command(spec: RecordSpec, perf: str, output: Path) -> list[str]:
    """The `perf record` argv: -N (no ~/.debug copies), --buildid-all (the build-id of every DSO, not only
    of those samples landed in: a DSO seen only in call stacks is then checked too before its frames
    are grouped by function), -k CLOCK_MONOTONIC (for --time windows)."""
    how = spec.options
    argv = [perf, "record", "-N", "--buildid-all", "-k", "CLOCK_MONOTONIC", "-e", how.event]
    if how.freq is not None:
        argv += ["-F", str(how.freq)]
    if how.call_graph == "fp":
        argv += ["-g"]
    elif how.call_graph:
        argv += ["--call-graph", how.call_graph]
    if how.mmap and has_capability(CAP_IPC_LOCK):  # else perf_event_mlock_kb (516 KiB) is the limit
        argv += ["-m", how.mmap]
    argv += [*how.extra_args, "-o", str(output)]
    if spec.pid is not None and "-a" in how.extra_args:  # all CPUs, for as long as the process lives
        return [*argv, "--", "tail", f"--pid={spec.pid}", "-f", "/dev/null"]
    if "-a" in how.extra_args:
        # All CPUs with a launched command: perf would describe the command's memory as it is before its
        # exec (perf's own libc), and perf 6.1 keeps that map after the exec: no stack of the program
        # unwound through libc in 4 of 5 recordings (in 0 of 3 with only the task records synthesized).
        argv[-2:-2] = ["--synth=task"]
    if spec.pid is not None:
        return [*argv, "-p", str(spec.pid)]
    return [*argv, "--", *spec.command]


def check_target(spec: RecordSpec) -> None:
    """Fail early, in one line, for a pid that does not exist or a command that cannot be found."""
    if spec.pid is not None:
        try:
            os.kill(spec.pid, 0)
        except ProcessLookupError:
            raise NoSuchProcess(f"no process with pid {spec.pid}") from None
        except PermissionError:
            pass  # it exists; perf decides whether we may profile it
        return
    resolve_program(spec.command[0], {**os.environ, **spec.env}, spec.cwd)


def maps_problem(pid: int) -> FlamegraphError | None:
    """Why perf failed on PID without a word: it reads /proc/PID/task/TID/maps to name the code it
    samples, and where that is denied (ptrace access: a process with capabilities we lack, or another
    namespace's) perf 6.1 exits 255 silently; only -v shows "couldn't open /proc/1/task/1/maps"."""
    try:
        with open(f"/proc/{pid}/maps", "rb") as maps:
            maps.read(1)
    except FileNotFoundError:
        return NoSuchProcess(f"no process with pid {pid} (it exited while perf was attaching)")
    except OSError as err:
        return NotPermitted(
            f"perf cannot read /proc/{pid}/maps ({err.strerror}): this process may not inspect pid {pid} "
            f"({who_am_i()}; it holds privileges we lack, or lives in another namespace)"
        )
    return None


def explain_failure(spec: RecordSpec, stderr: str, code: int | None = None) -> FlamegraphError:
    """perf's multi-line complaint -> one of our errors, with the fix. What perf 6.1 prints (first lines):
    Access to performance monitoring and observability operations is limited.   (paranoid, not root)
    Permission error mapping pages.                                               (-m over mlock limit)
    Couldn't create thread/CPU maps: No such process                              (-p of a gone pid)
    Failed to collect 'cpu-clock' for the 'nosuch' workload: No such file or directory
    event syntax error: 'sched:sched_switch'                                      (tracefs not readable)
    No permission to enable sched:sched_switchu event.                            (raw fields, no CAP_PERFMON)
    """
    if "mapping pages" in stderr:
        return NotPermitted(
            f"perf record: not permitted to lock {spec.options.mmap} of buffers (perf_event_mlock_kb, {who_am_i()})"
        )
    if "event syntax error" in stderr or "No permission" in stderr:
        # perf cannot parse a tracepoint whose format it may not read: say why, not "syntax error" (exit 5)
        problem = tracepoint_problem(spec.options.event) if is_tracepoint(spec.options.event) else None
        if problem is not None:
            return problem
    if "perf_event_paranoid" in stderr or "Permission" in stderr or "not permitted" in stderr:
        return NotPermitted(
            f"perf record: not permitted (perf_event_paranoid is {paranoid_level()}, {who_am_i()}): "
            "run as root or lower it with `sysctl kernel.perf_event_paranoid=1`"
        )
    if spec.pid is not None and ("No such process" in stderr or "thread/CPU maps" in stderr):
        return NoSuchProcess(f"no process with pid {spec.pid} (it exited before perf attached)")
    if spec.command and "No such file or directory" in stderr and "workload" in stderr:
        return CommandNotFound(f"{spec.command[0]}: command not found")
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip() and ln.strip() != "Error:"]
    if lines:
        return PerfFailed(f"perf record failed: {lines[0]}")
    if spec.pid is not None and (problem := maps_problem(spec.pid)) is not None:
        return problem
    how = f" ({describe_exit(code)})" if code is not None else ""
    return PerfFailed(f"perf record failed{how} and gave no reason (run the perf command with -v to see more)")


def perf_version(perf: str) -> str:
    try:
        out = subprocess.run([perf, "--version"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    match = re.match(r"perf version (\S+)", out)
    return match.group(1) if match else "unknown"


def describe_target(spec: RecordSpec) -> str:
    if spec.pid is None:
        return shlex.join(spec.command)
    try:
        cmdline = Path(f"/proc/{spec.pid}/cmdline").read_bytes().split(b"\0")
        return f"pid {spec.pid}: " + shlex.join(part.decode(errors="replace") for part in cmdline if part)
    except OSError:
        return f"pid {spec.pid}"


def capture_metadata(spec: RecordSpec, perf: str) -> dict[str, str]:
    """Capture facts for the SVG header, in the order the header shows them."""
    import platform  # here, not at the top: `flamegraph --help` imports this module for its defaults
    import socket

    meta = {
        "command": describe_target(spec),
        "event": spec.options.event,
        "frequency": f"{spec.options.freq} Hz" if spec.options.freq is not None else "every event",
        "call graph": spec.options.call_graph or "none",
        "perf": perf_version(perf),
        "kernel": platform.release(),
        "host": socket.gethostname(),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    if spec.env:
        meta["environment"] = " ".join(f"{k}={v}" for k, v in sorted(spec.env.items()))
    return meta
