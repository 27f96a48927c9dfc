"""`flamegraph record` with real perf: launch, --pid, --duration, --window, Ctrl-C, and each user mistake."""

from __future__ import annotations

import io
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import NO_CAPABILITIES, NOBODY, Unprivileged, wait_for_perf_events
from helpers.children import interruptible, watchdog

from flamegraph.io.diagnostics import (
    EXIT_BAD_INPUT,
    EXIT_NO_COMMAND,
    EXIT_NO_PERF,
    EXIT_NO_PROCESS,
    EXIT_NOT_PERMITTED,
    EXIT_USAGE,
    Diagnostics,
)
from flamegraph.io.folded import read_folded
from flamegraph.model import FoldedProfile
from flamegraph.record import Recording, RecordOptions, RecordSpec, Status, fold_recording, record
from flamegraph.window import Window

pytestmark = [pytest.mark.perf, pytest.mark.parallel]  # proven beside two busy loops

FLAMEGRAPH = [sys.executable, "-m", "flamegraph"]
# Two CPU phases in different libraries (libz, then libcrypto), a CLOCK_MONOTONIC mark between them.
PHASES = """
import hashlib, sys, time, zlib
data = bytes(range(256)) * 4096
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    zlib.compress(data, 6)
print(f"MARK {time.clock_gettime(time.CLOCK_MONOTONIC):.6f}", flush=True)
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    hashlib.sha256(data).digest()
"""
BUSY = "import zlib\ndata = bytes(range(256)) * 4096\nwhile True:\n    zlib.compress(data, 6)\n"
BUSY_TALKING = "print('busy', flush=True)\n" + BUSY  # says when it runs, i.e. when perf records it


def run_cli(*args: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*FLAMEGRAPH, *args], capture_output=True, text=True, timeout=120, **kwargs)  # type: ignore[call-overload,no-any-return]


def load(path: Path) -> FoldedProfile:
    with open(path, "rb") as f:
        return read_folded(f, str(path), Diagnostics())


def share(profile: FoldedProfile, needle: str) -> float:
    return sum(w for s, w in profile.counts.items() if needle in s) / profile.total


@pytest.mark.serial  # a program timed by the wall clock: starved, its phases shrink beside Python's start-up
def test_launch_folds_and_reports(tmp_path: Path) -> None:
    folded, svg = tmp_path / "out.folded", tmp_path / "out.svg"
    args = ["--title", "two phases", "-o", str(svg), "--folded", str(folded)]
    proc = run_cli("record", *args, "--", sys.executable, "-c", PHASES, "0.4")
    assert proc.returncode == 0, proc.stderr
    text = svg.read_text()
    for fact in ("two phases", "command: ", "perf: ", "kernel: ", "call graph: dwarf,16384", "thread root"):
        assert fact in text, fact  # capture metadata and the attribution report in the header
    assert "reach a thread root" in proc.stderr
    assert "MARK" in proc.stdout  # the program's output reaches the user
    assert "top frames by self samples" in proc.stderr and "wrote" in proc.stderr
    profile = load(folded)
    assert share(profile, "libz") > 0.2 and share(profile, "libcrypto") > 0.2
    assert all(stack.startswith("python") for stack in profile.counts)


@pytest.mark.serial  # a program timed by the wall clock: starved, its phases shrink beside Python's start-up
def test_window_keeps_only_that_span(tmp_path: Path) -> None:
    marks: list[float] = []
    spec = RecordSpec(command=(sys.executable, "-c", PHASES, "0.5"))

    def tap(line: str) -> None:
        if line.startswith("MARK "):
            marks.append(float(line.split()[1]))

    err, out = io.BytesIO(), io.BytesIO()
    recording = record(spec, tmp_path / "perf.data", on_output=tap, status=Status(err, out))
    assert recording.exit_status == 0 and len(marks) == 1
    assert out.getvalue().decode().startswith("MARK ")  # tapped lines still reach the user
    before = fold_recording(recording, window=Window(None, marks[0]))
    after = fold_recording(recording, window=Window(marks[0], None))
    assert share(before, "libz") > 0.7 and share(after, "libz") == 0
    assert share(after, "libcrypto") > 0.8
    assert after.metadata["window"] == f"from {marks[0]:.3f} s of perf's clock"
    assert after.metadata["event"] == "cpu-clock" and after.metadata["perf"][0].isdigit()


@pytest.mark.serial  # a program timed by the wall clock: starved, its phases shrink beside Python's start-up
def test_duration_stops_a_long_command(tmp_path: Path) -> None:
    folded = tmp_path / "d.folded"
    started = time.monotonic()
    proc = run_cli("record", "--duration", "1", "--no-svg", "--folded", str(folded), "--",
                   sys.executable, "-c", BUSY)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert time.monotonic() - started < 30
    assert share(load(folded), "libz") > 0.5


