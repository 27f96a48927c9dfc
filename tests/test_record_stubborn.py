"""A command that ignores SIGTERM and SIGINT (newcomer10 a-F25): perf stops by SIGTERMing the command it
launched and then waits for it, so `--duration`, Ctrl-C and SIGTERM never ended (perf and we waited for ever),
and a SIGKILL of flamegraph left perf and the command spinning. Now the command is killed 2 s after perf's
SIGTERM, said in one line, what was recorded up to the stop is drawn, and nothing outlives a killed
flamegraph. Every way of stopping, `record` and `offcpu`, streamed and whole (`--max-spool 0`)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.children import interruptible, session_members, tracked, watchdog
from helpers.programs import compile_c, need_perf

from flamegraph.io.diagnostics import EXIT_OK, EXIT_TERMINATED, Diagnostics
from flamegraph.io.folded import read_folded

pytestmark = [pytest.mark.perf, pytest.mark.parallel]  # proven beside two busy loops
LIMIT = 90  # seconds a test may take: on the old code each waited for ever
WAIT = 45  # seconds flamegraph has to end after the stop (it takes 3-6 s; a few times that when loaded)
FLAMEGRAPH = [sys.executable, "-m", "flamegraph"]
STUBBORN = r"""
#include <signal.h>
volatile unsigned long s;
int main(void) {
    signal(SIGTERM, SIG_IGN);
    signal(SIGINT, SIG_IGN);
    for (;;) s = s * 31 + 7;
}
"""
KILLED = re.compile(r"the command (\S+) \(pid \d+\) ignores SIGTERM: killed \(SIGKILL\) after 2 s")


@pytest.fixture(autouse=True)
def _no_child_outlives_the_test() -> Iterator[None]:
    """On the old code the recording never ends: the test fails at WAIT, its session killed at LIMIT."""
    need_perf()
    with watchdog(LIMIT):
        yield


@pytest.fixture
def stubborn(tmp_path: Path) -> Path:
    """The program, under a name no other test uses: its path finds its processes (pgrep -f)."""
    return compile_c(tmp_path, f"stubborn{os.getpid()}", STUBBORN)


def start(args: list[str], tmp_path: Path) -> subprocess.Popen[str]:
    """flamegraph in a session of its own (its leftovers are found there), TMPDIR in tmp_path."""
    tmp = tmp_path / "tmp"
    tmp.mkdir(exist_ok=True)
    return tracked(subprocess.Popen(
        [*FLAMEGRAPH, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "TMPDIR": str(tmp)}, start_new_session=True, preexec_fn=interruptible,
    ))  # fmt: skip


def wait_for_recording(proc: subprocess.Popen[str]) -> None:
    """perf records once flamegraph shows progress (its first line, after 0.5 s)."""
    assert proc.stderr is not None
    line = proc.stderr.readline()
    assert "recording" in line, line


def survivors(program: Path) -> list[str]:
    """Live processes running `program` or naming it (perf record -- PROGRAM): none may outlive a run."""
    found = subprocess.run(["pgrep", "-af", str(program)], capture_output=True, text=True).stdout.splitlines()
    return [line for line in found if "pgrep" not in line]


def gone(program: Path, session: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while survivors(program) or session_members(session):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def folded_total(path: Path) -> float:
    with open(path, "rb") as f:
        return sum(read_folded(f, str(path), Diagnostics(echo=False)).counts.values())


@pytest.mark.parametrize("spool", ["256M", "0"], ids=["streamed", "whole"])
@pytest.mark.parametrize("command", ["record", "offcpu"])
@pytest.mark.parametrize("how", ["duration", "ctrl-c-to-group", "sigterm"])
def test_a_command_that_ignores_sigterm_is_killed_and_the_graph_drawn(
    tmp_path: Path, stubborn: Path, how: str, command: str, spool: str
) -> None:
    folded = tmp_path / "out.folded"
    duration = ["--duration", "1"] if how == "duration" else []
    proc = start([command, *duration, "--max-spool", spool, "--no-svg", "--folded", str(folded), "--", str(stubborn)],
                 tmp_path)  # fmt: skip
    wait_for_recording(proc)
    if how == "ctrl-c-to-group":
        time.sleep(1.0)
        os.killpg(proc.pid, signal.SIGINT)  # a terminal's Ctrl-C, `timeout -s INT`: the whole group
    elif how == "sigterm":
        time.sleep(1.0)
        os.kill(proc.pid, signal.SIGTERM)  # a service manager's stop
    try:
        _, err = proc.communicate(timeout=WAIT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"flamegraph {command} still waits for the command {WAIT} s after {how}")
    assert proc.returncode == (EXIT_TERMINATED if how == "sigterm" else EXIT_OK), err
    [killed] = KILLED.findall(err)
    assert stubborn.name.startswith(killed), err  # (the kernel's name: 15 characters at most)
    assert "Traceback" not in err and "abandon" not in err, err
    assert gone(stubborn, proc.pid, 5), survivors(stubborn)
    assert list((tmp_path / "tmp").iterdir()) == []  # no spool, no scratch perf.data left
    total = folded_total(folded)
    seconds = float(re.findall(r"recorded (?:[\d,]+ samples )?(?:in )?([\d.]+) s", err)[-1])
    if command == "record":
        assert total > 0, err
    else:  # its preemptions, in µs: up to the stop, not the 2 s perf then waited for the command
        assert 0 < total <= seconds * 1e6 * 1.05, err
    assert seconds < 30, err


@pytest.mark.parametrize("spool", ["256M", "0"], ids=["streamed", "whole"])
@pytest.mark.parametrize("command", ["record", "offcpu"])
def test_nothing_outlives_a_killed_flamegraph(tmp_path: Path, stubborn: Path, command: str, spool: str) -> None:
    """SIGKILL cannot be caught: perf gets SIGTERM (its parent-death signal) and waits for the command,
    which ignores it; flamegraph's guard kills the command 2 s later, and perf finishes."""
    proc = start([command, "--max-spool", spool, "--no-svg", "--folded", str(tmp_path / "k.folded"), "--",
                  str(stubborn)], tmp_path)  # fmt: skip
    wait_for_recording(proc)
    time.sleep(1.0)
    assert survivors(stubborn), "the command is not running"
    proc.kill()
    proc.wait(timeout=10)
    assert gone(stubborn, proc.pid, 20), survivors(stubborn) + session_members(proc.pid)


