"""The recorder's pure parts: option parsing, the perf record / perf script command lines, errors."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from flamegraph.io.diagnostics import CommandNotFound, NoSuchProcess, NotPermitted, PerfFailed
from flamegraph.record import (
    Recording,
    RecordOptions,
    RecordSpec,
    Status,
    capture_metadata,
    check_target,
    explain_failure,
    parse_call_graph,
    record_command,
    script_args,
)
from flamegraph.record.privileges import CAP_IPC_LOCK, CAP_PERFMON, has_capability
from flamegraph.window import Window

OUT = Path("/tmp/x/perf.data")


def test_default_command_line_is_the_measured_one() -> None:
    argv = record_command(RecordSpec(command=("python", "t.py", "--epochs", "1")), "/usr/bin/perf", OUT)
    mmap = ["-m", "16M"] if has_capability(CAP_IPC_LOCK) else []
    assert argv == [
        "/usr/bin/perf", "record", "-N", "--buildid-all", "-k", "CLOCK_MONOTONIC", "-e", "cpu-clock", "-F", "499",
        "--call-graph", "dwarf,16384", *mmap, "-o", str(OUT), "--", "python", "t.py", "--epochs", "1",
    ]  # fmt: skip


def test_pid_mode_and_frame_pointers() -> None:
    spec = RecordSpec(pid=42, options=RecordOptions(call_graph="fp", freq=999, mmap=None))
    argv = record_command(spec, "perf", OUT)
    assert argv[-2:] == ["-p", "42"] and "--" not in argv
    assert argv[argv.index("-F") + 1] == "999" and "-g" in argv and "--call-graph" not in argv


def test_offcpu_shape_is_expressible() -> None:
    """What `flamegraph offcpu` asks the recorder for: a tracepoint, no -F, extra options."""
    how = RecordOptions(
        event="sched:sched_switch", freq=None, call_graph="dwarf,8192",
        extra_args=("--switch-events",), duration=3.0, mmap=None,
    )  # fmt: skip
    spec = RecordSpec(pid=7, options=how)
    argv = record_command(spec, "perf", OUT)
    assert argv[argv.index("-e") + 1] == "sched:sched_switch" and "-F" not in argv
    assert argv.index("--switch-events") < argv.index("-o")
    assert argv[argv.index("--call-graph") + 1] == "dwarf,8192"


def test_no_stacks() -> None:
    argv = record_command(RecordSpec(command=("ls",), options=RecordOptions(call_graph=None, mmap=None)), "perf", OUT)
    assert "-g" not in argv and "--call-graph" not in argv


def test_spec_needs_exactly_one_target() -> None:
    with pytest.raises(ValueError):
        RecordSpec()
    with pytest.raises(ValueError):
        RecordSpec(command=("ls",), pid=1)


@pytest.mark.parametrize("text", ["fp", "lbr", "dwarf", "dwarf,8", "dwarf,16384", "dwarf,65528"])
def test_call_graph_accepted(text: str) -> None:
    assert parse_call_graph(text) == text


@pytest.mark.parametrize("text", ["", "frame", "fp,16", "dwarf,0", "dwarf,65536", "dwarf,100", "dwarf,x"])
def test_call_graph_rejected(text: str) -> None:
    with pytest.raises(ValueError):
        parse_call_graph(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("1.5,2.5", (1.5, 2.5)), ("10,", (10.0, None)), (",3", (None, 3.0)), ("4,4", (4.0, 4.0))],
)
def test_window_accepted(text: str, expected: tuple[float | None, float | None]) -> None:
    assert Window.parse(text) == expected and Window.parse(text).format()


@pytest.mark.parametrize(
    "text",
    ["5", "a,b", "3,2", "1,2,3", "inf,", ",inf", "nan,1", "-1,2", "1e400,", "1_0,20", "\u0663,4", "1e3,"]
    + ["9" * 400 + ","],
)
def test_window_rejected(text: str) -> None:
    """Plain seconds only: no sign, exponent, inf, nan or '_' (float() takes all of them; perf takes none)."""
    with pytest.raises(ValueError, match=r"expected START,END in seconds \(0 <= START <= END\)"):
        Window.parse(text)


def test_call_graph_size_too_long_to_convert() -> None:
    with pytest.raises(ValueError, match="expected fp, lbr, dwarf or dwarf,SIZE"):
        parse_call_graph("dwarf," + "9" * 5000)


def recording(**kwargs: object) -> Recording:
    return Recording(OUT, RecordSpec(command=("ls",)), {}, 1.0, **kwargs)  # type: ignore[arg-type]


def test_script_args_window_and_hook_extras() -> None:
    assert script_args(recording()) == ["-F", "comm,pid,tid,time,event,ip,sym,dso"]
    args = script_args(recording(script_extra=("--show-mmap-events",)), Window(1.25, None), "comm,tid,ip")
    assert args == ["-F", "comm,tid,ip", "--time", "1.250000,", "--show-mmap-events"]


# What perf 6.1 prints, verbatim (first lines), for each failure.
PARANOID = """Error:
Access to performance monitoring and observability operations is limited.
Consider adjusting /proc/sys/kernel/perf_event_paranoid setting to open
perf_event_paranoid setting is 2:
"""
MLOCK = """Permission error mapping pages.
Consider increasing /proc/sys/kernel/perf_event_mlock_kb,
or try again with a smaller value of -m/--mmap_pages.
(current value: 4096,0)
"""
NO_PID = "Couldn't create thread/CPU maps: No such process\n"
NO_CMD = "Failed to collect 'cpu-clock' for the 'nonexistent_cmd_xyz' workload: No such file or directory\n"
BAD_EVENT = "event syntax error: 'sched:nope'\n                     \\___ unknown tracepoint\n"


@pytest.mark.parametrize(
    ("stderr", "spec", "kind", "text"),
    [
        (PARANOID, RecordSpec(pid=1), NotPermitted, "perf_event_paranoid is"),
        (MLOCK, RecordSpec(pid=1), NotPermitted, "not permitted to lock 16M"),
        (NO_PID, RecordSpec(pid=99999999), NoSuchProcess, "no process with pid 99999999"),
        (NO_CMD, RecordSpec(command=("nonexistent_cmd_xyz",)), CommandNotFound, "nonexistent_cmd_xyz"),
        (BAD_EVENT, RecordSpec(pid=1), PerfFailed, "event syntax error: 'sched:nope'"),
        ("", RecordSpec(command=("true",)), PerfFailed, "perf record failed (exit 255) and gave no reason"),
    ],
)
def test_perf_failures_become_one_line(stderr: str, spec: RecordSpec, kind: type, text: str) -> None:
    error = explain_failure(spec, stderr, 255)
    assert isinstance(error, kind) and text in str(error) and "\n" not in str(error)


def test_capabilities_from_proc_status() -> None:
    status = "Name:\tpython\nCapEff:\t0000004000004000\n"  # CAP_IPC_LOCK (14) and CAP_PERFMON (38)
    assert has_capability(CAP_IPC_LOCK, status) and has_capability(CAP_PERFMON, status)
    assert not has_capability(21, status) and not has_capability(CAP_IPC_LOCK, "CapEff:\t0000000000000000\n")


def test_check_target_pid_gone_and_command_missing(tmp_path: Path) -> None:
    with pytest.raises(NoSuchProcess, match="no process with pid 2147483646"):
        check_target(RecordSpec(pid=2147483646))
    with pytest.raises(CommandNotFound, match="not on PATH"):
        check_target(RecordSpec(command=("surely-not-a-command-fg",)))
    with pytest.raises(CommandNotFound, match="no such executable"):
        check_target(RecordSpec(command=(str(tmp_path / "missing"),)))
    script = tmp_path / "not-executable"
    script.write_text("#!/bin/sh\n")
    with pytest.raises(CommandNotFound):
        check_target(RecordSpec(command=(str(script),)))
    check_target(RecordSpec(pid=os.getpid()))
    check_target(RecordSpec(command=("sh", "-c", "true")))


def test_metadata_keys_in_header_order() -> None:
    meta = capture_metadata(RecordSpec(command=("sh", "-c", "echo 'a b'"), env={"X": "1"}), "/bin/false")
    assert list(meta) == [
        "command", "event", "frequency", "call graph", "perf", "kernel", "host", "date", "environment",
    ]  # fmt: skip
    assert meta["command"] == "sh -c 'echo '\"'\"'a b'\"'\"''"
    assert meta["frequency"] == "499 Hz" and meta["call graph"] == "dwarf,16384"
    assert meta["perf"] == "unknown" and meta["environment"] == "X=1"


def test_metadata_describes_a_pid_by_its_command_line() -> None:
    meta = capture_metadata(RecordSpec(pid=os.getpid()), "/bin/false")
    assert meta["command"].startswith(f"pid {os.getpid()}: ") and "python" in meta["command"]


class FakeTTY(io.BytesIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


def test_status_redraws_on_a_terminal_and_throttles_otherwise() -> None:
    tty = FakeTTY(True)
    status = Status(tty, FakeTTY(True))
    status.show("a")
    status.show("b")
    status.note("done")
    assert tty.getvalue() == b"\r\x1b[Ka\r\x1b[Kb\r\x1b[Kdone\n"
    pipe = FakeTTY(False)
    status = Status(pipe, FakeTTY(False), every=3600)
    status.show("first")
    status.show("second")  # within the interval: not printed
    status.clear()
    assert pipe.getvalue() == b"first\n"
