"""Running `perf script`: stderr drained while stdout streams, and perf's reason for failing reaches the user."""

from __future__ import annotations

import mmap
import os
import subprocess
import sys
from pathlib import Path

import pytest

from flamegraph.io.diagnostics import EXIT_NO_INPUT, EXIT_NO_PERF

pytestmark = pytest.mark.parallel  # its perf tests were proven beside two busy loops (make test's parallel part)

FLAMEGRAPH = [sys.executable, "-m", "flamegraph"]
SAMPLE = b"python 1 [000] 1.000000: 1 cpu-clock:\n\tffff1 leaf (/lib/x.so)\n\tffff2 main (/bin/python)\n\n"
# A `perf` that behaves like `perf script` on a real recording: a warning per unwinding failure on
# stderr (here 200 KiB, three pipe buffers) before it has written all its samples to stdout.
FAKE_PERF = f"""#!{sys.executable}
import os, sys
for n in range(2000):
    sys.stderr.write(f"unwind: target ip {{n:#x}} not found in any map" + " " * 60 + "\\n")
sys.stderr.flush()
sys.stdout.buffer.write({SAMPLE!r} * 3)
sys.stderr.write(os.environ.get("FAKE_PERF_SAYS", ""))
sys.exit(int(os.environ.get("FAKE_PERF_EXIT", "0")))
"""


def fake_perf(tmp_path: Path, script: str = FAKE_PERF) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    perf = bin_dir / "perf"
    perf.write_text(script)
    perf.chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}


def perf_data(tmp_path: Path) -> Path:
    """A file that `flamegraph fold` takes for perf.data (its magic), for the fake perf to 'script'."""
    path = tmp_path / "perf.data"
    path.write_bytes(b"PERFILE2" + bytes(100))
    return path


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*FLAMEGRAPH, *args], capture_output=True, text=True, timeout=60, env=env)


def error_lines(proc: subprocess.CompletedProcess[str]) -> list[str]:
    assert "Traceback" not in proc.stderr, proc.stderr
    return [line for line in proc.stderr.splitlines() if line.startswith("flamegraph: ")]


def test_stderr_beyond_a_pipe_buffer_does_not_hang(tmp_path: Path) -> None:
    """Main read stderr only after stdout closed: perf blocked on a full stderr pipe, fold waited for ever."""
    proc = run_cli("fold", str(perf_data(tmp_path)), env=fake_perf(tmp_path))  # 60 s timeout: a hang fails
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "python;main;leaf 3\n"
    assert "unwind:" not in proc.stderr  # perf's warnings are not relayed when it succeeds


def test_failing_perf_script_names_its_last_line(tmp_path: Path) -> None:
    env = {**fake_perf(tmp_path), "FAKE_PERF_SAYS": "bad thing happened\n\n", "FAKE_PERF_EXIT": "3"}
    proc = run_cli("fold", str(perf_data(tmp_path)), env=env)
    assert proc.returncode == EXIT_NO_PERF
    expected = f"flamegraph: {tmp_path / 'perf.data'}: perf script failed (exit 3): bad thing happened"
    assert error_lines(proc) == [expected]


def record_small(tmp_path: Path) -> Path:
    data = tmp_path / "small.data"
    spin = "import zlib\nd = bytes(range(256)) * 4096\nfor _ in range(150): zlib.compress(d)\n"
    argv = ["perf", "record", "-q", "-e", "cpu-clock", "-F", "999", "-g", "-o", str(data)]
    subprocess.run([*argv, "--", sys.executable, "-c", spin], check=True, capture_output=True, timeout=60)
    return data


@pytest.mark.perf
def test_truncated_perf_data_killed_by_sigbus_says_so(tmp_path: Path) -> None:
    """perf mmaps the file: cut at a page boundary, it dies of SIGBUS and says nothing ("exit -7: no message")."""
    data = record_small(tmp_path)
    cut = tmp_path / "cut.data"
    cut.write_bytes(data.read_bytes()[: 2 * mmap.PAGESIZE])
    proc = run_cli("fold", str(cut))
    assert proc.returncode == EXIT_NO_INPUT, proc.stderr
    [line] = error_lines(proc)
    assert "perf script was killed by SIGBUS: the file is likely truncated or corrupt" in line, line


@pytest.mark.perf
def test_truncated_perf_data_mid_record_says_so(tmp_path: Path) -> None:
    """Cut elsewhere, perf reports a record it cannot parse: its words, and what they mean."""
    data = record_small(tmp_path)
    cut = tmp_path / "cut.data"
    cut.write_bytes(data.read_bytes()[: 2 * mmap.PAGESIZE + 100])
    proc = run_cli("fold", str(cut))
    assert proc.returncode == EXIT_NO_INPUT, proc.stderr
    [line] = error_lines(proc)
    assert "failed to process type" in line and "the file is likely truncated or corrupt" in line, line


@pytest.mark.perf
@pytest.mark.parametrize("size", [8, 100])
@pytest.mark.parametrize("command", ["fold", "convert"])
def test_perf_data_cut_inside_its_header_is_exit_4(tmp_path: Path, size: int, command: str) -> None:
    """An 8-byte perf.data (the magic, nothing more) was exit 5 "incompatible file format"; the docs say 4."""
    cut = tmp_path / "cut.data"
    cut.write_bytes(record_small(tmp_path).read_bytes()[:size])
    args = [str(cut)] if command == "fold" else [str(cut), str(tmp_path / "o.speedscope.json")]
    proc = run_cli(command, *args)
    assert proc.returncode == EXIT_NO_INPUT, proc.stderr
    [line] = error_lines(proc)
    assert "the file is likely truncated or corrupt" in line, line
