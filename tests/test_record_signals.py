"""SIGTERM and SIGHUP stop `flamegraph record`/`offcpu` as Ctrl-C does: perf stopped cleanly, the command
it launched ended, the graph drawn from what was recorded, exit 143/129, no process left behind; and an
off-CPU wait still open when the recording stops is cut there, not at the last event."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers.children import ended, interruptible, session_members, tracked, watchdog

from flamegraph.io.diagnostics import EXIT_HANGUP, EXIT_INTERRUPTED, EXIT_OK, EXIT_TERMINATED, Diagnostics
from flamegraph.io.folded import read_folded

pytestmark = [pytest.mark.perf, pytest.mark.parallel]  # proven beside two busy loops
LIMIT = 150  # seconds a test may take (each takes < 30 s; a few times that on a loaded machine)


@pytest.fixture(autouse=True)
def _no_child_outlives_the_test() -> Iterator[None]:
    """A stalled child ends at LIMIT (the test then fails); a failed test leaves no recording spinning."""
    with watchdog(LIMIT):
        yield


FLAMEGRAPH = [sys.executable, "-m", "flamegraph"]
SPIN = ["sh", "-c", "while :; do :; done"]  # on-CPU until ended: SIGTERM from perf ends it


def load(path: Path) -> dict[str, float]:
    with open(path, "rb") as f:
        return read_folded(f, str(path), Diagnostics(echo=False)).counts


def start(args: list[str], tmp_path: Path) -> subprocess.Popen[str]:
    """flamegraph in a session of its own (so its leftovers can be found), TMPDIR in tmp_path."""
    tmp = tmp_path / "tmp"
    tmp.mkdir(exist_ok=True)
    env = {**os.environ, "TMPDIR": str(tmp)}
    return tracked(subprocess.Popen(
        [*FLAMEGRAPH, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        start_new_session=True, preexec_fn=interruptible,
    ))  # fmt: skip


def wait_for_line(proc: subprocess.Popen[str], text: str, timeout: float = 30) -> list[str]:
    """stderr lines up to the first one holding `text` (perf is recording once it shows progress)."""
    assert proc.stderr is not None
    seen = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        seen.append(line)
        if text in line:
            return seen
    raise AssertionError(f"no {text!r} from flamegraph: {''.join(seen)}")


def finish(proc: subprocess.Popen[str], seen: list[str]) -> str:
    _, err = proc.communicate(timeout=90)
    deadline = time.monotonic() + 5  # an ended process may take a moment to be gone from /proc
    while session_members(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert session_members(proc.pid) == [], "".join(seen) + err
    return "".join(seen) + err


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, EXIT_TERMINATED), (signal.SIGHUP, EXIT_HANGUP)])
def test_record_stops_draws_and_exits_with_the_signal_code(tmp_path: Path, signum: int, code: int) -> None:
    svg, folded = tmp_path / "out.svg", tmp_path / "out.folded"
    proc = start(["record", "-o", str(svg), "--folded", str(folded), "--", *SPIN], tmp_path)
    seen = wait_for_line(proc, "recording")
    time.sleep(1.0)
    os.kill(proc.pid, signum)  # to flamegraph alone, as a service manager or a closed terminal does
    err = finish(proc, seen)
    assert proc.returncode == code, err
    name = signal.Signals(signum).name
    assert f"stopping the recording ({name} received" in err
    assert "Traceback" not in err
    assert sum(load(folded).values()) > 100, err  # ~1.5 s at 499 Hz, drawn from what was recorded
    assert svg.read_text().startswith("<?xml")
    assert f"(stopped by {name})" in svg.read_text()
    assert list((tmp_path / "tmp").iterdir()) == []  # the scratch perf.data went with the success


def test_sighup_of_a_terminal_that_is_gone_still_draws(tmp_path: Path) -> None:
    """A closed terminal: SIGHUP, and every write to it fails (EIO). The progress line, perf's
    relayed lines and our notes must not turn the stop into a traceback that loses the recording."""
    master, slave = os.openpty()
    folded = tmp_path / "h.folded"
    args = ["record", "--no-svg", "--folded", str(folded), "--", *SPIN]
    proc = tracked(
        subprocess.Popen(
            [*FLAMEGRAPH, *args],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            start_new_session=True,
            preexec_fn=interruptible,
        )
    )
    os.close(slave)
    seen = b""
    deadline = time.monotonic() + 30
    while b"recording" not in seen and time.monotonic() < deadline:
        if select.select([master], [], [], 1.0)[0]:
            seen += os.read(master, 4096)
    assert b"recording" in seen, seen
    time.sleep(1.0)
    os.close(master)  # the terminal is gone
    os.kill(proc.pid, signal.SIGHUP)
    proc.wait(timeout=90)
    deadline = time.monotonic() + 5
    while session_members(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert session_members(proc.pid) == []
    assert proc.returncode == EXIT_HANGUP
    assert sum(load(folded).values()) > 100


def test_offcpu_stops_on_sigterm_and_cuts_the_open_wait_there(tmp_path: Path) -> None:
    folded = tmp_path / "off.folded"
    proc = start(["offcpu", "--no-svg", "--folded", str(folded), "--", "sleep", "30"], tmp_path)
    seen = wait_for_line(proc, "recording")
    time.sleep(1.5)
    os.kill(proc.pid, signal.SIGTERM)
    err = finish(proc, seen)
    assert proc.returncode == EXIT_TERMINATED, err
    waits = {s: w for s, w in load(folded).items() if s.startswith("sleep-") and "do_nanosleep" in s}
    assert len(waits) == 1, waits
    # sleep slept until perf stopped, 1.5 s after the progress line: the wait is cut there, not at
    # the last event (a few µs after its switch-out). On a loaded machine perf may start the command
    # up to a second after its first progress line (seen: 0.82 s at load 9 on 2 cores), hence 0.4 s.
    assert 400_000 <= sum(waits.values()) <= 30_000_000, err


@pytest.mark.serial  # its wait is timed from perf's start: a starved start-up shortens it
def test_offcpu_duration_cuts_a_launched_commands_open_wait_at_the_end(tmp_path: Path) -> None:
    """`-- sleep 30 --duration 2` showed the sleep as '27 µs' (cut at the last event, its own switch-out)."""
    folded = tmp_path / "d.folded"
    started = time.monotonic()
    proc = subprocess.run(
        [*FLAMEGRAPH, "offcpu", "--duration", "2", "--no-svg", "--folded", str(folded), "--", "sleep", "30"],
        capture_output=True, text=True, timeout=60, start_new_session=True,
    )  # fmt: skip
    assert proc.returncode == EXIT_OK, proc.stderr
    assert time.monotonic() - started < 20
    waits = {s: w for s, w in load(folded).items() if s.startswith("sleep-") and "do_nanosleep" in s}
    assert len(waits) == 1, waits
    assert 1_000_000 <= sum(waits.values()) <= 2_100_000, proc.stderr  # from its start to the 2 s stop
    assert "1 wait open at the end (1." in proc.stderr


def slow_script_perf(tmp_path: Path) -> Path:
    """A directory to put first on PATH: its `perf` records with the real perf, and its `perf script`
    sleeps 30 s (a big recording's folding, for a signal to arrive while it runs)."""
    real = subprocess.run(["sh", "-c", "command -v perf"], capture_output=True, text=True, check=True).stdout.strip()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "perf").write_text(f'#!/bin/sh\n[ "$1" = script ] && exec sleep 30\nexec {real} "$@"\n')
    (bin_dir / "perf").chmod(0o755)
    return bin_dir


