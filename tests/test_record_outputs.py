"""`record`/`offcpu` check every output location before recording (an unwritable -o must not cost a
recording), a read-only --perf-data is exit 4 like any output, and no scratch directory is left behind."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from flamegraph.io.diagnostics import EXIT_BAD_INPUT, EXIT_NO_INPUT

pytestmark = pytest.mark.parallel  # its perf tests were proven beside two busy loops (make test's parallel part)

FLAMEGRAPH = [sys.executable, "-m", "flamegraph"]


@pytest.fixture
def read_only(tmp_path: Path) -> Iterator[Path]:
    """A directory no file can be created in: a read-only tmpfs as root (EROFS), else mode 0555."""
    directory = tmp_path / "ro"
    directory.mkdir()
    if os.geteuid() == 0:
        subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "flamegraph-test", str(directory)], check=True)
        try:
            yield directory
        finally:
            subprocess.run(["umount", str(directory)], check=True)
    else:
        directory.chmod(0o555)
        yield directory
        directory.chmod(0o755)


def run_cli(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    """flamegraph with TMPDIR in tmp_path (to see what it leaves there); the run's duration."""
    tmp = tmp_path / "tmp"
    tmp.mkdir(exist_ok=True)
    started = time.monotonic()
    proc = subprocess.run(
        [*FLAMEGRAPH, *args], capture_output=True, text=True, timeout=60, env={**os.environ, "TMPDIR": str(tmp)}
    )
    return proc, time.monotonic() - started


def one_line(proc: subprocess.CompletedProcess[str], code: int) -> str:
    assert proc.returncode == code, proc.stderr
    assert "Traceback" not in proc.stderr
    [line] = [line for line in proc.stderr.splitlines() if line.startswith("flamegraph: ")]
    return line


@pytest.mark.parametrize("command", ["record", "offcpu"])
@pytest.mark.parametrize("option", ["-o", "--folded", "--perf-data", "--speedscope", "--pprof", "--chrome-trace"])
def test_unwritable_output_fails_before_recording(tmp_path: Path, read_only: Path, command: str, option: str) -> None:
    target = read_only / "sub" / "out" if option == "-o" else read_only / "out"
    args = [command, option, str(target), "--", "sleep", "30"]
    proc, seconds = run_cli(tmp_path, *args)
    line = one_line(proc, EXIT_NO_INPUT)
    assert line.startswith(f"flamegraph: {target}: cannot write: "), line
    assert "Read-only file system" in line or "Permission denied" in line, line
    assert seconds < 20, "the check came after recording"  # `sleep 30` never ran under perf
    assert "recording" not in proc.stderr
    assert list((tmp_path / "tmp").iterdir()) == []  # no scratch directory


def test_output_that_is_a_directory_fails_before_recording(tmp_path: Path) -> None:
    proc, seconds = run_cli(tmp_path, "record", "-o", str(tmp_path), "--", "sleep", "30")
    assert one_line(proc, EXIT_NO_INPUT) == f"flamegraph: {tmp_path}: cannot write: is a directory"
    assert seconds < 20


@pytest.mark.perf
@pytest.mark.parametrize("command", ["record", "offcpu"])
def test_named_perf_data_leaves_no_scratch_directory(tmp_path: Path, command: str) -> None:
    """With --perf-data the scratch directory was made anyway and never removed, whatever happened."""
    data = tmp_path / "kept" / "run.data"
    args = ["--perf-data", str(data), "--window", "1,2", "--no-svg", "--folded", "-", "--", "true"]
    proc, _ = run_cli(tmp_path, command, *args)
    one_line(proc, EXIT_BAD_INPUT)  # nothing in a window long before the recording
    assert f"the recording is kept in {data}" in proc.stderr and data.is_file()
    assert list((tmp_path / "tmp").iterdir()) == []


PRINTER = "echo 'hello from the program'; i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; echo bye"


@pytest.mark.perf
@pytest.mark.parametrize(
    ("command", "outputs", "starts"),
    [("record", ["-o", "-"], b"<?xml"), ("offcpu", ["-o", "-"], b"<?xml"),
     ("record", ["--no-svg", "--folded", "-"], b"sh;"), ("record", ["--no-svg", "--pprof", "-"], b"\x1f\x8b")],
    ids=["record-svg", "offcpu-svg", "record-folded", "record-pprof"],
)  # fmt: skip
def test_the_commands_own_prints_stay_out_of_an_output_on_stdout(
    tmp_path: Path, command: str, outputs: list[str], starts: bytes
) -> None:
    """`-o -`: the command shares our stdout, so its prints went into the SVG (newcomer10 b-13); they go to
    our stderr instead, and the output is the file it would be."""
    done = subprocess.run([*FLAMEGRAPH, command, *outputs, "--", "sh", "-c", PRINTER], capture_output=True,
                          timeout=120, cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(starts), done.stdout[:200]
    lines = done.stdout.split(b"\n")  # (the SVG's subtitle quotes the command line: its text is there, not its lines)
    assert b"hello from the program" not in lines and b"bye" not in lines
    assert b"hello from the program\n" in done.stderr and b"bye\n" in done.stderr
    if starts == b"<?xml":
        import xml.dom.minidom

        xml.dom.minidom.parseString(done.stdout)


@pytest.mark.perf
def test_a_commands_prints_stay_on_stdout_when_the_output_is_a_file(tmp_path: Path) -> None:
    done = subprocess.run([*FLAMEGRAPH, "record", "-o", "run.svg", "--", "sh", "-c", PRINTER], capture_output=True,
                          timeout=120, cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == b"hello from the program\nbye\n"
