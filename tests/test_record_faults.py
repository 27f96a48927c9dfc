"""Fault injection for the recorders: perf killed mid-recording, perf gone half-way, a full disk while
perf records and while the results are written, the profiled process exiting at each stage.

Each run must end with one clear line and its documented exit code, keep perf.data and print its path
once anything was recorded, and leave no process behind (perf, the command it launched, perf script):
flamegraph runs in a session of its own, and nothing may be alive in that session afterwards."""

from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from flamegraph.io.diagnostics import EXIT_BAD_INPUT, EXIT_NO_INPUT, EXIT_NO_PERF, EXIT_NO_PROCESS, EXIT_OK

pytestmark = [pytest.mark.perf, pytest.mark.parallel]  # proven beside two busy loops

FLAMEGRAPH = [sys.executable, "-m", "flamegraph"]
SPIN = ["/bin/sh", "-c", "while :; do :; done"]  # on-CPU until ended
REAL_PERF = shutil.which("perf") or "/usr/bin/perf"


class Run:
    """flamegraph in its own session, TMPDIR in tmp_path, stderr read line by line. `record` and `offcpu` record
    the whole perf.data (`--max-spool 0`): these faults are about keeping it; the streamed default keeps nothing
    raw (test_streamed_perf_killed_leaves_nothing_raw)."""

    def __init__(
        self, tmp_path: Path, args: list[str], path: str | None = None, tmp: Path | None = None, whole: bool = True
    ) -> None:
        self.tmp = tmp or tmp_path / "tmp"
        self.tmp.mkdir(exist_ok=True)
        env = {**os.environ, "TMPDIR": str(self.tmp)}
        if path is not None:
            env["PATH"] = path
        if whole and args[:1] in (["record"], ["offcpu"]):
            args = [args[0], "--max-spool", "0", *args[1:]]
        self.proc = subprocess.Popen(
            [*FLAMEGRAPH, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
            start_new_session=True,
        )  # fmt: skip
        self.seen: list[str] = []

    def wait_for(self, text: str, timeout: float = 30) -> None:
        assert self.proc.stderr is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            if not line:
                break
            self.seen.append(line)
            if text in line:
                return
        raise AssertionError(f"no {text!r} from flamegraph: {''.join(self.seen)}")

    def child(self, comm: str) -> int:
        """The pid of flamegraph's child process named `comm` (perf)."""
        for pid in children(self.proc.pid):
            if Path(f"/proc/{pid}/comm").read_text().strip() == comm:
                return pid
        raise AssertionError(f"flamegraph has no {comm} child")

    def wait_attached(self, timeout: float = 30) -> None:
        """Until perf holds perf_event file descriptors: it has opened its events on the target."""
        perf = self.child("perf")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            links = []
            for fd in os.listdir(f"/proc/{perf}/fd"):
                try:
                    links.append(os.readlink(f"/proc/{perf}/fd/{fd}"))
                except OSError:
                    continue
            if "anon_inode:[perf_event]" in links:
                return
            time.sleep(0.02)
        raise AssertionError("perf never opened its events")

    def finish(self, code: int) -> tuple[str, str]:
        """Waits for the end; returns (the one error line, all stderr); checks the code and leftovers."""
        out, err = self.proc.communicate(timeout=90)
        stderr = "".join(self.seen) + err
        deadline = time.monotonic() + 5
        while left_behind(self.proc.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert left_behind(self.proc.pid) == [], stderr
        assert self.proc.returncode == code, stderr
        assert "Traceback" not in stderr
        errors = [line for line in stderr.splitlines() if line.startswith("flamegraph: ")]
        assert len(errors) == (code != EXIT_OK), stderr
        assert code == EXIT_OK or stderr.rstrip().endswith(errors[0]), "the error is the last line"
        return (errors[0] if errors else ""), stderr

    def kept(self, stderr: str, where: Path | None = None) -> Path:
        """The perf.data the run said it kept (in the scratch directory unless `where`), non-empty."""
        paths = [line.removeprefix("the recording is kept in ") for line in stderr.splitlines()
                 if line.startswith("the recording is kept in ")]  # fmt: skip
        assert len(paths) == 1, stderr
        path = Path(paths[0])
        if where is None:
            assert path.parent.parent == self.tmp and path.name == "perf.data"
        else:
            assert path == where
        assert path.stat().st_size > 0
        return path


def children(pid: int) -> list[int]:
    return [
        int(c)
        for t in os.listdir(f"/proc/{pid}/task")
        for c in Path(f"/proc/{pid}/task/{t}/children").read_text().split()
    ]


def left_behind(session: int) -> list[str]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_bytes().decode(errors="replace")  # any comm: 0xff too
            except OSError:
                continue
            fields = stat.rpartition(")")[2].split()
            if int(fields[3]) == session and fields[0] not in ("Z", "X"):
                found.append(f"{entry} {stat[stat.index('(') + 1 : stat.rindex(')')]}")
    return found


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 512 KiB tmpfs: a real ENOSPC, filled in well under a second by perf's DWARF stacks."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root (CI runs as root)")
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k", "flamegraph-test", str(disk)], check=True)
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=True)


# -- perf dies ----------------------------------------------------------------------------------
@pytest.mark.parametrize("command", ["record", "offcpu"])
def test_perf_killed_mid_recording(tmp_path: Path, command: str) -> None:
    run = Run(tmp_path, [command, "--no-svg", "--folded", str(tmp_path / "x.folded"), "--", *SPIN])
    run.wait_for("recording")
    run.wait_attached()  # and recording: not still starting up on a loaded machine
    time.sleep(0.5)
    os.kill(run.child("perf"), signal.SIGKILL)
    error, stderr = run.finish(EXIT_NO_PERF)
    assert "perf record was killed by SIGKILL after" in error, error
    run.kept(stderr)  # and the command perf launched is gone (finish checked the session)


@pytest.mark.parametrize("command", ["record", "offcpu"])
def test_streamed_perf_killed_leaves_nothing_raw(tmp_path: Path, command: str) -> None:
    """The default (folded while perf records): perf killed is one line and its exit code; no chunk is left."""
    run = Run(tmp_path, [command, "--no-svg", "--folded", str(tmp_path / "x.folded"), "--", *SPIN], whole=False)
    run.wait_for("recording")
    run.wait_attached()
    time.sleep(0.5)
    os.kill(run.child("perf"), signal.SIGKILL)
    error, stderr = run.finish(EXIT_NO_PERF)
    assert "perf record was killed by SIGKILL after" in error, error
    assert "kept in" not in stderr and list(run.tmp.iterdir()) == []  # the spool is gone with its chunks


@pytest.mark.serial  # a short --duration of a launched command: starved, it may record no sample at all
def test_perf_gone_before_perf_script(tmp_path: Path) -> None:
    """perf's directory on PATH removed while it records: the folding step finds no perf."""
    fake = tmp_path / "fakebin"
    fake.mkdir()
    (fake / "perf").write_text(f'#!/bin/sh\nexec {REAL_PERF} "$@"\n')
    (fake / "perf").chmod(0o755)
    args = ["record", "--duration", "1.5", "--no-svg", "--folded", str(tmp_path / "x.folded"), "--", *SPIN]
    run = Run(tmp_path, args, path=str(fake))  # only the fake perf is on PATH
    run.wait_for("recording")
    shutil.rmtree(fake)
    error, stderr = run.finish(EXIT_NO_PERF)
    assert error.startswith("flamegraph: perf is not installed"), error
    run.kept(stderr)
    assert not (tmp_path / "x.folded").exists()


# -- a full disk --------------------------------------------------------------------------------
@pytest.mark.parametrize("where", ["--perf-data", "TMPDIR"])
def test_disk_full_while_perf_records(tmp_path: Path, small_disk: Path, where: str) -> None:
    data = small_disk / "run.data"
    args = ["record", "--no-svg", "--folded", str(tmp_path / "x.folded")]
    args += ["--perf-data", str(data)] if where == "--perf-data" else []
    run = Run(tmp_path, [*args, "--", *SPIN], tmp=small_disk if where == "TMPDIR" else None)
    error, stderr = run.finish(EXIT_NO_INPUT)
    assert "perf record could not write its data after" in error and error.endswith("No space left on device")
    kept = run.kept(stderr, data if where == "--perf-data" else None)
    assert kept.stat().st_size > 400_000  # what fitted


def fill(disk: Path, leave: int = 0) -> None:
    """`disk` full but for `leave` bytes (a tmpfs counts whole 4 KiB pages)."""
    free = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize
    (disk / "filler").write_bytes(bytes(free - leave))
    assert os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize == leave


@pytest.mark.parametrize(
    ("output", "leave"), [("-o", 0), ("--folded", 0), ("-o", 12 * 1024)], ids=["svg", "folded", "svg-12k"]
)
def test_a_full_disk_is_refused_before_recording(tmp_path: Path, small_disk: Path, output: str, leave: int) -> None:
    """b-4, a-F13: an output whose file system has no room (or, for a graph, less than the smallest graph
    takes) is one line and exit 4 before the command runs, not after it ran to the end."""
    fill(small_disk, leave)
    ran = tmp_path / "ran"
    target = small_disk / ("x.svg" if output == "-o" else "x.folded")
    args = ["record", output, str(target), *(["--no-svg"] if output == "--folded" else [])]
    run = Run(tmp_path, [*args, "--", "/bin/sh", "-c", f"touch {ran}"], whole=False)
    error, stderr = run.finish(EXIT_NO_INPUT)
    room = "no space left on its file system" if leave == 0 else "12,288 bytes free on its file system, less than"
    assert error.startswith(f"flamegraph: {target}: cannot write: {room}"), error
    assert error.endswith("(checked before recording)"), error
    assert not ran.exists() and stderr.count("\n") == 1  # the one line: nothing recorded
    assert list(run.tmp.iterdir()) == [] and sorted(p.name for p in small_disk.iterdir()) == ["filler"]


def test_a_small_folded_file_still_fits_where_a_graph_would_not(tmp_path: Path, small_disk: Path) -> None:
    fill(small_disk, 40 * 1024)  # less than the smallest graph; the folded stacks and their facts fit
    folded = small_disk / "x.folded"
    work = ["/bin/sh", "-c", "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done"]  # CPU time: sampled under load too
    run = Run(tmp_path, ["record", "--no-svg", "--folded", str(folded), "--", *work], whole=False)
    run.finish(EXIT_OK)
    assert folded.stat().st_size > 0


@pytest.mark.parametrize("whole", [False, True], ids=["streamed", "whole"])
def test_disk_full_while_writing_the_results(tmp_path: Path, small_disk: Path, whole: bool) -> None:
    """The disk fills while the command runs (the command fills it); the SVG does not fit at the end: one
    line, exit 4, and the folded stacks kept in a new private directory under $TMPDIR, named in one line,
    ready to draw (with the whole recording, perf.data kept too)."""
    svg = small_disk / "out.svg"
    fills = f"i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done; cat /dev/zero > {small_disk}/filler; exit 0"
    run = Run(tmp_path, ["record", "-o", str(svg), "--", "/bin/sh", "-c", fills], whole=whole)
    error, stderr = run.finish(EXIT_NO_INPUT)
    assert error.startswith(f"flamegraph: {svg}: cannot write: No space left on device"), error
    if whole:
        run.kept(stderr)
    said = [line for line in stderr.splitlines() if line.startswith("the folded stacks are kept in ")]
    assert len(said) == 1, stderr
    kept = Path(said[0].removeprefix("the folded stacks are kept in ").split(" (")[0])
    assert kept.name == "out.folded" and kept.parent.parent == run.tmp
    assert kept.parent.name.startswith("flamegraph-kept-")
    assert stat.S_IMODE(kept.parent.stat().st_mode) == 0o700 and stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert "sh;" in kept.read_text() and Path(f"{kept}.json").is_file()
    drawn = subprocess.run([*FLAMEGRAPH, "render", str(kept), "-o", str(tmp_path / "again.svg")],
                           capture_output=True, text=True, timeout=60)  # fmt: skip
    assert drawn.returncode == 0, drawn.stderr
    assert not svg.exists() and sorted(p.name for p in small_disk.iterdir()) == ["filler"]


# -- the profiled process exits -----------------------------------------------------------------
def gated_perf(tmp_path: Path) -> tuple[str, Path, Path]:
    """A perf that, for `record`, says it is about to start and waits for a go-ahead file."""
    fake, ready, go = tmp_path / "gated", tmp_path / "ready", tmp_path / "go"
    fake.mkdir()
    (fake / "perf").write_text(
        f'#!/bin/sh\nif [ "$1" = record ]; then touch {ready}; while [ ! -e {go} ]; do sleep 0.02; done; fi\n'
        f'exec {REAL_PERF} "$@"\n'
    )
    (fake / "perf").chmod(0o755)
    return f"{fake}{os.pathsep}{os.environ['PATH']}", ready, go


@pytest.mark.parametrize("command", ["record", "offcpu"])
def test_pid_exits_before_perf_attaches(tmp_path: Path, command: str) -> None:
    target = subprocess.Popen(SPIN)
    path, ready, go = gated_perf(tmp_path)
    run = Run(tmp_path, [command, "--pid", str(target.pid), "-o", str(tmp_path / "x.svg")], path=path)
    deadline = time.monotonic() + 30
    while not ready.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    target.kill()
    target.wait()  # reaped: the pid is gone when perf looks for it
    go.touch()
    error, stderr = run.finish(EXIT_NO_PROCESS)
    assert error == f"flamegraph: no process with pid {target.pid} (it exited before perf attached)", error
    assert "kept in" not in stderr and list(run.tmp.iterdir()) == []  # nothing was recorded


@pytest.mark.parametrize("command", ["record", "offcpu"])
def test_pid_exits_right_after_perf_attached(tmp_path: Path, command: str) -> None:
    """perf has opened its events on the target, which then exits: depending on how far perf got
    (synthesizing its maps, enabling the events, sampling), a documented outcome, each complete."""
    target = subprocess.Popen(SPIN if command == "record" else ["sleep", "30"])
    folded = tmp_path / "x.folded"
    run = Run(tmp_path, [command, "--pid", str(target.pid), "--no-svg", "--folded", str(folded)])
    try:
        run.wait_for("recording")
        run.wait_attached()
    finally:
        target.kill()
        target.wait()
    run.proc.wait(timeout=90)
    code = run.proc.returncode if run.proc.returncode in (EXIT_OK, EXIT_BAD_INPUT) else EXIT_NO_PROCESS
    error, stderr = run.finish(code)
    if code == EXIT_OK:  # what perf saw up to the exit is drawn
        assert folded.stat().st_size > 0
        assert list(run.tmp.iterdir()) == []
        if command == "offcpu":
            assert f"pid {target.pid} exited during the recording" in stderr
    elif code == EXIT_BAD_INPUT:  # it exited before a sample: said, and the recording kept
        assert "no samples" in error or "no off-CPU time found" in error, error
        run.kept(stderr)
    else:  # perf gave up on the vanished pid while attaching, silently: we say why
        assert error.startswith(f"flamegraph: no process with pid {target.pid} (it exited "), error
        assert list(run.tmp.iterdir()) == []


@pytest.mark.parametrize("spool", ["streamed", "whole"])
def test_offcpu_pid_that_exits_before_the_duration_says_so(tmp_path: Path, spool: str) -> None:
    """`offcpu --pid P --duration 20` of a process that ends after ~1 s: the graph of its waits, and one
    line saying it exited, whether the waits were paired while recording (the default) or after."""
    target = subprocess.Popen(["/bin/sh", "-c", "read go; for i in 1 2 3 4 5; do sleep 0.1; done"],
                              stdin=subprocess.PIPE, text=True)  # fmt: skip
    folded = tmp_path / "x.folded"
    run = Run(tmp_path, ["offcpu", "--pid", str(target.pid), "--duration", "20", "--no-svg", "--folded", str(folded)],
              whole=spool == "whole")  # fmt: skip
    try:
        run.wait_for("recording")
        run.wait_attached()
        assert target.stdin is not None
        target.stdin.write("go\n")
        target.stdin.flush()
        target.wait(timeout=30)
    finally:
        target.kill()
        target.wait()
    run.proc.wait(timeout=90)
    _error, stderr = run.finish(EXIT_OK)
    recorded = [line for line in stderr.splitlines() if line.startswith("recorded ")]
    assert len(recorded) == 1 and recorded[0].endswith(
        f"; pid {target.pid} exited during the recording: the graph covers it up to its exit"
    ), stderr
    assert "[S]" in folded.read_text()


@pytest.mark.parametrize("command", ["record", "offcpu"])
def test_command_that_exits_at_once(tmp_path: Path, command: str) -> None:
    """`true` lives ~1 ms: a sample (or a preemption) is a coin toss. Either outcome is documented:
    the graph of what was seen, or 'no samples' (exit 3) with the recording kept and named."""
    svg = tmp_path / "x.svg"
    run = Run(tmp_path, [command, "-o", str(svg), "--", "/bin/true"])
    run.proc.wait(timeout=90)
    code = EXIT_OK if svg.exists() else EXIT_BAD_INPUT
    error, stderr = run.finish(code)
    if code == EXIT_BAD_INPUT:
        assert "no samples" in error or "no off-CPU time found" in error, error
        run.kept(stderr)
    else:
        assert list(run.tmp.iterdir()) == []