@pytest.mark.serial  # a short --duration of a launched command: starved, it may record no sample at all
def test_signal_while_folding_streamed_ends_perf_script_and_leaves_nothing(tmp_path: Path) -> None:
    """The default (folded while perf records): SIGTERM while the last chunk's perf script runs ends it, says
    the signal, and leaves neither perf script nor a chunk behind (nothing raw outlives a streamed run)."""
    bin_dir = slow_script_perf(tmp_path)
    folded = tmp_path / "f.folded"
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = tracked(subprocess.Popen(
        [*FLAMEGRAPH, "record", "--duration", "1", "--no-svg", "--folded", str(folded), "--", *SPIN],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        env={**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "TMPDIR": str(tmp)},
    ))  # fmt: skip
    seen = wait_for_line(proc, "recording")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # perf record has ended and the folder's perf script (sleeping) runs
        names = [c.name for c in descendants(proc.pid)]
        if "sleep" in names and "perf" not in names:
            break
        time.sleep(0.05)
    time.sleep(0.3)
    os.kill(proc.pid, signal.SIGTERM)
    err = finish(proc, seen)  # (finish checks that nothing of its session is left: no perf script)
    assert proc.returncode == EXIT_TERMINATED, err
    assert err.rstrip().endswith("flamegraph: stopped by SIGTERM") and "Traceback" not in err, err
    assert "kept in" not in err and list(tmp.iterdir()) == [] and not folded.exists()