def test_duration_stops_perf_started_from_a_thread_that_blocks_sigint(tmp_path: Path) -> None:
    """A signal mask survives fork and exec: perf started from a thread with SIGINT blocked (a Dask
    thread, a library caller's) ignored the SIGINT --duration sends, and recorded on and on."""
    outcome: list[object] = []

    def run() -> None:
        signal.pthread_sigmask(signal.SIG_BLOCK, (signal.SIGINT, signal.SIGHUP))
        spec = RecordSpec(command=(sys.executable, "-c", BUSY), options=RecordOptions(duration=1.0, freq=99))
        try:
            outcome.append(record(spec, tmp_path / "perf.data", status=Status(io.BytesIO(), io.BytesIO())))
        except BaseException as err:  # noqa: BLE001 - reported below
            outcome.append(err)

    started = time.monotonic()
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout=30)
    assert not thread.is_alive(), "perf did not stop at --duration"
    assert time.monotonic() - started < 20
    (recording,) = outcome
    assert isinstance(recording, Recording) and recording.stopped_ns is not None, recording
    assert recording.perf_data.stat().st_size > 0


def test_pid_mode_records_a_running_process(tmp_path: Path) -> None:
    target = subprocess.Popen([sys.executable, "-c", BUSY_TALKING], stdout=subprocess.PIPE, text=True)
    try:
        assert target.stdout is not None and target.stdout.readline() == "busy\n"  # past Python's start-up
        folded = tmp_path / "p.folded"
        proc = run_cli("record", "--pid", str(target.pid), "--duration", "2", "--no-svg", "--folded", str(folded))
        assert proc.returncode == 0, proc.stderr
        assert share(load(folded), "libz") > 0.5
    finally:
        target.kill()
        target.wait()


