"""`flamegraph offcpu` and `flamegraph fold --offcpu` with real perf: --pid (threads created later too),
a pid that exits, Ctrl-C, the SVG, and each failure as one line with its exit code."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import NO_CAPABILITIES, NOBODY, Unprivileged, wait_for_perf_events
from helpers.children import ended, interruptible
from helpers.programs import compile_c
from helpers.svg import frames, texts

from flamegraph.io.diagnostics import (
    EXIT_NO_PERF,
    EXIT_NO_PROCESS,
    EXIT_NOT_PERMITTED,
    EXIT_OK,
    EXIT_USAGE,
    Diagnostics,
)
from flamegraph.io.folded import read_folded

pytestmark = pytest.mark.parallel  # its perf tests were proven beside two busy loops (make test's parallel part)

FLAMEGRAPH = [sys.executable, "-m", "flamegraph"]
# Sleeps, then starts a thread named 'late' that sleeps 3 x 50 ms, then sleeps again: attach in between.
LATE_THREAD = """
import ctypes, sys, threading, time
print("READY", flush=True)
if len(sys.argv) > 3:
    sys.stdin.readline()  # released by the test once perf is attached
time.sleep(float(sys.argv[1]))
def late():
    ctypes.CDLL(None).prctl(15, ctypes.c_char_p(b"late"), 0, 0, 0)
    for _ in range(3):
        time.sleep(0.05)
