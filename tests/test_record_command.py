"""The user's program, as their shell would run it: found on their PATH and in their working directory,
started with their environment (not the one perf makes), its exit status passed through, and what the
recording misses (lost samples, the kernel, Python functions) said in one line. Real perf, real venv."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import NOBODY, Unprivileged

from flamegraph.io.diagnostics import EXIT_NO_COMMAND, CommandNotFound
from flamegraph.record import RecordOptions, RecordSpec, Status, record
from flamegraph.record.command import PERF_SETS, perf_environment, python_note, python_version, resolve_program
from flamegraph.record.lost import LostSamples, PerfWarnings, parse_stats
from flamegraph.record.script import show_progress

pytestmark = pytest.mark.parallel  # its perf tests were proven beside two busy loops (make test's parallel part)

FLAMEGRAPH = [sys.executable, "-m", "flamegraph"]
SPIN = "i=0; while [ $i -lt 40000 ]; do i=$((i+1)); done"  # ~0.2 s of shell: a few samples


def run_cli(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*FLAMEGRAPH, *args], capture_output=True, text=True, timeout=120, env=env, cwd=cwd)


def facts(folded: Path) -> dict[str, str]:
    return json.loads(folded.with_name(folded.name + ".json").read_text())["metadata"]  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real virtualenv (no system site packages): its bin/python3 links to this interpreter."""
    root = tmp_path_factory.mktemp("venv") / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True, timeout=120)
    return root


# -- the command the user typed is the command that runs ------------------------------------------------


@pytest.mark.perf
def test_a_venv_python_runs_not_perfs(venv: Path, tmp_path: Path) -> None:
    """perf puts /usr/lib/perf-core:/usr/bin before PATH: `python3` was /usr/bin/python3 in an active venv."""
    env = {**os.environ, "PATH": f"{venv / 'bin'}:{os.environ['PATH']}", "VIRTUAL_ENV": str(venv)}
    code = "import os, sys; print('EXE', sys.executable); print('PATH', os.environ['PATH']); print('PFX', sys.prefix)"
    folded = tmp_path / "venv.folded"
    proc = run_cli("record", "--no-svg", "--folded", str(folded), "--", "python3", "-c", code, env=env)
    assert proc.returncode == 0, proc.stderr
    said = dict(line.split(" ", 1) for line in proc.stdout.splitlines() if line[:3] in ("EXE", "PAT", "PFX"))
    assert said["EXE"] == str(venv / "bin" / "python3")
    assert said["PFX"] == str(venv)  # the venv's site-packages, not the system's
    # the user's PATH, not perf's /usr/lib/perf-core:/usr/bin:...; its first directory once more in front
    assert said["PATH"] == f"{venv / 'bin'}:{env['PATH']}"
    meta = facts(folded)
    assert meta["command"].startswith("python3 -c ")  # as typed
    assert meta["program"] == str(venv / "bin" / "python3")