def test_pid_that_exits_during_recording_still_gives_output(tmp_path: Path) -> None:
    paused = "import sys; sys.stdin.readline()\n" + PHASES  # released once perf is attached
    target = subprocess.Popen([sys.executable, "-c", paused, "1.0"], stdout=subprocess.DEVNULL, stdin=subprocess.PIPE)
    folded = tmp_path / "e.folded"
    cli = subprocess.Popen([*FLAMEGRAPH, "record", "--pid", str(target.pid), "--no-svg", "--folded", str(folded)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        wait_for_perf_events(target.pid)
        assert target.stdin is not None
        target.stdin.write(b"go\n")
        target.stdin.flush()
        _, stderr = cli.communicate(timeout=120)
    finally:
        target.kill()
        target.wait()
    assert cli.returncode == 0, stderr
    assert load(folded).total > 0


def test_ctrl_c_stops_recording_and_still_writes(tmp_path: Path) -> None:
    folded = tmp_path / "c.folded"
    proc = subprocess.Popen(
        [*FLAMEGRAPH, "record", "--no-svg", "--folded", str(folded), "--", sys.executable, "-c", BUSY_TALKING],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True, preexec_fn=interruptible,
    )  # fmt: skip
    with watchdog(90, proc):  # a readline waits for ever: the watchdog ends it
        assert proc.stdout is not None and proc.stdout.readline() == "busy\n"  # perf is recording the program
        time.sleep(1.0)
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal does: the whole foreground group gets it
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "stopping the recording" in err
    assert share(load(folded), "libz") > 0.5


# -- each user mistake: a documented exit code and one line ---------------------------------


def one_line_error(proc: subprocess.CompletedProcess[str], code: int, text: str) -> None:
    assert proc.returncode == code, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("flamegraph: ")]
    assert len(errors) == 1 and text in errors[0], proc.stderr
    assert "perf_event_paranoid setting" not in proc.stderr  # perf's own multi-line text is held back
    assert "Traceback" not in proc.stderr


def test_error_perf_missing(tmp_path: Path) -> None:
    env = {**os.environ, "PATH": str(Path(sys.executable).parent)}
    assert shutil.which("perf", path=env["PATH"]) is None
    one_line_error(run_cli("record", "--", "true", env=env), EXIT_NO_PERF, "perf is not installed")


@pytest.mark.parametrize("drop", [NOBODY, NO_CAPABILITIES], ids=["nobody", "root without capabilities"])
def test_error_not_permitted(unprivileged: Unprivileged, drop: tuple[str, ...]) -> None:
    """perf_event_paranoid 2 (Debian's default) and no CAP_PERFMON: another user's process is off limits."""
    if Path("/proc/sys/kernel/perf_event_paranoid").read_text().strip() in ("-1", "0", "1"):
        pytest.skip("perf_event_paranoid lets everyone profile everything here")  # Debian's default is 2
    folded = unprivileged.scratch / f"not-permitted-{len(drop)}.folded"
    args = ["record", "--pid", "1", "--duration", "1", "--no-svg", "--folded", str(folded)]
    proc = subprocess.run(unprivileged.command(*args, drop=drop), capture_output=True, text=True, timeout=60, cwd="/")
    one_line_error(proc, EXIT_NOT_PERMITTED, "not permitted (perf_event_paranoid is")
    assert not folded.exists()


@pytest.mark.parametrize("drop", [NOBODY, NO_CAPABILITIES], ids=["nobody", "root without capabilities"])
def test_unprivileged_tracepoint_is_not_permitted_not_a_syntax_error(
    unprivileged: Unprivileged, drop: tuple[str, ...]
) -> None:
    """An unprivileged `record -e sched:sched_switch` was exit 5 "event syntax error" (perf cannot read
    the tracepoint's format) or "No permission to enable": the permission exit 6, with the reason."""
    if Path("/proc/sys/kernel/perf_event_paranoid").read_text().strip() == "-1":
        pytest.skip("perf_event_paranoid -1 lets everyone record tracepoints here")
    folded = unprivileged.scratch / f"tracepoint-{len(drop)}.folded"
    args = ["record", "-e", "sched:sched_switch", "--no-svg", "--folded", str(folded), "--", "true"]
    proc = subprocess.run(unprivileged.command(*args, drop=drop), capture_output=True, text=True, timeout=60, cwd="/")
    one_line_error(proc, EXIT_NOT_PERMITTED, "not permitted to re")
    assert "sched" in proc.stderr or "/sys/kernel" in proc.stderr
    assert not folded.exists()


def test_error_pid_gone() -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    one_line_error(run_cli("record", "--pid", str(dead.pid)), EXIT_NO_PROCESS, f"no process with pid {dead.pid}")


def test_pid_perf_cannot_inspect_says_why() -> None:
    """perf 6.1 exits 255 without a word when /proc/PID/maps is denied to it (pid 1 of some VMs and
    containers); we printed "perf record failed: no message"."""
    proc = run_cli("record", "--pid", "1", "--duration", "5", "--no-svg", "--folded", "/dev/null")
    assert "no message" not in proc.stderr and "Traceback" not in proc.stderr
    try:
        Path("/proc/1/maps").read_bytes()
    except PermissionError:
        one_line_error(proc, EXIT_NOT_PERMITTED, "perf cannot read /proc/1/maps (Permission denied)")
    else:  # perf may profile it here: recorded, or (an idle init) nothing sampled
        assert proc.returncode in (0, EXIT_BAD_INPUT), proc.stderr


def test_error_command_not_found() -> None:
    one_line_error(run_cli("record", "--", "no-such-program-fg"), EXIT_NO_COMMAND, "no-such-program-fg")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["record"], "give either --pid PID or -- COMMAND ARGS"),
        (["record", "--pid", "1", "--", "true"], "give either --pid PID or -- COMMAND ARGS"),
        (["record", "--call-graph", "dwarf,7", "--", "true"], "dwarf stack size 7: a multiple of 8"),
        (["record", "--window", "5,1", "--", "true"], "window '5,1': expected START,END"),
        (["record", "--no-svg", "--", "true"], "--no-svg needs --folded"),
        (["record", "--highlight", "(oops", "--", "true"], "bad regular expression"),
    ],
    ids=["no-target", "both-targets", "bad-call-graph", "bad-window", "no-svg-without-folded", "bad-highlight"],
)
def test_usage_errors(args: list[str], message: str) -> None:
    """Each mistake is caught before anything is recorded, by the check meant for it."""
    proc = run_cli(*args)
    assert proc.returncode == EXIT_USAGE, proc.stderr
    lines = proc.stderr.splitlines()  # one line, not a usage block (docs/exit-codes.md)
    assert len(lines) == 1 and lines[0].startswith("flamegraph: ") and message in lines[0], proc.stderr


@pytest.mark.serial  # a program timed by the wall clock: starved, its phases shrink beside Python's start-up
def test_fold_counts_a_recording_in_samples_as_record_does(tmp_path: Path) -> None:
    """`fold rec.perf.data` weighted each sample by its period (2,004,008 ns of cpu-clock at 499 Hz)
    and called the sum samples, where `record` counted the same recording's samples."""
    data, recorded = tmp_path / "rec.perf.data", tmp_path / "rec.folded"
    proc = run_cli("record", "--perf-data", str(data), "--folded", str(recorded), "--no-svg", "--",
                   sys.executable, "-c", PHASES, "0.4")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    for extra in ([], ["--with-pid"]):
        folded = tmp_path / "fold.folded"
        done = run_cli("fold", *extra, str(data), "-o", str(folded))
        assert done.returncode == 0, done.stderr
        assert load(folded).total == load(recorded).total > 50  # 0.4 s at 499 Hz
        assert '"unit": "samples"' in (tmp_path / "fold.folded.json").read_text()