t = threading.Thread(target=late)
t.start()
t.join()
time.sleep(float(sys.argv[2]))
"""


def run_cli(*args: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*FLAMEGRAPH, *args], capture_output=True, text=True, timeout=120, **kwargs)  # type: ignore[call-overload,no-any-return]


def load(path: Path) -> dict[str, float]:
    with open(path, "rb") as f:
        return read_folded(f, str(path), Diagnostics(echo=False)).counts


def one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    errors = [line for line in proc.stderr.splitlines() if line.startswith("flamegraph:")]
    assert len(errors) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    return errors[0]


TRACEFS_CLOSED = os.path.isdir("/sys/kernel/tracing") and not os.stat("/sys/kernel/tracing").st_mode & 0o001


def start_target(tmp_path: Path, before: float, after: float, paused: bool = False) -> subprocess.Popen[str]:
    """The LATE_THREAD script; `paused`: it waits for a line on stdin before its first sleep."""
    script = tmp_path / "late_thread.py"
    script.write_text(LATE_THREAD)
    argv = [sys.executable, str(script), str(before), str(after), *(["paused"] if paused else [])]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stdin=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "READY"
    return proc


def dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


# -- usage: no perf needed ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "give either --pid PID or -- COMMAND ARGS"),
        (["--pid", "1", "--", "true"], "give either --pid PID or -- COMMAND ARGS"),
        (["--state", "S,Q", "--", "true"], "expected states among ?,D,I,P,R,S,T,X,Z,t, got 'S,Q'"),
        (["--call-graph", "dwarf,7", "--", "true"], "dwarf stack size 7: a multiple of 8"),
        (["--no-svg", "--", "true"], "--no-svg needs --folded"),
        (["--window", "5,1", "--", "true"], "window '5,1': expected START,END"),
    ],
    ids=["no-target", "both-targets", "bad-state", "bad-call-graph", "no-svg-without-folded", "bad-window"],
)
def test_usage_errors(args: list[str], message: str) -> None:
    """Each mistake is caught before anything is recorded, by the check meant for it."""
    proc = run_cli("offcpu", *args)
    assert proc.returncode == EXIT_USAGE, proc.stderr
    lines = proc.stderr.splitlines()  # one line, not a usage block (docs/exit-codes.md)
    assert len(lines) == 1 and lines[0].startswith("flamegraph: ") and message in lines[0], proc.stderr


def test_perf_missing(tmp_path: Path) -> None:
    proc = run_cli(
        "offcpu", "--duration", "1", "--", sys.executable, "-c", "pass", env={**os.environ, "PATH": "/nonexistent"}
    )
    assert proc.returncode == EXIT_NO_PERF
    assert "perf is not installed" in one_error_line(proc)


# -- with perf ------------------------------------------------------------------------------------
@pytest.mark.perf
def test_no_such_pid() -> None:
    proc = run_cli("offcpu", "--pid", str(dead_pid()), "--duration", "1")
    assert proc.returncode == EXIT_NO_PROCESS
    assert "no process with pid" in one_error_line(proc)


@pytest.mark.perf
@pytest.mark.serial  # its waits' upper bound allows little lateness in waking
def test_pid_covers_threads_created_during_the_recording(tmp_path: Path) -> None:
    target = start_target(tmp_path, 0.6, 0.3, paused=True)
    try:
        folded, data = tmp_path / "late.folded", tmp_path / "late.perf.data"
        cli = subprocess.Popen([*FLAMEGRAPH, "offcpu", "--pid", str(target.pid), "--duration", "30", "--no-svg",
                                "--folded", str(folded), "--perf-data", str(data)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
        wait_for_perf_events(target.pid)
        assert target.stdin is not None
        target.stdin.write("go\n")
        target.stdin.flush()
        stdout, stderr = cli.communicate(timeout=120)
        proc = subprocess.CompletedProcess(cli.args, cli.returncode, stdout, stderr)
    finally:
        target.kill()
        target.wait()
    assert proc.returncode == EXIT_OK, proc.stderr
    counts = load(folded)
    late = {s: w for s, w in counts.items() if s.startswith("late-")}
    nanosleep = sum(w for s, w in late.items() if "hrtimer_nanosleep" in s.split(";"))
    assert 142_500 <= nanosleep <= 200_000, late  # 3 x 50 ms
    # The main thread was asleep when perf attached: that wait is clipped to the window, not lost.
    main = f"python-{target.pid};[off-CPU since recording start];[?]"
    assert main in counts or any(s.startswith(f"python-{target.pid};") for s in counts)
    # The process ended before --duration: said in one line, and the graph covers it up to its exit.
    assert f"pid {target.pid} exited during the recording" in proc.stderr
    # The same recording through `fold --offcpu` gives the same stacks.
    again = run_cli("fold", "--offcpu", str(data), "-o", str(tmp_path / "again.folded"))
    assert again.returncode == EXIT_OK, again.stderr
    assert load(tmp_path / "again.folded") == counts
    assert "by state: S " in again.stderr


@pytest.mark.perf
def test_ctrl_c_stops_and_still_draws(tmp_path: Path) -> None:
    target = start_target(tmp_path, 30, 0)
    folded = tmp_path / "ctrl-c.folded"
    try:
        proc = subprocess.Popen(
            [*FLAMEGRAPH, "offcpu", "--pid", str(target.pid), "--no-svg", "--folded", str(folded)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=interruptible,
        )  # fmt: skip
        with ended(proc):
            wait_for_perf_events(target.pid)
            time.sleep(0.5)
            proc.send_signal(signal.SIGINT)
            _, stderr = proc.communicate(timeout=60)
    finally:
        target.kill()
        target.wait()
    assert proc.returncode == EXIT_OK, stderr
    # One nanosleep of 30 s: no switch at all while perf ran. /proc shows the thread never ran, so the
    # whole recording is drawn as its wait, in the kernel stack it sleeps in.
    (stack, weight), *_ = [(s, w) for s, w in load(folded).items() if s.startswith(f"python-{target.pid};")]
    assert stack.startswith(f"python-{target.pid};[off-CPU for the whole recording];")
    assert stack.endswith(";[S]") and "hrtimer_nanosleep" in stack.split(";")
    assert 1_000_000 <= weight <= 60_000_000, stderr


@pytest.mark.perf
@pytest.mark.serial  # beside two busy loops its 0.2 s sleep once drew no "by state: S" line
def test_svg_says_microseconds_and_totals(tmp_path: Path) -> None:
    svg = tmp_path / "off.svg"
    proc = run_cli("offcpu", "-o", str(svg), "--", sys.executable, "-c", "import time; time.sleep(0.2)")
    assert proc.returncode == EXIT_OK, proc.stderr
    text = svg.read_text()
    assert "microseconds" in text
    assert "by state: S " in text and "Off-CPU time per thread of the " in text  # per-thread totals: a table
    assert "<title>hrtimer_nanosleep (" in text and "<title>[S] (" in text  # frames: the sleep, its state


# Main reads a pipe 3 times (5 ms each, a writer thread's nanosleep apart), then joins a thread that sleeps 1.2 s.
READS_THEN_JOINS = r"""
#include <pthread.h>
#include <time.h>
#include <unistd.h>
static int fds[2];
static void nap(long ms) { struct timespec ts = {0, ms * 1000000L}; nanosleep(&ts, 0); }
static void *writer(void *arg) { for (int i = 0; i < 3; i++) { nap(5); write(fds[1], "x", 1); } return arg; }
static void *sleeper(void *arg) { nap(600); nap(600); return arg; }
__attribute__((noinline)) void main_reads(void) { char c; for (int i = 0; i < 3; i++) read(fds[0], &c, 1); }
int main(void) {
    pthread_t w, s;
    pipe(fds);
    pthread_create(&s, 0, sleeper, 0);
    pthread_create(&w, 0, writer, 0);
    main_reads();
    pthread_join(w, 0);
    pthread_join(s, 0);
    return 0;
}
"""


@pytest.mark.perf
def test_an_idle_main_thread_keeps_its_other_waits(tmp_path: Path) -> None:
    """newcomer10 a-F5: a main thread off-CPU all the window, 98 % of it in one join, is idle; only the
    join is left out, its reads are drawn under its root, and the header line says so."""
    program = compile_c(tmp_path, "reader", READS_THEN_JOINS, "-pthread", "-fno-omit-frame-pointer")
    svg = tmp_path / "off.svg"
    proc = run_cli("offcpu", "-o", str(svg), "--", str(program), cwd=tmp_path)
    assert proc.returncode == EXIT_OK, proc.stderr
    page = svg.read_bytes()
    drawn = [f.name for f in frames(page)]
    main = [name for name in drawn if name.startswith("reader-") and "main" in name]
    assert main and main[0].endswith("(main, idle)"), drawn
    assert "main_reads" in drawn and not [name for name in drawn if "join" in name.lower()], drawn
    line = " ".join(texts(page, "summary")[1:])
    assert line.startswith("Not drawn: the idle stack of ") and "1 main" in line, line
    assert "their other waits are drawn" in line, line


@pytest.mark.perf
def test_tracefs_not_mounted(tmp_path: Path) -> None:
    """A mount namespace where /sys/kernel is an empty read-only tmpfs: no tracefs, and perf cannot mount one."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare(1) to hide tracefs")
    inner = " ".join([*FLAMEGRAPH, "offcpu", "--no-svg", "--folded", str(tmp_path / "x.folded"), "--", "true"])
    proc = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c",
         f"mount -t tmpfs -o ro none /sys/kernel && exec {inner}"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == EXIT_NOT_PERMITTED, proc.stderr
    assert "tracefs is not mounted" in one_error_line(proc)