@pytest.mark.perf
def test_the_environment_is_the_users_but_perfs_own_variables(tmp_path: Path) -> None:
    """A script only on a temporary PATH entry runs, and sees our environment: PATH searched in our order
    (perf puts PERF_EXEC_PATH, our first directory, in front of it), every other variable ours, but for
    those perf sets itself (PREFIX, PERF_BUILDID_DIR, DEBUGINFOD_URLS, PERF_EXEC_PATH; docs/record.md)."""
    bin_dir = tmp_path / "only-here"
    bin_dir.mkdir()
    script = bin_dir / "fg-show-env"
    script.write_text(f'#!/bin/sh\n{SPIN}\ncommand -v fg-show-env > "$1.which"\nexec /usr/bin/env -0 > "$1"\n')
    script.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "PREFIX": "/opt/mine", "PERF_BUILDID_DIR": "/x"}
    env.pop("DEBUGINFOD_URLS", None)
    env["PWD"] = str(tmp_path)  # as the shell that starts us in tmp_path sets it (sh sets it again)
    seen = tmp_path / "env.bin"
    proc = run_cli("record", "-o", str(tmp_path / "x.svg"), "--", "fg-show-env", str(seen), env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    inside = dict(item.split("=", 1) for item in seen.read_bytes().decode().split("\0") if item)
    inside.pop("_", None)  # the shell's last argument: the shell that ran the script sets it
    assert inside.pop("PATH") == f"{bin_dir}:{env['PATH']}"
    assert (tmp_path / "env.bin.which").read_text().strip() == str(script)
    expected = {k: v for k, v in env.items() if k not in ("_", *PERF_SETS)}
    assert {k: v for k, v in inside.items() if k not in PERF_SETS} == expected


def test_perf_environment_repeats_the_first_directory() -> None:
    """perf puts PERF_EXEC_PATH (and, started as `perf`, nothing else) in front of PATH: the user's first
    directory, made absolute as perf makes it; a PERF_EXEC_PATH of the user's own is theirs."""
    assert perf_environment({"PATH": "/v/bin:/usr/bin"}, "/w")["PERF_EXEC_PATH"] == "/v/bin"
    assert perf_environment({"PATH": "bin:/usr/bin"}, "/w")["PERF_EXEC_PATH"] == "/w/bin"
    assert perf_environment({"PATH": ":/usr/bin"}, "/w")["PERF_EXEC_PATH"] == "/w/."
    assert perf_environment({"PATH": "/a", "PERF_EXEC_PATH": "/mine"}, "/w")["PERF_EXEC_PATH"] == "/mine"


@pytest.mark.perf
def test_a_relative_path_runs_from_the_working_directory(tmp_path: Path) -> None:
    """`./relative.sh` is the one in the working directory; a name with a slash is never searched on PATH."""
    (tmp_path / "relative.sh").write_text(f'#!/bin/sh\n{SPIN}\necho "RAN $0 $PWD"\n')
    (tmp_path / "relative.sh").chmod(0o755)
    proc = run_cli("record", "-o", str(tmp_path / "x.svg"), "--", "./relative.sh", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert f"RAN {tmp_path}/./relative.sh {tmp_path}" in proc.stdout
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}"}
    missing = run_cli("record", "-o", str(tmp_path / "y.svg"), "--", "./relative.sh", env=env, cwd=elsewhere)
    assert missing.returncode == EXIT_NO_COMMAND
    assert missing.stderr.strip().splitlines() == ["flamegraph: ./relative.sh: no such executable file"]


def test_resolution_follows_the_shell(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    for directory in (a, b):
        directory.mkdir()
    (a / "tool").write_text("#!/bin/sh\n")  # not executable: the shell skips it for the next one
    (b / "tool").write_text("#!/bin/sh\n")
    (b / "tool").chmod(0o755)
    env = {"PATH": f"{a}:{b}"}
    assert resolve_program("tool", env) == f"{b}/tool"
    assert resolve_program("tool", {"PATH": "b"}, cwd=str(tmp_path)) == f"{tmp_path}/b/tool"  # relative entry
    assert resolve_program("tool", {"PATH": f"{a}::"}, cwd=str(b)) == f"{b}/./tool"  # empty entry: cwd
    with pytest.raises(CommandNotFound, match="is not executable"):
        resolve_program("tool", {"PATH": str(a)})
    with pytest.raises(CommandNotFound, match="is a directory"):
        resolve_program("./a", env, cwd=str(tmp_path))
    with pytest.raises(CommandNotFound, match=r"chmod \+x"):
        resolve_program("a/tool", env, cwd=str(tmp_path))
    venv_python = f"{tmp_path}/venv/bin/python3"  # a link stays the link: the venv is found from its path
    os.makedirs(os.path.dirname(venv_python))
    os.symlink(sys.executable, venv_python)
    assert resolve_program("python3", {"PATH": os.path.dirname(venv_python)}) == venv_python


# -- the command's exit status -------------------------------------------------------------------------


@pytest.mark.perf
@pytest.mark.parametrize(
    ("ending", "status", "said"),
    [
        ("exit 3", 3, "the command exited with status 3"),
        ("kill -SEGV $$", 128 + signal.SIGSEGV, "the command was killed by SIGSEGV"),
        ("true", 0, None),
    ],
    ids=["exit-3", "sigsegv", "success"],
)
def test_record_exits_with_the_commands_status(tmp_path: Path, ending: str, status: int, said: str | None) -> None:
    """`record` exited 0 whatever the command did: `flamegraph record -- pytest` passed in CI with failing tests."""
    svg = tmp_path / "x.svg"
    proc = run_cli("record", "-o", str(svg), "--", "sh", "-c", f"{SPIN}; {ending}")
    assert proc.returncode == status, proc.stderr
    assert svg.is_file()  # the graph is drawn first
    last = proc.stderr.strip().splitlines()[-1]
    if said is None:
        assert "exit" not in last
    else:
        assert last == f"flamegraph: exit {status}: {said} (the graph was drawn)"


@pytest.mark.perf
def test_a_command_killed_from_outside_gives_128_plus_n(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    script = f"echo $$ > {pid_file}; {SPIN}; while :; do :; done"
    proc = subprocess.Popen([*FLAMEGRAPH, "record", "-o", str(tmp_path / "x.svg"), "--", "sh", "-c", script],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    deadline = time.monotonic() + 60
    while not pid_file.exists() or not pid_file.read_text().strip():
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    time.sleep(0.5)
    os.kill(int(pid_file.read_text()), signal.SIGKILL)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGKILL, err
    assert err.strip().splitlines()[-1].endswith("the command was killed by SIGKILL (the graph was drawn)")


@pytest.mark.perf
@pytest.mark.serial  # a short --duration of a launched command: starved, it may record no sample at all
def test_stopped_by_us_is_not_the_commands_failure(tmp_path: Path) -> None:
    """--duration ends the command with SIGTERM (perf does): that is our stop, exit 0."""
    proc = run_cli("record", "--duration", "1", "-o", str(tmp_path / "x.svg"), "--", "sh", "-c", "while :; do :; done")
    assert proc.returncode == 0, proc.stderr
    assert "the command was killed" not in proc.stderr


@pytest.mark.perf
def test_offcpu_exits_with_the_commands_status(tmp_path: Path) -> None:
    proc = run_cli("offcpu", "-o", str(tmp_path / "x.svg"), "--", "sh", "-c", "sleep 0.2; exit 4")
    assert proc.returncode == 4, proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last == "flamegraph: exit 4: the command exited with status 4 (the graph was drawn)"


# -- what the recording cannot show, said in one line ----------------------------------------------------


@pytest.mark.perf
def test_python_older_than_312_is_said(tmp_path: Path, venv: Path) -> None:
    """`_PyEval_EvalFrameDefault` and `python3.11+0x574e70`, and nothing said why: one line now, for a
    venv's python3 and for a console script whose #! names it (pytest, pip)."""
    if sys.version_info >= (3, 12):
        pytest.skip("this interpreter is 3.12+")
    tool = tmp_path / "fg-tool"
    tool.write_text("#!/usr/bin/env python3\nsum(range(300000))\n")
    tool.chmod(0o755)
    env = {**os.environ, "PATH": f"{venv / 'bin'}:{tmp_path}:{os.environ['PATH']}"}
    for command in (["python3", "-m", "json.tool", "--help"], ["fg-tool"]):
        proc = run_cli("record", "-o", str(tmp_path / "x.svg"), "--", *command, env=env)
        assert proc.returncode == 0, proc.stderr
        said = [line for line in proc.stderr.splitlines() if "its Python functions cannot appear" in line]
        assert said == [
            f"note: {venv}/bin/python3 is Python 3.{sys.version_info[1]}: its Python functions cannot appear "
            "in the graph, only the interpreter's C functions (_PyEval_EvalFrameDefault...); run it with Python 3.12+ "
            "for Python frames"
        ]
    assert python_note(("/bin/sh", "-c", "true"), os.environ) is None


def test_python_version_is_read_cheaply_and_correctly(tmp_path: Path, venv: Path) -> None:
    assert python_version(str(venv / "bin" / "python3"), os.environ) == sys.version_info[:2]  # via the link
    copied = tmp_path / "copied" / "bin" / "python3"  # a venv made with --copies: pyvenv.cfg says it
    copied.parent.mkdir(parents=True)
    copied.write_text("#!/bin/sh\nexit 1\n")
    (tmp_path / "copied" / "pyvenv.cfg").write_text("home = /usr/bin\nversion = 3.10.12\n")
    assert python_version(str(copied), os.environ) == (3, 10)
    shim = tmp_path / "shim" / "python3"  # a shim (pyenv): asked, in the user's environment
    shim.parent.mkdir()
    shim.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    shim.chmod(0o755)
    assert python_version(str(shim), os.environ) == sys.version_info[:2]


@pytest.mark.perf
def test_lost_samples_are_counted_not_relayed(tmp_path: Path) -> None:
    """perf's "lost 51 chunks! Check IO/CPU overload!" passed through raw: counted now, one line, a fact.
    A 32 KiB buffer (-m 8 pages) for 16 KB DWARF samples at 2999 Hz on two busy threads loses samples."""
    script = tmp_path / "busy.py"
    script.write_text(
        "import threading, zlib\nd = bytes(range(256)) * 4096\n"
        "def w():\n    for _ in range(40): zlib.compress(d, 6)\n"
        "ts = [threading.Thread(target=w) for _ in range(2)]\n[t.start() for t in ts]; [t.join() for t in ts]\n"
    )
    notes: list[str] = []
    status = Status(sink=open(os.devnull, "wb"))  # noqa: SIM115
    status.note = notes.append  # type: ignore[method-assign]
    relayed: list[str] = []
    spec = RecordSpec(command=(sys.executable, str(script)), options=RecordOptions(freq=2999, mmap="8"))
    recording = record(spec, tmp_path / "perf.data", on_output=relayed.append, status=status)
    assert recording.lost is not None and recording.lost.lost > 0, notes
    assert recording.metadata["lost samples"] == recording.lost.fact()
    assert sum("perf lost" in note for note in notes) == 1, notes
    assert not any("Check IO/CPU overload" in line or "lost" in line for line in relayed), relayed
    assert 0 < recording.lost.share < 1


def test_perf_warnings_are_held_back_and_the_rest_passes() -> None:
    warnings = PerfWarnings()
    text = [
        "the program's line\n", "Warning:\n", "Processed 7172 events and lost 132 chunks!\n", "\n",
        "Check IO/CPU overload!\n", "\n", "Warning:\n", "Processed 3489 samples and lost 24.88%!\n", "\n",
        "Warning:\n", "the program warns too\n",
    ]  # fmt: skip
    passed = [kept for line in text for kept in warnings.take(line)]
    assert passed == ["the program's line\n", "Warning:\n", "the program warns too\n"]
    assert warnings.estimate() == LostSamples(2621, 868, 132)
    stats = "Aggregated stats:\n            LOST events:        132  ( 1.8%)\n"
    stats += "          SAMPLE events:       2621  (36.5%)\n"
    stats += "cpu-clock stats:\n          SAMPLE events:       2621\n    LOST_SAMPLES events:        868\n"
    lost = parse_stats(stats)
    assert lost == LostSamples(2621, 868, 132)
    assert lost.fact() == "868 of 3,489 samples (24.9 %) in 132 chunks"


def test_folding_progress_says_what_was_read(tmp_path: Path) -> None:
    """ "folding: 0 MB of perf script text" after every recording read as if nothing had been folded."""
    sink = tmp_path / "progress"
    with open(sink, "wb") as out:
        status = Status(sink=out)  # not a terminal: a short fold says nothing
        show = show_progress(status, "folding")
        show(200_000)
        status.every = 0.0  # a long fold (past `every` seconds) says how much it read
        show_progress(status, "folding")(12_345_678)
    assert sink.read_text() == "folding: 12.3 MB of perf script text read\n"


@pytest.mark.perf
def test_unprivileged_record_says_the_kernel_is_missing(unprivileged: Unprivileged) -> None:
    """perf_event_paranoid 2, no CAP_PERFMON: perf records cpu-clock:u without a word."""
    if Path("/proc/sys/kernel/perf_event_paranoid").read_text().strip() in ("-1", "0", "1"):
        pytest.skip("perf_event_paranoid lets every user sample the kernel here")
    folded = unprivileged.scratch / "user-only.folded"
    args = ["record", "--no-svg", "--folded", str(folded), "--", "sh", "-c", SPIN]
    proc = subprocess.run(unprivileged.command(*args, drop=NOBODY), capture_output=True, text=True, timeout=60, cwd="/")
    assert proc.returncode == 0, proc.stderr
    said = [line for line in proc.stderr.splitlines() if "kernel" in line]
    assert said == [
        "note: perf recorded user space only (cpu-clock:u): perf_event_paranoid is 2, not root: the time "
        "spent in the kernel (system calls, page faults) is not in the graph; run as root or "
        "`sysctl kernel.perf_event_paranoid=1` to include it"
    ], proc.stderr
    assert facts(folded)["recorded"].startswith("user space only (cpu-clock:u)")


# -- what --jit leaves in /tmp -------------------------------------------------------------------------


@pytest.mark.perf
def test_jit_removes_the_perf_maps_it_wrote(tmp_path: Path) -> None:
    """`/tmp/perf-PID.map` was left behind after every `--jit` run (an empty one for a program without
    JIT code): removed once the run is drawn; its copy stays in PERF_DATA.jit/ with --perf-data."""
    code = "import os; print('PID', os.getpid()); sum(range(2000000))"
    data = tmp_path / "perf.data"
    proc = run_cli("record", "--jit", "--perf-data", str(data), "-o", str(tmp_path / "x.svg"), "--", sys.executable,
                   "-c", code)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    pid = int(next(line.split()[1] for line in proc.stdout.splitlines() if line.startswith("PID")))
    assert not Path(f"/tmp/perf-{pid}.map").exists()
    assert (tmp_path / "perf.data.jit" / f"perf-{pid}.map").is_file()


def test_a_map_the_process_wrote_itself_is_never_removed(tmp_path: Path) -> None:
    """python -X perf writes /tmp/perf-PID.map itself: our kernels are appended, and the file stays."""
    from flamegraph.frameworks.jit.jitmap import Kernel, remove_perf_maps, save_perf_map

    own = Path(f"/tmp/perf-{os.getpid()}.map")
    own.write_text("7f0000001000 10 py::main:x.py\n")  # written since this process started: its own
    try:
        save_perf_map([Kernel(0x7F0000002000, 0x20, "jit_gemm", 1)], os.getpid(), str(tmp_path))
        assert own.read_text() == "7f0000001000 10 py::main:x.py\n7f0000002000 20 jit_gemm\n"
        assert remove_perf_maps(str(tmp_path)) == [] and own.exists()
        assert not (tmp_path / own.name).exists()  # no copy: not ours
    finally:
        own.unlink()