@dataclass(frozen=True)
class _Process:
    pid: int
    name: str


def descendants(pid: int) -> list[_Process]:
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        for task in Path(f"/proc/{parent}/task").glob("*"):
            try:
                kids = [int(c) for c in (task / "children").read_text().split()]
            except OSError:
                continue
            for kid in kids:
                try:
                    found.append(_Process(kid, Path(f"/proc/{kid}/comm").read_text().strip()))
                except OSError:
                    continue
                todo.append(kid)
    return found


@pytest.mark.serial  # a short --duration of a launched command: starved, it may record no sample at all
@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, EXIT_TERMINATED), (signal.SIGINT, EXIT_INTERRUPTED)])
def test_signal_while_folding_keeps_the_recording_and_ends_perf_script(tmp_path: Path, signum: int, code: int) -> None:
    """perf script is slow on big recordings: SIGTERM or Ctrl-C then must not lose the recording
    (the scratch perf.data was deleted) nor leave perf script running. The whole-file recording (--max-spool 0)."""
    bin_dir = slow_script_perf(tmp_path)
    folded = tmp_path / "f.folded"
    env_path = f"{bin_dir}{os.pathsep}{os.environ['PATH']}"
    args = ["record", "--max-spool", "0", "--duration", "1", "--no-svg", "--folded", str(folded), "--", *SPIN]
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = tracked(subprocess.Popen(
        [*FLAMEGRAPH, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        env={**os.environ, "PATH": env_path, "TMPDIR": str(tmp)}, preexec_fn=interruptible,
    ))  # fmt: skip
    seen = wait_for_line(proc, "recorded ")
    time.sleep(0.5)  # perf script (sleeping, here) has started
    os.kill(proc.pid, signum)
    err = finish(proc, seen)
    assert proc.returncode == code, err
    [kept] = list(tmp.glob("flamegraph-record-*/perf.data"))
    assert f"\nthe recording is kept in {kept}" in err
    if signum == signal.SIGTERM:
        assert err.rstrip().endswith("flamegraph: stopped by SIGTERM"), err
    assert not folded.exists()


def test_perf_stops_cleanly_when_flamegraph_is_killed(tmp_path: Path) -> None:
    """SIGKILL cannot be caught: perf learns of it (parent-death signal), writes its data, ends the command."""
    data = tmp_path / "k.data"
    proc = start(["record", "--perf-data", str(data), "--no-svg", "--folded", str(tmp_path / "k.folded"),
                  "--", *SPIN], tmp_path)  # fmt: skip
    seen = wait_for_line(proc, "recording")
    time.sleep(1.0)
    os.kill(proc.pid, signal.SIGKILL)
    finish(proc, seen)
    assert proc.returncode == -signal.SIGKILL
    again = subprocess.run([*FLAMEGRAPH, "fold", str(data)], capture_output=True, text=True, timeout=60)
    assert again.returncode == EXIT_OK, again.stderr  # a complete perf.data
    assert "data size field is 0" not in again.stderr


# -- a hangup or a Ctrl-C never costs the recording (issue 18) ---------------------------------------


def target() -> subprocess.Popen[bytes]:
    """A process for --pid, in a session of its own: not flamegraph's to end."""
    return tracked(subprocess.Popen(SPIN, start_new_session=True))


def recorded_svg(svg: Path, stopped_by: str) -> None:
    text = svg.read_text()
    assert text.startswith("<?xml") and text.rstrip().endswith("</svg>")
    assert f"(stopped by {stopped_by})" in text


@pytest.mark.parametrize("command", ["record", "offcpu"])
@pytest.mark.parametrize("mode", ["launch", "pid"])
def test_sighup_to_the_whole_process_group_stops_perf_cleanly(tmp_path: Path, command: str, mode: str) -> None:
    """A hangup signals the whole group: perf died first ('perf record was killed by SIGHUP', exit 5)
    and left a perf.data it never finished. perf now runs in a group of its own: only we stop it."""
    svg = tmp_path / "out.svg"
    victim = target() if mode == "pid" else None
    what = ["-p", str(victim.pid)] if victim else ["--", *SPIN]
    try:
        proc = start([command, "-o", str(svg), *what], tmp_path)
        seen = wait_for_line(proc, "recording")
        time.sleep(1.0)
        os.killpg(proc.pid, signal.SIGHUP)
        err = finish(proc, seen)
        assert proc.returncode == EXIT_HANGUP, err
        assert "killed by SIGHUP" not in err and "Traceback" not in err
        recorded_svg(svg, "SIGHUP")
        assert list((tmp_path / "tmp").iterdir()) == []
        if victim:
            assert victim.poll() is None  # --pid: left running, as documented
    finally:
        if victim:
            victim.kill()
            victim.wait()


def spawn_on_pty(
    argv: list[str], env: dict[str, str] | None = None, stdout: int | None = None
) -> tuple[subprocess.Popen[bytes], int]:
    """argv as the session leader of a new pty that is its controlling terminal (a terminal window
    running it), in the terminal's foreground (its stdout there too, unless `stdout`); returns it and
    the master side."""
    import fcntl
    import termios

    master, slave = os.openpty()

    def controlling_terminal() -> None:
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)
        interruptible()  # Ctrl-C typed on it

    proc = tracked(subprocess.Popen(
        argv, stdin=slave, stdout=slave if stdout is None else stdout, stderr=slave, start_new_session=True,
        preexec_fn=controlling_terminal, env=env,
    ))  # fmt: skip
    os.close(slave)
    return proc, master