def test_ctrl_c_in_a_terminal_kills_a_command_that_ignores_it(tmp_path: Path, stubborn: Path) -> None:
    """flamegraph hands the terminal to perf's group: a Ctrl-C typed there reaches perf and the command, not
    us. perf stops and waits for the command; we learn of the stop from perf's own line and end it."""
    import fcntl
    import select
    import termios

    folded = tmp_path / "t.folded"
    master, slave = os.openpty()

    def controlling_terminal() -> None:
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)
        interruptible()

    proc = tracked(subprocess.Popen(
        [*FLAMEGRAPH, "record", "--no-svg", "--folded", str(folded), "--", str(stubborn)],
        stdin=slave, stdout=slave, stderr=slave, start_new_session=True, preexec_fn=controlling_terminal,
    ))  # fmt: skip
    os.close(slave)
    seen = b""
    deadline = time.monotonic() + WAIT
    typed = False
    while proc.poll() is None and time.monotonic() < deadline:
        if select.select([master], [], [], 0.2)[0]:
            try:
                seen += os.read(master, 4096)
            except OSError:
                time.sleep(0.05)
        if not typed and b"recording" in seen:
            time.sleep(1.0)
            os.write(master, b"\x03")  # Ctrl-C
            typed = True
    os.close(master)
    assert proc.poll() is not None, f"still waiting for the command {WAIT} s after Ctrl-C: {seen!r}"
    text = seen.decode(errors="replace")
    assert proc.returncode == EXIT_OK, text
    assert len(KILLED.findall(text)) == 1 and "Traceback" not in text, text
    assert gone(stubborn, proc.pid, 5), survivors(stubborn)
    assert folded_total(folded) > 0, text


SLOW_SHUTDOWN = r"""
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>
volatile unsigned long s;
static const char *volatile done;
static void on_term(int sig) {  /* a graceful shutdown longer than the 2 s grace: a dump, a flush */
    sleep(4);
    int fd = open(done, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    write(fd, "clean\n", 6);
    _exit(0);
}
int main(int argc, char **argv) {
    done = argv[1];
    signal(SIGTERM, on_term);
    for (;;) s = s * 31 + 7;
}
"""


def test_a_command_that_handles_sigterm_is_given_time_to_finish(tmp_path: Path) -> None:
    """Not a regression of the fix: a command whose SIGTERM handler takes 4 s (MXNet's profiler dump and
    --jit's kernels are written in exit handlers) ends by itself, said, and is not killed at 2 s."""
    program = compile_c(tmp_path, f"slowstop{os.getpid()}", SLOW_SHUTDOWN)
    done = tmp_path / "done"
    proc = start(["record", "--duration", "1", "--no-svg", "--folded", str(tmp_path / "s.folded"), "--",
                  str(program), str(done)], tmp_path)  # fmt: skip
    _, err = proc.communicate(timeout=WAIT)
    assert proc.returncode == EXIT_OK, err
    assert "handles SIGTERM and has not ended yet: killed (SIGKILL) if it has not 30 s after it" in err
    assert "killed (SIGKILL) after" not in err, err
    assert done.read_text() == "clean\n"
    assert gone(program, proc.pid, 5), survivors(program)