@pytest.mark.perf
@pytest.mark.parametrize(
    ("drop", "message"),
    [
        (NO_CAPABILITIES, "not permitted to record sched:sched_switch with its fields"),
        (NOBODY, "not permitted to read /sys/kernel/tracing (not root)" if TRACEFS_CLOSED else
                 "not permitted to record sched:sched_switch with its fields"),
    ],
    ids=["root without capabilities", "nobody"],
)
def test_tracepoints_not_permitted(unprivileged: Unprivileged, drop: tuple[str, ...], message: str) -> None:
    if Path("/proc/sys/kernel/perf_event_paranoid").read_text().strip() == "-1":
        pytest.skip("perf_event_paranoid is -1: everyone may record tracepoints here")  # Debian's default is 2
    home = unprivileged.scratch
    folded = home / f"offcpu-not-permitted-{len(drop)}.folded"
    proc = subprocess.run(
        unprivileged.command("offcpu", "--no-svg", "--folded", str(folded), "--", "true", drop=drop),
        capture_output=True, text=True, timeout=120, cwd=home, env={**os.environ, "HOME": str(home)},
    )  # fmt: skip
    assert proc.returncode == EXIT_NOT_PERMITTED, proc.stderr
    assert message in one_error_line(proc)
    assert not folded.exists()