def read_until(master: int, text: bytes, timeout: float = 30) -> bytes:
    seen = b""
    deadline = time.monotonic() + timeout
    while text not in seen and time.monotonic() < deadline:
        if select.select([master], [], [], 0.5)[0]:
            try:
                seen += os.read(master, 4096)
            except OSError:
                break
    assert text in seen, seen
    return seen


def drain(master: int, proc: subprocess.Popen[bytes], timeout: float = 90) -> bytes:
    """Everything the pty shows until the process has ended (a pty whose reader stops blocks its writers)."""
    seen = b""
    deadline = time.monotonic() + timeout
    while proc.poll() is None and time.monotonic() < deadline:
        if select.select([master], [], [], 0.2)[0]:
            try:
                seen += os.read(master, 4096)
            except OSError:
                time.sleep(0.05)
    proc.wait(timeout=5)
    return seen


def gone(session: int) -> None:
    deadline = time.monotonic() + 5
    while session_members(session) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert session_members(session) == []


@pytest.mark.parametrize("how", ["close", "killpg"])
@pytest.mark.parametrize("command", ["record", "offcpu"])
def test_a_real_terminal_hangup_keeps_the_recording(tmp_path: Path, how: str, command: str) -> None:
    """flamegraph on a real pty as its controlling terminal: the terminal closes (SIGHUP to us, the
    session leader) or the group is hung up; exit 129, the SVG written and readable, nothing left."""
    svg = tmp_path / "out.svg"
    proc, master = spawn_on_pty([*FLAMEGRAPH, command, "-o", str(svg), "--", *SPIN])
    read_until(master, b"recording")
    time.sleep(1.0)
    if how == "close":
        os.close(master)
        proc.wait(timeout=90)
    else:
        os.killpg(proc.pid, signal.SIGHUP)
        drain(master, proc)
        os.close(master)
    gone(proc.pid)
    assert proc.returncode == EXIT_HANGUP
    recorded_svg(svg, "SIGHUP")


def test_a_shell_that_exits_on_hangup_does_not_cost_the_recording(tmp_path: Path) -> None:
    """The shell (session leader) dies of the hangup without passing SIGHUP on; the kernel then sends
    it to the terminal's foreground group, perf's while it records a command. perf ignores it there,
    and flamegraph sees the terminal hang up and stops as for SIGHUP."""
    svg, rc = tmp_path / "out.svg", tmp_path / "rc"
    waiter = (  # flamegraph's parent, in the shell's group (not the foreground one when the terminal hangs up)
        "import subprocess, sys; p = subprocess.run(sys.argv[2:]); open(sys.argv[1], 'w').write(str(p.returncode))"
    )
    flamegraph = f"{' '.join(FLAMEGRAPH)} record -o {svg} -- sh -c 'while :; do :; done'"
    shell = f"{sys.executable} -c {waiter!r} {rc} {flamegraph}; true"
    proc, master = spawn_on_pty(["sh", "-c", shell])
    read_until(master, b"recording")
    time.sleep(1.0)
    os.close(master)
    proc.wait(timeout=30)
    deadline = time.monotonic() + 90
    while not rc.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    gone(proc.pid)
    assert rc.read_text() == str(EXIT_HANGUP)
    recorded_svg(svg, "SIGHUP")


def test_an_interactive_command_reads_the_terminal_and_gets_ctrl_c(tmp_path: Path) -> None:
    """perf's group holds the terminal while it records a command: the command reads stdin (in a
    background group it would be stopped by SIGTTIN), and Ctrl-C stops perf cleanly, twice too."""
    folded, svg = tmp_path / "i.folded", tmp_path / "i.svg"
    program = "read line; echo got:$line; while :; do :; done"
    args = ["record", "-o", str(svg), "--folded", str(folded), "--", "sh", "-c", program]
    proc, master = spawn_on_pty([*FLAMEGRAPH, *args])
    read_until(master, b"recording")
    os.write(master, b"hello\n")
    read_until(master, b"got:hello")
    time.sleep(1.0)
    os.write(master, b"\x03")  # Ctrl-C
    time.sleep(0.05)
    os.write(master, b"\x03")  # and again, while perf finishes
    seen = drain(master, proc)
    os.close(master)
    gone(proc.pid)
    assert proc.returncode == EXIT_OK, seen
    assert b"Traceback" not in seen
    assert sum(load(folded).values()) > 50, seen
    recorded_svg(svg, "Ctrl-C")


@pytest.mark.serial  # it bounds its own wall time
def test_duration_ends_the_commands_children_at_once(tmp_path: Path) -> None:
    """`--duration 2 -- sh -c 'work; sleep 25'`: perf SIGTERMs sh only; `sleep 25` was left running
    (parent 1) and held the stderr pipe: a 10 s stall. The command's whole group ends with perf."""
    folded = tmp_path / "d.folded"
    work = "i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done; sleep 25"
    started = time.monotonic()
    proc = start(["record", "--duration", "2", "--no-svg", "--folded", str(folded), "--", "sh", "-c", work], tmp_path)
    err = finish(proc, [])
    took = time.monotonic() - started
    assert proc.returncode == EXIT_OK, err
    assert took < 8, f"{took:.1f} s: {err}"
    assert sum(load(folded).values()) > 0


def perf_of(session: int) -> int:
    """The perf record process of flamegraph's session."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        found = [int(line.split()[0]) for line in session_members(session) if line.split()[1] == "perf"]
        if found:
            return found[0]
        time.sleep(0.05)
    raise AssertionError("no perf")


def test_sigterm_twice_still_leaves_a_readable_recording(tmp_path: Path) -> None:
    """The second SIGTERM came while perf was writing its data: perf was killed, the recording lost.
    Now it is told what a third would cost, and perf finishes: the graph is drawn."""
    svg = tmp_path / "t.svg"
    proc = start(["record", "-o", str(svg), "--", *SPIN], tmp_path)
    seen = wait_for_line(proc, "recording")
    time.sleep(1.0)
    perf = perf_of(proc.pid)
    os.kill(perf, signal.SIGSTOP)  # perf busy finishing, for as long as the test needs
    os.kill(proc.pid, signal.SIGTERM)
    seen += wait_for_line(proc, "stopping the recording")
    os.kill(proc.pid, signal.SIGTERM)
    seen += wait_for_line(proc, "once more abandons the recording")
    os.kill(perf, signal.SIGCONT)
    err = finish(proc, seen)
    assert proc.returncode == EXIT_TERMINATED, err
    recorded_svg(svg, "SIGTERM")


STALL_VDSO_UNLINK = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <string.h>
#include <unistd.h>
int unlink(const char *path) {  /* perf removing its vDSO copy as it exits: stall there until killed */
    if (strncmp(path, "/tmp/perf-vdso.so-", 18) == 0) for (;;) pause();
    int (*real)(const char *) = (int (*)(const char *))dlsym(RTLD_NEXT, "unlink");
    return real(path);
}
"""


@pytest.mark.serial  # it watches /tmp/perf-vdso.so-*, where every perf that finishes leaves a copy for a moment
@pytest.mark.parametrize("spool", ["0", "256M"], ids=["whole", "streamed"])
def test_a_third_signal_kills_perf_says_what_was_lost_and_leaves_no_vdso_copy(tmp_path: Path, spool: str) -> None:
    """perf copies the vDSO to /tmp/perf-vdso.so-XXXXXX while it finishes and removes it as it exits;
    killed there (the old second Ctrl-C), the copy stayed. perf here stalls at that very point. The whole
    file is then unreadable; streamed, what was folded is not drawn: both said."""
    compiler = subprocess.run(["sh", "-c", "command -v cc"], capture_output=True, text=True).stdout.strip()
    if not compiler:
        pytest.skip("no C compiler for the stalling unlink() shim")
    source, shim = tmp_path / "stall.c", tmp_path / "stall.so"
    source.write_text(STALL_VDSO_UNLINK)
    subprocess.run([compiler, "-shared", "-fPIC", "-o", str(shim), str(source), "-ldl"], check=True)
    real = subprocess.run(["sh", "-c", "command -v perf"], capture_output=True, text=True, check=True).stdout.strip()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "perf").write_text(f'#!/bin/sh\nLD_PRELOAD={shim} exec {real} "$@"\n')  # perf's alone, not ours
    (bin_dir / "perf").chmod(0o755)
    before = set(Path("/tmp").glob("perf-vdso.so-*"))
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    svg = tmp_path / "v.svg"
    proc = tracked(subprocess.Popen(
        [*FLAMEGRAPH, "record", "--max-spool", spool, "-o", str(svg), "--", *SPIN], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, start_new_session=True,
        env={**os.environ, "TMPDIR": str(tmp), "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"},
    ))  # fmt: skip
    seen = wait_for_line(proc, "recording")
    time.sleep(1.0)
    os.kill(proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + 30
    while not set(Path("/tmp").glob("perf-vdso.so-*")) - before and time.monotonic() < deadline:
        time.sleep(0.02)
    assert set(Path("/tmp").glob("perf-vdso.so-*")) - before, "perf made no vDSO copy"
    time.sleep(0.5)  # perf is stalled in its unlink()
    os.kill(proc.pid, signal.SIGTERM)
    seen += wait_for_line(proc, "once more abandons the recording")
    os.kill(proc.pid, signal.SIGTERM)
    err = finish(proc, seen)
    assert proc.returncode == EXIT_TERMINATED, err
    if spool == "0":
        assert "perf record was killed before it finished" in err and "cannot be read" in err
    else:
        assert "the recording was abandoned: the samples folded so far are not drawn" in err, err
    assert "Traceback" not in err
    assert set(Path("/tmp").glob("perf-vdso.so-*")) - before == set()
    assert list(tmp.iterdir()) == []  # an unreadable scratch perf.data is not kept
    assert not svg.exists()


SLOW_PERF = """#!/bin/sh
# perf record as on a loaded machine: a second passes before it handles SIGINT and creates its output
# (until then SIGINT kills it, its recording unfinished). Anything else goes to the real perf.
[ "$1" = record ] || exec {real} "$@"
out=""; prev=""
for arg in "$@"; do [ "$prev" = "-o" ] && out="$arg"; prev="$arg"; done
sleep 1
trap 'echo "[ perf record: Captured and wrote 0.001 MB $out ]" >&2; exit 0' INT
printf 'PERFILE2' > "$out"
while :; do sleep 0.05; done
"""


RECORD_A_WHILE = """
import sys
from pathlib import Path
from flamegraph.record import RecordOptions, RecordSpec, record
spec = RecordSpec(command=("sleep", "30"), options=RecordOptions(duration=0.1))
recording = record(spec, Path(sys.argv[1]))
print(recording.perf_data.read_bytes().decode(), recording.stopped_ns is not None, recording.interrupted)
"""


def _sigint(disposition: signal.Handlers) -> None:
    signal.signal(signal.SIGINT, disposition)


@pytest.mark.parametrize("inherited", [signal.SIG_DFL, signal.SIG_IGN], ids=["sigint-default", "sigint-ignored"])
def test_duration_waits_for_perf_to_begin_before_stopping_it(tmp_path: Path, inherited: signal.Handlers) -> None:
    """--duration shorter than perf's start: SIGINT then killed perf ('perf record had not started');
    perf is stopped once it has begun (its output exists), and the recording is whole. Run from a background
    job (SIGINT ignored, inherited by perf), a perf not yet handling SIGINT ignored our stop and recorded
    forever (the fake perf here cannot even trap it): perf now starts with SIGINT at its default."""
    real = subprocess.run(["sh", "-c", "command -v perf"], capture_output=True, text=True, check=True).stdout.strip()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "perf").write_text(SLOW_PERF.format(real=real))
    (bin_dir / "perf").chmod(0o755)
    proc = subprocess.Popen(
        [sys.executable, "-c", RECORD_A_WHILE, str(tmp_path / "perf.data")], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, start_new_session=True, preexec_fn=lambda: _sigint(inherited),
        env={**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"},
    )  # fmt: skip
    with ended(proc):
        out, err = proc.communicate(timeout=60)  # ~1.5 s; it hung for good here
    assert proc.returncode == 0, err
    assert out.split() == ["PERFILE2", "True", "False"], err


PRINTS = ["/bin/sh", "-c", "i=0; while [ $i -lt 40 ]; do echo line$i; i=$((i+1)); sleep 0.05; done"]


def test_no_progress_line_glued_to_the_output_of_a_command_that_shares_the_terminal(tmp_path: Path) -> None:
    """a-F14: the in-place "recording 0.5 s, ..., Ctrl-C stops" was drawn into the terminal the command
    writes to, and the command's next line went on after it: "...Ctrl-C stopsline8". While the
    command's stdout is our terminal, no progress is drawn; every line of the program is its own."""
    import re

    proc, master = spawn_on_pty([*FLAMEGRAPH, "record", "-o", str(tmp_path / "t.svg"), "--", *PRINTS])
    shown = drain(master, proc)
    assert proc.returncode in (EXIT_OK, 3), shown  # 3: a sleeping shell may give no sample; not the point here
    assert shown.count(b"line") >= 40, shown
    assert re.search(rb"[^\n]line\d", shown) is None, shown  # each program line starts a terminal line
    while_it_ran = shown[: shown.rindex(b"line39")]
    assert shown.count(b"Ctrl-C stops") == 1 and b"\x1b[K" not in while_it_ran, shown  # one whole line
    assert re.search(rb"Ctrl-C stops\r?\n", shown), shown


def test_the_progress_line_is_drawn_when_the_command_writes_elsewhere(tmp_path: Path) -> None:
    """flamegraph's (and so the command's) stdout to a file: the terminal is ours, the progress is drawn."""
    log = tmp_path / "out.log"
    with open(log, "wb") as out:
        proc, master = spawn_on_pty([*FLAMEGRAPH, "record", "-o", str(tmp_path / "t.svg"), "--", *PRINTS],
                                    stdout=out.fileno())  # fmt: skip
        shown = drain(master, proc)
    assert b"\r\x1b[Krecording" in shown and b"Ctrl-C stops" in shown, shown
    assert log.read_text().split() == [f"line{i}" for i in range(40)]


def test_no_progress_line_glued_to_an_attached_process_that_writes_to_our_terminal(tmp_path: Path) -> None:
    """The same with --pid: a process started from this terminal writes into it while we record it."""
    import re
    import shlex

    loop = shlex.join(PRINTS)
    record = shlex.join([*FLAMEGRAPH, "record", "--duration", "1.5", "-o", str(tmp_path / "t.svg"), "--pid"])
    proc, master = spawn_on_pty(["/bin/sh", "-c", f"{loop} & {record} $!; wait"])
    shown = drain(master, proc)
    assert shown.count(b"line") >= 40 and b"recorded" in shown, shown
    assert re.search(rb"[^\n]line\d", shown) is None, shown
    assert shown.count(b"s left") <= 1 and b"\x1b[K" not in shown, shown  # (", 1 s left": --duration's line)


def test_no_progress_line_glued_when_the_graph_takes_stdout(tmp_path: Path) -> None:
    """`-o -`: the command's prints go to our stderr, the terminal the progress would be drawn on."""
    import re

    svg = tmp_path / "out.svg"
    with open(svg, "wb") as out:
        busy = PRINTS[-1].replace("sleep 0.05", "j=0; while [ $j -lt 3000 ]; do j=$((j+1)); done")  # samples
        argv = [*FLAMEGRAPH, "record", "-o", "-", "--", "/bin/sh", "-c", busy]
        proc, master = spawn_on_pty(argv, stdout=out.fileno())
        shown = drain(master, proc)
    assert shown.count(b"line") >= 40 and re.search(rb"[^\n]line\d", shown) is None, shown
    assert b"\x1b[K" not in shown[: shown.rindex(b"line39")], shown
    assert proc.returncode == EXIT_OK, shown
    assert svg.read_bytes().startswith(b"<?xml") and b"line1" not in svg.read_bytes()
